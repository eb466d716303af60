"""Does choosing the dataflow per layer pay? Each layer of a suite tuned twice on the RTL, with the whole
space (dataflow ws and os) and with the space held at weight-stationary (``fix={"dataflow": "ws"}``): the
same trials, seed and tile policy, the default schedule seeded as usual (or, with --no-default, not: then
the figures are the search's own, since a seeded default that wins both runs makes their ratio 1 by
construction), every candidate checked bit-exact against numpy by the tuner's measurement (gemmini preset,
Verilator backend).

    python benchmarks/bench_dataflow_tuning.py [--suite resnet50] [--trials 8] [--layers conv1 s1_3x3 ...]

The full space's model tuner walks the default's dataflow and lets its model pick each candidate's
dataflow (tuner.search.TwinTuner); --walk adds a third run that walks the dataflow as any other knob
(``tuner_options={"twins": None}``), the tuner before that. Per layer: the tuned cycles each way,
full / ws-only, the dataflow the full tuner chose, how many of its trials went to os candidates, the
best os and ws cycles it measured, and its tuned schedule run again in the other dataflow (its twin:
that the model's call was right is measured, not assumed). Then the geomean, the worst layer and how
many layers the full space loses. Transfer learning is off, so that each layer's runs see only their
own records; records go to one SQLite file per run under --db, so a killed run resumes where it stopped.
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import toolkit as tk  # noqa: E402
from benchmarks.bench_utilization import measure  # noqa: E402
from networks.suite import load_suite  # noqa: E402

KINDS = ("matmul", "conv2d", "depthwise")   # the kinds with a dataflow knob
SPACES = {"full": None, "ws": {"dataflow": "ws"}, "walk": None}   # run -> its fix
OPTIONS = {"walk": {"twins": None}}   # run -> its tuner options beside --feature-budget's


def best_of(result, dataflow: str) -> float:
    """The fewest cycles among the run's successful trials in ``dataflow`` (inf if none)."""
    return min((t.cycles for t in result.history if t.status == "ok" and t.schedule["dataflow"] == dataflow),
               default=math.inf)


def tune_layer(op: tk.Op, hw: tk.HardwareConfig, args: argparse.Namespace) -> dict:
    """Both tunings of ``op``; the figures of one table row."""
    runs = {name: tk.tune(op, hw, trials=args.trials, backend="verilator", db=Path(args.db) / f"{name}.db",
                          workers=args.workers, seed=args.seed, progress=False, tile_policy=args.tile_policy,
                          transfer_learning=False, fix=fix, include_default=not args.no_default,
                          tuner_options={**(args.tuner_options or {}), **OPTIONS.get(name, {})})
            for name, fix in SPACES.items() if name != "walk" or args.walk}
    full = runs["full"]
    failed = sum(t.status != "ok" for r in runs.values() for t in r.history)
    return dict(ws=runs["ws"].cycles, full=full.cycles, walk=runs["walk"].cycles if args.walk else math.nan,
                chose=full.schedule.dataflow, twin=twin_cycles(op, hw, full.schedule),
                os_trials=sum(t.schedule["dataflow"] == "os" for t in full.history), trials=len(full.history),
                best_os=best_of(full, "os"), best_ws=best_of(full, "ws"), default=full.default_cycles,
                failed=failed)


def twin_cycles(op: tk.Op, hw: tk.HardwareConfig, schedule: tk.Schedule) -> float:
    """RTL cycles of ``schedule`` in the other dataflow, its outputs checked bit-exact (nan where it does not fit)."""
    twin = dataclasses.replace(schedule, dataflow="os" if schedule.dataflow == "ws" else "ws")
    try:
        return float(measure(op, hw, twin))
    except tk.ScheduleError:
        return math.nan


def _num(x: float | None) -> str:
    return f"{x:>11,.0f}" if x is not None and math.isfinite(x) else f"{'-':>11}"


def print_row(name: str, r: dict) -> None:
    print(f"{name:<14} {_num(r['default'])} {_num(r['ws'])} {_num(r['full'])} {r['full'] / r['ws']:>8.3f} "
          f"{r['chose']:>5} {r['os_trials']:>3}/{r['trials']:<3} {_num(r['best_os'])} {_num(r['best_ws'])} "
          f"{r['twin'] / r['full']:>9.2f} {_num(r['walk'])} {r['failed']:>4}", flush=True)


def print_summary(rows: dict[str, dict], seconds: float) -> None:
    ratios = {name: r["full"] / r["ws"] for name, r in rows.items()}
    worst = max(ratios, key=ratios.__getitem__)
    losses = [name for name, q in ratios.items() if q > 1.0]
    geomean = float(np.exp(np.mean(np.log(list(ratios.values())))))
    print(f"full / ws-only geomean {geomean:.4f}; worst {worst} {ratios[worst]:.4f}; the full space loses on "
          f"{len(losses)} of {len(rows)} layers{': ' + ', '.join(losses) if losses else ''}; "
          f"full chose os on {sum(r['chose'] == 'os' for r in rows.values())}; its schedule in the other dataflow "
          f"is slower on {sum(r['twin'] > r['full'] for r in rows.values())} of {len(rows)} ({seconds:.0f} s)")
    walks = {name: r["walk"] / r["ws"] for name, r in rows.items() if math.isfinite(r["walk"])}
    if walks:
        print(f"walked as any knob (--walk): / ws-only geomean {np.exp(np.mean(np.log(list(walks.values())))):.4f}, "
              f"loses on {sum(q > 1.0 for q in walks.values())} of {len(walks)} layers")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--suite", default="resnet50")
    p.add_argument("--layers", nargs="+", help="only these layers of the suite, in this order (default: every one with a "
                                                 "dataflow knob, in the suite's order)")
    p.add_argument("--trials", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--tile-policy", default="pow2", help="the spaces' tile sizes (the 'balanced' spaces of the "
                                                         "large convs take minutes each to enumerate)")
    p.add_argument("--feature-budget", type=int, help="candidates the search featurizes a batch (default: the "
                   "session's, from the default's length)")
    p.add_argument("--no-default", action="store_true", help="do not seed the default schedule: measure the "
                   "search alone (the default's cycles are still measured and printed)")
    p.add_argument("--walk", action="store_true", help="also tune the full space walking the dataflow as any "
                   "other knob (the tuner before the twin search)")
    p.add_argument("--db", default="build/dataflow_tuning", help="folder of the records (full.db, ws.db, walk.db)")
    args = p.parse_args(argv)
    args.tuner_options = {"feature_budget": args.feature_budget} if args.feature_budget else None
    hw = tk.HardwareConfig.preset("gemmini")
    suite = load_suite(args.suite)
    picked = [layer for pattern in args.layers or ["*"] for layer in suite.select([pattern])]
    layers = [layer for layer in dict.fromkeys(picked) if layer.op.KIND in KINDS]
    Path(args.db).mkdir(parents=True, exist_ok=True)
    print(f"{args.suite} on gemmini (Verilator, bit-exact): tuned with {args.trials} trials, seed {args.seed}, "
          f"tile policy {args.tile_policy}, feature budget {args.feature_budget or 'default'}, default "
          f"{'not seeded' if args.no_default else 'seeded'}, full space (ws+os) vs ws only")
    print(f"{'layer':<14} {'default':>11} {'ws-only':>11} {'full':>11} {'full/ws':>8} {'chose':>5} {'os/all':>7} "
          f"{'best os':>11} {'best ws':>11} {'twin/full':>9} {'walked':>11} {'fail':>4}")
    start, rows = time.perf_counter(), {}
    for layer in layers:
        rows[layer.name] = tune_layer(layer.op, hw, args)
        print_row(layer.name, rows[layer.name])
    if rows:
        print_summary(rows, time.perf_counter() - start)


if __name__ == "__main__":
    main()
