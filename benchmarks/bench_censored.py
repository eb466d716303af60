"""Stopped candidates learnt as costs or as lower bounds, side by side on the RTL ground-truth tables.

The cycle cap (tk.tune(cycle_cap=), default 3) stops a candidate once it has run cap times the best cycles
before its batch and records the cap. The model tuner may learn that cap as the candidate's cost ("costs",
as it did) or as the lower bound it is ("bounds", tuner.model.CostModel's censored fit). Here each search
looks its cycles up in benchmarks/tables/ (the RTL cycles of every point) with the cap played as the
session plays it: a batch's candidates past cap x the best before it report the cap, stopped; the first
batch runs uncapped unless seeded (--seeded: the default leads it, alone, and caps the rest). Without
a cap ("none") nothing stops: the uncapped search for reference.

    python benchmarks/bench_censored.py [--seeds 5] [--budget 64] [--cap 3] [--seeded] [--tables mm_64x64x64]

For each table and mode, medians over the seeds:

- to 5%, to 1%: trials until a candidate within 5% (1%) of the table's best (">budget": never);
- best@8, best@16: the best found in so many trials over the table's best;
- sim: the cycles simulated in the whole budget (a stopped candidate counts its cap), over the table's
  best: the RTL time the search costs, which the cap saves;
- stopped: candidates stopped at the cap in the whole budget.

The geomean over tables of each mode's figure over "costs"' closes the run (< 1: fewer than costs).
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_tuner_tables import BATCH, _table, first_within, point_data, tables  # noqa: E402
from tuner.search import make_tuner  # noqa: E402
from tuner.tables import Table  # noqa: E402

MODES = ("none", "costs", "bounds")
AT = (8, 16)
TARGETS = (0.05, 0.01)
KEYS = [*(f"to {100 * t:.0f}%" for t in TARGETS), *(f"best@{k}" for k in AT), "sim", "stopped"]


def capped_trace(table: Table, X: np.ndarray, mode: str, cap: float, seed: int, budget: int,
                 seeded: bool) -> tuple[list[float], list[float]]:
    """The true cycles of the points a model search measures, in order, and what each cost to simulate
    (its cycles, or its cap where it stopped)."""
    cost = table.cost()
    tuner = make_tuner("model", table.space, lambda pts: X[list(pts)], seed, censored=mode == "bounds")
    default = table.space.index_of(table.space.default)
    if seeded and default is not None:   # (a default outside the space: unseeded, as the session does)
        tuner.seeds.append(default)
    trace: list[float] = []
    spent: list[float] = []
    while len(trace) < budget and not tuner.exhausted():
        batch = tuner.next_batch(min(BATCH, budget - len(trace)))
        if not batch:
            break
        lead = 1 if not trace and batch[0] == default and seeded else 0   # runs alone, capping the rest
        seen, stopped = [], []
        for part in (batch[:lead], batch[lead:]):
            best = min(trace, default=math.inf)
            limit = math.ceil(cap * best) if mode != "none" and math.isfinite(best) else math.inf
            for c in cost[part]:
                stopped.append(bool(math.isfinite(c) and c > limit))   # a failure fails before any cap
                seen.append(limit if stopped[-1] else float(c))
                trace.append(float(c))
        tuner.update(batch, seen, stopped)
        spent += seen
    return trace, spent


def figures(trace: list[float], spent: list[float], best: float) -> dict[str, float]:
    out = {f"to {100 * t:.0f}%": first_within(trace, best * (1 + t)) for t in TARGETS}
    out.update({f"best@{k}": min(trace[:k], default=math.inf) / best for k in AT})
    out.update(sim=float(sum(s for s in spent if math.isfinite(s))) / best,
               stopped=float(sum(s < t for s, t in zip(spent, trace))))
    return out


def run_table(table: Table, X: np.ndarray, args: argparse.Namespace) -> dict[str, dict[str, float]]:
    budget = min(args.budget, len(table.cycles))
    out: dict[str, dict[str, float]] = {}
    for mode in args.modes:
        runs = [figures(*capped_trace(table, X, mode, args.cap, s, budget, args.seeded), table.best)
                for s in range(args.seeds)]
        out[mode] = {k: float(np.median([r[k] for r in runs])) for k in runs[0]}
    return out


def _cell(key: str, v: float, budget: int) -> str:
    if key.startswith("to "):
        return f">{budget}" if math.isinf(v) else f"{v:.0f}"
    return f"{v:.0f}" if key in ("sim", "stopped") else f"{v:.3f}"


def geomeans(results: dict[str, dict[str, dict[str, float]]], modes: list[str], budget: int) -> None:
    """Each mode's figures over costs', geomean over the tables (a search that never got there: its budget),
    and its candidates stopped, summed over the tables."""
    if "costs" not in modes:
        return
    print("\ngeomean over tables of mode / costs (< 1: less than costs); stopped: summed over tables")
    for mode in modes:
        cells = []
        for key in KEYS[:-1]:
            cut = budget if key.startswith("to ") else math.inf
            ratios = [min(r[mode][key], cut) / min(r["costs"][key], cut) for r in results.values()]
            cells.append(f"{key} {math.exp(np.mean(np.log(ratios))):.3f}")
        cells.append(f"stopped {sum(r[mode]['stopped'] for r in results.values()):.0f}")
        print(f"    {mode:<7} " + "  ".join(cells))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--budget", type=int, default=64, help="trials per search")
    p.add_argument("--cap", type=float, default=3.0, help="the cycle cap (times the best before a batch)")
    p.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    p.add_argument("--seeded", action="store_true", help="the default first, alone, capping the rest (tune()'s)")
    p.add_argument("--tables", nargs="*", default=None, help="names (prefixes) of the tables to run; default all")
    p.add_argument("--workers", type=int, default=1, help="processes to featurize the tables (cached)")
    p.add_argument("--allow-stale", action="store_true", help="use tables whose sources changed")
    args = p.parse_args(argv)
    chosen = [t for t in tables(not args.allow_stale)
              if not args.tables or any(t.name.startswith(n) for n in args.tables)]
    print(f"model tuner on the RTL tables, cap {args.cap:g}, {'seeded' if args.seeded else 'unseeded'}, "
          f"budget {args.budget}, median of {args.seeds} seeds, batches of {BATCH}")
    rows, results = [], {}
    for table in chosen:
        start = time.perf_counter()
        res = run_table(table, point_data(table, args.workers, stand_in=False)[0], args)
        results[table.name] = res
        budget = min(args.budget, len(table.cycles))
        for mode in args.modes:
            rows.append([table.name, mode, *(_cell(k, res[mode][k], budget) for k in KEYS)])
        print(f"    {table.name} done in {time.perf_counter() - start:.0f} s", flush=True)
    print(_table(["table", "mode", *KEYS], rows))
    geomeans(results, args.modes, args.budget)
    return 0


if __name__ == "__main__":
    sys.exit(main())
