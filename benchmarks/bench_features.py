"""Featurizing candidates: from the instruction census (no rendering) vs rendering, side by side; and
the closed-form prior against the RTL on real layers.

(rate)   candidates a CPU second (process time: the machine is shared) of a ResNet-50 3x3 conv
         (56x56x64->64, gemmini preset): random points of the tuner's space, then neighbours of them (what the annealing asks for: a class's words are
         shared by candidates of one tiling), from the census; and the same random points rendered and
         featurized (capped in time), with how many of those came out equal.
(layers) the prior (toolkit.kinds.estimate_cycles) and the stand-in against the RTL (verilator) on
         random points of a few real layers: Spearman, and the RTL cycles of each one's pick over the
         best measured.

(rate, --repeat N) each rate the median of N passes, each from cold caches.
(rate, --baseline REV) the same random points featurized by revision REV's code too (its packages from
         git archive, in a subprocess), side by side, and whether every row is bit-identical to it.
(rate, --batch N) the same points featurized N at a time too (tuner.features.featurize, as the tuner's
         FeatureCache asks), from cold caches (the census's classes, the prior's tile costs) as the
         one-at-a-time run, and whether every row is bit-identical to the one-at-a-time's; with
         --baseline, revision REV's code batched too, as ours (where it has featurize).

    .venv/bin/python benchmarks/bench_features.py [--part rate|layers] [--points 200] [--baseline REV] [--batch N]
        [--repeat N]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import toolkit as tk  # noqa: E402
from simulators.stand_in import estimate  # noqa: E402
from toolkit.kinds import estimate_cycles, lower  # noqa: E402
from toolkit.conv.census import forget_classes  # noqa: E402
from toolkit.conv.heuristic import forget_tile_costs  # noqa: E402
from tuner.features import candidate_features, featurize, features  # noqa: E402
from tuner.model import spearman  # noqa: E402
from tuner.space import Space  # noqa: E402

from benchmarks.revision import python_tree, run_in  # noqa: E402

GEMMINI = tk.HardwareConfig.preset("gemmini")
RESNET_3X3 = tk.conv2d(1, 56, 56, 64, 64, kernel=3, padding=1)
LAYERS = {   # real layers small enough to simulate a few points each on 2 cores
    "resnet50 conv 7x7x512->512 3x3": tk.conv2d(1, 7, 7, 512, 512, kernel=3, padding=1),
    "resnet50 conv 14x14x1024->256 1x1": tk.conv2d(1, 14, 14, 1024, 256, kernel=1, padding=0),
    "bert matmul 128x768x768": tk.matmul(128, 768, 768),
}


# run by --baseline in the other revision's tree: argv[1] a JSON file of the op, hardware, domains, lists of
# knobs, batch and repeat, argv[2] where to save each list's rows; prints each list's candidates a CPU second one
# at a time, then (a batch given and featurize there; nan where not) batched, the lists one after another from
# cold caches as part_rate runs ours: each list after the one before, caches dropped only before the first (the
# median of ``repeat`` such passes, caches dropped before each where the revision can)
_BASELINE_RUN = """
import json, statistics, sys, time
import numpy as np
from isa import HardwareConfig
from toolkit.kinds import KINDS, from_dict
import tuner.features as features
case = json.load(open(sys.argv[1]))
op, hw, b = from_dict(case["op"]), HardwareConfig.from_dict(case["hw"]), case["batch"]
try:
    from toolkit.conv.census import forget_classes
    from toolkit.conv.heuristic import forget_tile_costs
    def forget():
        forget_classes()
        forget_tile_costs()
except ImportError:
    b, forget = 0, lambda: None
lists = [[KINDS[op.KIND].schedule(**k) for k in knobs] for knobs in case["knobs"]]
rates, batched = [[] for _ in lists], [[float("nan")] for _ in lists]
for _ in range(case["repeat"]):
    forget()
    for n, schedules in enumerate(lists):
        start = time.process_time()
        rows = [features.candidate_features(op, hw, s, case["domains"]) for s in schedules]
        rates[n].append(len(rows) / (time.process_time() - start))
        np.save(f"{sys.argv[2]}{n}.npy", np.stack(rows))
if b and hasattr(features, "featurize"):
    batched = [[] for _ in lists]
    for _ in range(case["repeat"]):
        forget()
        for n, schedules in enumerate(lists):
            start = time.process_time()
            for i in range(0, len(schedules), b):
                features.featurize(op, hw, schedules[i:i + b], case["domains"])
            batched[n].append(len(schedules) / (time.process_time() - start))
for rate, fast in zip(rates, batched):
    print(statistics.median(rate), statistics.median(fast))
"""


def baseline_rows(rev: str, space: Space, *points: list[int], batch: int = 0, repeat: int = 1
                  ) -> list[tuple[float, np.ndarray, float]]:
    """The candidates a CPU second (one at a time) and the rows of each list of ``points`` under revision
    ``rev``'s code, and its candidates a CPU second ``batch`` at a time as part_rate runs ours (nan: not run); each
    rate the median of ``repeat`` passes."""
    with python_tree(rev) as tree:
        case = tree / "case.json"
        case.write_text(json.dumps({"op": space.op.to_dict(), "hw": space.hw.as_dict(), "domains": space.domains,
                                    "knobs": [[space.knobs(p) for p in pts] for pts in points], "batch": batch,
                                    "repeat": repeat}))
        lines = run_in(tree, _BASELINE_RUN, str(case), f"{tree}/rows").splitlines()[-len(points):]
        rates = [[float(x) for x in line.split()] for line in lines]
        return [(rate, np.load(f"{tree}/rows{n}.npy"), batched) for n, (rate, batched) in enumerate(rates)]


def _rate(space: Space, points: list[int], batch: int = 0) -> tuple[float, list[np.ndarray]]:
    """Candidates a CPU second featurizing ``points`` from their census (``batch`` at a time; 0: one by
    one), and their rows."""
    scheds = [space[p] for p in points]
    start = time.process_time()
    if batch:
        rows = list(np.vstack([featurize(RESNET_3X3, GEMMINI, scheds[i:i + batch], space.domains)
                               for i in range(0, len(scheds), batch)]))
    else:
        rows = [candidate_features(RESNET_3X3, GEMMINI, s, space.domains) for s in scheds]
    return len(points) / (time.process_time() - start), rows


def _forget() -> None:
    """Drop the census's classes and the prior's tile costs: a run after another starts as cold."""
    forget_classes()
    forget_tile_costs()


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> str:
    return f"{sum(np.array_equal(x, y) for x, y in zip(a, b))} of {len(b)} rows bit-identical"


def _passes(space: Space, lists: list[list[int]], batch: int, repeat: int) -> list[tuple[float, list[np.ndarray]]]:
    """:func:`_rate` of each list, one after another from cold caches (random points first, then their
    neighbours): the median of ``repeat`` such passes, and the rows."""
    runs = []
    for _ in range(repeat):
        _forget()
        runs.append([_rate(space, points, batch) for points in lists])
    return [(float(np.median([run[n][0] for run in runs])), runs[-1][n][1]) for n in range(len(lists))]


def part_rate(points: int, rendered: int, budget_s: float, baseline: str | None = None, batch: int = 0,
              repeat: int = 1) -> None:
    space = Space(RESNET_3X3, GEMMINI)
    rng = np.random.default_rng(0)
    pts = space.sample(rng, points)
    near = [space.neighbor(p, rng) for p in pts for _ in range(4)]
    before = baseline_rows(baseline, space, pts, near, batch=batch, repeat=repeat) if baseline else None
    ours = _passes(space, [pts, near], 0, repeat)
    batched = _passes(space, [pts, near], batch, repeat) if batch else None
    passes = f" (each the median of {repeat} passes)" if repeat > 1 else ""
    print(f"featurizing {RESNET_3X3.key} on gemmini ({len(space):,} points), candidates a CPU second{passes}:")
    for n, what in enumerate((f"{len(pts)} random points", f"{len(near)} neighbours of them")):
        line = f"  census, {what:<24} {ours[n][0]:10.1f}/s"
        if batched is not None:
            line += (f"   batched by {batch}: {batched[n][0]:.1f}/s ({batched[n][0] / ours[n][0]:.2f}x), "
                     f"{_same(batched[n][1], ours[n][1])} to one-at-a-time's")
        if before is not None:
            line += f"   {baseline}: {before[n][0]:.1f}/s, {ours[n][0] / before[n][0]:.2f}x"
            line += f" (batched {batched[n][0] / before[n][0]:.2f}x)" if batched is not None else ""
            if batched is not None and not np.isnan(before[n][2]):
                line += f"; {baseline} batched: {before[n][2]:.1f}/s, ours {batched[n][0] / before[n][2]:.2f}x"
            line += f"; one-at-a-time {_same(before[n][1], ours[n][1])} to its"
            line += f", batched {_same(before[n][1], batched[n][1])}" if batched is not None else ""
        print(line)
    _rendered(space, pts, ours[0], ours[1][0], rendered, budget_s)


def _rendered(space: Space, pts: list[int], ours: tuple[float, list[np.ndarray]], near_rate: float, rendered: int,
              budget_s: float) -> None:
    """Render the first ``rendered`` random points (within ``budget_s``): their rate, and how many of their
    rows equal the census's."""
    start, equal, done = time.process_time(), 0, 0
    for p, counted in list(zip(pts, ours[1]))[:rendered]:
        if time.process_time() - start > budget_s:
            break
        row = features(lower(RESNET_3X3, space[p], GEMMINI), RESNET_3X3, space[p], space.domains)
        equal += bool(np.array_equal(row, counted))
        done += 1
    if done:   # --rendered 0 (or a budget spent before the first) renders none
        render_rate = done / (time.process_time() - start)
        print(f"  rendered, first {done} random points  {render_rate:10.2f}/s   ({equal} of {done} equal to the "
              "census's)")
        print(f"  census / rendered: {ours[0] / render_rate:.0f}x on random points, "
              f"{near_rate / render_rate:.0f}x on neighbours")


def part_layers(points: int) -> None:
    print(f"\nthe prior (closed form) and the stand-in against the RTL, {points} random points per layer (gemmini)")
    print(f"{'layer':<36} {'prior rho':>9} {'stand-in rho':>12} {'prior pick/best':>15} {'stand-in pick/best':>18}"
          f" {'prior s':>8} {'stand-in s':>10}")
    for name, op in LAYERS.items():
        space = Space(op, GEMMINI)
        scheds = [tk.default_schedule(op, GEMMINI), *(space[p] for p in space.sample(np.random.default_rng(1), points))]
        progs = [lower(op, s, GEMMINI) for s in scheds]
        inputs = op.random_inputs(0)
        rtl = np.array([tk.run(p, inputs, backend="verilator").cycles for p in progs], dtype=float)
        t0 = time.process_time()
        prior = np.array([estimate_cycles(op, s, GEMMINI) for s in scheds])
        t1 = time.process_time()
        stand_in = np.array([estimate(p)[0] for p in progs], dtype=float)
        t2 = time.process_time()
        pick = [rtl[np.argmin(e)] / rtl.min() for e in (prior, stand_in)]
        print(f"{name:<36} {spearman(prior, rtl):>9.3f} {spearman(stand_in, rtl):>12.3f} {pick[0]:>15.3f} "
              f"{pick[1]:>18.3f} {(t1 - t0) / len(scheds):>8.3f} {(t2 - t1) / len(scheds):>10.3f}", flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--part", choices=("rate", "layers"), action="append")
    p.add_argument("--points", type=int, default=200, help="(rate) random points; (layers) points per layer / 10")
    p.add_argument("--rendered", type=int, default=6, help="(rate) random points also rendered")
    p.add_argument("--render-budget", type=float, default=120.0, help="(rate) seconds of rendering at most")
    p.add_argument("--baseline", metavar="REV", help="(rate) also featurize the random points with this git revision")
    p.add_argument("--batch", type=int, default=0, metavar="N", help="(rate) also featurize the points N at a time")
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="(rate) each rate the median of N passes, each from cold caches (a process's first pass also "
                        "pays its allocator's and tables' first touch of memory)")
    args = p.parse_args()
    parts = args.part or ["rate", "layers"]
    if "rate" in parts:
        if args.repeat < 1:
            p.error(f"--repeat must be at least 1 (got {args.repeat})")
        part_rate(args.points, args.rendered, args.render_budget, args.baseline, args.batch, args.repeat)
    if "layers" in parts:
        part_layers(max(4, args.points // 10))
    return 0


if __name__ == "__main__":
    sys.exit(main())
