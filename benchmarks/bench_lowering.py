"""Lowering and functional-simulation speed on one matmul or conv, beside the cpu backend.

    .venv/bin/python benchmarks/bench_lowering.py                  # 512^3 on gemmini
    .venv/bin/python benchmarks/bench_lowering.py --conv           # ResNet-50's 56x56 64->64 3x3 conv
    .venv/bin/python benchmarks/bench_lowering.py --size 256 --preset tiny --profile

Lowering is split into plan (schedule, memory plan and tile walk), render (the
Jinja template) and parse (assembly back to instructions); the functional run
includes the static check, which is also timed alone. Times are the best of
``--repeats`` runs. Targets (one core): lowering < 0.5 s, functional sim < 2 s.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

import toolkit as tk  # noqa: E402
import toolkit.conv.lowering as conv_lowering  # noqa: E402
import toolkit.gemm.lowering as lowering  # noqa: E402
from isa.checker import check  # noqa: E402

TARGETS = {"lowering (cold)": 0.5, "lowering (warm)": 0.5, "functional": 2.0}


@contextmanager
def timed(module: Any, name: str, sink: dict[str, float]) -> Iterator[None]:
    """Accumulate the time spent in ``module.name`` into ``sink[name]`` while the block runs
    (outermost calls only: a template renders its tile sections through nested renders)."""
    original = getattr(module, name)
    depth = 0

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nonlocal depth
        depth += 1
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            depth -= 1
            if depth == 0:
                sink[name] = sink.get(name, 0.0) + time.perf_counter() - start

    setattr(module, name, wrapper)
    try:
        yield
    finally:
        setattr(module, name, original)


def best_of(repeats: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def lower_stages(op: tk.Op, hw: tk.HardwareConfig, repeats: int, cold: bool
                 ) -> tuple[dict[str, float], tk.Program]:
    """Best-of-``repeats`` compile, with its render and parse parts; ``cold`` empties the
    rendered-section and parsed-line caches before each run (warm runs reuse them, as the tuner does)."""
    runs = []
    for _ in range(max(1, repeats)):
        if cold:
            lowering.clear_caches()
        parts: dict[str, float] = {}
        module = conv_lowering if op.KIND == "conv2d" else lowering
        with timed(module, "render", parts), timed(module, "parse_program", parts):
            start = time.perf_counter()
            prog = tk.compile(op, hw)
            parts["total"] = time.perf_counter() - start
        runs.append(parts)
    best = min(runs, key=lambda parts: parts["total"])
    tag = "cold" if cold else "warm"
    stages = {f"plan ({tag})": best["total"] - best["render"] - best["parse_program"],
              f"render ({tag})": best["render"], f"parse ({tag})": best["parse_program"],
              f"lowering ({tag})": best["total"]}
    return stages, prog


def profile(label: str, fn: Callable[[], Any], top: int) -> None:
    prof = cProfile.Profile()
    prof.runcall(fn)
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(top)
    lines = out.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if "ncalls" in line)
    print(f"\n--- profile: {label} (top {top} by own time) ---")
    print("\n".join(lines[start:start + top + 1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=512, help="M = N = K")
    ap.add_argument("--conv", action="store_true", help="ResNet-50's 56x56 64->64 3x3 conv instead of the matmul")
    ap.add_argument("--preset", default="gemmini")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="also print cProfile hotspots of both stages")
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args()

    hw = tk.HardwareConfig.preset(args.preset)
    op = tk.conv2d(1, 56, 56, 64, 64) if args.conv else tk.matmul(args.size, args.size, args.size)
    inputs = op.random_inputs(0)
    (out_name, expected), = op.reference(inputs).items()

    stages, prog = lower_stages(op, hw, args.repeats, cold=True)
    stages.update(lower_stages(op, hw, args.repeats, cold=False)[0])
    n = len(prog)
    stages["check (alone)"], _ = best_of(args.repeats, lambda: check(prog))
    stages["functional"], res = best_of(args.repeats, lambda: tk.run(prog, inputs))
    assert np.array_equal(res.outputs[out_name], expected), "functional result differs from the reference"
    cpu = tk.run(prog, inputs, backend="cpu")
    assert np.array_equal(cpu.outputs[out_name], expected), "cpu result differs"

    tiles = "x".join(str(v) for k, v in prog.meta["schedule"].items() if k.startswith("tile_"))
    print(f"{op.key} on {hw.name}: {n} instructions, tiles {tiles}, best of {args.repeats}")
    print(f"{'stage':<18}{'wall s':>10}{'instr/s':>14}{'target s':>10}")
    for name, secs in stages.items():
        target = TARGETS.get(name)
        flag = "" if target is None else f"{target:>10.1f}" + ("" if secs < target else "  MISSED")
        print(f"{name:<18}{secs:>10.4f}{n / secs:>14,.0f}{flag}")
    print(f"{'cpu backend':<18}{cpu.wall_s:>10.4f}{'':>14}  ({cpu.counters['path']}, {cpu.counters['threads']} "
          f"BLAS threads, {cpu.counters['gmacs_per_s']:.1f} GMAC/s)")

    if args.profile:
        profile("lowering", lambda: tk.compile(op, hw), args.top)
        profile("functional simulation", lambda: tk.run(prog, inputs), args.top)


if __name__ == "__main__":
    main()
