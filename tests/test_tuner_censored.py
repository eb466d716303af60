"""Candidates stopped at the cycle cap are lower bounds (right-censored), for the cost model and the search.

A synthetic workload on a real space (fast: no lowering): the features hold a point's region (good, moderate,
bad) and its analytical prior; its cycles are a fixed function of the point. The bad region is 40x the best,
and its prior says it is slow but not how slow (12-24x): a stopped candidate there says "at least 3x".
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import pytest

import toolkit as tk
from toolkit.schedule import Schedule
from tuner.database import Database
from tuner.features import N_FEATURES, PRIOR
from tuner.measure import Measurer, MeasureResult
from tuner.model import CostModel
from tuner.search import ModelTuner
from tuner.session import TuningSession
from tuner.space import Space

TINY = tk.HardwareConfig.preset("tiny")
GOOD, MODERATE, BAD = 0, 1, 2
BEST = 1000.0
CAP = 3 * BEST   # a cycle cap of 3 once the best is measured
PRIORS = {GOOD: (1000.0, 0.1), MODERATE: (5000.0, 0.1), BAD: (12000.0, 1.0)}   # base, spread over u
TRUE_FACTOR = {GOOD: 1.0, MODERATE: 1.0, BAD: 40000 / 12000}   # the prior is right but for the bad region


def _region(p: np.ndarray) -> np.ndarray:
    return np.where(p % 1000 == 0, GOOD, np.where(p % 2 == 1, BAD, MODERATE))


def _u(p: np.ndarray) -> np.ndarray:
    return (np.asarray(p) * 0.6180339887) % 1.0


def _prior(p: np.ndarray) -> np.ndarray:
    region = _region(p)
    base = np.choose(region, [PRIORS[r][0] for r in (GOOD, MODERATE, BAD)])
    spread = np.choose(region, [PRIORS[r][1] for r in (GOOD, MODERATE, BAD)])
    return base * (1 + spread * _u(p))


def features(points: list[int] | np.ndarray) -> np.ndarray:
    """Region, u and the prior's log2(1 + cycles); the MACs feature 0 (one MAC: the target is log2 cycles)."""
    p = np.asarray(points, dtype=np.int64)
    X = np.zeros((len(p), N_FEATURES))
    X[:, 0], X[:, 1], X[:, PRIOR] = _region(p), _u(p), np.log2(1 + _prior(p))
    return X


def cycles(points: list[int] | np.ndarray) -> np.ndarray:
    p = np.asarray(points, dtype=np.int64)
    return _prior(p) * np.choose(_region(p), [TRUE_FACTOR[r] for r in (GOOD, MODERATE, BAD)])


def _history(n: int = 12000) -> tuple[list[int], list[int], list[int]]:
    """Every good point, and the first uncapped batch's moderate and bad ones (measured in full), then
    bad ones stopped at the cap (a capped batch's random picks)."""
    points = np.arange(n)
    region = _region(points)
    good = points[region == GOOD].tolist()
    moderate, bad = points[region == MODERATE][:8].tolist(), points[region == BAD]
    return good + moderate + bad[:8].tolist(), bad[8:32].tolist(), bad[100:].tolist()


def _fit(censored: bool) -> CostModel:
    done, stopped, _ = _history()
    X = features(done + stopped)
    y = np.concatenate([cycles(done), np.full(len(stopped), CAP)])
    flags = np.r_[np.zeros(len(done), bool), np.ones(len(stopped), bool)]
    return CostModel(0, censored=censored).fit(X, y, stopped=flags)


def test_the_model_learns_a_stopped_candidate_as_a_lower_bound() -> None:
    """Learnt as a cost, the cap pulls the bad region down to it (an unmeasured bad point looks 3x, where
    its completed runs said 40x); learnt as a bound, the region stays where the completed runs put it."""
    _, stopped, unseen = _history()
    bounds, costs = _fit(True), _fit(False)
    cap = np.log2(CAP)
    for points in (stopped, unseen[:500]):
        truth = np.log2(cycles(points))
        assert np.median(bounds.predict(features(points))) > cap + 3, "bounded below by the cap, far above it"
        assert np.median(np.abs(bounds.predict(features(points)) - truth)) < 0.5
        assert np.median(costs.predict(features(points))) < cap + 1, "costs: a 40x region looks ~3x"
    assert bounds.predict(features(stopped)).min() >= cap - 1e-6, "never below what the record says"


def test_without_stopped_candidates_the_fit_is_as_it_was() -> None:
    done, _, unseen = _history()
    X, y = features(done), cycles(done)
    plain = CostModel(0).fit(X, y).predict(features(unseen[:200]))
    for censored in (True, False):
        model = CostModel(0, censored=censored).fit(X, y, stopped=np.zeros(len(done), bool))
        assert np.array_equal(model.predict(features(unseen[:200])), plain)


@pytest.mark.parametrize("censored", [True, False])
def test_the_search_does_not_return_to_a_region_stopped_at_the_cap(censored: bool) -> None:
    """Every good point measured, the search chooses between the moderate region (5x, measured in full)
    and the bad one (40x, mostly stopped at 3x). With stopped candidates as bounds it takes no bad point;
    with their caps as costs (the old way) the bad region looks the better one, and it goes back there."""
    space = Space(tk.matmul(8, 8, 16), TINY)
    done, stopped, _ = _history(len(space))
    tuner = ModelTuner(space, features, seed=0, feature_budget=128, random_share=0.0, censored=censored)
    tuner.update(done, cycles(done))
    tuner.update(stopped, [CAP] * len(stopped), [True] * len(stopped))
    assert tuner.stopped == set(stopped)
    picks = np.array(tuner.next_batch(8))
    bad = int((_region(picks) == BAD).sum())
    if censored:
        assert bad == 0 and len(picks) == 8
    else:
        assert bad >= 4, "the failure this guards against"


def test_the_warm_start_takes_stopped_records_as_bounds() -> None:
    """Other workloads' stopped records (transfer.warm_start flags them) are bounds to the model as well."""
    done, stopped, unseen = _history()
    warm = (features(done + stopped), np.r_[cycles(done), np.full(len(stopped), CAP)],
            np.r_[np.zeros(len(done), bool), np.ones(len(stopped), bool)])
    space = Space(tk.matmul(8, 8, 16), TINY)
    for censored in (True, False):
        tuner = ModelTuner(space, features, seed=0, warm=warm, censored=censored)
        predicted = np.median(tuner.model.predict(features(unseen[:500])))
        assert (predicted > np.log2(CAP) + 3) if censored else (predicted < np.log2(CAP) + 1)


class CappedStandIn(Measurer):
    """The stand-in with the RTL's cycle cap: a candidate past the limit reports it, slow."""

    def measure(self, op: tk.Op, hw: tk.HardwareConfig, schedules: Sequence[Schedule], cycle_limit: int | None = None
                ) -> Iterator[tuple[int, MeasureResult]]:
        for i, res in super().measure(op, hw, schedules, None):
            if cycle_limit is not None and res.ok and res.cycles > cycle_limit:
                res = MeasureResult("slow", cycle_limit, error="stopped at the cycle cap")
            yield i, res


def test_the_session_tells_the_search_which_candidates_stopped(tmp_path: Path) -> None:
    """Those it measures and those it reads from the database (another run's) alike."""
    op = tk.matmul(8, 8, 16)
    space = Space(op, TINY)
    with TuningSession(op, TINY, space, CappedStandIn("stand-in", workers=1), tmp_path / "t.db", seed=0,
                       cycle_cap=1.2, tuner_options={"feature_budget": 16}) as session:
        session.tune(16, progress=False)
        slow = {space.index_of(t.schedule) for t in session.ledger.history if t.status == "slow"}
        assert slow and session.search.stopped == slow
    with Database(tmp_path / "t.db") as db, TuningSession(op, TINY, space, Measurer("stand-in", workers=1), db,
                                                           seed=1) as again:
        assert len(again.ledger.history) == 16 and again.search.stopped == slow
