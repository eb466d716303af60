"""The training run of the Verilator model's profile-guided build (simulators/verilator.py): the
instrumented model clocks one ordinary program, and the optimized build reads its counts."""
from __future__ import annotations

import subprocess
from pathlib import Path

from isa import HardwareConfig


def train(binary: Path, hw: HardwareConfig) -> str:
    """Runs a training program on the instrumented ``binary`` (its counts land in the build's
    object directory) and returns a line for the build log. The program: a matmul of four tiles
    a side with a bias, ReLU and a scale in the default schedule (the loads, the mesh, the store's
    scale path, the dispatch's hazards). A program this config cannot run leaves the profile
    empty: the optimized build is then an ordinary one."""
    import toolkit as tk   # the lowering writes the program (toolkit imports the simulators)

    n = 4 * hw.dim
    try:
        op = tk.matmul(n, n, n, bias="row", activation="relu", scale=0.05)
        prog = tk.compile(op, hw)
        data = prog.to_bytes(op.random_inputs(seed=0))
    except Exception as exc:   # noqa: BLE001 (any refusal of the lowering: no profile, no failure)
        return f"pgo: no training program for {hw.name}: {exc}\n"
    program, results = binary.parent / "train.bin", binary.parent / "train.res"
    program.write_bytes(data)
    out = subprocess.run([str(binary), str(program), str(results)], capture_output=True, text=True,
                         timeout=600)
    return f"pgo: training run of matmul {n}^3 on {hw.name}: exit {out.returncode}\n{out.stderr}"
