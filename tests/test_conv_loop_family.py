"""Gemmini's conv loops as a schedule family: LibraryConv's tile arguments and walk as knobs.

Every point is held bit-exact against the op's numpy reference (on the RTL, every buffer against the
functional model's too); the memory plan refuses what tiled_conv's assertions refuse, naming the argument.
"""
from __future__ import annotations

import numpy as np
import pytest

import toolkit as tk
from isa import HardwareConfig
from isa.loop_words import LoopConvWs
from toolkit.kinds import default_family
from toolkit.library import LibraryConv
from toolkit.library.conv import conv_columns
from toolkit.schedule import ScheduleError
from tuner.space import Space

from helpers import assert_exact

CONVS = {   # channel counts ragged on tiny's dim of 4 unless said
    "3x3": tk.conv2d(1, 7, 6, 10, 12, bias="channel", activation="relu", scale=0.02),
    "1x1": tk.conv2d(1, 6, 6, 8, 12, kernel=1, padding=0, scale=0.05),
    "3x3 stride 2": tk.conv2d(2, 9, 8, 6, 9, stride=2, scale=0.02),
    "1x1 stride 2 (downsample)": tk.conv2d(1, 8, 8, 5, 7, kernel=1, stride=2, padding=0, bias="channel", scale=0.1),
    "5x5 padded by 2": tk.conv2d(1, 6, 7, 5, 6, kernel=5, padding=2, scale=0.01),
    "ragged channels, fused pool": tk.conv2d(1, 8, 8, 13, 7, bias="channel", activation="relu", scale=0.02,
                                             pool=(3, 2, 1)),
    # no ReLU, padded pool: Gemmini's store unit would pool the padding as 0, so the pool runs apart
    "ragged channels, pool apart": tk.conv2d(1, 8, 8, 13, 7, bias="channel", scale=0.02, pool=(3, 2, 1)),
}
# 3x3 over 8x8, 8 -> 12 channels on tiny: 2 x 2 pixel tiles, 3 output-channel tiles, one kernel tile
WALKED = tk.conv2d(1, 8, 8, 8, 12, bias="channel", activation="relu", scale=0.02)
TILES = LibraryConv(1, 4, 4, 4, 3, 3, 8)


@pytest.mark.parametrize("preset", ["tiny", "gemmini"])
@pytest.mark.parametrize("name", list(CONVS))
def test_random_points_are_bit_exact_on_the_functional_model(name: str, preset: str) -> None:
    op, hw = CONVS[name], HardwareConfig.preset(preset)
    space = Space(op, hw, family="loops")
    for point in space.sample(np.random.default_rng(38), 4):
        assert_exact(op, hw, space[point])


@pytest.mark.parametrize("order", ["pixels", "channels"])
@pytest.mark.parametrize("resident", [False, True])
def test_each_walk_is_bit_exact_and_loads_what_it_does_not_hold(order: str, resident: bool) -> None:
    s = TILES.replace(order=order, resident=resident)
    ran = assert_exact(WALKED, "tiny", s)
    assert sum(isinstance(i, LoopConvWs) for i in ran.program.instructions) == 2 * 2 * 3
    words = conv_columns(WALKED, s, HardwareConfig.preset("tiny"))
    loads = int(words["input_addr"].where.sum()), int(words["weights_addr"].where.sum())
    # resident: "pixels" loads each input tile once, "channels" each weight tile once
    expected = {("pixels", False): (12, 12), ("channels", False): (12, 12),
                ("pixels", True): (4, 12), ("channels", True): (12, 3)}
    assert loads == expected[order, resident]


def test_the_walks_store_the_same_tiles_in_another_order() -> None:
    hw = HardwareConfig.preset("tiny")
    stores = {order: conv_columns(WALKED, TILES.replace(order=order), hw)["output_addr"].text()
              for order in ("pixels", "channels")}
    assert sorted(stores["pixels"]) == sorted(stores["channels"]) and stores["pixels"] != stores["channels"]
    assert stores["pixels"][:2] == ["output+0", "output+4"]     # a pixel tile's channel tiles in turn
    assert stores["channels"][:2] == ["output+0", "output+48"]  # the first channel tile of each pixel tile


def test_walks_and_random_points_are_bit_exact_on_the_rtl(tiny_model) -> None:
    hw = HardwareConfig.preset("tiny")
    for resident in (False, True):
        for order in ("pixels", "channels"):
            assert_exact(WALKED, hw, TILES.replace(order=order, resident=resident), backend="verilator")
    for name in ("3x3 stride 2", "5x5 padded by 2"):
        space = Space(CONVS[name], hw, family="loops")
        point = space.sample(np.random.default_rng(7), 1)[0]
        assert_exact(CONVS[name], hw, space[point], backend="verilator")


@pytest.mark.parametrize("tiles, message", [
    (dict(pochs=16), "pochs=16 is larger than the conv's 12 output channels"),
    (dict(porows=9), "porows=9 is larger than the conv's 8 output rows"),
    (dict(krows=4), "krows=4 is larger than the conv's 3 kernel rows"),
    (dict(pochs=12), r"does not fit tiny: its output tile needs 48 accumulator rows \(of 32"),
])
def test_tiles_past_the_conv_or_half_a_memory_are_refused_naming_the_knob(tiles: dict, message: str) -> None:
    with pytest.raises(ScheduleError, match=message):
        TILES.replace(**tiles).memory_plan(HardwareConfig.preset("tiny"), WALKED)
    with pytest.raises(ScheduleError, match=message):   # before anything is emitted
        tk.compile(WALKED, "tiny", TILES.replace(**tiles))


def test_tiles_past_half_the_scratchpad_are_refused() -> None:
    op = tk.conv2d(1, 8, 8, 40, 4)   # 10 blocks of 6 x 10 input pixels, 9 x 40 weight rows
    with pytest.raises(ScheduleError, match=r"need 960 scratchpad rows \(of 512, half the scratchpad\); shrink kchs"):
        LibraryConv(1, 4, 8, 4, 3, 3, 40).memory_plan(HardwareConfig.preset("tiny"), op)


def test_a_tile_that_reads_only_padding_is_refused() -> None:
    op = CONVS["5x5 padded by 2"]   # one output column and one kernel column: the first reads two padding columns
    with pytest.raises(ScheduleError, match="the tile of pocols from 0 and kcols from 0 reads only padding"):
        LibraryConv(1, 6, 1, 4, 1, 1, 4).memory_plan(HardwareConfig.preset("tiny"), op)


def test_an_unknown_walk_is_refused() -> None:
    with pytest.raises(ScheduleError, match="order='kchs' is not one of"):
        TILES.replace(order="kchs")
    with pytest.raises(ScheduleError, match="resident=1 must be True or False"):
        TILES.replace(resident=1)
    with pytest.raises(ScheduleError, match="depends on the conv"):
        TILES.memory_plan(HardwareConfig.preset("tiny"))


def test_a_plain_tiled_conv_auto_dict_loads_as_gemmini_hs_walk() -> None:
    old = {"call": "tiled_conv_auto", "batches": 1, "porows": 4, "pocols": 4, "pochs": 4, "krows": 3, "kcols": 3,
           "kchs": 8}
    assert LibraryConv.from_dict(old) == TILES
    assert TILES.to_dict() == {**old, "order": "pixels", "resident": False}
    assert tk.compile(WALKED, "tiny", old).meta["schedule"] == TILES.to_dict()


def test_the_loop_family_is_a_space_seeded_with_gemmini_hs_choice() -> None:
    from tuner.api import tune
    hw = HardwareConfig.preset("tiny")
    op = CONVS["3x3"]
    space = Space(op, hw, family="loops")
    assert space.cls is LibraryConv and space.default == tk.gemmini_schedule(op, hw)
    assert space.index_of(space.default) is not None
    assert set(space.domains["pochs"]) >= {4, 8, 12} and space.domains["order"] == ["pixels", "channels"]
    assert all(space[p].memory_plan(hw, op) for p in range(0, len(space), 97))   # every point fits
    result = tune(op, hw, trials=4, backend="stand-in", family="loops", progress=False,
                  tuner_options={"feature_budget": 32})   # the default budget featurizes 512: 30 s
    assert isinstance(result.schedule, LibraryConv) and result.cycles <= result.default_cycles
    assert result.history[0].schedule == space.default.to_dict()   # the default goes first


def test_tuning_a_conv_on_the_soc_searches_its_loops() -> None:
    op = tk.conv2d(1, 14, 14, 256, 256, kernel=3, padding=1, scale=0.01)
    assert default_family(op, HardwareConfig.preset("gemmini")) == "loops"
    assert default_family(op, HardwareConfig.preset("gemmini-alone")) == "flat"
    pointwise = tk.conv2d(1, 14, 14, 256, 256, kernel=1, padding=0, scale=0.01)   # tiled_matmul_nn_auto's loops
    assert default_family(pointwise, HardwareConfig.preset("gemmini")) == "pointwise"


def test_a_loop_space_on_the_soc_leaves_out_what_its_host_cannot_issue_in_time() -> None:
    from isa.loop_words import LOOP_CONV_WORDS
    from toolkit.family import program_loop_cycles
    from toolkit.kinds import lower
    from tuner.space import HOST_BOUND_MARGIN
    op = tk.conv2d(1, 14, 14, 64, 64, bias="channel", scale=0.01)
    soc = HardwareConfig.preset("gemmini")
    space, whole = Space(op, soc, family="loops"), Space(op, HardwareConfig.preset("gemmini-alone"), family="loops")
    assert space.default == whole.default and space.index_of(space.default) is not None
    assert 0 < space.host_bound == len(whole) - len(space)
    assert f"{space.host_bound:,} more fit but are left out" in space.summary()
    bound = HOST_BOUND_MARGIN * program_loop_cycles(op, lower(op, space.default, soc))
    rng = np.random.default_rng(0)
    kept = dropped = 0
    for p in whole.sample(rng, 120):
        point = whole[p]
        words = sum(isinstance(i, LOOP_CONV_WORDS) for i in lower(op, point, soc).instructions)
        assert (space.index_of(point) is not None) == (words * soc.host_cmd_cycles <= bound), point
        kept, dropped = kept + (space.index_of(point) is not None), dropped + (space.index_of(point) is None)
    assert kept and dropped   # both sides sampled


def test_a_loop_space_fits_each_point_as_its_memory_plan_does() -> None:
    import itertools
    from tuner.space import fits
    hw, refused = HardwareConfig.preset("tiny"), 0
    for name, op in CONVS.items():
        space = Space(op, hw, family="loops")
        base = {n: space.domains[n][0] for n in space.free}
        expected = []
        for row in itertools.product(*(range(len(space.domains[n])) for n in space.fit)):
            try:
                fits(space.cls(**base, **{n: space.domains[n][v] for n, v in zip(space.fit, row)}), op, hw)
            except ScheduleError:
                refused += 1
                continue
            expected.append(list(row))
        assert expected and space.valid_fit.tolist() == expected, name
    assert refused   # the memories and the padding refuse some
