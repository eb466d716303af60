"""Alike loops' words once (isa.loop_unroll.issued_groups): every sum the loop family's features take
(toolkit.tally), weighed by the groups' counts, equals the sum over every loop's words
(isa.loop_unroll.issued_words), and the groups' steps are the program's loops with the host's words, on
gemmini.h's programs and on the tuner's loop candidates; and the groups taken from a library call's tiles as
arrays (isa.loop_groups, toolkit.kinds.loop_groups) are the rendered program's."""
from __future__ import annotations

import numpy as np
import pytest

import toolkit as tk
from isa import HardwareConfig, ISAError
from isa.loop_groups import CONV, groups_from_fields
from isa.loop_unroll import issued_groups, issued_words
from isa.loop_words import LAYOUTS, LOOP_CONV_WORDS, LoopConvWs, LoopError, LoopWs
from test_loop_shared import CANDIDATE_OPS, OPS, loop_candidates
from toolkit.family import program_groups
from toolkit.kinds import loop_groups, lower
from toolkit.tally import tally
from tuner.features import words_census
from tuner.space import Space


def assert_groups_sum_as_every_loop(op, prog, hw: HardwareConfig) -> int:
    """The groups' weighted sums against every loop's; how many loops the groups stand for."""
    words, host = issued_words(prog.instructions, hw)
    groups = issued_groups(prog.instructions, hw, sorted(b.addr for b in prog.buffers.values()))
    assert groups.host_words == host
    assert int(groups.count.sum()) == len(words)
    sizes = np.diff(groups.starts, append=len(groups.words))
    assert int(sizes[groups.order].sum()) == len(words)   # the parts in program order are every loop's words
    loops = sum(isinstance(ins, (LoopWs, LoopConvWs)) for ins in prog.instructions)
    assert len(groups.hosts) - loops in (0, 1) and (np.diff(groups.step) >= 0).all()
    every = tally(words_census(words), hw, prog.buffers)
    alike = tally(words_census(groups.words, groups.count), hw, prog.buffers)
    assert np.array_equal(alike.sums, every.sums)
    assert np.array_equal(alike.written, every.written) and np.array_equal(alike.read, every.read)
    return len(groups.words)


@pytest.mark.parametrize("name", OPS)
def test_library_programs_group_as_every_loop(name: str) -> None:
    hw = HardwareConfig.preset("tiny")
    op = OPS[name]
    assert_groups_sum_as_every_loop(op, tk.compile(op, hw, tk.gemmini_schedule(op, hw)), hw)


@pytest.mark.parametrize("name", CANDIDATE_OPS)
def test_loop_family_candidates_group_as_every_loop(name: str) -> None:
    hw = HardwareConfig.preset("tiny")
    for op, prog in loop_candidates(name, 5, hw):
        assert_groups_sum_as_every_loop(op, prog, hw)


def test_a_real_layer_s_loops_are_few_groups() -> None:
    """ResNet-50's 7x7x512 3x3 conv under gemmini.h's tiles on the SoC preset: the words the features
    take shrink, the sums stay."""
    hw = HardwareConfig.preset("gemmini")
    op = tk.conv2d(1, 7, 7, 512, 512, kernel=3, padding=1, bias="channel", activation="relu")
    prog = tk.compile(op, hw, tk.gemmini_schedule(op, hw))
    every = len(issued_words(prog.instructions, hw)[0])
    assert assert_groups_sum_as_every_loop(op, prog, hw) * 2 < every   # 63,300 of 145,676 words


def assert_groups_equal(a, b) -> None:
    for name in ("words", "count", "starts", "order", "step", "hosts", "bases"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


@pytest.mark.parametrize("name", OPS)
def test_groups_from_arrays_are_the_rendered_program_s(name: str) -> None:
    """toolkit.kinds.loop_groups takes a library call's tiles as arrays (isa.loop_groups): the same groups, array
    for array, as the rendered program's, for gemmini.h's tiles and random points of the loop family."""
    hw = HardwareConfig.preset("tiny")
    op = OPS[name]
    space = Space(op, hw, family="loops")
    points = space.sample(np.random.default_rng(5), min(6, len(space)))
    for schedule in [tk.gemmini_schedule(op, hw), *(space[i] for i in points)]:
        prog = lower(op, schedule, hw)
        groups, buffers = loop_groups(op, schedule, hw)
        assert buffers == prog.buffers
        assert_groups_equal(groups, program_groups(prog))


@pytest.mark.parametrize("op", [tk.conv2d(1, 28, 28, 128, 128, kernel=3, padding=1, bias="channel", activation="relu"),
                                tk.matmul(128, 768, 3072, bias="row")], ids=["s2_3x3", "bert_ffn"])
def test_groups_of_a_real_layer_are_the_rendered_program_s(op) -> None:
    """On the SoC preset, ResNet-50's 28x28x128 3x3 conv and BERT's first FFN GEMM: loops of many shapes,
    placed in both slots."""
    hw = HardwareConfig.preset("gemmini")
    space = Space(op, hw, family="loops")
    for i in space.sample(np.random.default_rng(0), 4):
        groups, _ = loop_groups(op, space[i], hw)
        assert len(np.unique(groups.order)) > 4
        assert_groups_equal(groups, program_groups(lower(op, space[i], hw)))


def _one_loop_fields(**changes: int) -> dict:
    """The fields of a small valid LOOP_CONV_WS, three loops of it (``changes`` per loop: arrays)."""
    fields = {f.name: 0 for cls in LOOP_CONV_WORDS for f in LAYOUTS[cls.FUNCT]}
    fields.update(batch_size=1, in_row_dim=4, in_channels=4, out_channels=4, out_row_dim=4, pool_out_row_dim=4,
                  out_col_dim=4, stride=1, pool_size=1, pool_stride=1, pool_out_col_dim=4, kernel_dim=1, pochs=4,
                  pocols=4, porows=4, batches=1, kchs=4, kcols=1, krows=1, in_col_dim=4, kernel_dilation=1, orows=4,
                  ocols=4, out_stride=4, weight_stride=4, in_stride=4, no_pool=1, max_pixels_per_row=1,
                  weights_addr=0x1000, output_addr=0x2000, bias_addr=0x3000, input_addr=0x4000)
    return {**fields, **{k: np.array(v) for k, v in changes.items()}}


def test_groups_from_fields_refuse_what_the_words_refuse() -> None:
    hw = HardwareConfig.preset("tiny")
    assert len(groups_from_fields(CONV, [], _one_loop_fields(), [], hw).words)   # the fields are a loop that runs
    with pytest.raises(ISAError, match=r"LoopConvWsConfig2\.pochs=70000 out of range"):
        groups_from_fields(CONV, [], _one_loop_fields(pochs=[4, 4, 70000]), [], hw)
    with pytest.raises(LoopError, match="padding"):
        groups_from_fields(CONV, [], _one_loop_fields(upad=[0, 9, 0]), [], hw)
    with pytest.raises(ValueError, match="plain words"):
        groups_from_fields(CONV, [LoopConvWs()], _one_loop_fields(), [], hw)
