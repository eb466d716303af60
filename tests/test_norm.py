"""Gemmini's normalization unit (isa.norm) on the functional model and the cpu backend: the integer kernels at
their edges, gemmini.h's own word sequences (sp_tiled_norm, LOOP_WS with LAYERNORM and SOFTMAX), the ops
tk.layernorm / tk.softmax / matmul(activation="igelu") under the toolkit's schedules and gemmini.h's, and the
checker's refusals. The RTL's tests are in test_norm_rtl.py."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import toolkit as tk
from isa import PRESETS, ConfigNorm, ConfigSt, HardwareConfig, LoopWs, Mvout, Program
from isa.checker import ProgramError, check
from isa.instructions import acc_addr
from isa.norm import (Act, IExpConsts, NormCmd, NormStat, iexp, igelu, igelu_consts, igelu_rows, igelu_step,
                      int_sqrt, layernorm_rows, scale_to_int8, softmax_consts, softmax_rows, trunc_div, wrap)
from norm_programs import random_rows, tiled_norm_program
from simulators import functional

TINY = PRESETS["tiny"]


# ---- the kernels at their edges -----------------------------------------------------------------------
def test_divider_truncates_toward_zero_and_saturates_on_zero_count() -> None:
    assert [trunc_div(n, 4) for n in (7, -7, 8, -1)] == [1, -1, 2, 0]
    assert trunc_div(5, 0) == 2 ** 31 - 1 and trunc_div(-5, 0) == -2 ** 31 and trunc_div(0, 0) == 2 ** 31 - 1


def test_int_sqrt_floors_and_takes_the_variance_unsigned() -> None:
    assert [int_sqrt(x) for x in (0, 1, 3, 4, 99, 100, 2 ** 32 - 1)] == [1, 1, 1, 2, 9, 10, 65535]
    assert int_sqrt(-1) == 65535   # a wrapped (negative) variance is read as its 32 unsigned bits


def test_scale_rounds_half_to_even_and_nan_is_the_largest() -> None:
    got = scale_to_int8(np.array([1, 3, 5, -1, -3, 1000, -1000]), np.float32(0.5))
    np.testing.assert_array_equal(got, [0, 2, 2, 0, -2, 127, -128])
    np.testing.assert_array_equal(scale_to_int8(np.array([0, 1, -1]), np.float32(np.inf)), [127, 127, -128])


def test_wrap_is_twos_complement() -> None:
    np.testing.assert_array_equal(wrap(np.array([2 ** 31, -2 ** 31 - 1, 5]), 32), [-2 ** 31, 2 ** 31 - 1, 5])
    np.testing.assert_array_equal(wrap(np.array([2 ** 32]), 33), [-2 ** 32])


def test_igelu_approximates_gelu_where_it_does_not_wrap() -> None:
    s = 0.02
    c = igelu_consts(s)
    q = np.arange(-400, 401)
    x = q * s
    gelu = x / 2 * (1 + np.vectorize(__import__("math").erf)(x / np.sqrt(2)))
    assert np.abs(igelu(q, c.qb, c.qc) * igelu_step(s) - gelu).max() < 0.02   # I-BERT's fit, within 0.02


def test_iexp_approximates_exp_and_saturates_its_shift() -> None:
    s = 0.05
    c = softmax_consts(s)
    q = np.arange(-300, 1)
    ratio = iexp(q, c) / iexp(np.array([0]), c)
    assert np.abs(ratio - np.exp(q * s)).max() < 0.03   # I-BERT fit, q_ln2 = 13 steps for ln 2 at S = 0.05
    assert iexp(np.array([-10 ** 6]), c)[0] == 0   # far below: the shift saturates to 32


def test_layernorm_of_a_constant_row_is_zero_and_stddev_floors_at_one() -> None:
    stat = NormStat()
    row = np.full(9, 37, dtype=np.int32)
    stat.feed(NormCmd.MEAN, row, IExpConsts(), 1.0)
    stat.feed(NormCmd.INV_STDDEV, row, IExpConsts(), 1.0)
    assert stat.mean == 37 and stat.inv_stddev == np.float32(1.0)
    np.testing.assert_array_equal(stat.output(row, Act.LAYERNORM, IExpConsts(), 1.0), np.zeros(9))


def test_layernorm_rows_normalizes() -> None:
    x = random_rows(6, 64, seed=1)
    y = layernorm_rows(x, 32.0).astype(float) / 32
    assert np.allclose(y[1:].mean(axis=1), 0, atol=0.05) and np.allclose(y[1:].std(axis=1), 1, atol=0.05)


def test_softmax_rows_sum_to_127() -> None:
    c = softmax_consts(0.05)
    y = softmax_rows(random_rows(5, 40, seed=2, spread=60), c, 1.0).astype(int)
    assert np.all(np.abs(y.sum(axis=1) - 127) <= 20)   # int8 rounding of 40 terms


# ---- gemmini.h's sequences on the functional model ---------------------------------------------------------
@pytest.mark.parametrize("act", [Act.LAYERNORM, Act.SOFTMAX, Act.IGELU])
@pytest.mark.parametrize("rows, cols, stat_ids", [(3, 7, 2), (5, 9, 4), (6, 13, 1), (4, 4, 3)])
def test_sp_tiled_norm_words_equal_the_reference(act: Act, rows: int, cols: int, stat_ids: int) -> None:
    x = random_rows(rows, cols, seed=rows * cols, spread=300 if act == Act.SOFTMAX else 2000)
    consts = {Act.SOFTMAX: softmax_consts(0.05), Act.IGELU: igelu_consts(0.05)}.get(act, IExpConsts())
    scale = {Act.IGELU: igelu_step(0.05) / 0.05}.get(act, 1.0)
    got = functional.run(tiled_norm_program(TINY, rows, cols, act, scale, consts, stat_ids), {"X": x}).outputs["Y"]
    want = {Act.LAYERNORM: lambda: layernorm_rows(x, scale), Act.SOFTMAX: lambda: softmax_rows(x, consts, scale),
            Act.IGELU: lambda: igelu_rows(x, consts, scale)}[act]()
    np.testing.assert_array_equal(got, want)


def loop_ws_normalized(op: tk.Matmul, act: Act, hw: HardwareConfig, **tiles) -> Program:
    """gemmini.h's tiled_matmul_auto with LAYERNORM or SOFTMAX: its words for ``op`` with the loop's act and the
    store activation set as tiled_matmul_outer sets them, under gemmini.h's tiles or ``tiles`` in their place
    (whole rows in one tile: tile_J covers N, by default)."""
    tiles = {"tile_j": -(-op.N // hw.dim), **tiles}
    prog = tk.compile(op, hw, schedule=dataclasses.replace(tk.gemmini_schedule(op, hw), **tiles))
    consts = softmax_consts(0.05)
    words = []
    for ins in prog.instructions:
        if isinstance(ins, ConfigSt):
            words.append(dataclasses.replace(ins, activation=int(act) & 3))
            if act == Act.SOFTMAX:
                words += [ConfigNorm(q_const=consts.qln2, act_msb=1, qb=consts.qb, qc=consts.qc),
                          ConfigNorm(q_const=consts.qln2_inv, q_const_type=1, act_msb=1, qb=consts.qb, qc=consts.qc)]
        else:
            words.append(dataclasses.replace(ins, act=int(act)) if isinstance(ins, LoopWs) else ins)
    return Program(hw, words, prog.buffers)


@pytest.mark.parametrize("hw_name", ["tiny", "gemmini"])
@pytest.mark.parametrize("act", [Act.LAYERNORM, Act.SOFTMAX])
def test_loop_ws_normalizes_each_row(hw_name: str, act: Act) -> None:
    hw = PRESETS[hw_name]
    op = tk.matmul(11, 9, 5, bias="full")
    inputs = op.random_inputs(seed=4)
    inputs["A"] //= 16   # scores of a few steps, as a softmax's inputs are
    acc = op.accumulate(inputs)
    want = layernorm_rows(acc, 1.0) if act == Act.LAYERNORM else softmax_rows(acc, softmax_consts(0.05), 1.0)
    got = functional.run(loop_ws_normalized(op, act, hw), inputs).outputs["C"]
    np.testing.assert_array_equal(got, want)


# ---- the ops -----------------------------------------------------------------------------------------------
NORM_OPS = {
    "ln_odd": tk.layernorm(7, 13), "ln_wide": tk.layernorm(40, 62, scale=0.5), "ln_int8": tk.layernorm(5, 6, in_dtype="int8", scale=3.0),
    "sm_odd": tk.softmax(9, 37, input_scale=0.05), "sm_int8": tk.softmax(33, 20, input_scale=0.1, in_dtype="int8"),
    "sm_scale": tk.softmax(17, 16, input_scale=0.05, scale=0.5),
    "gelu_int8": tk.igelu(9, 21, input_scale=0.05, scale=25.0), "gelu_int32": tk.igelu(5, 7, input_scale=0.01, in_dtype="int32"),
}


@pytest.mark.parametrize("hw_name", ["tiny", "gemmini"])
@pytest.mark.parametrize("name", NORM_OPS)
def test_norm_ops_equal_their_reference(hw_name: str, name: str) -> None:
    op = NORM_OPS[name]
    inputs = op.random_inputs(seed=5)
    want = op.reference(inputs)["Y"]
    schedules = [None, tk.kinds.KINDS["norm"].default(op, PRESETS[hw_name]).replace(stat_ids=2, mvout_blocks=1)]
    if op.in_dtype == "int32" and (op.function == "layernorm" or op.input_scale == 0.05):
        schedules.append("gemmini")
    for schedule in schedules:
        prog = tk.compile(op, hw_name, schedule=schedule)
        np.testing.assert_array_equal(tk.run(prog, inputs).outputs["Y"], want, err_msg=str(schedule))
    np.testing.assert_array_equal(tk.run(prog, inputs, backend="cpu").outputs["Y"], want)


def test_the_default_issues_fewer_words_than_the_library() -> None:
    for op in (tk.layernorm(128, 768), tk.softmax(128, 128, input_scale=0.05)):
        ours = tk.compile(op, "gemmini")
        library = tk.compile(op, "gemmini", schedule="gemmini")
        assert len(ours.instructions) < len(library.instructions)


@pytest.mark.parametrize("schedule", [None, "gemmini"])
def test_matmul_igelu_equals_its_reference(schedule) -> None:
    op = tk.matmul(19, 21, 10, bias="row", activation="igelu", input_scale=0.02, scale=igelu_step(0.02) / (16 / 127))
    inputs = op.random_inputs(seed=6)
    inputs["A"] //= 16   # accumulators of a few hundred steps: GELU's curve, not its saturation
    inputs["B"] //= 16
    inputs["bias"] //= 8192
    want = op.reference(inputs)["C"]
    assert np.unique(want).size > 20
    prog = tk.compile(op, TINY, schedule=schedule)
    for backend in ("functional", "cpu"):
        np.testing.assert_array_equal(tk.run(prog, inputs, backend=backend).outputs["C"], want)


@pytest.mark.parametrize("make, message", [
    (lambda: tk.matmul(4, 4, 4, activation="igelu", out_dtype="int32"), "igelu"),
    (lambda: tk.conv2d(1, 4, 4, 4, 4, activation="igelu"), "activation='igelu' is not one of"),
    (lambda: tk.softmax(4, 4, input_scale=2.0), "above ln 2"),
    (lambda: tk.layernorm(4, 4, in_dtype="int16"), "in_dtype"),
])
def test_bad_ops_are_refused(make, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


def test_library_refuses_what_tiled_norm_cannot_do() -> None:
    with pytest.raises(tk.ScheduleError, match="bert_scale"):
        tk.compile(tk.softmax(4, 4, input_scale=0.1), TINY, schedule="gemmini")
    with pytest.raises(tk.ScheduleError, match="int32 rows"):
        tk.compile(tk.layernorm(4, 4, in_dtype="int8"), TINY, schedule="gemmini")
    with pytest.raises(tk.ScheduleError, match="Can't fit"):
        tk.compile(tk.layernorm(4, 70), TINY, schedule="gemmini")


# ---- the checker -----------------------------------------------------------------------------------------
def _store_program(hw: HardwareConfig, *words) -> Program:
    base = tiled_norm_program(TINY, 2, 4, Act.LAYERNORM)
    return Program(hw, [*base.instructions[:3], *words], base.buffers)


@pytest.mark.parametrize("words, message", [
    ([ConfigNorm(stat_id=4)], "stat_id=4 is past the normalization unit's 4 stat ids"),
    ([Mvout(0x1000, 3 << 26, 1, 4)], "norm command VARIANCE reads accumulator rows, not the scratchpad"),
    ([Mvout(0x1000, acc_addr(0, full=True, norm=NormCmd.MEAN), 1, 4)], "not .full"),
    ([ConfigSt(dram_stride=4, activation=2, pool_stride=1, pool_size=1, pool_out_dim=1, porows=1, pocols=1,
               orows=1, ocols=1), Mvout(0x1000, acc_addr(0), 1, 4)], "LAYERNORM with config_st's pooling"),
])
def test_checker_refuses_what_the_unit_cannot_do(words, message: str) -> None:
    with pytest.raises(ProgramError, match=message):
        check(_store_program(TINY, *words))


def test_hardware_without_the_unit_refuses_it() -> None:
    bare = dataclasses.replace(TINY, norm_stats=0, name="tiny_bare")
    with pytest.raises(ProgramError, match="no normalization unit"):
        check(_store_program(bare, ConfigNorm()))
    with pytest.raises(ProgramError, match="no normalization unit"):
        check(_store_program(bare, Mvout(0x1000, acc_addr(0, norm=NormCmd.SUM), 1, 4)))
    with pytest.raises(tk.ScheduleError, match="no normalization unit"):
        tk.compile(tk.layernorm(4, 4), bare)


# ---- a matmul that normalizes its rows (gemmini.h's tiled_matmul_auto with LAYERNORM or SOFTMAX) ----------------
FUSED = {"ln_bias": tk.matmul(11, 9, 5, bias="full", activation="layernorm", scale=8.0),
         "sm_ragged": tk.matmul(19, 24, 13, activation="softmax", input_scale=0.02),
         "sm_wide": tk.matmul(40, 32, 30, activation="softmax", input_scale=0.004, bias="row")}


@pytest.mark.parametrize("hw_name", ["tiny", "gemmini"])
@pytest.mark.parametrize("name", FUSED)
def test_matmul_normalizing_rows_equals_its_reference(hw_name: str, name: str) -> None:
    op = FUSED[name]
    inputs = op.random_inputs(seed=7)
    inputs["A"] //= 16   # scores of a few steps
    if "bias" in inputs:
        inputs["bias"] //= 4096
    want = op.reference(inputs)["C"]
    assert np.unique(want).size > 10
    prog = tk.compile(op, hw_name)
    assert prog.meta["schedule"]["call"] == "tiled_matmul_auto"   # the default is gemmini.h's: whole rows
    for backend in ("functional", "cpu"):
        np.testing.assert_array_equal(tk.run(prog, inputs, backend=backend).outputs["C"], want)


def test_matmul_normalizing_rows_refuses_what_cannot_hold_a_row() -> None:
    op = FUSED["sm_wide"]
    with pytest.raises(tk.ScheduleError, match="tile_j must be all 8 column blocks"):
        tk.compile(op, TINY, schedule=dataclasses.replace(tk.gemmini_schedule(op, TINY), tile_j=2))
    with pytest.raises(tk.ScheduleError, match="do not hold whole rows"):
        tk.compile(op, TINY, schedule=tk.kinds.KINDS["matmul"].schedule(1, 1, 1))
    with pytest.raises(tk.ScheduleError, match="a row of 128 columns does not fit half of tiny's accumulator"):
        tk.compile(tk.matmul(4, 128, 4, activation="layernorm"), TINY)
    with pytest.raises(ValueError, match="out_dtype='int8'"):
        tk.matmul(4, 4, 4, activation="softmax", out_dtype="int32")


def test_int8_softmax_enters_the_accumulator_shifted_for_a_fine_q_ln2() -> None:
    """int8 logits at 0.1 a step: without the 2^k load scale I-exp's q_ln2 would be 6 and outputs up to 8 steps
    off the float softmax; shifted, at most 1. The shift shrinks where a row's exponentials could pass int32."""
    op = tk.softmax(64, 128, input_scale=0.1, in_dtype="int8")
    assert op.input_shift == 7 and tk.softmax(4, 20, input_scale=0.1, in_dtype="int8").input_shift == 8
    assert tk.softmax(4, 768, input_scale=0.1, in_dtype="int8").input_shift == 6
    assert tk.softmax(4, 16, input_scale=0.1).input_shift == 0   # int32 rows: as they are
    x = op.random_inputs(seed=8)["X"]
    logits = x * 0.1
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    want = np.rint(127 * p / p.sum(axis=1, keepdims=True))
    got = op.reference({"X": x})["Y"]
    assert np.abs(got - want).max() <= 1
    prog = tk.compile(op, "gemmini")
    assert "scale=128.0" in prog.to_asm()
    np.testing.assert_array_equal(tk.run(prog, {"X": x}).outputs["Y"], got)


def test_int8_layernorm_enters_the_accumulator_shifted_for_a_finer_sqrt() -> None:
    """int8 rows as a calibrated scale leaves them (std ~30 steps, +-4 std filling int8): unshifted, the truncated
    mean and the floor square root of an integer variance leave outputs 4 steps off the float LayerNorm; loaded
    times 2^k (the most whose squared deviations cannot pass int32, Popoviciu's bound), at most 1. Rows at that
    bound (half -128, half 127) do not wrap. The functional model and the CPU backend agree with the reference."""
    op = tk.layernorm(32, 768, in_dtype="int8", scale=127 / 4)
    assert op.input_shift == 3 and tk.layernorm(4, 6, in_dtype="int8").input_shift == 7
    assert tk.layernorm(4, 768).input_shift == 0   # int32 rows: as they are
    x = np.random.default_rng(3).normal(0, 30, op.shape).round().clip(-128, 127).astype(np.int8)
    x[0] = np.where(np.arange(768) % 2, 127, -128)
    xf = x.astype(np.float64)
    norm = (xf - xf.mean(axis=1, keepdims=True)) / xf.std(axis=1, keepdims=True)
    want = np.clip(np.rint(norm * op.scale), -128, 127)
    got = op.reference({"X": x})["Y"]
    unshifted = tk.layernorm(32, 768, scale=op.scale).reference({"X": x.astype(np.int32)})["Y"]
    assert np.abs(got - want).max() <= 1 < np.abs(unshifted - want).max()
    prog = tk.compile(op, "gemmini")
    assert "scale=8.0" in prog.to_asm()
    for backend in ("functional", "cpu"):
        np.testing.assert_array_equal(tk.run(prog, {"X": x}, backend=backend).outputs["Y"], got)


def test_igelu_rows_are_the_float_gelu_within_a_step() -> None:
    """tk.igelu of int8 values at 0.05 a step (to +-6.4): loaded times 2^3 (at 2^4 a product would pass int32), its
    output within one step of the float GELU quantized at 0.04; gemmini.h's tiled_norm has no I-GELU."""
    from scipy.special import erf
    op = tk.igelu(8, 256, input_scale=0.05, scale=25.0)
    assert op.input_shift == 3
    x = np.tile(np.arange(-128, 128, dtype=np.int8), (8, 1))
    real = x * 0.05
    want = np.clip(np.rint(0.5 * real * (1 + erf(real / np.sqrt(2))) * 25.0), -128, 127)
    got = op.reference({"X": x})["Y"]
    assert np.abs(got - want).max() <= 1
    np.testing.assert_array_equal(tk.run(tk.compile(op, "gemmini"), {"X": x}).outputs["Y"], got)
    with pytest.raises(tk.ScheduleError, match="tiled_norm normalizes rows"):
        tk.compile(op, "gemmini", schedule="gemmini")
    with pytest.raises(ValueError, match="overflows int32"):
        tk.igelu(4, 4, input_scale=1e-4)


def test_igelu_rows_wider_than_the_accumulator_are_read_as_shorter_rows() -> None:
    """I-GELU is elementwise: a row of 3072 values (BERT's FFN), which LayerNorm could not hold, is walked as rows
    of 512 on gemmini (two row blocks fit its accumulator) and 32 on tiny, the buffers as they are."""
    op = tk.igelu(3, 3072, input_scale=0.05, scale=20.0)
    x = op.random_inputs(seed=1)
    for hw, cols in (("gemmini", 512), ("tiny", 32)):
        prog = tk.compile(op, hw)
        assert f"dram_stride={cols} " in prog.to_asm() and prog.buffers["X"].shape == (3, 3072)
        np.testing.assert_array_equal(tk.run(prog, x).outputs["Y"], op.reference(x)["Y"])
    with pytest.raises(tk.ScheduleError, match="a row of 3072 values"):
        tk.compile(tk.layernorm(3, 3072), "gemmini")
