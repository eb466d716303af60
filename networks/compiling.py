"""Compile a workload's op, "best" included: the core's compile with the tuner's records as the lookup."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from isa import HardwareConfig, Program
from toolkit.compiler import BestLookup
from toolkit.compiler import compile_op as core_compile
from toolkit.ops import Op
from toolkit.schedule import Schedule


def best_lookup(db: str | Path | None) -> BestLookup | None:
    """schedule="best" reads the best record in ``db`` (None: no database, "best" is refused)."""
    if db is None:
        return None

    def best(op: Op, hw: HardwareConfig) -> Schedule:
        from tuner.database import best_schedule   # on first use: importing the tuner takes a second
        return best_schedule(db, op, hw)
    return best


def compile_op(op: Op, hw: HardwareConfig, schedule: Any = None, *, db: str | Path | None = None,
               allow_large: bool = False) -> Program:
    return core_compile(op, hw, schedule, best=best_lookup(db), allow_large=allow_large)
