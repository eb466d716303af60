"""The public face: compile, run and tune (see toolkit/__init__.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from isa import HardwareConfig, Program
from isa.program import MAX_DRAM_BYTES
from simulators.base import RunResult
from simulators.base import run as run_backend

from .lowering import lower
from .ops import Op
from .schedule import Schedule, ScheduleError, default_schedule, load_schedule


def resolve_schedule(op: Op, hw: HardwareConfig, schedule: Any = None, db: str | Path | None = None) -> Schedule:
    if schedule is None or (isinstance(schedule, str) and schedule == "default"):
        return default_schedule(op, hw)
    if isinstance(schedule, str) and schedule == "best":
        if db is None:
            raise ScheduleError("schedule='best' needs db= (a tuning database)")
        from tuner.database import best_schedule  # the public face is the one place that calls the tuner
        return best_schedule(db, op, hw)
    return load_schedule(schedule, op.KIND)


# Work past these takes minutes to lower and gigabytes to hold; allow_large=True lifts them.
MAX_INSTRUCTIONS = 10_000_000
MAX_DRAM_FOOTPRINT = 1 << 30


class SizeError(ValueError):
    """An op too large to lower (or to hold in DRAM) without asking for it."""


def check_size(op: Op, hw: HardwareConfig, allow_large: bool = False) -> None:
    """Refuse, with the numbers, an op whose lowering cannot fit; ``allow_large`` lifts the
    soft limits, never the DRAM address space of a program."""
    est = op.size_estimate(hw)
    over = []
    if est.dram_bytes > MAX_DRAM_BYTES:
        raise SizeError(f"{op.key} needs {est.dram_bytes:,} bytes of DRAM, more than a program's address space "
                        f"({MAX_DRAM_BYTES:,} bytes)")
    if est.instructions > MAX_INSTRUCTIONS:
        over.append(f"at least {est.instructions:,} instructions (limit {MAX_INSTRUCTIONS:,})")
    if est.dram_bytes > MAX_DRAM_FOOTPRINT:
        over.append(f"{est.dram_bytes:,} bytes of DRAM (limit {MAX_DRAM_FOOTPRINT:,})")
    if over and not allow_large:
        raise SizeError(f"{op.key} on {hw.name} needs {' and '.join(over)}; pass allow_large=True "
                        "(CLI: --allow-large) if you mean it")


def compile(op: Op, hw: HardwareConfig | str = "gemmini", schedule: Any = None, *,
            db: str | Path | None = None, allow_large: bool = False) -> Program:
    """Lower ``op`` for ``hw`` under ``schedule``: None/"default" (the library heuristic), "best"
    (the best record in ``db``), a Schedule, a dict of knobs, or a JSON file of knobs.
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
