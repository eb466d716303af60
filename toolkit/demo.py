"""``make demo``: a few matmuls lowered, run on the functional model and the CPU, checked bit-exact."""
from __future__ import annotations

import sys

import numpy as np

import toolkit as tk

SHAPES = [(64, 64, 64), (100, 37, 300), (256, 256, 256), (512, 512, 512)]


def main() -> int:
    hw = tk.HardwareConfig.preset("gemmini")
    print(f"{'M x N x K':>16} {'instructions':>12} {'mvin':>6} {'compute':>8} {'functional':>11} {'cpu':>9}  bit-exact")
    ok = True
    for M, N, K in SHAPES:
        op = tk.matmul(M, N, K, bias="row", activation="relu", scale=0.02)
        prog = tk.compile(op, hw)
        inputs = op.random_inputs(seed=0)
        ref = op.reference(inputs)["C"]
        fun = tk.run(prog, inputs, backend="functional")
        cpu = tk.run(prog, inputs, backend="cpu")
        exact = np.array_equal(fun.outputs["C"], ref) and np.array_equal(cpu.outputs["C"], ref)
        ok &= exact
        counts = prog.counts()
        mvins = sum(n for o, n in counts.items() if o.startswith("mvin"))
        computes = counts["compute_preloaded"] + counts["compute_accumulated"]
        print(f"{f'{M}x{N}x{K}':>16} {len(prog):>12} {mvins:>6} {computes:>8} {fun.wall_s * 1e3:>9.1f}ms "
              f"{cpu.wall_s * 1e3:>7.2f}ms  {'yes' if exact else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
