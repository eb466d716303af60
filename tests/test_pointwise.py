"""schedule="gemmini-nn": gemmini.h's calls as Gemmini's own ResNet-50 and MobileNet make them. A pointwise conv
goes through tiled_matmul_nn_auto (toolkit/library/pointwise.py): the words of tiled_matmul_auto on the conv's
matmul view, over the conv's own buffers, bit-exact on both backends; any other op is schedule="gemmini"."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import toolkit as tk
from isa import HardwareConfig, encode_all
from isa.loop_words import LoopConvWs, LoopWs
from test_loop_groups import assert_groups_equal
from toolkit.family import program_groups
from toolkit.kinds import loop_groups, lower
from toolkit.library import LibraryPointwise, tiled_matmul_nn_auto
from toolkit.library.schedule import pointwise_matmul
from toolkit.schedule import ScheduleError

TINY = HardwareConfig.preset("tiny")
POINTWISE = [tk.conv2d(1, 9, 7, 24, 40, kernel=1, padding=0, bias="channel", activation="relu", scale=0.05),
             tk.conv2d(2, 6, 6, 16, 8, kernel=1, padding=0),
             tk.conv2d(1, 5, 5, 8, 16, kernel=1, padding=0, bias="channel", out_dtype="int32")]


@pytest.mark.parametrize("op", POINTWISE, ids=["relu_bias", "batch2", "int32"])
def test_a_pointwise_conv_runs_as_the_library_s_matmul_of_its_view(op) -> None:
    prog = tk.compile(op, TINY, "gemmini-nn")
    assert any(isinstance(i, LoopWs) for i in prog.instructions)
    assert not any(isinstance(i, LoopConvWs) for i in prog.instructions)
    view = pointwise_matmul(op)
    matmul = tk.compile(view, TINY, "gemmini")
    # the same words: the conv's buffers lie where the matmul's do
    assert [(b.addr, b.end) for b in prog.buffers.values()] == [(b.addr, b.end) for b in matmul.buffers.values()]
    np.testing.assert_array_equal(encode_all(prog.instructions), encode_all(matmul.instructions))
    inputs = op.random_inputs(3)
    res = tk.run(prog, inputs, "functional")
    for name, want in op.reference(inputs).items():
        np.testing.assert_array_equal(res.outputs[name], want)


@pytest.mark.rtl
def test_a_pointwise_conv_as_a_matmul_is_bit_exact_on_the_rtl() -> None:
    op = POINTWISE[0]
    inputs = op.random_inputs(4)
    res = tk.run(tk.compile(op, TINY, "gemmini-nn"), inputs, "verilator")
    np.testing.assert_array_equal(res.outputs["output"], op.reference(inputs)["output"])
    assert res.cycles


def test_other_ops_keep_the_library_s_own_call() -> None:
    for op in (tk.conv2d(1, 9, 9, 8, 16, kernel=3, padding=1), tk.conv2d(1, 9, 9, 8, 16, kernel=1, stride=2, padding=0),
               tk.conv2d(1, 8, 8, 8, 16, kernel=1, padding=0, pool=(3, 2, 1)), tk.matmul(32, 16, 24)):
        assert tk.compile(op, TINY, "gemmini-nn").instructions == tk.compile(op, TINY, "gemmini").instructions


def test_the_call_refuses_a_conv_that_is_no_matmul() -> None:
    strided = tk.conv2d(1, 9, 9, 8, 16, kernel=1, stride=2, padding=0)
    with pytest.raises(ScheduleError, match="1x1 kernel, stride 1, no padding, no pool"):
        tiled_matmul_nn_auto(strided, TINY)
    schedule = {"call": "tiled_matmul_nn_auto", "tile_i": 1, "tile_j": 1, "tile_k": 1}
    with pytest.raises(ScheduleError, match="1x1 kernel, stride 1, no padding, no pool"):
        tk.compile(strided, TINY, schedule)
    with pytest.raises(ScheduleError, match="tile is larger"):
        tk.compile(POINTWISE[1], TINY, dict(schedule, tile_k=9))


def test_its_groups_from_arrays_are_the_rendered_program_s() -> None:
    """The tuner's loop features read a library call's groups from its tiles' arrays: the same as the rendered
    program's, for the auto-tiler's tiles and others, both walks."""
    for op in POINTWISE:
        auto = tiled_matmul_nn_auto(op, TINY)
        for schedule in (auto, dataclasses.replace(auto, tile_i=1, order="ji"), LibraryPointwise(2, 1, 1)):
            prog = lower(op, schedule, TINY)
            groups, buffers = loop_groups(op, schedule, TINY)
            assert buffers == prog.buffers
            assert_groups_equal(groups, program_groups(prog))


def test_its_estimate_is_the_matmul_s_that_it_is() -> None:
    # the loops' pipeline follows the call, not the op's kind: a pointwise conv under tiled_matmul_nn_auto is
    # LOOP_WS (each compute waits for its own loads); taken as LOOP_CONV_WS it came out 1.65x the matmul's
    from toolkit.family import loop_cycles, program_loop_cycles
    soc = HardwareConfig.preset("gemmini")
    op = tk.conv2d(1, 7, 7, 576, 160, kernel=1, padding=0)
    view, prog = pointwise_matmul(op), tk.compile(op, soc, "gemmini-nn")
    conv = program_loop_cycles(op, prog)
    assert conv == program_loop_cycles(view, tk.compile(view, soc, "gemmini"))
    rtl = _rtl(op, tiled_matmul_nn_auto(op, soc), soc).cycles
    as_conv_loops = loop_cycles(op, program_groups(prog), soc, conv_loops=True)
    assert abs(conv - rtl) < 0.1 * rtl < 0.3 * rtl < as_conv_loops - rtl


def test_the_tuner_searches_both_loop_families_of_a_pointwise_conv() -> None:
    from toolkit.kinds import default_family, default_schedule
    from toolkit.library import LibraryConv
    from tuner.api import tune
    from tuner.space import Space
    from tuner.union import make_space
    soc = HardwareConfig.preset("gemmini")
    op = tk.conv2d(1, 14, 14, 256, 512, kernel=1, padding=0, scale=0.05)
    ours, nn = default_schedule(op, soc), tiled_matmul_nn_auto(op, soc)
    assert ours.CALL == "tiled_conv_auto" and default_family(op, soc) == "loops"
    assert Space(op, soc, family="loops").cls is LibraryConv
    pointwise = Space(op, soc, family="pointwise")
    assert pointwise.cls is LibraryPointwise and pointwise.default == nn and pointwise.index_of(nn) is not None
    with pytest.raises(ValueError, match="pointwise"):
        Space(tk.conv2d(1, 8, 8, 32, 32, kernel=1, padding=1), soc, family="pointwise")
    space = make_space(op, soc, "auto")   # tiled_conv_auto's loops and tiled_matmul_nn_auto's in one space
    assert [p.cls for p in space.parts] == [LibraryConv, LibraryPointwise] and space.default == ours
    assert space.seed_schedules() == [ours, nn] and "pointwise.tile_k" in space.names
    both = make_space(op, soc, "both", fix={"pointwise.order": "ji"})
    assert [p.family for p in both.parts] == ["flat", "loops", "pointwise"]
    assert set(both.parts[2].domains["order"]) == {"ji"} and len(both.parts[1].domains["order"]) == 2
    result = tune(op, soc, trials=6, progress=False, tuner_options={"feature_budget": 32})
    # the seeds first: the toolkit's default, then Gemmini's own networks' call with its own tiles
    assert [t.schedule for t in result.history[:2]] == [ours.to_dict(), nn.to_dict()]
    assert {t.schedule["call"] for t in result.history} <= {"tiled_conv_auto", "tiled_matmul_nn_auto"}
    assert result.default_schedule == ours and result.default_cycles == result.history[0].cycles
    assert result.cycles == min(t.cycles for t in result.history if t.status == "ok")


def _rtl(op, schedule, hw):
    """The RTL's result of ``op`` under ``schedule``, its output checked against numpy's."""
    inputs = op.random_inputs(1)
    res = tk.run(tk.compile(op, hw, schedule), inputs, "verilator")
    for name, want in op.reference(inputs).items():
        np.testing.assert_array_equal(res.outputs[name], want)
    return res


@pytest.mark.parametrize("shape, call", [((28, 28, 64, 64), "tiled_matmul_nn_auto"),
                                         ((14, 14, 1024, 256), "tiled_conv_auto")])
def test_the_default_takes_the_call_that_the_rtl_runs_faster(shape, call) -> None:
    # ResNet-50's s1_b1_1x1a at a quarter of its pixels, and its s3_1x1a, where tiled_conv_auto stays ahead:
    # its LOOP_WS loads clash with its own computes in the scratchpad's banks
    from toolkit.kinds import default_schedule
    soc = HardwareConfig.preset("gemmini")
    op = tk.conv2d(1, *shape, kernel=1, padding=0, bias="channel", activation="relu", scale=0.01)
    default = default_schedule(op, soc)
    assert default.CALL == call
    other = tk.gemmini_schedule(op, soc) if call == "tiled_matmul_nn_auto" else tiled_matmul_nn_auto(op, soc)
    assert _rtl(op, default, soc).cycles < _rtl(op, other, soc).cycles


def test_the_loop_estimate_counts_the_loads_that_clash_with_their_own_computes(monkeypatch) -> None:
    # LOOP_WS computes a loop's tiles while its loads come in, into the banks its computes read: the RTL's
    # execute unit loses those cycles to the load unit (exec_stack_bank), and the estimate counts them
    from toolkit import family
    soc = HardwareConfig.preset("gemmini")
    op = tk.conv2d(1, 14, 14, 1024, 256, kernel=1, padding=0)
    s = tiled_matmul_nn_auto(op, soc)
    res = _rtl(op, s, soc)
    groups = loop_groups(op, s, soc)[0]
    counted = family.loop_cycles(op, groups, soc, conv_loops=False)
    monkeypatch.setattr(family, "_bank_clashes", lambda words, funct, part, parts, hw: np.zeros(parts))
    blind = family.loop_cycles(op, groups, soc, conv_loops=False)
    assert res.counters["exec_stack_bank"] > 0.1 * res.cycles   # the RTL's own count of the clashes
    assert blind < counted < res.cycles
    assert res.cycles - counted < 0.3 * (res.cycles - blind)


def test_bank_clashes_are_the_rows_written_where_the_execute_reads() -> None:
    from isa import ComputePreloaded, Mvin, Preload, ACC_BIT, GARBAGE
    from isa.opcodes import Funct
    from toolkit.family import _bank_clashes
    soc = HardwareConfig.preset("gemmini")
    bank = soc.sp_rows // soc.sp_banks
    words = encode_all([Mvin(0x1000, 0, 16, 16), Mvin(0x2000, bank + 64, 16, 32),   # 16 rows in bank 0, 32 in 1
                        Preload(bank, 16, 16, ACC_BIT, 16, 16), ComputePreloaded(16, 16, 16, GARBAGE, 16, 16)])
    funct = words[:, 0].astype(np.int64)
    assert funct[0] == Funct.MVIN
    part = np.zeros(len(words), np.int64)
    # the preload reads 16 rows of bank 1, the compute 16 of bank 0: 16 x 16 + 32 x 16
    assert _bank_clashes(words, funct, part, 1, soc).tolist() == [16 * 16 + 32 * 16]
