"""Compile a workload's op, "best" included: the core's compile with the tuner's records as the lookup."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from isa import HardwareConfig, Program
from toolkit.compiler import BestLookup, resolve_schedule
from toolkit.compiler import compile_op as core_compile
from toolkit.ops import Op
from toolkit.schedule import Schedule, ScheduleError

from .network import task_op


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


class LayerCompiler:
    """A network's programs per op, compiled once per run; 'gemmini' and 'best' fall back to the
    default where missing (``notes`` says where)."""

    def __init__(self, hw: HardwareConfig, schedule: Any, db: str | Path | None) -> None:
        self.hw, self.schedule, self.db = hw, schedule, db
        self.programs: dict[Op, Program] = {}
        self.notes: dict[Op, str] = {}

    @property
    def spec(self) -> tuple[HardwareConfig, Any, str | Path | None]:
        """What makes another compiler that compiles the same programs (in a worker)."""
        return self.hw, self.schedule, self.db

    def __call__(self, op: Op) -> Program:
        if op not in self.programs:
            try:
                schedule = self.schedule
                if schedule == "best":   # records are kept per task: the op with its scales set to 1
                    schedule = resolve_schedule(task_op(op), self.hw, "best", best_lookup(self.db))
                self.programs[op] = compile_op(op, self.hw, schedule, db=self.db)
            except ScheduleError as exc:
                if self.schedule not in ("gemmini", "best"):
                    raise
                self.notes[op] = f"schedule {self.schedule!r} unavailable ({exc}); ran the default"
                self.programs[op] = compile_op(op, self.hw, None)
        return self.programs[op]
