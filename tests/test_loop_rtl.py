"""LOOP_WS on the RTL: hand-built loop programs (tests/loop_programs.py) unrolled by the RTL's
LoopMatmul (rtl/loop_matmul.sv) run bit-exact with numpy and with the functional model (which
unrolls them with isa/loop_unroll.py), on the tiny preset (dim 4, a 64-row accumulator: one
loop's C tile holds at most 8 blocks).
"""
from __future__ import annotations

import numpy as np
import pytest

from isa import Fence, PRESETS
from loop_programs import LoopProgram, add_matmul, add_resadd, add_reuse
from simulators import base, functional

TINY = PRESETS["tiny"]


def run_exact(lp: LoopProgram) -> base.RunResult:
    prog = lp.build()
    ref = functional.run(prog, lp.inputs)
    res = base.run(prog, lp.inputs, "verilator", timeout=300)
    for name, want in lp.expected.items():
        np.testing.assert_array_equal(ref.outputs[name], want, err_msg=f"functional {name}")
        np.testing.assert_array_equal(res.outputs[name], want, err_msg=f"verilator {name}")
    assert res.cycles > 0
    return res


@pytest.mark.parametrize("shape", [(10, 7, 9), (1, 1, 1), (5, 13, 17), (8, 16, 3), (4, 4, 40)],
                         ids=lambda s: "x".join(map(str, s)))
def test_loop_shapes(tiny_model, shape) -> None:
    """One loop, odd bounds and pads; wide J: two-block mvins, C stored a block at a time."""
    lp = LoopProgram(TINY)
    add_matmul(lp, "m", *shape, seed=sum(shape))
    run_exact(lp)


@pytest.mark.parametrize("knobs", [
    dict(bias="row", relu=True, scale=0.05),               # D stride 0: the bias row repeats
    dict(bias="full", full_c=True),                         # int32 C, one block per mvout
    dict(bias="row", low_d=True, relu=True, scale=0.3),     # int8 D, mvins of two blocks
    dict(bias="full", full_c=True, relu=True),
], ids=["row_relu", "full_int32", "low_d", "full_int32_relu"])
def test_loop_bias(tiny_model, knobs) -> None:
    lp = LoopProgram(TINY)
    add_matmul(lp, "m", 7, 10, 9, seed=3, **knobs)
    run_exact(lp)


@pytest.mark.parametrize("transpose", ["a", "b"])
def test_loop_transposed_operand(tiny_model, transpose: str) -> None:
    """a_transpose / b_transpose: the loaders walk the stored (transposed) operand and the computes name
    its stored rows and columns; odd sizes (int32 C or a small scale: no result saturates), one loop with
    a bias row and a tiled nest."""
    lp = LoopProgram(TINY)
    add_matmul(lp, "one", 10, 7, 9, bias="row", full_c=True, transpose=transpose, seed=11)
    add_matmul(lp, "tiled", 13, 9, 22, tile=(2, 1, 2), scale=0.01, transpose=transpose, seed=12)
    run_exact(lp)


def test_loop_spad_reuse(tiny_model) -> None:
    """Zero A/B addresses with scratchpad half ids: later loops compute on what loop 0 loaded."""
    lp = LoopProgram(TINY)
    add_reuse(lp, "r", 6, 9, 11, seed=5)
    run_exact(lp)


@pytest.mark.parametrize("knobs", [dict(), dict(a_scale=0.5, b_scale=1.5, scale=0.25, relu=True)],
                         ids=["plain", "scaled_relu"])
def test_loop_resadd(tiny_model, knobs) -> None:
    """is_resadd: A into the accumulator, B added onto it, no execute; three loops of 2 block rows."""
    lp = LoopProgram(TINY)
    add_resadd(lp, "s", 21, 14, tile_rows=2, seed=7, **knobs)
    run_exact(lp)


def test_loop_k_split(tiny_model) -> None:
    """K over three loops in flight: the bias with the first, C (and the accumulator toggle) with the
    last; the loops in between store nothing and accumulate."""
    lp = LoopProgram(TINY)
    add_matmul(lp, "k", 8, 7, 23, tile=(2, 2, 2), bias="row", relu=True, scale=0.02, seed=11)
    run_exact(lp)


def test_loop_ij_tiles(tiny_model) -> None:
    """I/J tiles back to back (scratchpad and accumulator halves alternate), pads on the edge tiles,
    with a K split inside each tile."""
    lp = LoopProgram(TINY)
    add_matmul(lp, "t", 15, 11, 13, tile=(2, 2, 3), bias="full", scale=0.01, seed=13)
    run_exact(lp)


def test_loop_mixed_program(tiny_model) -> None:
    """Loops of every kind in one program, configs and a fence between them (passed through once the
    loops before them are unrolled)."""
    lp = LoopProgram(TINY)
    add_matmul(lp, "a", 9, 6, 10, tile=(2, 1, 2), bias="row", seed=1)
    add_resadd(lp, "b", 8, 16, tile_rows=1, relu=True, seed=2)
    lp.then(lambda addr: [Fence()])
    add_reuse(lp, "c", 5, 5, 5, seed=3)
    add_matmul(lp, "d", 4, 8, 8, full_c=True, seed=4)
    res = run_exact(lp)
    assert res.counters["exec_busy"] > 0

