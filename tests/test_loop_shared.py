"""Each shape of loop unrolled once (isa.loop_shared): the primitives and the encoded words of every
program of Gemmini's loops are those of building each loop afresh, caches empty."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

import toolkit as tk
from isa import HardwareConfig, Program
from isa import loop_shared, loop_unroll, loop_unroll_conv
from isa.encoding import encode_all
from isa.instructions import Mvin
from isa.loop_shared import Phase, unrolled_words
from isa.loop_unroll import Unroller, issued, issued_words
from toolkit.ops import Op
from tuner.space import Space

sys.path.insert(0, str(Path(__file__).resolve().parent / "rtl"))
from conv_words import FLAG_CONVS, program  # noqa: E402  (tests/rtl on sys.path)

OPS = {   # gemmini.h's loops on tiny (dim 4): ragged tiles, both unrollers, pooling, norms, resadd
    "matmul": tk.matmul(40, 27, 70, bias="row", activation="relu", scale=0.05),
    "matmul_layernorm": tk.matmul(8, 16, 12, activation="layernorm"),
    "conv3x3": tk.conv2d(1, 9, 11, 6, 10, kernel=3, padding=1, bias="channel", activation="relu", scale=0.05),
    "conv_pool": tk.conv2d(1, 8, 8, 4, 8, kernel=3, padding=1, pool=(3, 2, 1), scale=0.05),
    "conv_s2": tk.conv2d(2, 10, 10, 5, 6, kernel=3, stride=2, padding=1, bias="channel", scale=0.05),
    "depthwise": tk.depthwise_conv2d(1, 9, 9, 8, bias="channel", activation="relu", scale=0.05),
    "resadd": tk.resadd(1, 6, 7, 9),
}


def afresh(instructions: list, hw: HardwareConfig) -> tuple[list, int]:
    """The primitives of ``instructions``, every loop built with the shared shapes forgotten, and the
    host's words."""
    unroller, prims, host = Unroller(hw), [], 0
    for n, ins in enumerate(instructions, 1):
        loop_shared._execute.clear()
        loop_shared._execute_words.clear()
        loop_shared._templates.clear()
        loop_unroll_conv._loops.clear()
        loop_unroll._ws_shapes.clear()
        expanded = unroller.feed(ins)
        prims += [ins] if expanded is None else expanded
        host = n if expanded is None or expanded else host
    return prims, host


def assert_shared_equals_afresh(prog, hw: HardwareConfig) -> None:
    fresh, host = afresh(prog.instructions, hw)
    words, host_words = issued_words(prog.instructions, hw)
    assert np.array_equal(words, encode_all(fresh)) and host_words == host
    shared = [prim for prim, _ in issued(prog.instructions, hw)]
    assert shared == fresh
    assert sum(n for _, n in issued(prog.instructions, hw)) == host


@pytest.mark.parametrize("name", OPS)
def test_library_programs_unroll_as_afresh(name: str) -> None:
    hw = HardwareConfig.preset("tiny")
    op = OPS[name]
    prog = tk.compile(op, hw, tk.gemmini_schedule(op, hw))
    assert any(type(ins).__name__.startswith("Loop") for ins in prog.instructions)
    issued_words(prog.instructions, hw)   # the shapes cached, then each program twice: warm and afresh
    assert_shared_equals_afresh(prog, hw)


@pytest.mark.parametrize("name", sorted(FLAG_CONVS))
def test_flagged_conv_loops_unroll_as_afresh(name: str) -> None:
    """LoopConv's flags (rotated and transposed operands, dilations: tests/rtl/conv_words.py): the execute phase's
    words, encoded from its rows, are its instructions' (the features meet none of these flags; the checker does)."""
    hw = HardwareConfig.preset("tiny")
    prog = program(FLAG_CONVS[name], hw)
    issued_words(prog.instructions, hw)
    assert_shared_equals_afresh(prog, hw)


CANDIDATE_OPS = ["matmul", "conv3x3", "conv_s2", "depthwise", "resadd"]


def loop_candidates(name: str, seed: int, hw: HardwareConfig) -> Iterator[tuple[Op, Program]]:
    """Six random points (tiles and walks) of the tuner's loop family for ``OPS[name]``, compiled."""
    op = OPS[name]
    space = Space(op, hw, family="loops")
    for index in space.sample(np.random.default_rng(seed), 6):
        yield op, tk.compile(op, hw, space[index])


@pytest.mark.parametrize("name", CANDIDATE_OPS)
def test_loop_family_candidates_unroll_as_afresh(name: str) -> None:
    """Random candidates, one after another (the caches warm across them)."""
    hw = HardwareConfig.preset("tiny")
    for _, prog in loop_candidates(name, 3, hw):
        assert_shared_equals_afresh(prog, hw)


def test_bases_near_the_top_of_memory_are_built_afresh() -> None:
    """A base within 2^32 of 2^64 could wrap onto address 0 (zeros): no template, the words as built."""
    for base in (1 << 12, (1 << 64) - 256):
        prims = lambda base=base: [Mvin(base, 0, 4, 4, 0), Mvin(0, 4, 4, 4, 0), Mvin(base + 64, 8, 4, 4, 0)]  # noqa: E731
        words = unrolled_words(("test", base), [Phase(base, prims)])
        assert np.array_equal(words, encode_all(prims()))
    def unbuilt() -> list:
        raise AssertionError("a shape seen before is not built again")
    moved = unrolled_words(("test", 1 << 12), [Phase(1 << 13, unbuilt)])
    assert moved[:, 1].tolist() == [1 << 13, 0, (1 << 13) + 64]   # the shape's words moved to the new base; zeros stay
