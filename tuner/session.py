"""One tuning run as an object, after AutoTVM's ``Tuner.tune``: the op, hardware, space, database,
measurer and search strategy of the run, and the loop that claims, proposes, measures and records.

:func:`tuner.api.tune` is its face: it checks the arguments, starts the measurer and runs a session.
"""
from __future__ import annotations

import math
import sys
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Sequence

from isa import HardwareConfig
from toolkit.kinds import census, default_schedule, loop_groups, lower
from toolkit.library import LibrarySchedule
from toolkit.ops import Op
from toolkit.schedule import Schedule, ScheduleError

from . import transfer
from .claims import new_owner
from .database import Database, Record, open_db
from .features import FEATURE_VERSION, FeatureCache
from .measure import Measurer, MeasureResult
from .results import Trial, TuneResult
from .search import Tuner, make_tuner
from .space import Space

_POLL_S = 0.2  # how often a run that waits on other runs' candidates looks at the database
BATCH = 8  # candidates a batch by default, whatever the workers: the search must not depend on them
# Instructions the search may featurize a batch (candidates x the default's length): a few seconds
# of lowering, about what measuring a batch of large programs takes, so the search does not spend
# most of the time choosing; small programs get the most candidates (FEATURE_BUDGET_MAX).
FEATURE_INSTRUCTIONS = 2_500_000
FEATURE_BUDGET_MIN, FEATURE_BUDGET_MAX = 16, 512
# A candidate is stopped at this many times the best cycles so far. On ResNet-50's convs, the search's
# worst candidates ran up to 26x the default's cycles (50 s of simulation for one, where the default
# takes 2 s); within 3x of the best, a candidate still tells the model which way is better.
CYCLE_CAP = 3.0


class TuningSession:
    """One run of ``op`` on ``hw`` over one database: ``with TuningSession(...) as s: s.tune(n)``.

    The session owns ``measurer`` (start it before the session opens the database, so that its
    forked processes hold none of it) and the database it opens from ``db`` (a Database passed in
    stays open). Leaving the ``with`` block releases this run's claims and closes what it owns.

    Reproducible for a seed: the same seed, workload, hardware and database give the same candidates
    and records whatever the machine's load or the workers (budgets are in candidates, never in
    seconds; a batch's records are taken in the order it proposed them), unless a candidate runs
    past ``timeout``, a wall-clock limit, or another run shares the database.

    cycle_cap: a candidate stops once it has run ``cycle_cap`` times the best cycles measured before
    its batch (status slow, its cap recorded as a lower bound), so that a candidate many times slower
    than the best costs no more than the cap; before any success, a seeded first candidate (the
    default) runs first, alone, and caps the rest; None runs every candidate to its end.
    """

    def __init__(self, op: Op, hw: HardwareConfig, space: Space, measurer: Measurer,
                 db: Database | str | Path | None = None, *, tuner: str = "model", seed: int = 0,
                 batch_size: int | None = None, transfer_learning: bool = True, include_default: bool = True,
                 tuner_options: dict[str, Any] | None = None, cycle_cap: float | None = CYCLE_CAP) -> None:
        self._exit = ExitStack()  # what leaving the session undoes, last first
        self._exit.callback(measurer.close)
        self.op, self.hw, self.space, self.measurer, self.tuner = op, hw, space, measurer, tuner
        self.cycle_cap = check_cycle_cap(cycle_cap)
        self.measured_now = 0
        self.best: Record | None = None
        self._bar: Any = None
        try:
            self.scope = (op.key, hw.config_hash(), measurer.name)  # the records this run counts and learns from
            self.owner = new_owner()
            self.database = open_db(db, write=True)
            if self.database is not db:
                self._exit.callback(self.database.close)
            self._exit.callback(self.database.release, self.owner)
            self._forget_timeouts()
            self.feats = FeatureCache(space, measurer.executor if measurer.parallelism > 1 else None,
                                      measurer.parallelism)
            options = dict(tuner_options or {})
            self.search = self._make_search(options, seed, transfer_learning)
            self.ledger = _Ledger(self.database, space, self.search, self.scope)
            self.ledger.sync()
            self._add_seeds(include_default, transfer_learning)
            self.include_default = include_default
        except BaseException:
            self._exit.close()
            raise
        self.batch = batch_size or BATCH
        if "feature_budget" not in options and hasattr(self.search, "feature_budget"):
            self.search.feature_budget = feature_budget(op, hw, space)

    def __enter__(self) -> "TuningSession":
        return self

    def __exit__(self, *exc: object) -> None:
        self._exit.close()

    def _forget_timeouts(self) -> None:
        """Drop the timeouts recorded under a shorter limit than this run's, so that it measures them again."""
        timeout = self.measurer.timeout
        again = self.database.forget_timeouts(*self.scope, timeout)
        if again:
            print(f"systolic: measuring again {again} candidate(s) recorded as timeouts in less time than this "
                  f"run allows ({'no limit' if timeout is None else f'{timeout:g} s'})", file=sys.stderr)

    def _make_search(self, options: dict[str, Any], seed: int, transfer_learning: bool) -> Tuner:
        """The search strategy; a cost model also learns from similar workloads' records (a warm start)."""
        if self.tuner == "model" and transfer_learning:
            warm = transfer.warm_start(self.database, self.op, self.hw, self.measurer.name)
            if len(warm[0]):
                options.setdefault("warm", warm)
        return make_tuner(self.tuner, self.space, self.feats, seed, **options)

    def _add_seeds(self, include_default: bool, transfer_learning: bool) -> None:
        """Points the search tries first: the default schedule, then the best of similar workloads."""
        if include_default:   # (a default of another family is no point here)
            self.search.seeds += [p for p in map(self.space.index_of, self.space.seed_schedules()) if p is not None]
        if transfer_learning:
            self.search.seeds += transfer.seed_points(self.database, self.space, self.measurer.name)
        self.seeded = set(self.search.seeds)

    def tune(self, n_trial: int, callbacks: Sequence[Callable[[Trial], None]] = (), progress: bool = True) -> None:
        """Measure until the database holds ``n_trial`` records of this workload, hardware and backend
        (others' included), or the space runs out. ``callbacks`` see each trial this run commits."""
        self._bar = _progress_bar(n_trial, len(self.ledger.history), progress)
        try:
            self._measure_default_outside(n_trial, callbacks)
            while len(self.ledger.history) < n_trial and self._round(n_trial, callbacks):
                pass
        finally:
            if self._bar is not None:
                self._bar.close()
                self._bar = None
        self.best = self.database.best(*self.scope)

    def _round(self, n_trial: int, callbacks: Sequence[Callable[[Trial], None]]) -> bool:
        """One batch: propose, claim, measure what was granted, take in others' records. False when
        nothing is left to propose and no other run has candidates in flight."""
        in_flight = self.database.claimed(*self.scope)  # by other runs on this database
        points = self._propose(n_trial - len(self.ledger.history) - in_flight)
        if not points and not in_flight:
            return False
        granted, any_taken = self._claim(points, n_trial)
        if not granted:
            if not any_taken:  # the budget is in flight elsewhere: wait for those records
                time.sleep(_POLL_S)
            self._sync()
            return True
        self._measure(granted, callbacks)
        self._sync()
        return True

    def _propose(self, free: int) -> list[int]:
        """The search's next batch, within the ``free`` share of the budget."""
        if free <= 0 or self.search.exhausted():
            return []
        return self.search.next_batch(min(self.batch, free))

    def _claim(self, points: list[int], n_trial: int) -> tuple[list[int], bool]:
        """Claim ``points`` in the database: those granted to this run, and whether another run holds any."""
        granted, taken = self.database.claim(*self.scope, [self.space[p] for p in points], n_trial, self.owner)
        if taken:  # another run has them; their costs come with its records
            self.search.update([points[i] for i in taken], [math.inf] * len(taken))
        return [points[i] for i in granted], bool(taken)

    def _measure(self, points: list[int], callbacks: Sequence[Callable[[Trial], None]]) -> None:
        """Measure ``points``, record each as it lands, and tell the search what they cost. The
        history then takes the batch in the order it was proposed, not the order it landed in. Before
        any success there is no best to cap by: a batch led by a seeded point (the default, a
        transferred schedule) runs that one alone first, and the rest capped by it. An unseeded first
        batch runs uncapped: capped by the search's own first pick, ResNet-50's 3x3 convs searched
        worse (3 of 6 runs, none better; measured when the search learnt a stopped candidate's cap as
        its cost)."""
        schedules = [self.space[p] for p in points]
        costs = [math.inf] * len(points)
        stopped = [False] * len(points)
        # the pool the features borrow: a crash renews it
        self.feats.executor = self.measurer.executor if self.feats.executor is not None else None
        first, landed = len(self.ledger.history), []
        lead = 1 if self.cycle_cap is not None and self._cycle_limit() is None and points[0] in self.seeded else 0
        for part in ([*range(lead)], [*range(lead, len(points))]):
            if not part:
                continue
            for j, res in self.measurer.measure(self.op, self.hw, [schedules[i] for i in part], self._cycle_limit()):
                i = part[j]
                self.measured_now += 1
                costs[i], stopped[i] = _cost(res.status, res.cycles), res.status == "slow"
                if self._record(points[i], schedules[i], res, callbacks):
                    landed.append(i)
        self.ledger.reorder(first, landed)
        self.search.update(points, costs, stopped)

    def _cycle_limit(self) -> int | None:
        """The cycles at which this batch's candidates stop: ``cycle_cap`` times the best so far."""
        best = self.ledger.history[-1].best if self.ledger.history else math.inf
        return math.ceil(self.cycle_cap * best) if self.cycle_cap is not None and math.isfinite(best) else None

    def _record(self, point: int, schedule: Schedule, res: MeasureResult,
                callbacks: Sequence[Callable[[Trial], None]]) -> bool:
        """Commit one measurement (False if the database already held it); the callbacks and the
        progress bar see its trial."""
        workload, hw_hash, backend = self.scope
        rec = Record(workload, self.op.to_dict(), hw_hash, self.hw.as_dict(), backend, schedule.to_dict(), res.cycles,
                     res.status, res.counters, res.error, wall_s=res.wall_s, tuner=self.tuner)
        if self.database.add(rec, self.feats.rows.get(point), FEATURE_VERSION):  # committed now: a kill loses nothing
            trial = self.ledger.add(rec)
            for callback in callbacks:
                callback(trial)
            self._advance(trial)
            return True
        return False

    def _sync(self) -> None:
        for trial in self.ledger.sync():
            self._advance(trial)

    def _measure_default_outside(self, n_trial: int, callbacks: Sequence[Callable[[Trial], None]]) -> None:
        """A default that is no point of the space is measured first, as a trial of its own, so that the best
        record is never worse than it: the space's (gemmini.h's loops, where the tuner has no loop family of
        the kind), and in a space with no knob fixed the toolkit's own where it is gemmini.h's loops (a
        pointwise conv's tiled_conv_auto, whose loop family is tiled_matmul_nn_auto's)."""
        if not self.include_default:
            return
        for default in self._defaults():
            if self.space.index_of(default) is not None \
                    or any(t.schedule == default.to_dict() for t in self.ledger.history):
                continue
            granted, _ = self.database.claim(*self.scope, [default], n_trial, self.owner)
            for _, res in self.measurer.measure(self.op, self.hw, [default], None) if granted else ():
                self.measured_now += 1
                self._record(-1, default, res, callbacks)

    def _defaults(self) -> list[Schedule]:
        """The defaults this run measures, the one it reports first: the toolkit's own where it is gemmini.h's
        loops and no knob is fixed (a flat one is the flat space's default), and the space's."""
        ours = default_schedule(self.op, self.hw) if not self.space.fixed else None
        ours = ours if isinstance(ours, LibrarySchedule) else None
        return list(dict.fromkeys(d for d in (ours, self.space.default) if d is not None))

    def _advance(self, trial: Trial) -> None:
        if self._bar is not None:
            self._bar.update(1)
            self._bar.set_postfix_str(f"best {trial.best:,.0f} cycles" if math.isfinite(trial.best)
                                      else "no success yet")

    def result(self, seconds: float) -> TuneResult:
        """What this run reports, ``seconds`` being its wall time."""
        history = self.ledger.history
        default = next(iter(self._defaults()), None)
        knobs = default.to_dict() if default is not None else None
        default_ok = [t.cycles for t in history if t.status == "ok" and t.schedule == knobs]
        best = self.best
        return TuneResult(self.op, self.hw, self.measurer.name, self.tuner,
                          best.make_schedule() if best else None, best.cycles if best else None,
                          default, default_ok[-1] if default_ok else None, history, len(self.space),
                          list(getattr(self.search, "spearman_history", [])), self.measured_now, seconds,
                          self.feats.seconds)


def feature_budget(op: Op, hw: HardwareConfig, space: Space) -> int:
    """Candidates the search may featurize per batch, from the workload alone (never from wall
    time, so that a seed searches the same on a busy machine). A kind whose candidates are counted
    from their tile walk (a census: matmul, conv2d, depthwise) gets FEATURE_BUDGET_MAX, since that
    costs about the same at any stream length; the others, which render, FEATURE_INSTRUCTIONS over
    the default schedule's instruction count, within [FEATURE_BUDGET_MIN, FEATURE_BUDGET_MAX]. Gemmini's
    loops count the words featurizing them walks: alike loops' primitives once (toolkit.kinds.loop_groups;
    a ResNet-50 3x3 conv's 103k primitives are 26k such words). Counted as all the primitives, the loop spaces
    got 4-8x too few: 24 candidates a batch of the 3x3 conv's 21,912 points, where TPE found points whose
    prior beat every one the model measured (docs/results.md).
    On ResNet-50's 3x3 convs (65k instructions), 38 candidates a batch left 24 unseeded trials at
    0.63-0.79 of the default's speed; 256 reached 0.94-1.00 and 512 0.89-0.96 (seed 0), in no more
    wall time."""
    if space.default is None or census(op, space.default, hw) is not None:
        return FEATURE_BUDGET_MAX
    length = (len(loop_groups(op, space.default, hw)[0].words) if isinstance(space.default, LibrarySchedule)
              else len(lower(op, space.default, hw).instructions))
    return int(min(FEATURE_BUDGET_MAX, max(FEATURE_BUDGET_MIN, FEATURE_INSTRUCTIONS // max(1, length))))


def check_cycle_cap(cap: float | None) -> float | None:
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, (int, float)) or not 1 < cap < math.inf):
        raise ValueError(f"cycle_cap must be None or a number above 1 (times the best cycles so far), got {cap!r}")
    return cap


def _best_after(history: list[Trial], ok: bool, cycles: int | None) -> float:
    """The best cycles so far once a trial of ``cycles`` (a success if ``ok``) follows ``history``."""
    best = history[-1].best if history else math.inf
    return min(best, float(cycles)) if ok and cycles is not None else best


def _cost(status: str, cycles: int | None) -> float:
    """What the search learns of a measurement: its cycles, or for a slow one its cap (a lower bound of
    its cycles, which the search is told it is); a failure costs infinity."""
    return float(cycles) if status in ("ok", "slow") and cycles is not None else math.inf


def _trial(n: int, rec: Record, history: list[Trial]) -> Trial:
    return Trial(n, rec.schedule, rec.status, rec.cycles, _best_after(history, rec.ok, rec.cycles), rec.error)


class _Ledger:
    """The records of one workload, hardware and backend as this run sees them, in the order it saw
    them: its own as it measures, and those of earlier and concurrent runs as it syncs."""

    def __init__(self, database: Database, space: Space, search: Tuner, scope: tuple[str, str, str]) -> None:
        self.database, self.space, self.search, self.scope = database, space, search, scope
        self.history: list[Trial] = []
        self._ours: set[int] = set()
        self._last_id = 0

    def reorder(self, first: int, landed: list[int]) -> None:
        """Put the trials from ``first`` on, which landed in the order of batch positions ``landed``,
        in batch order (their numbers and best-so-far renewed), so the history does not depend on
        which worker finished first."""
        tail = [t for _, t in sorted(zip(landed, self.history[first:]), key=lambda pair: pair[0])]
        del self.history[first:]
        for t in tail:
            self.history.append(replace(t, n=len(self.history) + 1,
                                        best=_best_after(self.history, t.status == "ok", t.cycles)))

    def add(self, rec: Record) -> Trial:
        """A record this run measured and committed; its trial."""
        self.history.append(_trial(len(self.history) + 1, rec, self.history))
        self._ours.add(rec.id)  # type: ignore[arg-type]
        return self.history[-1]

    def sync(self) -> list[Trial]:
        """Take in the records others added since the last sync, and feed them to the tuner."""
        workload, hw_hash, backend = self.scope
        recs = self.database.records(workload=workload, hw_hash=hw_hash, backend=backend, after_id=self._last_id)
        if recs:  # ids grow in commit order, so nothing committed later gets a smaller one
            self._last_id = recs[-1].id  # type: ignore[assignment]
        new = [r for r in recs if r.id not in self._ours]
        points, costs, stopped = [], [], []
        for rec in new:
            self.history.append(_trial(len(self.history) + 1, rec, self.history))
            try:
                p = self.space.index_of(rec.make_schedule())
            except (ScheduleError, TypeError, ValueError):
                p = None
            if p is not None:
                points.append(p)
                costs.append(_cost(rec.status, rec.cycles))
                stopped.append(rec.status == "slow")
        if points:
            self.search.update(points, costs, stopped)
        return self.history[len(self.history) - len(new):]


def _progress_bar(total: int, done: int, enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm import tqdm
    return tqdm(total=total, initial=done, desc="tuning", unit="trial", dynamic_ncols=True)
