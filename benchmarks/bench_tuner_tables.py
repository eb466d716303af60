"""Tuners, cost model and stand-in judged on the RTL ground-truth tables (benchmarks/tables/).

The tables hold the Verilator RTL cycles of every point of each workload's (sub)space
(``make tables``), so a search here "measures" by looking cycles up: the numbers are
RTL cycles, and a search costs only its own compute.

(search)   trials to within 5% and 1% of each table's best, median over seeds, batches
           of 8: the model tuner vs random, grid, GA, Optuna's TPE and Optuna's QMC
           (Sobol) sampler, all unseeded; then the model with the seeded default
           (tune()'s include_default) beside it, and the best each finds in a few trials.
(model)    the cost model's Spearman on held-out points vs training-set size, per
           table, and transfer (trained on the other tables only).
(stand-in) the stand-in analytical model against the RTL: Spearman and median error.

    .venv/bin/python benchmarks/bench_tuner_tables.py                 # all parts
    .venv/bin/python benchmarks/bench_tuner_tables.py --part search --seeds 10
"""
from __future__ import annotations

import argparse
import hashlib
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from toolkit.kinds import lower  # noqa: E402
from tuner.features import FEATURE_VERSION, NOT_ESTIMATED, PRIOR, candidate_features  # noqa: E402
from tuner.model import CostModel, spearman  # noqa: E402
from tuner.search import make_tuner  # noqa: E402
from simulators.stand_in import estimate  # noqa: E402
from tuner.tables import Table, load  # noqa: E402

TABLES = ROOT / "benchmarks" / "tables"
CACHE = ROOT / "build" / "bench_tuner_tables"
BATCH = 8
TARGETS = (0.05, 0.01)
SIZES = (8, 16, 32, 64, 128, 256)


def tables(check_sources: bool = True) -> list[Table]:
    paths = sorted(TABLES.glob("*.json"))
    if not paths:
        raise SystemExit("no tables under benchmarks/tables/: run `make tables` first")
    if not check_sources:
        print("(--allow-stale: the tables' source hashes are not checked; their cycles hold only where the "
              "programs are unchanged)")
    return [load(p, check_sources=check_sources) for p in paths]


# ---- features and stand-in cycles of every table point (cached: lowering dominates) -------------
def _chunk(table_path: str, points: list[int], stand_in: bool) -> tuple[np.ndarray, np.ndarray]:
    space = load(table_path, check_sources=False).space   # the parent checked them (or was told not to)
    rows, cycles = [], []
    for p in points:   # the tuner's own feature path (a census where one covers the kind)
        rows.append(candidate_features(space.op, space.hw, space[p], space.domains))
        cycles.append(estimate(lower(space.op, space[p], space.hw))[0] if stand_in else np.nan)
    return np.stack(rows), np.array(cycles, dtype=float)


def point_data(table: Table, workers: int, stand_in: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(features, stand-in cycles or nan) of every point of ``table``, cached per table and feature code."""
    code = b"".join((ROOT / f).read_bytes() for f in ("tuner/features.py", "simulators/stand_in.py",
                                                       "toolkit/estimate.py", "toolkit/gemm/heuristic.py",
                                                       "toolkit/conv/heuristic.py"))
    key = hashlib.sha256(repr((table.name, sorted(table.hashes.items()), len(table.cycles), FEATURE_VERSION,
                               stand_in)).encode() + code).hexdigest()[:16]
    path = CACHE / f"{table.name}-{key}.npz"
    if path.is_file():
        data = np.load(path)
        return data["X"], data["stand_in"]
    n = len(table.cycles)
    chunks = [list(range(i, min(n, i + 128))) for i in range(0, n, 128)]
    src = str(TABLES / f"{table.name}.json")
    with ProcessPoolExecutor(workers) as ex:
        parts = list(ex.map(_chunk, [src] * len(chunks), chunks, [stand_in] * len(chunks)))
    X, cycles = np.vstack([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    CACHE.mkdir(parents=True, exist_ok=True)
    np.savez(path, X=X, stand_in=cycles)
    return X, cycles


# ---- searches: each returns the cycles of the points it measured, in order -----------------------
def tuner_trace(name: str, table: Table, X: np.ndarray, seed: int, budget: int, stop: float,
                seeded: bool = False) -> list[float]:
    cost = table.cost()
    tuner = make_tuner(name, table.space, lambda pts: X[list(pts)], seed)
    if seeded:   # what tune(include_default=True) does: the library default goes first
        tuner.seeds.append(table.space.index_of(table.space.default))
    trace: list[float] = []
    while len(trace) < budget and not tuner.exhausted():
        batch = tuner.next_batch(min(BATCH, budget - len(trace)))
        if not batch:
            break
        tuner.update(batch, cost[batch])
        trace += cost[batch].tolist()
        if min(trace) <= stop:
            break
    return trace


def optuna_trace(sampler: str, table: Table, seed: int, budget: int, stop: float) -> list[float]:
    """Optuna over the value index of each knob; points that do not fit or repeat are told a penalty
    (or their cycles) but not counted as trials."""
    import warnings

    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    space, cost = table.space, table.cost()
    make = {"tpe": lambda: optuna.samplers.TPESampler(seed=seed),
            "qmc": lambda: optuna.samplers.QMCSampler(seed=seed, warn_independent_sampling=False)}[sampler]
    study = optuna.create_study(sampler=make())
    penalty = float(np.nanmax(table.cycles) * 2)
    seen: set[int] = set()
    trace: list[float] = []
    for _ in range(50 * budget):
        if len(trace) >= budget or (trace and min(trace) <= stop):
            break
        trial = study.ask()
        if sampler == "tpe":
            genome = [trial.suggest_categorical(k, list(range(len(space.domains[k])))) for k in space.names]
        else:   # QMC covers integer ranges; categoricals it would leave to an independent random sampler
            genome = [trial.suggest_int(k, 0, len(space.domains[k]) - 1) for k in space.names]
        p = space.index(genome)
        c = penalty if p is None or not math.isfinite(cost[p]) else float(cost[p])
        study.tell(trial, c)
        if p is not None and p not in seen:
            seen.add(p)
            trace.append(float(cost[p]))
    return trace


def first_within(trace: list[float], target: float) -> float:
    hits = [i + 1 for i, c in enumerate(trace) if c <= target]
    return float(hits[0]) if hits else math.inf


def _fmt(v: float, budget: int) -> str:
    return f">{budget}" if math.isinf(v) else f"{v:.0f}"


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))  # noqa: E731
    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


SEARCHES: dict[str, Callable[..., list[float]]] = {
    "model": lambda t, X, s, b, stop: tuner_trace("model", t, X, s, b, stop),
    "random": lambda t, X, s, b, stop: tuner_trace("random", t, X, s, b, stop),
    "grid": lambda t, X, s, b, stop: tuner_trace("grid", t, X, s, b, stop),
    "ga": lambda t, X, s, b, stop: tuner_trace("ga", t, X, s, b, stop),
    "tpe": lambda t, X, s, b, stop: optuna_trace("tpe", t, s, b, stop),
    "qmc": lambda t, X, s, b, stop: optuna_trace("qmc", t, s, b, stop),
    "model+default": lambda t, X, s, b, stop: tuner_trace("model", t, X, s, b, stop, seeded=True),
}


def part_search(all_tables: list[Table], data: dict[str, tuple], seeds: int, budget: int,
                names: list[str]) -> dict[str, dict[str, list[float]]]:
    print(f"\n(search) trials to within 5% / 1% of each table's best (RTL cycles), median of {seeds} seeds, "
          f"batches of {BATCH}, budget {budget}; all unseeded except model+default")
    medians: dict[str, dict[str, list[float]]] = {}
    rows = []
    for table in all_tables:
        X = data[table.name][0]
        best = table.best
        budget_t = min(budget, len(table.cycles))
        share = [float((table.cost() <= best * (1 + t)).mean()) for t in TARGETS]
        t0 = time.perf_counter()
        med: dict[str, list[float]] = {}
        for name in names:
            traces = [SEARCHES[name](table, X, seed, budget_t, best * (1 + TARGETS[-1])) for seed in range(seeds)]
            med[name] = [float(np.median([first_within(tr, best * (1 + t)) for tr in traces])) for t in TARGETS]
        medians[table.name] = med
        rows.append([table.name, f"{len(table.cycles):,}", " / ".join(f"{100 * s:.1f}%" for s in share),
                     *(" / ".join(_fmt(v, budget_t) for v in med[n]) for n in names),
                     f"{time.perf_counter() - t0:.0f}s"])
        print("   ", table.name, "done", flush=True)
    print(_table(["table", "points", "share 5%/1%", *names, "time"], rows))
    _verdict(medians, names)
    return medians


def _verdict(medians: dict[str, dict[str, list[float]]], names: list[str]) -> None:
    """The issue's target: model <= 1/3 of random's trials and fewer than TPE (5% target), per table and
    on the geomean. A search that never reached the target counts as its budget."""
    if not {"model", "random", "tpe"} <= set(names):
        return
    print("\n    target (to within 5%): model <= random / 3 and model < tpe")
    wins, ratios_r, ratios_t = 0, [], []
    for name, med in medians.items():
        m, r, t = (min(med[k][0], 1e9) for k in ("model", "random", "tpe"))
        ok = m <= r / 3 and m < t
        wins += ok
        ratios_r.append(m / r)
        ratios_t.append(m / t)
        print(f"    {name:<30} model/random {m / r:.2f}  model/tpe {m / t:.2f}  {'met' if ok else 'NOT met'}")
    g_r, g_t = (math.exp(np.mean(np.log(x))) for x in (ratios_r, ratios_t))
    print(f"    met on {wins} of {len(medians)} tables (needs >= 6); geomean model/random {g_r:.2f} (needs <= 0.33), "
          f"model/tpe {g_t:.2f} (needs < 1): {'MET' if wins >= 6 and g_r <= 1 / 3 and g_t < 1 else 'NOT MET'}")


def part_default(all_tables: list[Table], data: dict[str, tuple], seeds: int, trials: tuple[int, ...]) -> None:
    """The tuner's best after a few trials with and without the seeded default: with it, the best can
    never be worse than the default (by construction, so nothing here asserts it); without it, the
    column says whether the search alone beats the heuristic."""
    print(f"\n(never slower, honestly) model tuner's best after n trials / default's cycles (< 1: faster than "
          f"the default), median of {seeds} seeds; seeded = tune()'s include_default")
    rows = []
    for table in all_tables:
        X = data[table.name][0]
        default = table.lookup(table.space.index_of(table.space.default))
        cells = []
        for seeded in (False, True):
            traces = [tuner_trace("model", table, X, s, max(trials), -1.0, seeded=seeded) for s in range(seeds)]
            cells += [f"{np.median([min(tr[:n]) for tr in traces]) / default:.3f}" for n in trials]
        rows.append([table.name, f"{default:,.0f}", f"{table.best / default:.3f}", *cells])
    heads = [f"{'seeded' if s else 'unseeded'} @{n}" for s in (False, True) for n in trials]
    print(_table(["table", "default cycles", "table best/default", *heads], rows))


def part_model(all_tables: list[Table], data: dict[str, tuple], seeds: int) -> None:
    print(f"\n(model) cost model Spearman on held-out RTL points vs training-set size (mean of {seeds} splits; "
          f"0 = the analytical prior alone), and transfer: trained on the other tables only")
    rows = []
    for table in all_tables:
        X, _ = data[table.name]
        ok = np.flatnonzero(np.isfinite(table.cost()))
        y = table.cost()
        cells = []
        for n in (0, *SIZES):
            if n >= len(ok) - 3:
                cells.append("-")
                continue
            rho = []
            for s in range(seeds):
                perm = np.random.default_rng(s).permutation(ok)
                train, test = perm[:n], perm[n:]
                model = CostModel(s).fit(X[train], y[train]) if n else CostModel(s)
                rho.append(spearman(model.predict(X[test]), y[test]))
            cells.append(f"{np.nanmean(rho):.2f}")
        others = [t for t in all_tables if t.name != table.name]
        wx = np.vstack([data[t.name][0][np.isfinite(t.cost())] for t in others])
        wy = np.concatenate([t.cost()[np.isfinite(t.cost())] for t in others])
        transfer = CostModel(0).fit(wx, wy)
        cells.append(f"{spearman(transfer.predict(X[ok]), y[ok]):.2f}")
        rows.append([table.name, *cells])
    print(_table(["table", *map(str, (0, *SIZES)), "transfer"], rows))


def part_stand_in(all_tables: list[Table], data: dict[str, tuple]) -> None:
    print("\n(stand-in) the analytical models against the RTL tables: the stand-in (simulates the stream,"
          " 15 us an instruction) and the features' prior (log_prior_cycles: the closed-form estimate of"
          " toolkit.kinds.estimate_cycles where the kind has one, else the stand-in)")
    rows = []
    for table in all_tables:
        X, stand_in = data[table.name]
        logged = X[:, PRIOR].astype(np.float64)
        prior = np.where(logged == NOT_ESTIMATED, np.nan, np.exp2(logged) - 1)
        ok = np.isfinite(table.cost())
        cells = []
        for est in (stand_in, prior):
            if np.isnan(est[ok]).any():   # not simulated (--no-stand-in)
                cells += ["-"] * 4
                continue
            err = np.abs(est[ok] - table.cycles[ok]) / table.cycles[ok]
            top = table.cycles[ok] <= np.quantile(table.cycles[ok], 0.1)
            cells += [f"{spearman(est[ok], table.cycles[ok]):.3f}",
                      f"{spearman(est[ok][top], table.cycles[ok][top]):.3f}",
                      f"{100 * np.median(err):.1f}%", f"{table.cycles[ok][np.argmin(est[ok])] / table.best:.3f}"]
        rows.append([table.name, *cells])
    heads = ["spearman", "top 10%", "median error", "pick / best"]
    print(_table(["table", *(f"{w} {h}" for w in ("stand-in", "prior") for h in heads)], rows))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--part", choices=("search", "default", "model", "stand-in"), action="append")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--budget", type=int, default=600, help="(search) trials per search at most")
    p.add_argument("--tuners", nargs="*", default=list(SEARCHES), choices=list(SEARCHES))
    p.add_argument("--workers", type=int, default=2, help="processes to featurize the tables (cached)")
    p.add_argument("--no-stand-in", action="store_true", help="(stand-in) skip simulating every point on the stand-in")
    p.add_argument("--allow-stale", action="store_true",
                   help="use tables whose sources changed (a refactor that leaves every program as it was)")
    args = p.parse_args(argv)
    parts = args.part or ["search", "default", "model", "stand-in"]
    all_tables = tables(not args.allow_stale)
    data = {t.name: point_data(t, args.workers, not args.no_stand_in) for t in all_tables}
    if "search" in parts:
        part_search(all_tables, data, args.seeds, args.budget, args.tuners)
    if "default" in parts:
        part_default(all_tables, data, args.seeds, (8, 32))
    if "model" in parts:
        part_model(all_tables, data, min(args.seeds, 5))
    if "stand-in" in parts:
        part_stand_in(all_tables, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
