"""Tuner: spaces, features, cost model and search (small spaces on the "tiny" preset, stand-in cycles)."""
from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
import random
import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pytest

import toolkit as tk
from toolkit.kinds import KINDS, estimate_cycles, lower
from toolkit.knobs import tile_values
from tuner.api import tune
from tuner.database import Database, schedule_key
from tuner.features import (DMA_CYCLES, FEATURE_NAMES, FEATURE_VERSION, IDEAL, N_FEATURES, NOT_ESTIMATED, PRIOR,
                            FeatureCache, features)
from tuner.model import CostModel, prior, spearman, target
from tuner.search import TUNERS, ModelTuner, TwinTuner, Tuner, make_tuner
from tuner.space import Space, fits
from simulators.stand_in import estimate
from simulators.stand_in import run as stand_in_run
from simulators.verilator import run as verilator_run

TINY = tk.HardwareConfig.preset("tiny")
GEMMINI = tk.HardwareConfig.preset("gemmini")


def test_tile_values_policies() -> None:
    assert tile_values(8) == [1, 2, 3, 4, 8]
    assert tile_values(5, "all") == [1, 2, 3, 4, 5]
    assert tile_values(6, "pow2") == [1, 2, 4, 6]
    with pytest.raises(ValueError, match="tile_policy"):
        tile_values(4, "odd")


def test_space_points_fit_and_index_round_trip() -> None:
    op = tk.matmul(12, 8, 20, bias="row")
    space = Space(op, TINY)
    assert len(space) == space.size > 0 and space.raw_size >= len(space)
    assert space.index_of(space.default) is not None, "the library default is a point of the space"
    for i in range(len(space)):
        fits(space[i], op, TINY)  # never raises: invalid points are not in the space
        assert space.index(space.genome(i)) == i
    text = space.summary()
    assert f"{len(space):,} fit" in text and "bias_strategy" in text
    # a point that does not fit has no index
    too_big = dict(space.default.to_dict(), tile_i=3, tile_j=2, double_buffer=True, c_bank=1)
    assert space.index_of(too_big) is None


@pytest.mark.parametrize("op", [tk.matmul(12, 8, 20, bias="row"), tk.conv2d(1, 6, 6, 4, 8),
                                tk.conv2d(1, 9, 7, 6, 4, kernel=3, stride=2), tk.depthwise_conv2d(1, 8, 8, 6),
                                tk.resadd(1, 6, 6, 8), tk.maxpool2d(1, 8, 8, 4, kernel=3, stride=2, padding=1)],
                         ids=lambda op: op.KIND)
def test_space_holds_every_fitting_point_and_no_other(op: tk.Op) -> None:
    """The space asks memory_plan once per shape of a size's regions which placements fit; asked of every
    combination of the fit knobs on its own, memory_plan must agree on each."""
    space = Space(op, TINY)
    free = {n: space.domains[n][0] for n in space.free}
    want = set()
    for combo in itertools.product(*(range(len(space.domains[n])) for n in space.fit)):
        knobs = dict(free, **{n: space.domains[n][v] for n, v in zip(space.fit, combo)})
        try:
            fits(space.cls(**knobs), op, TINY)
        except tk.ScheduleError:
            continue
        want.add(combo)
    assert want and {tuple(row) for row in space.valid_fit.tolist()} == want
    assert len(space.valid_fit) == len(want)


@pytest.mark.parametrize("hw, op", [(TINY, tk.matmul(100, 50, 70, bias="row")),
                                    (GEMMINI, tk.matmul(64, 64, 64, transpose_a=True)),
                                    (TINY, tk.conv2d(2, 10, 10, 20, 40, kernel=3, padding=1)),
                                    (GEMMINI, tk.conv2d(1, 28, 28, 3, 16, kernel=7, stride=2, padding=3)),
                                    (GEMMINI, tk.depthwise_conv2d(2, 9, 8, 10, stride=2))],
                         ids=lambda x: x.KIND if isinstance(x, tk.Op) else x.name)
def test_space_enumerated_over_arrays_equals_the_point_by_point_one(hw: tk.HardwareConfig, op: tk.Op) -> None:
    """The kind's own domains are enumerated over arrays (plan_arrays, regions_fit); given as domains, the same
    ones are enumerated point by point through memory_plan. Same rows in the same order, and the same
    restrictions and indices."""
    fast = Space(op, hw)
    slow = Space(op, hw, domains=KINDS[op.KIND].knob_domains(op, hw, "balanced"))
    assert fast._vectorized and not slow._vectorized
    assert fast.domains == slow.domains and len(fast) == len(slow)
    assert fast.valid_fit.dtype == slow.valid_fit.dtype and np.array_equal(fast.valid_fit, slow.valid_fit)
    for point in np.random.default_rng(0).integers(0, len(fast), 200).tolist():
        assert fast.genome(point) == slow.genome(point) and fast.shape(point) == slow.shape(point)
        assert fast.index(fast.genome(point)) == point
    for name in ("dataflow", "split_buffers", fast.fit[0]):
        for value in fast.domains[name]:
            try:
                a, b = fast.restrict(name, value), slow.restrict(name, value)
            except tk.ScheduleError:
                continue
            assert np.array_equal(a.valid_fit, b.valid_fit) and len(a) == len(b)
            assert [a.index(a.genome(i)) for i in range(0, len(a), max(1, len(a) // 50))] == \
                list(range(0, len(a), max(1, len(a) // 50)))


def test_space_covers_every_knob_of_conv() -> None:
    op = tk.conv2d(1, 6, 6, 4, 8)
    space = Space(op, TINY)
    assert set(space.names) == set(space.default.to_dict())
    rng = np.random.default_rng(0)
    for p in space.sample(rng, 5):
        assert space.neighbor(p, rng) in range(len(space))


def test_conv_space_offers_packed_taps_where_they_save_blocks() -> None:
    stem = Space(tk.conv2d(1, 4, 4, 2, 4, kernel=3, padding=1), TINY)
    assert stem.domains["pack_taps"] == [False, True]
    assert stem.domains["tile_c"] == [1, 2]                  # 1 channel block, or 2 of 6 packed channels
    packed = [s for s in map(stem.__getitem__, stem.sample(np.random.default_rng(0), 200)) if s.pack_taps]
    assert packed and all(s.tile_kw == 1 for s in packed)
    assert Space(tk.conv2d(1, 6, 6, 4, 8), TINY).domains["pack_taps"] == [False]


def test_fix_holds_a_knob_at_one_value() -> None:
    """Space(fix=...) is the full space's points with that value, the default among them; tune(fix=...)
    measures only those."""
    op = tk.conv2d(1, 6, 6, 4, 8)
    full, ws = Space(op, TINY), Space(op, TINY, fix={"dataflow": "ws"})
    assert full.domains["dataflow"] == ["ws", "os"] and ws.domains["dataflow"] == ["ws"]
    assert ws.fixed == {"dataflow": "ws"}
    os_only = Space(op, TINY, fix={"dataflow": "os"})
    assert len(os_only) + len(ws) == len(full)
    for p in np.random.default_rng(0).choice(len(full), 300, replace=False):   # all 601,344 take 11 s
        s = full[int(p)]
        assert (ws.index_of(s) is not None, os_only.index_of(s) is not None) == (s.dataflow == "ws",
                                                                                 s.dataflow == "os")
    assert os_only.default == dataclasses.replace(full.default, dataflow="os")   # the heuristic's, held at os
    assert os_only.index_of(os_only.default) is not None and os_only.index_of(full.default) is None
    result = tune(op, TINY, trials=6, backend="stand-in", workers=1, progress=False, fix={"dataflow": "os"},
                  tuner_options={"feature_budget": 32})   # the default budget featurizes 512: 8 s
    assert len(result.history) == 6 and all(t.schedule["dataflow"] == "os" for t in result.history)
    assert result.default_schedule == os_only.default


@pytest.mark.parametrize("fix, words", [({"dataflo": "ws"}, "'dataflo' is not a knob of conv2d"),
                                        ({"dataflow": "is"}, "dataflow='is' is not in its domain"),
                                        (["dataflow"], "fix must map knob names to values")])
def test_fix_names_a_bad_knob_or_value(fix, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        Space(tk.conv2d(1, 6, 6, 4, 8), TINY, fix=fix)


def test_tune_takes_fix_or_a_space_not_both() -> None:
    op = tk.matmul(8, 8, 8)
    with pytest.raises(ValueError, match="fix: give it to the Space"):
        tune(op, TINY, trials=1, backend="stand-in", space=Space(op, TINY), fix={"dataflow": "ws"}, progress=False)


def test_nearest_adapts_a_schedule_of_another_shape() -> None:
    space = Space(tk.matmul(8, 8, 8), TINY)
    big = {"tile_i": 16, "tile_j": 16, "tile_k": 16, "loop_order": "jik", "double_buffer": True,
           "mvin_blocks": 2, "bias_strategy": "after", "a_bank": 0, "b_bank": 1, "c_bank": 0}
    s = space[space.nearest(big)]
    assert s.loop_order == "jik" and s.tile_k == 2


@pytest.mark.parametrize("op, hw", [
    (tk.matmul(5, 7, 9), TINY), (tk.matmul(32, 16, 64, bias="full", activation="relu", scale=0.1), TINY),
    (tk.matmul(64, 48, 80, bias="row", out_dtype="int32"), GEMMINI), (tk.conv2d(1, 6, 6, 4, 8), TINY),
    (tk.conv2d(2, 5, 5, 3, 5, stride=2, bias="channel"), TINY), (tk.depthwise_conv2d(1, 6, 6, 8), TINY),
])
def test_features_have_one_length_for_every_op_and_shape(op: tk.Op, hw: tk.HardwareConfig) -> None:
    s = tk.default_schedule(op, hw)
    f = features(lower(op, s, hw), op, s)
    assert f.shape == (N_FEATURES,) == (len(FEATURE_NAMES),)
    assert np.isfinite(f).all()
    assert f[FEATURE_NAMES.index("log_ideal_cycles")] > 0


def test_features_see_what_the_knobs_change() -> None:
    op = tk.matmul(16, 16, 16)
    base = tk.default_schedule(op, TINY)
    a = features(lower(op, base, TINY), op, base)
    single = base.replace(double_buffer=False, load_ahead=0, store_delay=0, mvin_blocks=1)
    b = features(lower(op, single, TINY), op, single)
    changed = {FEATURE_NAMES[i] for i in np.flatnonzero(a != b)}
    assert "log_n_mvin" in changed and "log_mean_mvin_bytes" in changed


SmallSpace = tuple[Space, FeatureCache, np.ndarray, np.ndarray]


def _stand_in_cycles(space: Space, points: Sequence[int]) -> np.ndarray:
    return np.array([estimate(lower(space.op, space[p], TINY))[0] for p in points], dtype=float)


@pytest.fixture(scope="module")
def small_space() -> SmallSpace:
    """A matmul's space of 10,368 points, a fixed sample of 1,500 and their stand-in cycles (the whole
    space's cycles and features took a minute)."""
    space = Space(tk.matmul(8, 8, 16), TINY)
    points = np.random.default_rng(0).choice(len(space), 1500, replace=False)
    return space, FeatureCache(space), points, _stand_in_cycles(space, points)


@pytest.mark.slow   # fits the cost model on 150 points: 10-15 s
def test_model_ranks_held_out_points(small_space: SmallSpace) -> None:
    space, feats, points, cycles = small_space
    model = CostModel(0).fit(feats(points[:150]), cycles[:150])
    rho = model.rank_correlation(feats(points[150:]), cycles[150:])
    assert rho > 0.8, rho
    assert math.isnan(spearman(np.ones(5), np.arange(5)))


def test_model_target_ranks_as_cycles_within_a_conv_workload() -> None:
    """The normalizer is one number per workload; a conv tiling changes its compute instruction count."""
    op = tk.conv2d(1, 6, 6, 4, 8)
    space = Space(op, TINY)
    points = np.random.default_rng(0).choice(len(space), 24, replace=False)
    X = FeatureCache(space)(points)
    cycles = _stand_in_cycles(space, points)
    shift = target(X, cycles) - np.log2(cycles)
    assert np.ptp(shift) < 1e-9, "target = log2(cycles) - a workload constant"


@pytest.mark.slow
def test_unfitted_model_ranks_by_the_analytical_prior(small_space: SmallSpace, verilator_ok: None) -> None:
    """Judged on the RTL: the stand-in is no truth for the output-stationary half of the space (it ranks
    those points at 0.50 against the RTL, the closed-form prior at 0.73). Measured on 160 points, seeds
    0-2: prior 0.75-0.83; fitted on 48 with the prior 0.86-0.93, without 0.91-0.93 (the model learns
    past the prior here, so only the unfitted ranking is the prior's to claim)."""
    space, feats, sample, _ = small_space
    model = CostModel(0)
    X = feats(sample)
    assert not model.fitted and np.array_equal(model.predict(X), prior(X))
    assert not CostModel(0, use_prior=False).predict(X).any()
    points = np.random.default_rng(0).choice(len(space), 160, replace=False)
    assert {space[p].dataflow for p in points} == {"ws", "os"}
    inputs = space.op.random_inputs()
    cycles = np.array([verilator_run(lower(space.op, space[p], TINY), inputs).cycles for p in points], float)
    assert spearman(model.predict(feats(points)), cycles) > 0.6
    fitted = CostModel(0).fit(feats(points[:48]), cycles[:48])
    assert fitted.rank_correlation(feats(points[48:]), cycles[48:]) > 0.8


@pytest.mark.slow
def test_prior_falls_back_to_the_roofline_where_there_is_no_estimate(small_space: SmallSpace) -> None:
    space, feats, points, cycles = small_space
    X = feats(points).copy()
    closed_form = [estimate_cycles(space.op, space[p], TINY) for p in points]   # a matmul: the kind's estimate
    assert None not in closed_form and {space[p].dataflow for p in points} == {"ws", "os"}   # both have one
    np.testing.assert_allclose(np.exp2(X[:, PRIOR]) - 1, closed_form, rtol=1e-4)
    X[:, PRIOR] = NOT_ESTIMATED   # what a kind without one gets for a stream past STAND_IN_MAX_INSTRUCTIONS
    roofline = np.exp2(X[:, DMA_CYCLES]) + np.exp2(X[:, IDEAL]) - 2
    np.testing.assert_allclose(prior(X), np.log2(roofline) + target(X, np.ones(len(X))), rtol=1e-6)  # target(X, 1) = -log2(MACs)
    model = CostModel(0).fit(X[:64], cycles[:64])   # a constant column fits (nan would break the binning)
    assert model.fitted and np.isfinite(model.predict(X)).all()


@pytest.mark.parametrize("name", sorted(TUNERS))
def test_tuners_are_reproducible_and_never_repeat(name: str) -> None:
    """The mechanism only, so any fixed cycles will do: the stand-in's over the whole space take 20 s."""
    space = Space(tk.matmul(8, 8, 16), TINY)
    feats = FeatureCache(space)
    cycles = np.random.default_rng(1).uniform(100, 400, len(space)).round()

    def run() -> list[int]:
        options = {"feature_budget": 64} if name == "model" else {}   # 512 a batch: 8 s
        tuner = make_tuner(name, space, feats, seed=3, **options)
        seen: list[int] = []
        for _ in range(4):
            batch = tuner.next_batch(8)
            tuner.update(batch, cycles[batch])
            seen += batch
        return seen

    first = run()
    assert first == run()
    assert len(set(first)) == len(first) == 32


def test_model_picks_take_the_best_of_each_shape_first() -> None:
    """A batch is spread over shapes (Space.shape) before it takes a second point of one: here the ten
    best-ranked points all share one shape, and only the first of them is picked before the others."""
    space = Space(tk.matmul(64, 64, 64), GEMMINI)
    by_shape: dict[tuple[int, ...], list[int]] = {}
    for p in range(len(space)):
        by_shape.setdefault(space.shape(p), []).append(p)
    crowded = max(by_shape.values(), key=len)
    ranked = crowded[:10] + [ps[0] for ps in by_shape.values() if ps is not crowded]
    tuner = ModelTuner(space, lambda pts: np.zeros((len(pts), N_FEATURES)), seed=0, feature_budget=8)
    picks = tuner._diverse(ranked, 8)
    assert picks[0] == ranked[0] and len(by_shape) > 8
    assert len({space.shape(p) for p in picks}) == 8


@pytest.mark.parametrize("knob,value", [("dataflow", "os"), ("loop_order", "bkhw")])
def test_restrict_indexes_as_a_fixed_space(knob: str, value: str) -> None:
    """Space.restrict (a fit knob, and a free one) gives the points, order and domains that enumerating
    the space again with the knob fixed gives."""
    op = tk.conv2d(1, 6, 6, 4, 8)
    half, fixed = Space(op, TINY).restrict(knob, value), Space(op, TINY, fix={knob: value})
    assert half.domains == fixed.domains and len(half) == len(fixed) < len(Space(op, TINY))
    assert all(half.knobs(i) == fixed.knobs(i) for i in range(0, len(half), 7))
    with pytest.raises(ValueError, match="restrict: dataflow='is'"):
        Space(op, TINY).restrict("dataflow", "is")


def _twin_case(os_factor: float) -> tuple[Space, np.ndarray, Callable[[Space], Callable[[Sequence[int]], np.ndarray]]]:
    """A conv space whose cycles are a random figure per shape, times ``os_factor`` for output-stationary
    points, and a featurizer whose prior (the estimate slot) knows them: the model's twin calls are right."""
    space = Space(tk.conv2d(1, 6, 6, 4, 8), TINY)
    flow = space.fit.index("dataflow")
    rows = space.valid_fit.copy()
    rows[:, flow] = 0   # a point and its twin share a row
    _, same = np.unique(rows, axis=0, return_inverse=True)
    by_shape = np.random.default_rng(2).uniform(1000, 4000, same.max() + 1).round()
    fit_row = np.arange(len(space)) // space._free_size
    cycles = by_shape[same[fit_row]] * np.where(space.valid_fit[fit_row, flow] == 1, os_factor, 1.0)

    def featurizer(of: Space) -> Callable[[Sequence[int]], np.ndarray]:
        feats = FeatureCache(of)

        def featurize(points: Sequence[int]) -> np.ndarray:
            X = feats(points).copy()
            X[:, PRIOR] = np.log2(1 + cycles[[space.index_of(of.knobs(p)) for p in points]])
            return X
        return featurize
    return space, cycles, featurizer


def _search(tuner: Tuner, cycles: np.ndarray, to_space: Callable[[int], int], batches: int = 3) -> list[int]:
    seen: list[int] = []
    for _ in range(batches):
        batch = tuner.next_batch(8)
        tuner.update(batch, cycles[[to_space(p) for p in batch]])
        seen += [to_space(p) for p in batch]
    return seen


def test_twin_tuner_walks_the_half_as_its_own_search_would() -> None:
    """Where every twin is predicted slower, the twin search proposes exactly what the same search of
    the weight-stationary half alone proposes: the dataflow knob does not thin out its walk."""
    space, cycles, featurizer = _twin_case(os_factor=2.0)
    twin = make_tuner("model", space, featurizer(space), seed=5, feature_budget=64)
    assert isinstance(twin, TwinTuner)
    alone_space = Space(space.op, TINY, fix={"dataflow": "ws"})
    alone = make_tuner("model", alone_space, featurizer(alone_space), seed=5, feature_budget=64)
    assert isinstance(alone, ModelTuner)
    picks = _search(twin, cycles, int)
    assert picks == _search(alone, cycles, lambda p: space.index_of(alone_space.knobs(p)))
    assert twin.twins_taken == 0 and all(space.knobs(p)["dataflow"] == "ws" for p in picks)


def test_twin_tuner_runs_the_twins_the_model_predicts_faster() -> None:
    """Where output-stationary is faster, the picks run as their twins, and the search ends on one."""
    space, cycles, featurizer = _twin_case(os_factor=0.5)
    twin = make_tuner("model", space, featurizer(space), seed=5, feature_budget=64)
    picks = _search(twin, cycles, int)
    assert twin.twins_taken == len(picks)
    assert space.knobs(min(picks, key=lambda p: cycles[p]))["dataflow"] == "os"
    assert len(set(picks)) == len(picks)


def _jittered_stand_in(program: tk.Program, inputs: dict[str, np.ndarray]) -> tk.RunResult:
    """The stand-in on a busy machine: each candidate takes 0-40 ms more, so candidates land out
    of order and a batch takes several times longer to measure."""
    time.sleep(random.Random(os.getpid() ^ time.perf_counter_ns()).uniform(0.0, 0.04))
    return stand_in_run(program, inputs)


_jittered_stand_in.BACKEND = "stand-in"  # type: ignore[attr-defined]  (same records' scope as the stand-in)


@pytest.mark.slow
def test_tune_is_reproducible_for_a_seed_whatever_the_load_or_workers() -> None:
    """One worker on an idle machine and two on a slowed, jittery one: the same candidates, in the
    same order, with the same result (budgets are in candidates, not in seconds)."""
    op = tk.matmul(8, 8, 16)
    runs = [tune(op, TINY, trials=16, tuner="model", backend=backend, workers=workers, seed=7, progress=False)
            for backend, workers in (("stand-in", 1), (_jittered_stand_in, 2))]
    fast, slow = ([(t.schedule, t.status, t.cycles, t.best) for t in r.history] for r in runs)
    assert len(fast) == 16 and fast == slow
    assert runs[0].schedule == runs[1].schedule and runs[0].cycles == runs[1].cycles


def _records(db: Path) -> list[tuple]:
    """A database's records, without when or how long they took, in schedule order (they land in any order),
    each with its stored feature row."""
    database = Database(db)
    try:
        recs = database.records()
        feats = database.features([r.id for r in recs], FEATURE_VERSION)
        return sorted((r.workload, schedule_key(r.schedule), r.status, r.cycles, json.dumps(r.counters, sort_keys=True),
                       r.error, r.tuner, feats[r.id].tobytes() if r.id in feats else None) for r in recs)
    finally:
        database.close()


def test_the_same_seed_gives_the_same_records_with_one_worker_or_two(tmp_path: Path) -> None:
    """A database tuned with one worker and one tuned with two on a jittery machine (its candidates land out
    of order) hold the same records; then a similar workload, warm-started and seeded from those records
    (their order of landing differs), searches the same in both."""
    runs = {}
    for workers, backend in ((1, "stand-in"), (2, _jittered_stand_in)):
        db = tmp_path / f"{workers}.db"
        runs[workers] = [tune(op, TINY, trials=trials, tuner="model", backend=backend, workers=workers, seed=3, db=db,
                              progress=False, batch_size=6)
                         for op, trials in ((tk.matmul(8, 8, 16), 12), (tk.matmul(8, 16, 16), 8))]
        runs[workers].append(_records(db))
    one, two = runs[1], runs[2]
    assert len(one[2]) == 20 and one[2] == two[2]
    for a, b in zip(one[:2], two[:2]):
        assert [(t.schedule, t.status, t.cycles, t.best) for t in a.history] == \
            [(t.schedule, t.status, t.cycles, t.best) for t in b.history]
        assert a.schedule == b.schedule and a.cycles == b.cycles


@pytest.mark.slow
def test_a_candidate_stops_at_the_cycle_cap(verilator_ok: None) -> None:
    """On the RTL, a candidate past cycle_cap times the best so far stops there: recorded slow, with its
    cap as cycles, never the best; a full run of it takes more than its cap. Without a cap none stops."""
    op = tk.matmul(32, 32, 32)
    capped = tune(op, TINY, trials=16, tuner="random", backend="verilator", workers=1, seed=0, progress=False,
                  cycle_cap=1.2, transfer_learning=False)
    slow = [t for t in capped.history if t.status == "slow"]
    assert slow and capped.history[0].status == "ok", "the default goes first, uncapped"
    assert any(t.status == "slow" for t in capped.history[1:8]), "and it caps the rest of the first batch"
    caps = {math.ceil(1.2 * t.best) for t in capped.history if math.isfinite(t.best)}   # a batch's: its best before
    assert all(t.cycles in caps and t.cycles >= 1.2 * capped.cycles for t in slow)
    full = verilator_run(lower(op, tk.MatmulSchedule(**slow[0].schedule), TINY), op.random_inputs(0))
    assert full.cycles > slow[0].cycles
    assert capped.cycles == min(t.cycles for t in capped.history if t.status == "ok")
    assert "stopped at the cycle cap" in capped.summary() and not capped.failures()
    uncapped = tune(op, TINY, trials=16, tuner="random", backend="verilator", workers=1, seed=0, progress=False,
                    cycle_cap=None, transfer_learning=False)
    assert all(t.status == "ok" for t in uncapped.history)
    with pytest.raises(ValueError, match="cycle_cap"):
        tune(op, TINY, trials=2, backend="stand-in", cycle_cap=1.0, progress=False)


def test_tune_measures_each_trial_once_and_keeps_the_best(small_space: SmallSpace) -> None:
    """The tuning loop's mechanism; how near the optimum it gets is benchmarks/bench_tuner_quality.py's."""
    space = small_space[0]
    result = tune(space.op, TINY, trials=16, tuner="model", backend="stand-in", workers=1, seed=0, progress=False,
                  space=space, tuner_options={"feature_budget": 32})
    points = [space.index_of(t.schedule) for t in result.history]
    assert len(result.history) == 16 and all(t.status == "ok" for t in result.history)
    assert len(set(points)) == 16 and [t.cycles for t in result.history] == _stand_in_cycles(space, points).tolist()
    assert [t.best for t in result.history] == list(np.minimum.accumulate([t.cycles for t in result.history]))
    assert result.default_cycles is not None and result.cycles == min(result.default_cycles, result.history[-1].best)
