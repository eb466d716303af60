"""The one compile-run-compare check of the test suites: an op on a backend, bit-exact against numpy; and the
networks' check against onnxruntime."""
from __future__ import annotations

from typing import Any, Mapping, NamedTuple

import numpy as np

import toolkit as tk
from isa import HardwareConfig, Program
from isa.checker import ProgramError, check
from simulators import functional


class Ran(NamedTuple):
    program: Program
    result: tk.RunResult


def assert_outputs(got: Mapping[str, np.ndarray], want: Mapping[str, np.ndarray], label: str = "") -> None:
    """Every array of ``want`` is in ``got`` with its dtype, shape and values."""
    for name, expected in want.items():
        assert got[name].dtype == expected.dtype, f"{label}{name}: {got[name].dtype}, expected {expected.dtype}"
        np.testing.assert_array_equal(got[name], expected, err_msg=f"{label}{name}")


def assert_like_functional(prog: Program, inputs: Mapping[str, np.ndarray], res: tk.RunResult) -> None:
    """The RTL's buffers equal the functional model's for the same program (all of them, not only the op's)."""
    ref = functional.run(prog, inputs)
    assert set(res.outputs) == set(ref.outputs)
    assert_outputs(res.outputs, ref.outputs, f"{res.backend} vs functional: ")


def assert_exact(op: tk.Op, hw: HardwareConfig | str, schedule: Any = None, *, backend: str = "functional",
                 seed: int = 0, inputs: Mapping[str, np.ndarray] | None = None, **options: Any) -> Ran:
    """Compile ``op`` for ``hw`` under ``schedule``, run it on ``backend`` with ``inputs`` (default: its
    random inputs of ``seed``) and assert every output equals ``op.reference``; on the RTL, every buffer
    equals the functional model's too."""
    prog = tk.compile(op, hw, schedule)
    inputs = op.random_inputs(seed) if inputs is None else inputs
    res = tk.run(prog, inputs, backend=backend, **options)
    assert_outputs(res.outputs, op.reference(inputs), f"{backend}: ")
    if backend == "verilator":
        assert_like_functional(prog, inputs, res)
    return Ran(prog, res)


ROUNDING = ("conv2d", "depthwise", "matmul", "host:Requantize")   # layers that round a sum of products


def assert_outputs_within_two_steps(net: Any, res: Any) -> None:
    """A network run's float outputs within 2 steps of onnxruntime's."""
    assert res.output_dev
    for name, dev in res.output_dev.items():
        assert dev <= 2 * net.tensors[net.quantized_source(name)].scale, (name, dev)


def assert_matches_onnxruntime(net: Any, res: Any) -> None:
    """A network run (``tk.run_network`` with compare) against onnxruntime: its float outputs within 2 steps, and
    every conv, matmul and host requantization bit-exact on onnxruntime's inputs except at rounding ties of the
    float32 requantization."""
    assert_outputs_within_two_steps(net, res)
    rows = [r for r in res.layers if r.kind in ROUNDING and r.dev is not None]
    assert rows
    for r in rows:
        assert r.dev <= 1 and r.mismatches == (r.ties or 0), (r.name, r.dev, r.mismatches, r.ties)


def tie_inputs(op: tk.Op, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Inputs whose accumulators sit on rounding ties (scale 0.5, odd sums) where the op allows: A's first
    column odd, the rest 0, and B's first row 1. Other ops' inputs come back as they are."""
    if op.KIND != "matmul" or op.transpose_a or op.transpose_b:
        return dict(inputs)
    a, b = inputs["A"].copy(), inputs["B"].copy()
    a[:, 1:] = 0
    a[:, 0] = np.arange(a.shape[0]) * 2 - 5
    b[0] = 1
    return {**inputs, "A": a, "B": b}


def checker_accepts(prog: Program) -> bool:
    """Whether the static checker passes ``prog`` whole: its DRAM inside its buffers, no DRAM hazard."""
    try:
        check(prog)
    except ProgramError:
        return False
    return True
