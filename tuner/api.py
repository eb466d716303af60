"""``tune``: AutoTVM's loop (space -> tuner -> measure -> records) for one op on one hardware config.

``trials`` is the measurement budget of this workload, hardware and backend *in
the database*: records already there count, so rerunning a killed command
resumes where it stopped, and rerunning a finished one measures nothing. Runs
on one database at once share that budget: each claims its candidates in the
database before measuring them, learns from the others' records as they land,
and waits for the others' candidates in flight before it reports.
"""
from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from isa import HardwareConfig
from simulators.base import MAX_TIMEOUT_S, positive_limit
from toolkit.limits import check_size
from toolkit.ops import Op
from toolkit.schedule import Schedule, ScheduleError

from . import transfer
from .claims import new_owner
from .database import Database, Record, open_db
from .features import FEATURE_VERSION, FeatureCache
from .measure import Measurer, backend_name
from .search import Tuner, make_tuner
from .space import Space


@dataclass
class Trial:
    """One measured candidate, in the order tuning measured them (resumed records first)."""

    n: int
    schedule: dict[str, Any]
    status: str
    cycles: int | None
    best: float             # best cycles so far (inf until the first success)
    error: str = ""


@dataclass
class TuneResult:
    op: Op
    hw: HardwareConfig
    backend: str
    tuner: str
    schedule: Schedule | None
    cycles: int | None
    default_schedule: Schedule | None
    default_cycles: int | None
    history: list[Trial] = field(default_factory=list)
    space_size: int = 0
    model_spearman: list[float] = field(default_factory=list)  # per batch, on records the model had not seen
    measured_now: int = 0
    seconds: float = 0.0
    feature_seconds: float = 0.0

    @property
    def speedup(self) -> float | None:
        """Default cycles / tuned cycles."""
        if self.cycles and self.default_cycles:
            return self.default_cycles / self.cycles
        return None

    @property
    def search_cycles(self) -> int | None:
        """The best the search itself found: every ok trial but the seeded default. The tuned best is
        never slower than the default by construction (it is measured first); this one may be."""
        default = self.default_schedule.to_dict() if self.default_schedule is not None else None
        found = [t.cycles for t in self.history if t.status == "ok" and t.schedule != default]
        return min(found) if found else None  # type: ignore[type-var]

    def failures(self) -> str:
        """The trials that failed, counted by status ("" when none did)."""
        failed: dict[str, int] = {}
        for t in self.history:
            if t.status != "ok":
                failed[t.status] = failed.get(t.status, 0) + 1
        text = ", ".join(f"{n} {s}" for s, n in sorted(failed.items()))
        if "timeout" in failed:
            text += " (a rerun with a longer timeout measures the timeouts again)"
        return text

    def summary(self) -> str:
        lines = [f"{self.op.key} on {self.hw.name}, backend {self.backend}, tuner {self.tuner}: "
                 f"{len(self.history)} trials in the db ({self.measured_now} measured now, {self.seconds:.1f} s), "
                 f"space of {self.space_size:,}"]
        if self.schedule is None:
            lines.append("  no candidate succeeded")
        else:
            lines.append(f"  best     {self.cycles:,} cycles  {self.schedule}")
        if self.default_cycles is not None:
            sp = self.speedup
            lines.append(f"  default  {self.default_cycles:,} cycles" + (f"  (tuned is {sp:.2f}x faster)" if sp else ""))
            if self.search_cycles is not None:
                lines.append(f"  search   {self.search_cycles:,} cycles  (best without the seeded default: "
                             f"{self.default_cycles / self.search_cycles:.2f}x the default's speed)")
        if self.failures():
            lines.append(f"  failed: {self.failures()}")
        rho = [r for r in self.model_spearman if not math.isnan(r)]
        if rho:
            lines.append(f"  model rank correlation on unseen batches: last {rho[-1]:.2f}, mean {sum(rho) / len(rho):.2f}")
        return "\n".join(lines)


def tune(op: Op, hw: HardwareConfig, trials: int = 200, tuner: str = "model", backend: str | Callable[..., Any]
         = "verilator", db: Database | str | Path | None = None, workers: int | None = None, seed: int = 0,
         scheduler: str | None = None, progress: bool = True, *, executor: Any = None,
         timeout: float | None = 600.0, batch_size: int | None = None, transfer_learning: bool = True,
         include_default: bool = True, tile_policy: str = "balanced", space: Space | None = None,
         callback: Callable[[Trial], None] | None = None, tuner_options: dict[str, Any] | None = None,
         allow_large: bool = False) -> TuneResult:
    """Search schedules of ``op`` on ``hw`` and record every measurement in ``db``.

    tuner: "model" (cost-model-guided annealing), "random", "grid" or "ga".
    backend: "verilator" (RTL cycles), "stand-in" (the analytical stand-in, for tests and
    benchmarks only), or a callable ``run(program, inputs) -> RunResult``.
    db: a path (SQLite, WAL) or Database; None keeps records in memory.
    workers / scheduler / executor: a local pool of ``workers`` processes, a Dask scheduler
    address, or any concurrent.futures.Executor. timeout: seconds per candidate; one that runs
    past it is recorded as a timeout and counts against ``trials``, but a later run with a longer
    timeout measures it again (a timeout says only that the candidate needed more time).
    allow_large: tune an op past the size limits of :func:`toolkit.limits.check_size`.
    A failure of the measurement itself (no toolchain, a broken executor) stops the tuning
    with an error and is never recorded against a candidate.
    """
    if not isinstance(op, Op):
        raise ValueError(f"op must be an op such as tk.matmul(...), got {type(op).__name__}")
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ValueError(f"trials must be a positive integer, got {trials!r}")
    timeout = positive_limit("timeout", timeout, float, MAX_TIMEOUT_S)
    batch_size = positive_limit("batch_size", batch_size)
    workers = positive_limit("workers", workers)
    check_size(op, hw, allow_large)
    start = time.perf_counter()
    space = space if space is not None else Space(op, hw, tile_policy=tile_policy)
    bname = backend_name(backend)
    hw_hash = hw.config_hash()
    # the measuring processes first: forked before the database opens, they hold none of it
    measurer = Measurer(backend, workers=workers, scheduler=scheduler, executor=executor, timeout=timeout, seed=seed)
    owner = new_owner()
    database = None
    try:
        database = open_db(db)
        again = database.forget_timeouts(op.key, hw_hash, bname, timeout)
        if again:
            print(f"systolic: measuring again {again} candidate(s) recorded as timeouts in less time than this "
                  f"run allows ({'no limit' if timeout is None else f'{timeout:g} s'})", file=sys.stderr)
        feats = FeatureCache(space, measurer.executor if measurer.parallelism > 1 else None, measurer.parallelism)
        options = dict(tuner_options or {})
        if tuner == "model" and transfer_learning:
            warm = transfer.warm_start(database, op, hw, bname)
            if len(warm[0]):
                options.setdefault("warm", warm)
        search = make_tuner(tuner, space, feats, seed, **options)
        ledger = _Ledger(database, space, search, (op.key, hw_hash, bname))
        ledger.sync()
        if include_default and space.default is not None:
            search.seeds.append(space.index_of(space.default))
        if transfer_learning:
            search.seeds += transfer.seed_points(database, space, bname)
        batch = batch_size or max(8, measurer.parallelism)
        bar = _progress_bar(trials, len(ledger.history), progress)
        measured_now = 0
        adaptive = "feature_budget" not in options and hasattr(search, "feature_budget")
        if adaptive and space.default is not None:   # size the first batch's look before anything is measured
            feats([space.index_of(space.default)])
            per_point = feats.seconds / len(feats.rows)
            search.feature_budget = _feature_budget(batch * _first_measure_s(per_point), per_point)
        while len(ledger.history) < trials:
            in_flight = database.claimed(*ledger.scope)   # by other runs on this database
            free = trials - len(ledger.history) - in_flight
            points = search.next_batch(min(batch, free)) if free > 0 and not search.exhausted() else []
            if not points and not in_flight:
                break
            granted, taken = database.claim(*ledger.scope, [space[p] for p in points], trials, owner)
            if taken:  # another run has them; their costs come with its records
                search.update([points[i] for i in taken], [math.inf] * len(taken))
            if not granted:
                if not taken:  # the budget is in flight elsewhere: wait for those records
                    time.sleep(_POLL_S)
                for trial in ledger.sync():
                    _advance(bar, trial)
                continue
            points = [points[i] for i in granted]
            measure_start = time.perf_counter()
            schedules = [space[p] for p in points]
            costs = [math.inf] * len(points)
            feats.executor = measurer.executor if feats.executor is not None else None  # a crash renews the pool
            for i, res in measurer.measure(op, hw, schedules):
                rec = Record(op.key, op.to_dict(), hw_hash, hw.as_dict(), bname, schedules[i].to_dict(), res.cycles,
                             res.status, res.counters, res.error, wall_s=res.wall_s, tuner=tuner)
                measured_now += 1
                if res.ok:
                    costs[i] = float(res.cycles)
                if database.add(rec, feats.rows.get(points[i]), FEATURE_VERSION):  # committed now: a kill loses nothing
                    ledger.add(rec)
                    if callback is not None:
                        callback(ledger.history[-1])
                    _advance(bar, ledger.history[-1])
            search.update(points, costs)
            for trial in ledger.sync():
                _advance(bar, trial)
            if adaptive and feats.rows:
                search.feature_budget = _feature_budget(time.perf_counter() - measure_start,
                                                        feats.seconds / len(feats.rows))
        if bar is not None:
            bar.close()
    finally:
        if database is not None:
            database.release(owner)
        measurer.close()
    history = ledger.history
    best = database.best(op.key, hw_hash, bname)
    default_cycles = None
    if space.default is not None:
        for t in history:
            if t.schedule == space.default.to_dict() and t.status == "ok":
                default_cycles = t.cycles
    result = TuneResult(op, hw, bname, tuner, best.make_schedule() if best else None, best.cycles if best else None,
                        space.default, default_cycles, history, len(space),
                        list(getattr(search, "spearman_history", [])), measured_now, time.perf_counter() - start,
                        feats.seconds)
    if database is not db:
        database.close()
    return result


_POLL_S = 0.2  # how often a run that waits on other runs' candidates looks at the database


def _feature_budget(measure_s: float, feature_s: float, lo: int = 16, hi: int = 512) -> int:
    """Candidates the search may featurize per batch: about as long as measuring a batch takes.
    Small programs simulate in milliseconds and featurize in less, so the search looks far;
    large ones (512^3: 80 ms to lower and featurize one) would otherwise spend most of
    the time choosing instead of measuring."""
    return int(min(hi, max(lo, measure_s / max(feature_s, 1e-6))))


def _first_measure_s(feature_s: float) -> float:
    """A guess at one candidate's measurement before any: it lowers the program again and simulates
    it (at least as long as lowering), and starts a process (tens of milliseconds)."""
    return max(2.0 * feature_s, 0.05)


def _trial(n: int, rec: Record, history: list[Trial]) -> Trial:
    best = history[-1].best if history else math.inf
    if rec.ok:
        best = min(best, float(rec.cycles))  # type: ignore[arg-type]
    return Trial(n, rec.schedule, rec.status, rec.cycles, best, rec.error)


class _Ledger:
    """The records of one workload, hardware and backend as this run sees them, in the order it saw
    them: its own as it measures, and those of earlier and concurrent runs as it syncs."""

    def __init__(self, database: Database, space: Space, search: Tuner, scope: tuple[str, str, str]) -> None:
        self.database, self.space, self.search, self.scope = database, space, search, scope
        self.history: list[Trial] = []
        self._ours: set[int] = set()
        self._last_id = 0

    def add(self, rec: Record) -> None:
        """A record this run measured and committed."""
        self.history.append(_trial(len(self.history) + 1, rec, self.history))
        self._ours.add(rec.id)  # type: ignore[arg-type]

    def sync(self) -> list[Trial]:
        """Take in the records others added since the last sync, and feed them to the tuner."""
        workload, hw_hash, backend = self.scope
        recs = self.database.records(workload=workload, hw_hash=hw_hash, backend=backend, after_id=self._last_id)
        if recs:  # ids grow in commit order, so nothing committed later gets a smaller one
            self._last_id = recs[-1].id  # type: ignore[assignment]
        new = [r for r in recs if r.id not in self._ours]
        points, costs = [], []
        for rec in new:
            self.history.append(_trial(len(self.history) + 1, rec, self.history))
            try:
                p = self.space.index_of(rec.make_schedule())
            except (ScheduleError, TypeError, ValueError):
                p = None
            if p is not None:
                points.append(p)
                costs.append(float(rec.cycles) if rec.ok else math.inf)
        if points:
            self.search.update(points, costs)
        return self.history[len(self.history) - len(new):]


def _progress_bar(total: int, done: int, enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm import tqdm
    return tqdm(total=total, initial=done, desc="tuning", unit="trial", dynamic_ncols=True)


def _advance(bar: Any, trial: Trial) -> None:
    if bar is not None:
        bar.update(1)
        bar.set_postfix_str(f"best {trial.best:,.0f} cycles" if math.isfinite(trial.best) else "no success yet")
