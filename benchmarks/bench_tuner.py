"""Tuner benchmarks; prints tables.

(a) search efficiency: trials each tuner needs to come within 5% of the best of a
    whole enumerated space (median over seeds): model vs random, grid, genetic,
    and Optuna's TPE on the same space and budget;
(b) tuned vs default schedule cycles on the Gemmini GEMM suite, geomean speedup;
(c) transfer: trials to within 5% with and without records of other workloads.

Cycle source: the STAND-IN analytical timing model (tuner/stand_in.py), not the
RTL: enumerating whole spaces on Verilator is too slow. Part (b) can tune on the
RTL instead (--backend verilator; slow). Every table says which source it used.
Enumerations are cached under build/bench_tuner/.

    .venv/bin/python benchmarks/bench_tuner.py            # all parts
    .venv/bin/python benchmarks/bench_tuner.py --part a --seeds 5
    .venv/bin/python benchmarks/bench_tuner.py --part b --backend verilator --trials 4 --layers 'gemm_512*'
"""
from __future__ import annotations

import argparse
import hashlib
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import toolkit as tk  # noqa: E402
from toolkit.kinds import lower  # noqa: E402
from tuner.features import FeatureCache  # noqa: E402
from tuner.search import make_tuner  # noqa: E402
from tuner.space import Space  # noqa: E402
from simulators.stand_in import LABEL, estimate  # noqa: E402

CACHE = ROOT / "build" / "bench_tuner"
BATCH = 8


def workloads() -> list[tuple[str, tk.Op, tk.HardwareConfig, dict | None]]:
    """Enumerable workloads: (name, op, hw, domain restriction or None for the full space)."""
    tiny, gemmini = tk.HardwareConfig.preset("tiny"), tk.HardwareConfig.preset("gemmini")
    conv_small = {"loop_order": ["bhwk", "bkhw"], "mvin_blocks": [2], "in_bank": [0], "w_bank": [0, 1]}
    return [
        ("mm 32x32x32 +bias tiny", tk.matmul(32, 32, 32, bias="row", activation="relu", scale=0.05), tiny, None),
        ("mm 64x16x32 tiny", tk.matmul(64, 16, 32), tiny, None),
        ("mm 64x64x64 gemmini", tk.matmul(64, 64, 64), gemmini, None),
        ("conv 1x8x8x8->8 tiny", tk.conv2d(1, 8, 8, 8, 8), tiny, conv_small),
        ("conv 1x6x6x8->16 s2 tiny", tk.conv2d(1, 6, 6, 8, 16, stride=2, bias="channel"), tiny, conv_small),
    ]


def make_space(op: tk.Op, hw: tk.HardwareConfig, restrict: dict | None) -> Space:
    if restrict is None:
        return Space(op, hw)
    from toolkit.kinds import knob_domains
    domains = {**knob_domains(op, hw), **restrict}
    return Space(op, hw, domains=domains)


def _enumerate_chunk(op: tk.Op, hw: tk.HardwareConfig, restrict: dict | None, points: list[int]
                     ) -> tuple[np.ndarray, np.ndarray]:
    space = make_space(op, hw, restrict)
    X = FeatureCache(space)(points)
    cycles = np.array([estimate(lower(op, space[p], hw))[0] for p in points], dtype=float)
    return X, cycles


def enumerate_space(op: tk.Op, hw: tk.HardwareConfig, restrict: dict | None, workers: int
                    ) -> tuple[Space, np.ndarray, np.ndarray]:
    """Features and stand-in cycles of every point (cached)."""
    space = make_space(op, hw, restrict)
    key = f"{op.key}|{hw.config_hash()}|{restrict!r}|{len(space)}"
    path = CACHE / f"{hashlib.sha256(key.encode()).hexdigest()[:16]}.npz"
    if path.is_file():
        data = np.load(path)
        return space, data["X"], data["cycles"]
    chunks = [list(range(i, min(len(space), i + 256))) for i in range(0, len(space), 256)]
    with ProcessPoolExecutor(workers) as ex:
        parts = list(ex.map(_enumerate_chunk, *zip(*[(op, hw, restrict, c) for c in chunks])))
    X = np.vstack([p[0] for p in parts])
    cycles = np.concatenate([p[1] for p in parts])
    CACHE.mkdir(parents=True, exist_ok=True)
    np.savez(path, X=X, cycles=cycles)
    return space, X, cycles


def trials_to_target(tuner: Any, cycles: np.ndarray, target: float, budget: int) -> int | None:
    n = 0
    while n < budget and not tuner.exhausted():
        batch = tuner.next_batch(min(BATCH, budget - n))
        if not batch:
            break
        tuner.update(batch, cycles[batch])
        for c in cycles[batch]:
            n += 1
            if c <= target:
                return n
    return None


def tpe_trials(space: Space, cycles: np.ndarray, target: float, budget: int, seed: int) -> int | None:
    """Optuna TPE over the same knobs; suggestions that do not fit or repeat are told but not counted."""
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed))
    penalty = float(cycles.max() * 2)
    seen: set[int] = set()
    n = asks = 0
    while n < budget and asks < 50 * budget:
        asks += 1
        trial = study.ask()
        genome = [trial.suggest_categorical(k, list(range(len(space.domains[k])))) for k in space.names]
        p = space.index(genome)
        if p is None:
            study.tell(trial, penalty)
            continue
        study.tell(trial, float(cycles[p]))
        if p in seen:
            continue
        seen.add(p)
        n += 1
        if cycles[p] <= target:
            return n
    return None


def _median(values: list[int | None], budget: int) -> str:
    vals = [v if v is not None else math.inf for v in values]
    med = float(np.median(vals))
    return f">{budget}" if math.isinf(med) else f"{med:.0f}"


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))  # noqa: E731
    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


def part_a(seeds: int, workers: int, budget: int) -> dict[str, tuple]:
    print(f"\n(a) search efficiency: trials to within 5% of the space's best, median of {seeds} seeds, "
          f"batches of {BATCH}\n    cycle source: {LABEL}; whole spaces enumerated with it")
    rows, enumerated = [], {}
    names = ["model", "random", "grid", "ga"]
    for wname, op, hw, restrict in workloads():
        t = time.perf_counter()
        space, X, cycles = enumerate_space(op, hw, restrict, workers)
        enumerated[wname] = (op, hw, space, X, cycles)
        target = cycles.min() * 1.05
        share = float((cycles <= target).mean())
        cache = lambda pts, X=X: X[list(pts)] if len(pts) else X[:0]  # noqa: E731
        med = {}
        for name in names:
            med[name] = _median([trials_to_target(make_tuner(name, space, cache, seed), cycles, target, budget)
                                 for seed in range(seeds)], budget)
        med["tpe"] = _median([tpe_trials(space, cycles, target, budget, seed) for seed in range(seeds)], budget)
        ratio = float(med["model"]) / float(med["random"]) if med["random"][0] != ">" else float("nan")
        rows.append([wname + (" (restricted)" if restrict else ""), f"{len(space):,}", f"{100 * share:.2f}%",
                     *(med[n] for n in [*names, "tpe"]), f"{ratio:.2f}", f"{time.perf_counter() - t:.0f}s"])
        print("   ", wname, "done", flush=True)
    print(_table(["workload", "points", "within 5%", *names, "tpe (optuna)", "model/random", "time"], rows))
    for wname, op, hw, restrict in workloads():
        if restrict:
            print(f"    {wname}: restricted to {restrict} so the whole space can be enumerated")
    return enumerated


CYCLE_SOURCES = {"stand-in": LABEL, "verilator": "Verilator RTL, cycle-accurate"}


def part_b(trials: int, workers: int, layers: list[str] | None, backend: str = "stand-in",
           timeout: float = 600.0) -> None:
    from networks.suite import load_suite
    from tuner.api import tune
    suite = load_suite("gemmini_gemms")
    hw = tk.HardwareConfig.preset("gemmini")
    check = "the functional model's outputs" if backend == "stand-in" else "the RTL's outputs"
    print(f"\n(b) tuned vs default schedule on {suite.name}, {trials} trials each (model tuner, "
          f"feature budget 64/batch)\n    cycle source: {CYCLE_SOURCES[backend]} (backend {backend!r}); "
          f"every candidate checked bit-exact ({check} against the reference)", flush=True)
    rows, speedups = [], []
    for layer in suite.select(layers):
        res = tune(layer.op, hw, trials=trials, backend=backend, workers=workers, progress=False,
                   timeout=timeout, tuner_options={"feature_budget": 64})
        if res.speedup is not None:  # no speedup when the default (or every candidate) failed or timed out
            speedups.append(res.speedup)
        fmt = lambda v, spec: "n/a" if v is None else format(v, spec)  # noqa: E731
        search = res.default_cycles / res.search_cycles if res.default_cycles and res.search_cycles else None
        rows.append([layer.name, fmt(res.default_cycles, ","), fmt(res.cycles, ","), fmt(res.speedup, ".3f") + "x",
                     fmt(res.search_cycles, ","), fmt(search, ".3f") + "x",
                     f"{res.space_size:,}", f"{60 * len(res.history) / res.seconds:.1f}", f"{res.seconds:.0f}s"])
        print("   ", layer.name, "done", flush=True)
    print(_table(["layer", "default cycles", "tuned cycles", "speedup", "search alone", "its speedup", "space",
                  "trials/min", "time"], rows))
    print(f"    cycle source: {CYCLE_SOURCES[backend]}; 'search alone' is the best without the seeded default "
          f"(tuned >= default holds by construction, the search's own best need not)")
    if speedups:
        print(f"    geomean speedup {math.exp(np.mean(np.log(speedups))):.3f}x over {len(speedups)} layer(s)")
    if len(speedups) < len(rows):
        print(f"    {len(rows) - len(speedups)} layer(s) without a speedup: the default schedule did not "
              f"measure ok (see the tuner's records)")


def part_c(enumerated: dict[str, tuple], seeds: int, budget: int) -> None:
    """Transfer among the tiny matmuls: each one tuned with the others' records as the database."""
    print(f"\n(c) transfer: trials to within 5% with and without a database of the other workloads' records "
          f"(median of {seeds} seeds)\n    cycle source: {LABEL}")
    group = {k: v for k, v in enumerated.items() if k.startswith("mm") and "tiny" in k}
    rows = []
    for wname, (op, hw, space, X, cycles) in group.items():
        others = [v for k, v in group.items() if k != wname]
        rng = np.random.default_rng(0)
        wx, wy, seeds_pts = [], [], []
        for o_op, _, o_space, o_X, o_cyc in others:  # a database: 64 random records and the best of each
            idx = np.concatenate([rng.choice(len(o_cyc), 64, replace=False), [int(np.argmin(o_cyc))]])
            wx.append(o_X[idx])
            wy.append(o_cyc[idx])
            seeds_pts.append(space.nearest(o_space.knobs(int(np.argmin(o_cyc)))))
        warm = (np.vstack(wx), np.concatenate(wy))
        target = cycles.min() * 1.05
        cache = lambda pts, X=X: X[list(pts)] if len(pts) else X[:0]  # noqa: E731
        cold, hot = [], []
        for seed in range(seeds):
            cold.append(trials_to_target(make_tuner("model", space, cache, seed), cycles, target, budget))
            tuner = make_tuner("model", space, cache, seed, warm=warm)
            tuner.seeds = list(dict.fromkeys(seeds_pts))
            hot.append(trials_to_target(tuner, cycles, target, budget))
        rows.append([wname, _median(cold, budget), _median(hot, budget)])
    print(_table(["workload", "no database", "with database"], rows))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--part", choices=("a", "b", "c"), action="append", help="parts to run (default all)")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--budget", type=int, default=800, help="(a, c) trial budget per search")
    p.add_argument("--trials", type=int, default=32, help="(b) trials per GEMM")
    p.add_argument("--layers", nargs="*", help="(b) suite layers (glob patterns)")
    p.add_argument("--backend", choices=sorted(CYCLE_SOURCES), default="stand-in",
                   help="(b) cycle source to tune on: the stand-in model (default) or the Verilator RTL (slow)")
    p.add_argument("--timeout", type=float, default=600.0, help="(b) seconds per candidate before it counts as hung")
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args(argv)
    parts = args.part or ["a", "b", "c"]
    enumerated: dict[str, tuple] = {}
    if "a" in parts or "c" in parts:
        enumerated = part_a(args.seeds, args.workers, args.budget) if "a" in parts else {}
    if "c" in parts:
        if not enumerated:
            enumerated = {w: (op, hw, *enumerate_space(op, hw, r, args.workers)) for w, op, hw, r in workloads()}
        part_c(enumerated, args.seeds, args.budget)
    if "b" in parts:
        part_b(args.trials, args.workers, args.layers, args.backend, args.timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
