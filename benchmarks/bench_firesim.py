"""Calibration: `schedule="gemmini"` (Gemmini's library, LOOP_WS words) on our RTL beside Gemmini's
library on Gemmini itself, on FireSim.

The FireSim figures are ucb-bar/merlin, merlin/tests/data/firesim_queue/
job734_gemm_batch_uart_skeleton.log, hw_config alveo_u250_firesim_gemmini_rocket_30mhz, the
vendor-library arm (tiled_matmul_auto, WS): cycles for the six Exo GEMMs, M x K x N. Every run
here is on the gemmini preset, checked bit-exact against numpy, and measured side by side with
the old flat port (`schedule="gemmini-flat"`) in the same process. "DMA B/c" is the bytes our
run moves per cycle (reads and writes, against the port's 16 a cycle): the shapes that fall
short of ideal on FireSim are the ones that ask most of the memory system. The cycle stack
(share of the total per unit) says where each run's time goes.

    .venv/bin/python benchmarks/bench_firesim.py
    .venv/bin/python benchmarks/bench_firesim.py --shapes 512x512x512 --no-flat
    .venv/bin/python benchmarks/bench_firesim.py --no-flat --l2-warm     # the inputs start in the L2
    .venv/bin/python benchmarks/bench_firesim.py --config gemmini-alone  # the accelerator alone
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import toolkit as tk  # noqa: E402
from isa.opcodes import STACK, STACK_UNITS, stack_counter  # noqa: E402
from toolkit.kinds import ideal_cycles  # noqa: E402

FIRESIM = {(512, 512, 512): 545_744, (12544, 64, 256): 1_196_229, (12544, 256, 64): 810_687,
           (3136, 128, 512): 919_243, (3136, 512, 128): 863_123, (784, 256, 1024): 814_918}


def measure(op: tk.Op, hw: tk.HardwareConfig, schedule: str) -> tk.RunResult:
    inputs = op.random_inputs(seed=0)
    res = tk.run(tk.compile(op, hw, schedule=schedule, allow_large=True), inputs, backend="verilator")
    want = op.reference(inputs)
    for name, value in want.items():
        if not np.array_equal(res.outputs[name], value):
            raise SystemExit(f"{op}: schedule={schedule} output {name} differs from numpy")
    return res


def stack_text(counters: dict[str, int]) -> str:
    total = counters["cycles"]
    parts = []
    for unit in STACK_UNITS:
        shares = {c: counters[stack_counter(unit, c)] / total for c in STACK}
        top = sorted(shares.items(), key=lambda kv: -kv[1])[:3]
        parts.append(f"{unit}: " + " ".join(f"{c} {s:.0%}" for c, s in top if s >= 0.01))
    return "; ".join(parts)


def soc_text(counters: dict[str, int], hw: tk.HardwareConfig) -> str:
    """With an L2 (the SoC): its misses and DRAM's bytes each way per cycle."""
    if not hw.l2_kib:
        return ""
    cycles = counters["cycles"]
    misses = counters["l2_read_misses"] + counters["l2_write_misses"]
    hits = counters["l2_read_hits"] + counters["l2_write_hits"]
    return (f"; L2 miss {misses / max(1, misses + hits):.0%}, DRAM B/c read "
            f"{counters['dram_bytes_read'] / cycles:.2f} write {counters['dram_bytes_written'] / cycles:.2f}")


def parse_shape(text: str) -> tuple[int, int, int]:
    try:
        m, k, n = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"shape {text!r} is not MxKxN (e.g. 512x512x512)") from None
    if (m, k, n) not in FIRESIM:
        raise argparse.ArgumentTypeError(f"shape {text!r} has no FireSim figure; choose from "
                                         + ", ".join("x".join(map(str, s)) for s in FIRESIM))
    return m, k, n


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", nargs="+", type=parse_shape, default=list(FIRESIM),
                   help="MxKxN shapes to run (default: all six)")
    p.add_argument("--no-flat", dest="flat", action="store_false", help="skip the old flat port")
    p.add_argument("--config", default="gemmini", choices=["gemmini", "gemmini-alone"],
                   help="gemmini: inside the FireSim SoC (host, L2, DRAM); gemmini-alone: the accelerator alone")
    p.add_argument("--l2-warm", action="store_true",
                   help="start with the inputs in the L2, as if the core had just written them (default: cold)")
    args = p.parse_args(argv)
    hw = dataclasses.replace(tk.HardwareConfig.preset(args.config), l2_warm=args.l2_warm)
    print(f"{'M x K x N':>16} {'FireSim':>10} {'FS util':>7} {'ours':>10} {'ours/FS':>8} {'util':>6} {'DMA B/c':>7}"
          + (f" {'flat':>10} {'flat/FS':>8}" if args.flat else "") + "  cycle stack (ours)")
    ratios, flat_ratios = [], []
    for m, k, n in args.shapes:
        op = tk.matmul(m, n, k, scale=0.001)
        res = measure(op, hw, "gemmini")
        fs = FIRESIM[(m, k, n)]
        ratios.append(res.cycles / fs)
        ideal = ideal_cycles(op, hw)
        dma = (res.counters["dma_bytes_read"] + res.counters["dma_bytes_written"]) / res.cycles
        line = (f"{m:>5}x{k:>4}x{n:>5} {fs:>10,} {ideal / fs:>7.3f} {res.cycles:>10,} {res.cycles / fs:>8.3f} "
                f"{ideal / res.cycles:>6.3f} {dma:>7.2f}")
        if args.flat:
            flat = measure(op, hw, "gemmini-flat").cycles
            flat_ratios.append(flat / fs)
            line += f" {flat:>10,} {flat / fs:>8.3f}"
        print(line + "  " + stack_text(res.counters) + soc_text(res.counters, hw), flush=True)
    geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"\ngeomean ours/FireSim: {geo:.3f} (target within 0.93-1.07; every shape within 0.85-1.15: "
          f"{'yes' if all(0.85 <= r <= 1.15 for r in ratios) else 'no'})")
    if flat_ratios:
        print(f"geomean flat port/FireSim: {math.exp(sum(map(math.log, flat_ratios)) / len(flat_ratios)):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
