"""Weight- vs output-stationary on the RTL: the toolkit's default schedule of each layer, as it is
(dataflow "ws") and with dataflow="os", side by side in one run (the gemmini preset or --preset, Verilator backend,
each output checked bit-exact against numpy), and which wins where.

    .venv/bin/python benchmarks/bench_dataflow.py                          # the Exo GEMMs
    .venv/bin/python benchmarks/bench_dataflow.py --suite resnet50 --limit 4 --jobs 2
    .venv/bin/python benchmarks/bench_dataflow.py --suite mobilenetv2 --layers 'dw_*' 'project_*' --preset tiny
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import toolkit as tk  # noqa: E402
from toolkit.kinds import flat_schedule  # noqa: E402
from benchmarks.bench_utilization import measure  # noqa: E402
from networks.suite import load_suite  # noqa: E402

DATAFLOWS = ("ws", "os")
KINDS = ("matmul", "conv2d", "depthwise")   # the kinds with a dataflow knob


def measure_layer(op: tk.Op, hw: tk.HardwareConfig) -> dict[str, int]:
    """RTL cycles of the default schedule in each dataflow, its outputs checked against the reference."""
    return {d: measure(op, hw, dataclasses.replace(flat_schedule(op, hw), dataflow=d)) for d in DATAFLOWS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", default="gemmini_gemms", help="a suite of networks/suites (default: the Exo GEMMs)")
    parser.add_argument("--layers", nargs="*", default=None, help="only the layers these names (globs) match")
    parser.add_argument("--limit", type=int, default=None, help="only the first N layers of the suite")
    parser.add_argument("--jobs", type=int, default=1, help="layers measured at once (one process each)")
    parser.add_argument("--preset", default="gemmini", help="the hardware preset (default: gemmini)")
    args = parser.parse_args()
    hw = tk.HardwareConfig.preset(args.preset)
    layers = [layer for layer in load_suite(args.suite).select(args.layers) if layer.op.KIND in KINDS][:args.limit]
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(measure_layer, [layer.op for layer in layers], [hw] * len(layers)))
    print(f"{args.suite} on {args.preset} (Verilator, default schedule, bit-exact): ws vs os cycles")
    print(f"{'layer':<28} {'kind':<10} {'ws':>12} {'os':>12} {'os/ws':>7}  faster")
    wins = dict.fromkeys(DATAFLOWS, 0)
    for layer, cycles in zip(layers, results):
        faster = min(DATAFLOWS, key=lambda d: cycles[d])
        wins[faster] += 1
        print(f"{layer.name:<28} {layer.op.KIND:<10} {cycles['ws']:>12,} {cycles['os']:>12,} "
              f"{cycles['os'] / cycles['ws']:>7.3f}  {faster}")
    ratios = [c["os"] / c["ws"] for c in results]
    geomean = float(np.exp(np.mean(np.log(ratios)))) if ratios else float("nan")
    print(f"ws faster on {wins['ws']}, os on {wins['os']} of {len(layers)} layers; os/ws geomean {geomean:.3f} "
          f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
