"""Op + schedule spec + hardware -> Program: the core's compile, below the tuner.

"best" (the best tuning record) is the one spec the core cannot resolve by itself: the
caller hands in ``best``, a lookup ``(op, hw) -> Schedule`` (the face and the networks
floor pass the tuner's records database; the core never imports the tuner).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from isa import HardwareConfig, Program

from .kinds import default_schedule, gemmini_flat_schedule, gemmini_nn_schedule, gemmini_schedule, lower, schedule_class
from .limits import check_size
from .ops import Op
from .schedule import Schedule, ScheduleError, load_schedule, read_schedule_file

BestLookup = Callable[[Op, HardwareConfig], Schedule]
NAMED = {"default": default_schedule, "gemmini": gemmini_schedule, "gemmini-nn": gemmini_nn_schedule,
         "gemmini-flat": gemmini_flat_schedule}


def resolve_schedule(op: Op, hw: HardwareConfig, schedule: Any = None, best: BestLookup | None = None) -> Schedule:
    """The Schedule a spec names: None or a name of :data:`NAMED`, "best" (through ``best``), a
    Schedule, a dict of knobs or a JSON file of knobs (which may name one of gemmini.h's calls)."""
    if schedule is None:
        return default_schedule(op, hw)
    if isinstance(schedule, str) and schedule in NAMED:
        return NAMED[schedule](op, hw)
    if isinstance(schedule, str) and schedule == "best":
        if best is None:
            raise ScheduleError("schedule='best' needs db= (a tuning database)")
        return best(op, hw)
    if isinstance(schedule, (str, Path)):
        schedule = read_schedule_file(schedule)
    return load_schedule(schedule, schedule_class(op, schedule))


def compile_op(op: Op, hw: HardwareConfig, schedule: Any = None, *, best: BestLookup | None = None,
               allow_large: bool = False) -> Program:
    """Lower ``op`` for ``hw`` under the schedule ``schedule`` names (see :func:`resolve_schedule`).
    An op past the size limits (see :func:`check_size`) needs ``allow_large=True``."""
    if not isinstance(op, Op):
        raise ValueError(f"op must be an op such as tk.matmul(...), got {type(op).__name__}")
    check_size(op, hw, allow_large)
    if getattr(op, "requantizes", False) and not hw.store_requant:
        raise ValueError(f"out_offset={getattr(op, 'out_offset', 0)}, out_dtype={op.out_dtype!r}: hardware {hw.name} "
                         "has no store-unit requantization (HardwareConfig.store_requant, an extension Gemmini "
                         "lacks); write int32 and requantize on the host")
    if getattr(op, "col_scaled", False) and not hw.store_col_scales:
        raise ValueError(f"scale: {len(op.scale)} per-channel scales, but hardware {hw.name} has no store-unit column "
                         "scales (HardwareConfig.store_col_scales, an extension Gemmini lacks); write int32 and "
                         "requantize on the host")
    return lower(op, resolve_schedule(op, hw, schedule, best), hw)
