"""Alike loops' words once (isa.loop_unroll.issued_groups): every sum the loop family's features take
(toolkit.tally), weighed by the groups' counts, equals the sum over every loop's words
(isa.loop_unroll.issued_words), and the groups' steps are the program's loops with the host's words, on
gemmini.h's programs and on the tuner's loop candidates."""
from __future__ import annotations

import numpy as np
import pytest

import toolkit as tk
from isa import HardwareConfig
from isa.loop_unroll import issued_groups, issued_words
from isa.loop_words import LoopConvWs, LoopWs
from test_loop_shared import CANDIDATE_OPS, OPS, loop_candidates
from toolkit.tally import tally
from tuner.features import words_census


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
