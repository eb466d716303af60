"""Speed of the RTL backend: simulated cycles per second of the Verilator harness.

    python benchmarks/bench_verilator.py [--dims 4 8 16] [--size 512] [--fresh]

For each array size (the gemmini preset with ``dim`` changed) it builds the model
(or reports the cached build's time; --fresh rebuilds into an empty cache), runs
the default schedule of a size^3 matmul, checks it against the reference and
prints simulated cycles, cycles/s of the harness's clock loop (one core),
build time and utilization = ideal cycles / measured cycles.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import toolkit as tk  # noqa: E402
from simulators import verilator as V  # noqa: E402


def bench(dim: int, size: int) -> dict:
    hw = dataclasses.replace(tk.HardwareConfig.preset("gemmini"), name=f"gemmini-dim{dim}", dim=dim)
    cached = (V.cache_root() / V.build_key(hw) / "Vsim").exists()
    t0 = time.perf_counter()
    binary = V.build(hw)
    build_s = time.perf_counter() - t0
    if cached:
        recorded = binary.parent / "build_seconds"
        build_s = float(recorded.read_text()) if recorded.exists() else float("nan")
    op = tk.matmul(size, size, size)
    prog = tk.compile(op, hw)
    inputs = op.random_inputs(seed=0)
    res = tk.run(prog, inputs, backend="verilator", timeout=3600)
    np.testing.assert_array_equal(res.outputs["C"], op.reference(inputs)["C"])
    d = hw.dim
    ideal = -(-size // d) ** 3 * d
    sched = tk.default_schedule(op, hw)
    return {"dim": dim, "build_s": build_s, "cached": cached, "cycles": res.cycles, "sim_s": res.sim_seconds,
            "wall_s": res.wall_s, "rate": res.cycles / res.sim_seconds, "ideal": ideal,
            "util": ideal / res.cycles, "schedule": f"{sched.tile_i}x{sched.tile_j}x{sched.tile_k}",
            "counters": res.counters}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[4, 8, 16])
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--fresh", action="store_true", help="build into an empty temporary cache")
    args = parser.parse_args()
    if args.fresh:
        os.environ["SYSTOLIC_CACHE"] = tempfile.mkdtemp(prefix="systolic-bench-")
    print(f"matmul {args.size}^3, default schedule, gemmini preset with dim changed; "
          f"machine {V.machine_key()}, CFLAGS {V.CFLAGS}")
    print(f"{'dim':>4} {'build s':>8} {'tiles':>9} {'cycles':>10} {'ideal':>10} {'util':>6} "
          f"{'sim s':>7} {'cycles/s':>11} {'bank stall':>10} {'dma wait':>9}")
    for dim in args.dims:
        r = bench(dim, args.size)
        c = r["counters"]
        print(f"{r['dim']:>4} {r['build_s']:>7.1f}{'*' if r['cached'] else ' '} {r['schedule']:>9} "
              f"{r['cycles']:>10} {r['ideal']:>10} {r['util']:>6.1%} {r['sim_s']:>7.2f} {r['rate']:>11,.0f} "
              f"{c['stall_bank_conflict']:>10} {c['stall_dma_wait']:>9}", flush=True)
    print("* build time recorded when the cached model was built")
    return 0


if __name__ == "__main__":
    sys.exit(main())
