"""The tuner's features from the instruction census (no rendering) equal those of the rendered stream,
exactly, on random points of the tuner's space of every kind the census covers, on both presets; the
candidates it does not cover are rendered, by an explicit rule."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import toolkit as tk
from toolkit.census import computes
from toolkit.estimate import os_cycles
from toolkit.conv.census import forget_classes
from toolkit.conv.runs import flat_rows, row_runs, runs
from toolkit.kinds import KINDS, census, flat_schedule, estimate_cycles, gemmini_schedule, lower, tallies, tally
from toolkit.tally import tally as tally_of
from tuner.features import (FEATURE_NAMES, STREAM_NAMES, candidate_features, census_features, features,
                            featurize, stream_features)
from tuner.space import Space

TINY, GEMMINI = tk.HardwareConfig.preset("tiny"), tk.HardwareConfig.preset("gemmini")

# every covered kind, with the options that change the stream: bias (row, full, channel, before and
# after), int32 outputs, ragged last tiles, strides, padding, packed taps (3 input channels) and its copy
COVERED = [
    (TINY, tk.matmul(13, 5, 21, bias="full", out_dtype="int32")),
    (TINY, tk.matmul(32, 16, 40, bias="row", activation="relu", scale=0.1)),
    (TINY, tk.conv2d(1, 6, 6, 3, 5, bias="channel", activation="relu", scale=0.02)),
    (TINY, tk.conv2d(2, 8, 8, 6, 9, stride=2, kernel=1, padding=0)),
    (TINY, tk.conv2d(1, 9, 7, 5, 6, stride=2, kernel=3, padding=1, out_dtype="int32")),
    (GEMMINI, tk.matmul(100, 50, 70, bias="row", activation="relu", scale=0.03)),
    (GEMMINI, tk.conv2d(1, 16, 16, 3, 32, stride=2)),
    (TINY, tk.depthwise_conv2d(1, 7, 7, 6)),
    (TINY, tk.depthwise_conv2d(2, 9, 8, 10, stride=2, bias="channel", activation="relu", scale=0.1)),
    (GEMMINI, tk.depthwise_conv2d(1, 12, 12, 40, bias="channel", scale=0.05)),
    pytest.param(GEMMINI, tk.depthwise_conv2d(1, 28, 28, 64, kernel=5, padding=2, out_dtype="int32"),
                 marks=pytest.mark.slow),
    pytest.param(GEMMINI, tk.conv2d(1, 14, 14, 64, 64, bias="channel", scale=0.01), marks=pytest.mark.slow),
    pytest.param(GEMMINI, tk.conv2d(2, 10, 10, 20, 40, kernel=3, padding=1, out_dtype="int32"),
                 marks=pytest.mark.slow),
]
POINTS = 4


def _mismatch(op: tk.Op, hw: tk.HardwareConfig, schedule: object, domains: dict) -> list[str]:
    """The features that differ between the rendered stream and the census: in candidate_features' whole
    vector, and in the census's own stream statistics (so the census is checked even if candidate_features
    were to render)."""
    prog = lower(op, schedule, hw)
    rendered = features(prog, op, schedule, domains)
    counted = candidate_features(op, hw, schedule, domains)
    bad = [f"{FEATURE_NAMES[i]}: rendered {rendered[i]} census {counted[i]}"
           for i in np.flatnonzero(rendered != counted)]
    own = census(op, schedule, hw)
    if own is not None:
        stream, direct = stream_features(prog), census_features(own[0], hw, own[1])
        bad += [f"{STREAM_NAMES[i]}: rendered {stream[i]} census {direct[i]}" for i in np.flatnonzero(stream != direct)]
    return bad


@pytest.mark.parametrize("hw, op", COVERED)
def test_census_features_equal_the_rendered_streams(hw: tk.HardwareConfig, op: tk.Op) -> None:
    space = Space(op, hw)
    points = space.sample(np.random.default_rng(len(op.key)), min(POINTS, len(space)))
    schedules = [flat_schedule(op, hw), *(space[p] for p in points)]
    assert census(op, schedules[0], hw) is not None, "the census covers this kind"
    for s in schedules:
        assert not _mismatch(op, hw, s, space.domains), s


@pytest.mark.parametrize("op", [tk.matmul(100, 50, 70, bias="row", activation="relu", scale=0.03),
                                tk.conv2d(1, 9, 7, 5, 6, stride=2, kernel=3, padding=1, out_dtype="int32"),
                                tk.conv2d(1, 6, 6, 3, 5, bias="channel", activation="relu", scale=0.02),
                                tk.depthwise_conv2d(1, 12, 12, 40, bias="channel", scale=0.05)])
def test_output_stationary_census_equals_the_rendered_stream(op: tk.Op) -> None:
    """The output-stationary words (a preload and a compute per run, the accumulator rows on the last)."""
    space = Space(op, GEMMINI)
    points = space.sample(np.random.default_rng(2), min(POINTS, len(space)))
    for s in [flat_schedule(op, GEMMINI), *(space[p] for p in points)]:
        s = replace(s, dataflow="os")
        assert not _mismatch(op, GEMMINI, s, space.domains), s


@pytest.mark.slow
def test_the_packed_copy_and_every_tap_class_are_covered() -> None:
    """Packed taps read a padded copy: its words are in the census too."""
    op = tk.conv2d(1, 16, 16, 3, 32, stride=2)
    s = flat_schedule(op, GEMMINI).replace(pack_taps=True, tile_c=1)
    assert s.geometry(op).source == "padded"
    assert not _mismatch(op, GEMMINI, s, Space(op, GEMMINI).domains)


def test_candidates_the_census_does_not_cover_are_rendered() -> None:
    """The rule: only a kind's own tunable schedules have a census and a closed-form estimate (in either
    dataflow); Gemmini's library words and the kinds without one render."""
    mm = tk.matmul(32, 16, 40)
    ws = flat_schedule(mm, GEMMINI)
    os_ = replace(ws, dataflow="os")
    assert census(mm, ws, GEMMINI) is not None and estimate_cycles(mm, ws, GEMMINI) is not None
    assert census(mm, os_, GEMMINI) is not None and estimate_cycles(mm, os_, GEMMINI) is not None
    assert census(mm, gemmini_schedule(mm, TINY), TINY) is None
    uncovered = [k for k, kind in KINDS.items() if kind.census is None]
    assert set(uncovered) == {"resadd", "maxpool", "norm"}
    for op in (tk.resadd(1, 4, 4, 8), tk.maxpool2d(1, 6, 6, 8), tk.layernorm(6, 9)):
        s = flat_schedule(op, TINY)
        assert census(op, s, TINY) is None
        assert not _mismatch(op, TINY, s, Space(op, TINY).domains)   # rendered, so equal by construction


@pytest.mark.parametrize("op", [tk.matmul(40, 24, 72), tk.conv2d(1, 9, 7, 20, 24, kernel=3, padding=1),
                                tk.conv2d(2, 6, 6, 8, 40, kernel=1, padding=0)], ids=["matmul", "conv3x3", "conv1x1"])
def test_output_stationary_estimate_counts_the_rendered_chains(op) -> None:
    """The OS estimate is its tiles' WS estimate plus a cost per chain, and its chain count is the rendered
    OS stream's: one compute_preloaded starts each chain (matmul_ws_computes.s.j2, conv_ws_steps.s.j2)."""
    ws = flat_schedule(op, TINY)
    os_ = replace(ws, dataflow="os")
    starts = sum(i.OP == "compute_preloaded" for i in lower(op, os_, TINY).instructions)
    assert KINDS[op.KIND].os_chains(op, ws, TINY) == starts
    assert estimate_cycles(op, os_, TINY) == os_cycles(estimate_cycles(op, ws, TINY), starts, TINY.dim)


@pytest.mark.parametrize("hw, op", [(TINY, tk.conv2d(1, 9, 7, 5, 6, stride=2, kernel=3, padding=1, out_dtype="int32")),
                                    (TINY, tk.conv2d(2, 8, 8, 6, 9, stride=2, kernel=1, padding=0)),
                                    (GEMMINI, tk.conv2d(1, 16, 16, 3, 32, stride=2))])
def test_an_output_stationary_census_counts_the_ws_twins_computes(hw: tk.HardwareConfig, op: tk.Op) -> None:
    """candidate_features hands the OS schedule's own census to the estimate for its chains: its computes are
    exactly those of the weight-stationary census of the same tiles, so the prior is the same either way."""
    space = Space(op, hw, fix={"dataflow": "os"})
    for s in (space[p] for p in space.sample(np.random.default_rng(3), min(12, len(space)))):
        own = census(op, s, hw)[0]
        assert computes(own) == computes(census(op, replace(s, dataflow="ws"), hw)[0]), s
        assert estimate_cycles(op, s, hw, computes(own)) == estimate_cycles(op, s, hw), s


@pytest.mark.parametrize("op", [tk.conv2d(1, 9, 7, 20, 24, kernel=3, padding=1, bias="channel", scale=0.1),
                                tk.depthwise_conv2d(1, 9, 8, 40, stride=2, bias="channel", scale=0.1)],
                         ids=lambda op: op.KIND)
def test_candidates_that_share_a_census_part_each_count_their_own_stream(op: tk.Op) -> None:
    """A census shares a class's words across candidates by part: the loads across dataflows, the computes
    across mvin widths, the stores across both, each part across the tiles it does not read; and a
    candidate's sums across pipeline knobs. Candidates featurized one after another, each differing from
    the last only there, each equal the rendered stream."""
    space = Space(op, GEMMINI)
    s = space[space.sample(np.random.default_rng(4), 1)[0]]
    for change in ({}, {"dataflow": "os"}, {"mvin_blocks": 2}, {"dataflow": "ws"}, {"mvin_blocks": 3, "dataflow": "os"},
                   {"in_bank": 1, "w_bank": 2, "load_ahead": 1}, {"tile_oh": 1}, {"tile_kh": 1}, {"tile_c": 1},
                   {"load_ahead": 0, "store_delay": 1, "spread": 0.5}):
        s = replace(s, **change)
        assert not _mismatch(op, GEMMINI, s, space.domains), s


@pytest.mark.parametrize("hw, op", [(GEMMINI, tk.conv2d(1, 56, 56, 64, 64, kernel=3, padding=1)),
                                    (TINY, tk.conv2d(1, 9, 7, 5, 6, stride=2, kernel=3, padding=1, out_dtype="int32")),
                                    (TINY, tk.conv2d(1, 6, 6, 3, 5, bias="channel", activation="relu", scale=0.02)),
                                    (GEMMINI, tk.conv2d(1, 16, 16, 3, 32, stride=2)),
                                    (TINY, tk.depthwise_conv2d(2, 9, 8, 10, stride=2, bias="channel", scale=0.1))],
                         ids=["resnet3x3", "strided", "bias", "packed", "depthwise"])
def test_a_conv_tally_equals_its_censuss(hw: tk.HardwareConfig, op: tk.Op) -> None:
    """kinds.tally adds a conv's classes' sums (the computes' in closed form) without joining their words:
    exactly the sums of the joined census (which the tests above hold equal to the rendered stream), on
    random points and their neighbours (which share classes), in either dataflow."""
    space = Space(op, hw)
    rng = np.random.default_rng(5)
    points = space.sample(rng, min(12, len(space)))
    for s in (space[p] for p in [*points, *(space.neighbor(p, rng) for p in points)]):
        for s in (s, replace(s, dataflow="os")):
            own, joined = tally(op, s, hw), census(op, s, hw)
            expected = tally_of(joined[0], hw, joined[1])
            assert np.array_equal(own[0].sums, expected.sums), s
            assert np.array_equal(own[0].written, expected.written) and np.array_equal(own[0].read, expected.read), s


@pytest.mark.parametrize("hw, op", [(GEMMINI, tk.conv2d(1, 56, 56, 64, 64, kernel=3, padding=1)),
                                    (TINY, tk.conv2d(1, 9, 7, 5, 6, stride=2, kernel=3, padding=1, out_dtype="int32")),
                                    (TINY, tk.conv2d(1, 6, 6, 3, 5, bias="channel", activation="relu", scale=0.02)),
                                    (GEMMINI, tk.conv2d(1, 16, 16, 3, 32, stride=2)),
                                    (TINY, tk.depthwise_conv2d(2, 9, 8, 10, stride=2, bias="channel", scale=0.1)),
                                    (TINY, tk.matmul(32, 16, 40, bias="row", activation="relu", scale=0.1))],
                         ids=["resnet3x3", "strided", "bias", "packed", "depthwise", "matmul"])
def test_batched_tallies_equal_one_at_a_times_and_the_censuss(hw: tk.HardwareConfig, op: tk.Op) -> None:
    """kinds.tallies and featurize of a batch (random points, their neighbours, either dataflow, from cold
    class caches so that candidates find their new classes together) equal each candidate's own tally and
    row and the sums of its joined census, exactly."""
    space = Space(op, hw)
    rng = np.random.default_rng(6)
    points = space.sample(rng, min(8, len(space)))
    scheds = [space[p] for p in [*points, *(space.neighbor(p, rng) for p in points for _ in range(2))]]
    scheds += [replace(s, dataflow="os") for s in scheds[::2]]
    forget_classes()
    batched, rows = tallies(op, scheds, hw), featurize(op, hw, scheds, space.domains)
    forget_classes()   # each candidate's own tally from its own classes, not the batch's kept sums
    for s, own, row in zip(scheds, batched, rows):
        joined, one = census(op, s, hw), tally(op, s, hw)
        expected = tally_of(joined[0], hw, joined[1])
        for t in (own[0], one[0]):
            assert np.array_equal(t.sums, expected.sums), s
            assert np.array_equal(t.written, expected.written) and np.array_equal(t.read, expected.read), s
        assert np.array_equal(row, candidate_features(op, hw, s, space.domains)), s


def test_runs_of_rows_laid_flat_are_each_rows_own() -> None:
    """The closed forms lay every class's pixels flat (runs.flat_rows): their runs, found in one pass, are the
    ones each row gives alone (a run ends with its row, even where the next row's first pixel is valid)."""
    rng = np.random.default_rng(3)
    lengths = rng.integers(0, 40, 60)
    row, _, start = flat_rows(lengths)
    valid = rng.random(len(row)) < 0.8
    flat, length = row_runs(valid, valid[:-1] & valid[1:], row, 5)
    alone = [(int(start[r] + s), n) for r in range(len(lengths)) if lengths[r]
             for s, n in runs(valid[start[r]:start[r] + lengths[r]], [], 5)]
    assert list(zip(flat.tolist(), length.tolist())) == alone
    assert any(valid[s - 1] and row[s - 1] != row[s] for s, _ in alone if s)   # rows whose runs would have joined
