"""Cost of switching weights on the RTL: cycles per block of a weight-stationary chain.

    python benchmarks/bench_weight_switch.py [--presets tiny gemmini-alone] [--blocks 64] [--json]

Two hand-built programs per preset, the same but for the weights (dim x dim blocks throughout):

* new:   N pairs preload(B_i, C_i) + compute_preloaded(A_i): every block brings new weights;
* reuse: one preload + compute_preloaded, then N - 1 pairs preload(garbage, C_i) +
         compute_accumulated(A_i): every block keeps the weights in the array.

A and B live in different scratchpad banks (no bank conflict between the A stream and the weight
reads), D is garbage, C accumulates into the accumulator. The operands are moved in and fenced
first, so the chain runs alone; its cost per block is the steady state of the per-instruction log:
(completion of the last compute - completion of the compute N/4) / (the computes in between).
One row a cycle is dim cycles per block. Both programs' outputs are checked against the
functional model.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import toolkit as tk  # noqa: E402
from isa import (GARBAGE, ComputeAccumulated, ComputePreloaded, ConfigEx, ConfigLd, ConfigSt, Fence,  # noqa: E402
                 Mvin, Mvout, PRESETS, HardwareConfig, Preload, Program, acc_addr, layout)
from simulators import functional  # noqa: E402

DISTINCT = 4   # distinct A and B blocks the chain cycles through
C_BLOCKS = 4   # accumulator blocks C cycles through


def chain_program(hw: HardwareConfig, n: int, new_weights: bool) -> tuple[Program, dict[str, np.ndarray]]:
    """The chain of ``n`` blocks (see the module doc) and its inputs."""
    d = hw.dim
    bufs = layout([("A", "input", "int8", (DISTINCT * d, d)), ("B", "input", "int8", (DISTINCT * d, d)),
                   ("C", "output", "int32", (C_BLOCKS * d, d))])
    a_base, b_base = 0, hw.sp_bank_rows          # A in bank 0, B in bank 1
    ins = [ConfigEx(), ConfigLd(dram_stride=d, state=0, block_stride=d),
           ConfigSt(dram_stride=4 * d)]
    for i in range(DISTINCT):
        ins.append(Mvin(bufs["A"].addr + i * d * d, a_base + i * d, d, d, state=0))
        ins.append(Mvin(bufs["B"].addr + i * d * d, b_base + i * d, d, d, state=0))
    ins.append(Fence())
    for i in range(n):
        a = a_base + (i % DISTINCT) * d
        c = acc_addr((i % C_BLOCKS) * d, accumulate=i >= C_BLOCKS)
        if new_weights or i == 0:
            ins.append(Preload(b_base + (i % DISTINCT) * d, d, d, c, d, d))
            ins.append(ComputePreloaded(a, d, d, GARBAGE, d, d))
        else:
            ins.append(Preload(GARBAGE, d, d, c, d, d))
            ins.append(ComputeAccumulated(a, d, d, GARBAGE, d, d))
    ins.append(Fence())
    for j in range(C_BLOCKS):
        ins.append(Mvout(bufs["C"].addr + j * d * d * 4, acc_addr(j * d, full=True), d, d))
    rng = np.random.default_rng(5)
    inputs = {name: rng.integers(-8, 8, (DISTINCT * d, d), dtype=np.int8) for name in ("A", "B")}
    return Program(hw, ins, bufs), inputs


def per_block(log: list[dict], dim: int) -> float:
    """Steady-state cycles per block from the completion times of the computes."""
    done = [e["complete"] for e in log if e["op"] in ("compute_preloaded", "compute_accumulated")]
    first = len(done) // 4
    return (done[-1] - done[first]) / (len(done) - 1 - first)


def measure(hw: HardwareConfig, n: int, new_weights: bool) -> dict:
    prog, inputs = chain_program(hw, n, new_weights)
    res = tk.run(prog, inputs, backend="verilator", log=True)
    ref = functional.run(prog, inputs)
    for name, want in ref.outputs.items():
        np.testing.assert_array_equal(res.outputs[name], want, err_msg=f"{hw.name} {name}")
    return {"cycles": res.cycles, "per_block": per_block(res.log, hw.dim)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", nargs="+", default=["tiny", "gemmini-alone"])
    ap.add_argument("--blocks", type=int, default=64, help="blocks in each chain (default 64)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = ap.parse_args(argv)
    rows = {}
    print(f"{'preset':8} {'dim':>3} {'blocks':>6} {'new weights':>12} {'reuse':>8} {'extra':>7}  (cycles/block)")
    for name in args.presets:
        hw = PRESETS[name]
        new = measure(hw, args.blocks, True)
        reuse = measure(hw, args.blocks, False)
        rows[name] = {"dim": hw.dim, "blocks": args.blocks, "new": new, "reuse": reuse}
        print(f"{name:8} {hw.dim:3d} {args.blocks:6d} {new['per_block']:12.2f} {reuse['per_block']:8.2f} "
              f"{new['per_block'] - reuse['per_block']:7.2f}   total cycles {new['cycles']} / {reuse['cycles']}")
    if args.json:
        print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
