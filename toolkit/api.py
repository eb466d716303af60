"""The public face: compile, run and tune (see toolkit/__init__.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from isa import HardwareConfig, Program
from simulators.base import RunResult
from simulators.base import run as run_backend

from .limits import check_size
from .kinds import default_schedule, gemmini_flat_schedule, gemmini_schedule, lower, schedule_class
from .ops import Op
from .schedule import Schedule, ScheduleError, load_schedule, read_schedule_file


def resolve_schedule(op: Op, hw: HardwareConfig, schedule: Any = None, db: str | Path | None = None) -> Schedule:
    if schedule is None or (isinstance(schedule, str) and schedule == "default"):
        return default_schedule(op, hw)
    if isinstance(schedule, str) and schedule == "gemmini":
        return gemmini_schedule(op, hw)
    if isinstance(schedule, str) and schedule == "gemmini-flat":
        return gemmini_flat_schedule(op, hw)
    if isinstance(schedule, str) and schedule == "best":
        if db is None:
            raise ScheduleError("schedule='best' needs db= (a tuning database)")
        from tuner.database import best_schedule  # the public face is the one place that calls the tuner
        return best_schedule(db, op, hw)
    if isinstance(schedule, (str, Path)):
        schedule = read_schedule_file(schedule)   # its knobs may name one of gemmini.h's calls
    return load_schedule(schedule, schedule_class(op, schedule))


def compile(op: Op, hw: HardwareConfig | str = "gemmini", schedule: Any = None, *,
            db: str | Path | None = None, allow_large: bool = False) -> Program:
    """Lower ``op`` for ``hw`` under ``schedule``: None/"default" (the toolkit's heuristic), "gemmini"
    (Gemmini's own library, the baseline: gemmini.h's config and LOOP_WS / LOOP_CONV_WS words, see
    toolkit/library/), "gemmini-flat" (the earlier port of its tile sizing in our own flat instruction
    stream), "best" (the best record in ``db``), a Schedule, a dict of knobs, or a JSON file of knobs.
    An op past the size limits (see :func:`check_size`) needs ``allow_large=True``."""
    if not isinstance(op, Op):
        raise ValueError(f"op must be an op such as tk.matmul(...), got {type(op).__name__}")
    hw = HardwareConfig.resolve(hw)
    check_size(op, hw, allow_large)
    return lower(op, resolve_schedule(op, hw, schedule, db), hw)


def run(program: Program, inputs: Mapping[str, np.ndarray], backend: str = "functional", **options: Any) -> RunResult:
    """Run ``program`` on ``inputs`` with ``backend`` ("functional", "verilator", "cpu" or "gpu")."""
    if not isinstance(program, Program):
        raise ValueError(f"program must be a Program from tk.compile, got {type(program).__name__}")
    return run_backend(program, inputs, backend, **options)
