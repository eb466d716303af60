"""``tune``: AutoTVM's loop (space -> tuner -> measure -> records) for one op on one hardware config.

``trials`` is the measurement budget of this workload, hardware and backend *in
the database*: records already there count, so rerunning a killed command
resumes where it stopped, and rerunning a finished one measures nothing. Runs
on one database at once share that budget: each claims its candidates in the
database before measuring them, learns from the others' records as they land,
and waits for the others' candidates in flight before it reports. The loop itself
is :class:`tuner.session.TuningSession`; ``tune`` checks the arguments and runs one.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from isa import HardwareConfig
from simulators.base import MAX_TIMEOUT_S, positive_limit
from toolkit.limits import check_size
from toolkit.ops import Op

from .database import Database
from .measure import Measurer
from .results import Trial, TuneResult
from .session import CYCLE_CAP, TuningSession, check_cycle_cap
from .space import Space
from .union import UnionSpace, make_space


# Over 40 lines: tk.tune's pinned signature and its docstring; the work is TuningSession's.
def tune(op: Op, hw: HardwareConfig, trials: int = 200, tuner: str = "model", backend: str | Callable[..., Any]
         = "verilator", db: Database | str | Path | None = None, workers: int | None = None, seed: int = 0,
         scheduler: str | None = None, progress: bool = True, *, executor: Any = None,
         timeout: float | None = 600.0, batch_size: int | None = None, transfer_learning: bool = True,
         include_default: bool = True, tile_policy: str = "balanced", space: Space | UnionSpace | None = None,
         callback: Callable[[Trial], None] | None = None, tuner_options: dict[str, Any] | None = None,
         allow_large: bool = False, fix: dict[str, Any] | None = None,
         cycle_cap: float | None = CYCLE_CAP, family: str = "auto") -> TuneResult:
    """Search schedules of ``op`` on ``hw`` and record every measurement in ``db``.

    tuner: "model" (cost-model-guided annealing), "random", "grid" or "ga". tuner_options: the
    strategy's own, e.g. ``{"twins": None}`` to have the model tuner walk the dataflow as any other
    knob (by default its model picks each candidate's dataflow: tuner.search.TwinTuner).
    backend: "verilator" (RTL cycles), "stand-in" (the analytical stand-in, for tests and
    benchmarks only), or a callable ``run(program, inputs) -> RunResult``.
    db: a path (SQLite, WAL) or Database; None keeps records in memory.
    workers / scheduler / executor: a local pool of ``workers`` processes, a Dask scheduler
    address, or any concurrent.futures.Executor. timeout: seconds per candidate; one that runs
    past it is recorded as a timeout and counts against ``trials``, but a later run with a longer
    timeout measures it again (a timeout says only that the candidate needed more time).
    allow_large: tune an op past the size limits of :func:`toolkit.limits.check_size`.
    fix: knobs held at one value, e.g. ``{"dataflow": "ws"}`` (the space and the seeded default take
    only that value; records of the workload already in ``db`` still count, whatever their knobs).
    cycle_cap: stop a candidate at this many times the best cycles measured before its batch, and
    record it as slow (on the verilator backend; the others run every candidate to its end); the
    seeded default (or a transferred schedule) runs alone first, so that it caps the rest of the
    first batch. None: never stop one.
    family: the schedules searched: "flat" (the toolkit's own streams), "loops" (Gemmini's loops:
    gemmini.h's call with its tiles and the host's walk as knobs, seeded with gemmini.h's own choice),
    "pointwise" (a 1x1 conv of stride 1 as tiled_matmul_nn_auto's loops, likewise), "both" (one space of
    all of them: tuner.union.UnionSpace; ``fix`` names a loop knob ``loops.<name>``, ``pointwise.<name>``),
    or "auto": the family of the default schedule where the tuner has it, so that the default is seeded
    (for a pointwise conv whose default is loops, both loop families, each seeded with its call's tiles).
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
    check_cycle_cap(cycle_cap)
    check_size(op, hw, allow_large)
    start = time.perf_counter()
    if space is not None and fix is not None:
        raise ValueError("fix: give it to the Space you pass as space=, not to tune")
    if space is not None and family != "auto":
        raise ValueError("family: give it to the Space you pass as space=, not to tune")
    space = space if space is not None else make_space(op, hw, family, tile_policy=tile_policy, fix=fix)
    # the measuring processes first: forked before the session opens the database, they hold none of it
    measurer = Measurer(backend, workers=workers, scheduler=scheduler, executor=executor, timeout=timeout, seed=seed)
    with TuningSession(op, hw, space, measurer, db, tuner=tuner, seed=seed, batch_size=batch_size,
                       transfer_learning=transfer_learning, include_default=include_default,
                       tuner_options=tuner_options, cycle_cap=cycle_cap) as session:
        session.tune(trials, [callback] if callback is not None else [], progress)
    return session.result(time.perf_counter() - start)
