"""Measurement throughput on the RTL: candidates per second, one harness process per
candidate (before) against many candidates per harness process (after, ``run_many``).

    .venv/bin/python benchmarks/bench_measure.py [--sizes 64 256] [--count 48 8] [--workers 2]

For each size^3 matmul on the gemmini preset it takes ``count`` schedules spread over
the tuner's space and measures them twice on the verilator backend:

- simulator: the lowered programs run on one core, ``verilator.run`` each (a process
  start each) against one ``verilator.run_many`` (one process for all);
- measurer: what the tuner does per batch with ``workers`` processes, lowering and
  checking every candidate bit-exact: one ``run_candidate`` task per candidate (the
  measurer before batching) against ``Measurer.measure`` (small programs in groups,
  one harness process per group; see ``Measurer._groups``).

Each is timed ``repeat`` times, alternating before and after, and the fastest run
counts (the least disturbed by other load on the machine). Every run must give the
same cycles for every candidate; the script fails otherwise.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import sys
import time
from pathlib import Path
from typing import Callable, Iterable

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import toolkit as tk  # noqa: E402
from simulators import verilator as V  # noqa: E402
from tuner.measure import MeasureResult, Measurer, run_candidate  # noqa: E402
from tuner.space import Space  # noqa: E402

HW = tk.HardwareConfig.preset("gemmini")


def spread(space: Space, count: int) -> list[tk.Schedule]:
    step = max(1, len(space) // count)
    return [space[i] for i in range(0, len(space), step)][:count]


def best_of(repeat: int, before: Callable[[], list[int]], after: Callable[[], list[int]]
            ) -> tuple[float, float, list[int]]:
    """Fastest seconds of ``repeat`` alternating runs of each (the least disturbed by other load);
    both must give the same cycles every time."""
    times: dict[Callable, list[float]] = {before: [], after: []}
    cycles = None
    for _ in range(repeat):
        for fn in (before, after):
            start = time.perf_counter()
            got = fn()
            times[fn].append(time.perf_counter() - start)
            if cycles is not None and got != cycles:
                raise SystemExit(f"cycles differ between runs: {got} vs {cycles}")
            cycles = got
    return min(times[before]), min(times[after]), cycles


def simulator(op: tk.Op, schedules: list, repeat: int) -> tuple[float, float, list[int]]:
    inputs = op.random_inputs(0)
    progs = [tk.compile(op, HW, schedule=s) for s in schedules]
    return best_of(repeat, lambda: [V.run(p, inputs).cycles for p in progs],
                   lambda: [r.cycles for r in V.run_many([(p, inputs) for p in progs])])


def measurer(op: tk.Op, schedules: list, workers: int, repeat: int) -> tuple[float, float, list[int], str]:
    args = [(op.to_dict(), HW.as_dict(), s.to_dict(), "verilator", 600.0) for s in schedules]

    def cycles(results: Iterable[MeasureResult]) -> list[int]:
        results = list(results)
        if not all(r.ok for r in results):
            raise SystemExit(f"{op.key}: a candidate failed: {[r.error for r in results if not r.ok][:1]}")
        return [r.cycles for r in results]

    with cf.ProcessPoolExecutor(workers) as pool, Measurer("verilator", executor=pool, workers=workers) as m:
        list(pool.map(abs, range(workers)))   # the workers are up before the clock starts
        sizes = sorted({len(g) for g in m._groups(op, HW, len(schedules))}, reverse=True)
        return (*best_of(repeat, lambda: cycles(pool.map(run_candidate, *zip(*args))),
                         lambda: cycles(r for _, r in sorted(m.measure(op, HW, schedules), key=lambda x: x[0]))),
                "/".join(map(str, sizes)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--count", type=int, nargs="+", default=[48, 8], help="candidates per size")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3, help="alternating runs of each; the fastest counts")
    args = parser.parse_args()
    if len(args.count) != len(args.sizes):
        parser.error("--count needs one number per --sizes entry")
    V.build(HW)
    print(f"gemmini preset, verilator backend; candidates per second (higher is better), "
          f"before = one harness process per candidate, after = batched")
    print(f"{'matmul':>8} {'cands':>5} {'cycles (min-max)':>18} | {'simulator, 1 core':^25} | "
          f"{f'measurer, {args.workers} workers':^32}")
    print(f"{'':>8} {'':>5} {'':>18} | {'before':>7} {'after':>7} {'speedup':>8} | "
          f"{'group':>6} {'before':>7} {'after':>7} {'speedup':>8}")
    for size, count in zip(args.sizes, args.count):
        op = tk.matmul(size, size, size)
        schedules = spread(Space(op, HW), count)
        n = len(schedules)
        s1, s2, cycles = simulator(op, schedules, args.repeat)
        m1, m2, m_cycles, group = measurer(op, schedules, args.workers, args.repeat)
        if m_cycles != cycles:
            raise SystemExit(f"{op.key}: the measurer's cycles differ from the simulator's")
        print(f"{f'{size}^3':>8} {n:>5} {f'{min(cycles):,}-{max(cycles):,}':>18} | {n / s1:>7.1f} {n / s2:>7.1f} "
              f"{s1 / s2:>7.2f}x | {group:>6} {n / m1:>7.1f} {n / m2:>7.1f} {m1 / m2:>7.2f}x", flush=True)
    print("group: candidates per harness process in the measurer (programs that simulate long alone keep one "
          "each,\nso that the pool balances them: there before and after do the same)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
