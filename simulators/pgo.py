"""The training run of the Verilator model's profile-guided build (simulators/verilator.py): the
instrumented model clocks one ordinary program, and the optimized build reads its counts."""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np

from isa import HardwareConfig, ISAError, Program, layout
from isa.checker import check
from isa.gemmini_words import ws_configs, ws_loop

BLOCKS = 4   # the training matmul's blocks a side


def training_program(hw: HardwareConfig) -> tuple[Program, dict[str, np.ndarray]]:
    """A matmul of BLOCKS blocks a side with a bias row, ReLU and a scale, as one LOOP_WS in gemmini.h's
    words (the loads, the loop unroller, the mesh, the store's scale path, dispatch's hazards), and its
    inputs."""
    n = BLOCKS * hw.dim
    rng = np.random.default_rng(0)
    inputs = {"A": rng.integers(-128, 128, (n, n), dtype=np.int8), "B": rng.integers(-128, 128, (n, n), dtype=np.int8),
              "D": rng.integers(-(1 << 20), 1 << 20, (1, n)).astype(np.int32)}
    buffers = layout([("A", "input", "int8", (n, n)), ("B", "input", "int8", (n, n)), ("D", "input", "int32", (1, n)),
                      ("C", "output", "int8", (n, n))])
    addr = {name: buf.addr for name, buf in buffers.items()}
    words = [*ws_configs(hw.dim, n, n, 0, n, relu=True, scale=0.05),
             *ws_loop(BLOCKS, BLOCKS, BLOCKS, 0, 0, 0, addr["A"], addr["B"], addr["D"], addr["C"], n, n, 0, n,
                      ex_accumulate=1)]
    return Program(hw, words, buffers), inputs


def train(binary: Path, hw: HardwareConfig) -> str:
    """Runs :func:`training_program` on the instrumented ``binary`` (its counts land in the build's object
    directory) and returns a line for the build log. A program this config cannot run leaves the profile
    empty: the optimized build is then an ordinary one."""
    try:
        prog, inputs = training_program(hw)
        check(prog)
        data = prog.to_bytes(inputs)
    except ISAError as exc:   # the checker's refusal (a small scratchpad, no weight-stationary dataflow)
        return f"pgo: no training program for {hw.name}: {exc}\n"
    program, results = binary.parent / "train.bin", binary.parent / "train.res"
    program.write_bytes(data)
    out = subprocess.run([str(binary), str(program), str(results)], capture_output=True, text=True,
                         timeout=600)
    what = f"a LOOP_WS matmul of {BLOCKS} blocks a side"
    return f"pgo: training run of {what} on {hw.name}: exit {out.returncode}\n{out.stderr}"
