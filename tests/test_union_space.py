"""One space over both families (tuner.union.UnionSpace): flat streams and Gemmini's loops, searched together."""
from __future__ import annotations

import collections

import numpy as np
import pytest

import toolkit as tk
from isa import HardwareConfig
from toolkit.library import LibraryConv, LibraryMatmul
from tuner.api import tune
from tuner.features import FeatureCache
from tuner.search import TwinTuner, make_tuner
from tuner.space import Space
from tuner.union import LOOPS_PREFIX, UnionSpace, make_space

from helpers import assert_exact

TINY, SOC = HardwareConfig.preset("tiny"), HardwareConfig.preset("gemmini")
MATMUL = tk.matmul(24, 16, 40, bias="row", activation="relu")
CONV = tk.conv2d(1, 6, 6, 8, 16, kernel=3, padding=1)


@pytest.mark.parametrize("op", [MATMUL, CONV], ids=["matmul", "conv"])
def test_every_point_is_one_of_a_family_and_comes_back_by_genome_and_by_schedule(op: tk.Op) -> None:
    union = make_space(op, SOC, "both")
    flat, loops = union.parts
    assert len(union) == len(flat) + len(loops) and len(loops) > 0
    assert union.names[0] == "family" and len(union.names) == 1 + len(flat.names) + len(loops.names)
    rng = np.random.default_rng(1)
    for p in union.sample(rng, 300):
        g = union.genome(p)
        schedule = union[p]
        assert isinstance(schedule, (LibraryMatmul, LibraryConv)) == (g[0] == 1)
        assert union.index(g) == p and union.index_of(schedule) == p and union.index_of(union.knobs(p)) == p
        part = union.parts[g[0]]
        assert part.index_of(schedule) is not None   # the family's own point


def test_the_other_familys_genes_are_read_past() -> None:
    union = make_space(MATMUL, SOC, "both")
    loop_point = len(union.parts[0])   # the loop family's first point
    g = list(union.genome(loop_point))
    assert g[1:1 + len(union.parts[0].names)] == [0] * len(union.parts[0].names)
    g[union.names.index("tile_i")] = len(union.domains["tile_i"]) - 1   # a flat knob: no knob of a loop point
    assert union.index(g) == loop_point


def test_sampling_draws_both_families_though_one_is_far_larger() -> None:
    union = make_space(tk.matmul(256, 256, 256), SOC, "both")
    assert len(union.parts[0]) > 1000 * len(union.parts[1])
    drawn = union.sample(np.random.default_rng(0), 400)
    assert len(set(drawn)) == 400
    loops = sum(p >= len(union.parts[0]) for p in drawn)
    assert 150 < loops < 250, loops   # about half, where uniform draws would give none
    # exclude and exhaustion: a small space drawn whole, nothing excluded comes back
    small = make_space(MATMUL, SOC, "both")
    exclude = set(range(0, len(small), 3))
    rest = small.sample(np.random.default_rng(2), len(small), exclude)
    assert sorted(rest) == sorted(set(range(len(small))) - exclude)


def test_neighbours_stay_valid_and_sometimes_cross_the_family() -> None:
    union = make_space(CONV, SOC, "both")
    rng = np.random.default_rng(3)
    crossed = collections.Counter()
    for p in union.sample(rng, 200):
        q = union.neighbor(p, rng)
        assert 0 <= q < len(union) and union.index_of(union[q]) == q
        crossed[union.genome(p)[0] != union.genome(q)[0]] += 1
    assert 5 <= crossed[True] <= 40, crossed   # SWITCH_SHARE of 200 is 20


def test_the_dataflow_twins_walk_the_flat_half_and_keep_every_loop_point() -> None:
    union = make_space(MATMUL, SOC, "both")
    assert len(union.domains["dataflow"]) == 2
    tuner = make_tuner("model", union, lambda ps: np.zeros((len(ps), 1)), seed=0)
    assert isinstance(tuner, TwinTuner)
    half = tuner.half
    assert len(half.parts[1]) == len(union.parts[1]) and len(half.parts[0]) < len(union.parts[0])
    loop_point = len(union.parts[0]) + 5
    assert tuner.twins(loop_point) == [] and tuner.up(tuner.down(loop_point)) == loop_point
    flat = [p for p in range(len(union.parts[0])) if tuner.twins(p)][:1]
    assert flat and tuner.down(tuner.twins(flat[0])[0]) != tuner.down(flat[0])   # a twin is outside the half


def test_features_of_a_union_point_are_those_of_its_familys_space() -> None:
    union = make_space(CONV, SOC, "both")
    points = union.sample(np.random.default_rng(4), 12)
    rows = FeatureCache(union)(points)
    for part, local, at in union.pieces(points):
        assert np.array_equal(rows[at], FeatureCache(part)(local))
    assert {union.genome(p)[0] for p in points} == {0, 1}


def test_tuning_both_families_measures_both_and_never_reports_worse_than_the_default() -> None:
    result = tune(MATMUL, SOC, trials=12, backend="stand-in", family="both", progress=False, seed=0)
    kinds = collections.Counter("call" in t.schedule for t in result.history)
    assert kinds[True] and kinds[False], kinds
    assert result.history[0].schedule == tk.default_schedule(MATMUL, SOC).to_dict()
    assert result.cycles <= result.default_cycles and result.space_size == len(make_space(MATMUL, SOC, "both"))


@pytest.mark.parametrize("op", [MATMUL, CONV], ids=["matmul", "conv"])
def test_points_of_both_families_are_bit_exact(op: tk.Op) -> None:
    union = make_space(op, TINY, "both")
    rng = np.random.default_rng(5)
    for p in union.sample(rng, 6):
        assert_exact(op, TINY, union[p])


def test_fix_reaches_the_family_that_has_the_knob_and_bad_families_are_refused() -> None:
    union = make_space(MATMUL, SOC, "both", fix={"dataflow": "ws", LOOPS_PREFIX + "order": "ji"})
    assert union.domains["dataflow"] == ["ws"] and union.domains[LOOPS_PREFIX + "order"] == ["ji"]
    with pytest.raises(ValueError, match="fix: 'order' is not a knob"):
        make_space(MATMUL, SOC, "both", fix={"order": "ji"})
    with pytest.raises(ValueError, match="family='both': the tuner has no loop schedules of maxpool"):
        make_space(tk.maxpool2d(1, 6, 6, 8), SOC, "both")
    with pytest.raises(ValueError,
                       match=r"family='all' is not one of \('auto', 'flat', 'loops', 'pointwise', 'both'\)"):
        make_space(MATMUL, SOC, "all")
    assert isinstance(make_space(MATMUL, SOC, "flat"), Space) and isinstance(make_space(MATMUL, SOC, "both"),
                                                                             UnionSpace)


def test_the_cli_tunes_any_family_and_names_the_one_a_kind_lacks(capsys: pytest.CaptureFixture[str]) -> None:
    from toolkit.cli import main
    shape = ["--m", "64", "--n", "64", "--k", "64", "--config", "gemmini", "--show-space"]
    assert main(["tune", "matmul", *shape, "--family", "both"]) == 0
    out = capsys.readouterr().out
    assert "both families" in out and "MatmulSchedule" in out and "LibraryMatmul" in out
    assert main(["tune", "matmul", *shape]) == 0
    assert "LibraryMatmul" in capsys.readouterr().out   # auto on the SoC: the default's family, gemmini.h's loops
    assert main(["tune", "maxpool", "--in-h", "8", "--in-w", "8", "--in-c", "16", "--config", "gemmini",
                 "--family", "loops", "--show-space"]) == 2
    assert "no loop schedules of maxpool" in capsys.readouterr().err


def test_a_pointwise_conv_has_three_families_each_drawn_crossed_to_and_restricted_apart() -> None:
    op = tk.conv2d(1, 8, 8, 32, 48, kernel=1, padding=0, bias="channel", scale=0.05)
    union = make_space(op, SOC, "both")
    assert [p.family for p in union.parts] == ["flat", "loops", "pointwise"]
    assert "loops.pochs" in union.names and "pointwise.tile_i" in union.names and "tile_i" not in union.names[1:4]
    rng = np.random.default_rng(6)
    drawn = union.sample(rng, 300)
    families = collections.Counter(union.genome(p)[0] for p in drawn)
    # a family picked evenly each draw: the small one drawn whole, the others the rest about evenly
    assert families[2] == len(union.parts[2]) < 100 and min(families[0], families[1]) > 100, families
    for p in drawn[:100]:
        g, schedule = union.genome(p), union[p]
        assert type(schedule) is union.parts[g[0]].cls
        assert union.index(g) == p == union.index_of(schedule) == union.index_of(union.knobs(p))
    reached = set()
    for p in drawn[:200]:
        q = union.neighbor(p, rng)
        assert 0 <= q < len(union) and union.index_of(union[q]) == q
        if union.genome(q)[0] != union.genome(p)[0]:
            reached.add(union.genome(q)[0])
    assert reached == {0, 1, 2}   # a crossing reaches every family
    fixed = union.restrict("pointwise.order", "ji")
    assert len(fixed.parts[2]) * 2 == len(union.parts[2]) and len(fixed.parts[1]) == len(union.parts[1])
    assert {fixed[p].order for p in range(fixed._offset(2), len(fixed))} == {"ji"}
