"""Gemmini's loops as a schedule family: their knobs, the default's choice of family, and the floor.

Every program is held bit-exact against the op's numpy reference (on the RTL, every buffer against
the functional model's too).
"""
from __future__ import annotations

import dataclasses

import pytest

import toolkit as tk
from isa import HardwareConfig
from isa.loop_words import LoopWs
from toolkit.floor import floor, memory_cycles
from toolkit.kinds import default_schedule
from toolkit.library import LibraryMatmul
from toolkit.library.words import tiles_as_rows
from toolkit.library.matmul import matmul_columns
from toolkit.schedule import ScheduleError

from helpers import assert_exact

# 3 x 4 x 3 tiles on tiny (dim 4): ragged at every edge, a bias per row, k accumulated over tiles
MATMUL = tk.matmul(40, 27, 70, bias="row", activation="relu", scale=0.05)
TILES = LibraryMatmul(4, 2, 8)


def test_order_walks_the_output_tiles_as_named() -> None:
    hw = HardwareConfig.preset("tiny")
    words = {order: tiles_as_rows(matmul_columns(MATMUL, TILES.replace(order=order), hw)) for order in ("ij", "ji")}
    corners = {order: [(w.i, w.j, w.c) for w in tiles if w.c] for order, tiles in words.items()}
    ij, ji = corners["ij"], corners["ji"]
    assert sorted(ij) == sorted(ji) and ij != ji   # the same tiles stored, in another order
    assert [c for _, _, c in ij][:2] == ["C+0", "C+8"]      # along a row of tiles
    assert [c for _, _, c in ji][:2] == ["C+0", "C+432"]    # down a column


@pytest.mark.parametrize("order", ["ij", "ji"])
def test_each_order_is_bit_exact_on_the_functional_model(order: str) -> None:
    ran = assert_exact(MATMUL, "tiny", TILES.replace(order=order))
    assert sum(isinstance(i, LoopWs) for i in ran.program.instructions) == 3 * 4 * 3


def test_each_order_is_bit_exact_on_the_rtl(tiny_model) -> None:
    for order in ("ij", "ji"):
        assert_exact(MATMUL, "tiny", TILES.replace(order=order), backend="verilator")


def test_an_unknown_order_and_a_tile_past_half_a_memory_are_refused() -> None:
    with pytest.raises(ScheduleError, match="order='kij' is not one of"):
        TILES.replace(order="kij")
    hw = HardwareConfig.preset("tiny")
    with pytest.raises(ScheduleError, match="does not fit tiny"):
        LibraryMatmul(10, 7, 18).memory_plan(hw, MATMUL)
    with pytest.raises(ScheduleError, match="a tile is larger than the 40x27x70 matmul"):
        LibraryMatmul(11, 1, 1).memory_plan(hw, MATMUL)


def test_a_library_dict_without_order_loads_as_gemmini_hs_walk() -> None:
    old = {"call": "tiled_matmul_auto", "tile_i": 4, "tile_j": 2, "tile_k": 8}
    assert LibraryMatmul.from_dict(old) == TILES and TILES.to_dict() == {**old, "order": "ij"}


def test_the_default_takes_the_loops_where_the_host_pays_for_words() -> None:
    soc = HardwareConfig.preset("gemmini")
    alone = HardwareConfig.preset("gemmini-alone")
    op = tk.matmul(512, 512, 512, scale=0.001)
    assert isinstance(default_schedule(op, soc), LibraryMatmul)          # 68k flat words at 26 cycles each
    assert not isinstance(default_schedule(op, alone), LibraryMatmul)    # words are free: the flat pipeline
    free_host = dataclasses.replace(soc, host_cmd_cycles=0)
    assert not isinstance(default_schedule(op, free_host), LibraryMatmul)


def test_the_floor_names_its_bound() -> None:
    soc = HardwareConfig.preset("gemmini")
    big = tk.matmul(512, 512, 512)
    assert floor(big, soc).bound == "compute" and floor(big, soc).cycles == 512 ** 3 // 256
    # 12544 x 64 of int8 in, 12544 x 256 out: the reads cross the memory bus at 8 B a cycle
    wide = tk.matmul(12544, 256, 64)
    read, write = memory_cycles(wide, soc)
    assert read == 12544 * 64 // 8 + 64 * 256 // 8
    # the output (3.2 MB) is more than the L2 keeps, so its write-back shares the A channel with the Gets
    assert write == -(-(12544 * 64 + 64 * 256) // 64) + (12544 * 256 - 512 * 1024) // 8
    assert floor(wide, soc).host == soc.host_cmd_cycles * 6 * -(-12544 * 16 // soc.acc_rows)
    assert memory_cycles(wide, HardwareConfig.preset("gemmini-alone"))[0] == -(-(12544 * 64 + 64 * 256 + 12544 * 256)
                                                                          // 16)


def test_the_loop_family_is_a_space_seeded_with_gemmini_hs_choice() -> None:
    from tuner.api import tune
    from tuner.space import Space
    hw = HardwareConfig.preset("tiny")
    space = Space(MATMUL, hw, family="loops")
    assert space.cls is LibraryMatmul and space.default == tk.gemmini_schedule(MATMUL, hw)
    assert space.index_of(space.default) is not None
    assert all(space[p].memory_plan(hw, MATMUL) for p in range(len(space)))   # every point fits
    result = tune(MATMUL, hw, trials=4, backend="stand-in", family="loops", progress=False)
    assert isinstance(result.schedule, LibraryMatmul) and result.cycles <= result.default_cycles
    assert [t.schedule for t in result.history][0] == space.default.to_dict()   # the default goes first


def test_tuning_searches_the_family_of_the_default() -> None:
    from toolkit.kinds import default_family
    op = tk.matmul(512, 512, 512, scale=0.001)
    assert default_family(op, HardwareConfig.preset("gemmini")) == "loops"
    assert default_family(op, HardwareConfig.preset("gemmini-alone")) == "flat"


def test_a_default_outside_the_space_is_measured_so_tuning_never_reports_worse() -> None:
    """On the SoC a conv's default is gemmini.h's loops, which the tuner's flat conv space does not hold:
    it is measured first, as its own trial, and the best is never worse than it."""
    from tuner.api import tune
    hw = HardwareConfig.preset("gemmini")
    op = tk.conv2d(1, 8, 8, 32, 32)
    result = tune(op, hw, trials=3, backend="stand-in", progress=False, family="flat")
    assert result.history[0].schedule == tk.default_schedule(op, hw).to_dict()
    assert result.default_cycles is not None and result.cycles <= result.default_cycles
    assert len(result.history) == 3


DW = tk.depthwise_conv2d(1, 9, 9, 8, bias="channel", activation="relu", scale=0.05)
RESADD = tk.resadd(1, 6, 7, 9)


@pytest.mark.parametrize("op", [DW, RESADD], ids=["depthwise", "resadd"])
def test_depthwise_and_resadd_have_loop_families_of_fitting_bit_exact_points(op) -> None:
    """tiled_conv_dw's pixel tiles and tiled_resadd's tile_I/tile_J are knobs; every point fits (memory_plan),
    the library's own choice is a point, and random points run bit-exact."""
    from tuner.space import Space
    hw = HardwareConfig.preset("tiny")
    space = Space(op, hw, family="loops")
    assert space.cls is type(tk.gemmini_schedule(op, hw)) and len(space) > 3
    assert space.index_of(tk.gemmini_schedule(op, hw)) is not None
    assert all(space[p].memory_plan(hw, op) for p in range(len(space)))
    for p in (0, len(space) // 2, len(space) - 1):
        assert_exact(op, "tiny", space[p])


def test_loop_tiles_of_depthwise_and_resadd_are_checked_before_anything_is_emitted() -> None:
    from toolkit.library.schedule import LibraryDepthwise, LibraryResAdd
    hw = HardwareConfig.preset("tiny")
    with pytest.raises(ScheduleError, match="porows=10 is larger than the conv's 9 output rows"):
        tk.compile(DW, hw, LibraryDepthwise(1, 10, 9))
    with pytest.raises(ScheduleError, match="tiled_resadd_auto.*does not fit"):
        tk.compile(RESADD, hw, LibraryResAdd(4096, 9))


def test_depthwise_and_resadd_tune_in_one_space_with_the_flat_streams() -> None:
    from tuner.api import tune
    from tuner.union import UnionSpace
    hw = HardwareConfig.preset("gemmini")
    for op in (tk.depthwise_conv2d(1, 14, 14, 32), tk.resadd(1, 14, 14, 64)):
        space = UnionSpace(op, hw)
        assert space.parts[1].cls is type(tk.gemmini_schedule(op, hw))
        result = tune(op, hw, trials=4, backend="stand-in", family="both", progress=False)
        assert result.cycles is not None and result.cycles <= result.default_cycles
