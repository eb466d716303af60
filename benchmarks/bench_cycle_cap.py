"""The tuner's cycle cap, measured: the same search with and without it, side by side, on the RTL.

    python benchmarks/bench_cycle_cap.py [--layers s2_3x3 s3_3x3] [--trials 24] [--caps 3 none] [--workers 2]
                                         [--seed 0] [--tile-policy pow2] [--with-default] [--feature-budget N]
                                         [--stopped bounds costs]

--feature-budget N holds the search's candidates featurized a batch at N (default: the tuner's own,
tuner.session.feature_budget), to measure what the budget buys at a cap. --stopped bounds costs runs each
cap twice: the model learning a stopped candidate's cap as the lower bound it is (the tuner's own) and as
its cost (as it did before).

For each ResNet-50 layer (networks/suites/resnet50.yaml) and each cap it tunes the layer from scratch
(an empty database, no transfer; the search alone unless --with-default seeds the heuristic's schedule)
on the verilator backend, and prints:

- wall: the tuning's wall time, space enumeration, search, lowering, simulation and checking included;
- feat: the wall time the search spent featurizing candidates (its workers side by side);
- cand: the candidates' own time (lowering, simulation, checking: each record's wall_s), summed over
  the workers, and wall / (cand / workers), what the rest of the tuning adds to it;
- best: the best cycles found, and the default schedule's cycles (measured once here) over it;
- slow: candidates stopped at the cap.

With a cap of 3, a candidate stops at 3x the best before its batch; the search learns that as a lower
bound of its cycles (--stopped costs: as its cost).
The caps of one layer run one after the other with the same seed, so they see the same first batch.
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import toolkit as tk  # noqa: E402
from networks.suite import load_suite  # noqa: E402
from toolkit.cli.errors import cycle_cap  # noqa: E402
from tuner.api import tune  # noqa: E402
from tuner.database import Database  # noqa: E402
from tuner.space import Space  # noqa: E402


def tune_once(op: tk.Op, hw: tk.HardwareConfig, space: Space, cap: float | None, stopped: str,
              args: argparse.Namespace) -> dict:
    options = {"censored": stopped == "bounds", **({"feature_budget": args.feature_budget} if args.feature_budget
                                                   else {})}
    with tempfile.TemporaryDirectory(prefix="bench-cap-") as tmp:
        db = Path(tmp) / "records.db"
        start = time.perf_counter()
        res = tune(op, hw, trials=args.trials, backend="verilator", db=str(db), workers=args.workers,
                   seed=args.seed, progress=False, space=space, transfer_learning=False,
                   include_default=args.with_default, cycle_cap=cap, tuner_options=options)
        wall = time.perf_counter() - start
        with Database(db) as database:
            records = database.records(workload=op.key)
    return {"wall": wall, "cand": sum(r.wall_s for r in records), "feat": res.feature_seconds, "best": res.cycles,
            "slow": sum(r.status == "slow" for r in records), "failed": res.failures()}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", nargs="+", default=["s2_3x3", "s3_3x3"])
    p.add_argument("--trials", type=int, default=24)
    p.add_argument("--caps", nargs="+", type=cycle_cap, default=[3.0, None], help="factors, or 'none'")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tile-policy", default="pow2")
    p.add_argument("--with-default", action="store_true", help="seed the heuristic's schedule, as tk.tune does")
    p.add_argument("--feature-budget", type=int, default=None, help="candidates featurized a batch (default: the "
                                                                     "tuner's own)")
    p.add_argument("--stopped", nargs="+", choices=("bounds", "costs"), default=["bounds"],
                   help="what the model learns of a stopped candidate's cap: a lower bound (the tuner's) or its cost")
    args = p.parse_args()
    hw = tk.HardwareConfig.preset("gemmini")
    suite = load_suite("resnet50")
    print(f"{args.trials} trials a layer on the RTL (gemmini), seed {args.seed}, {args.workers} workers, "
          f"{'default seeded' if args.with_default else 'search alone (default not seeded)'}, "
          f"tile policy {args.tile_policy}, feature budget {args.feature_budget or 'the tuner default'}")
    print(f"{'layer':<10} {'cap':>5} {'stopped':>7} {'wall s':>7} {'feat s':>7} {'cand s':>7} {'wall/(cand/w)':>13} "
          f"{'best':>10} {'default/best':>12} {'slow':>5}  failed")
    for layer in suite.select(args.layers):
        op = layer.op
        default = tk.run(tk.compile(op, hw), op.random_inputs(0), backend="verilator").cycles
        space = Space(op, hw, tile_policy=args.tile_policy)
        for cap, stopped in [(c, s) for c in args.caps for s in (args.stopped if c else args.stopped[:1])]:
            r = tune_once(op, hw, space, cap, stopped, args)
            overhead = r["wall"] / (r["cand"] / args.workers) if r["cand"] else math.nan
            ratio = f"{default / r['best']:.3f}" if r["best"] else "-"
            print(f"{layer.name:<10} {cap if cap else 'none':>5} {stopped if cap else '-':>7} {r['wall']:7.1f} "
                  f"{r['feat']:7.1f} {r['cand']:7.1f} {overhead:13.2f} "
                  f"{r['best'] or 0:>10,} {ratio:>12} {r['slow']:>5}  {r['failed']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
