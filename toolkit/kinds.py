"""Every op kind in one table: its op class, schedule class, library default and lowering.

Adding an op kind is adding a row to :data:`KINDS`; nothing registers itself on import.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Callable, Mapping

from isa import HardwareConfig, Program

from .conv.heuristic import default_conv_schedule, gemmini_conv_schedule
from .conv.lowering import lower_conv
from .conv.ops import Conv2d, DepthwiseConv2d
from .conv.schedule import ConvSchedule, DepthwiseSchedule
from .lowering import lower_matmul
from .maxpool import MaxPool2d, MaxPoolSchedule, lower_maxpool
from .ops import Matmul, Op
from .resadd import ResAdd, ResAddSchedule, default_resadd_schedule, lower_resadd
from .schedule import (MatmulSchedule, Schedule, ScheduleError, default_matmul_schedule,
                       gemmini_matmul_schedule)


@dataclass(frozen=True)
class Kind:
    op: type[Op]
    schedule: type[Schedule]
    default: Callable[[Any, HardwareConfig], Schedule]           # the toolkit's heuristic
    lower: Callable[[Any, Any, HardwareConfig], Program]
    gemmini: Callable[[Any, HardwareConfig], Schedule] | None = None   # Gemmini's library; None: as default


KINDS: dict[str, Kind] = {
    "matmul": Kind(Matmul, MatmulSchedule,
                   lambda op, hw: default_matmul_schedule(op.M, op.N, op.K, hw, 4 if op.out_dtype == "int32" else 1),
                   lower_matmul, lambda op, hw: gemmini_matmul_schedule(op.M, op.N, op.K, hw)),
    "conv2d": Kind(Conv2d, ConvSchedule, default_conv_schedule, lower_conv, gemmini_conv_schedule),
    "depthwise": Kind(DepthwiseConv2d, DepthwiseSchedule, default_conv_schedule, lower_conv, gemmini_conv_schedule),
    "resadd": Kind(ResAdd, ResAddSchedule, default_resadd_schedule, lower_resadd),
    "maxpool": Kind(MaxPool2d, MaxPoolSchedule, lambda op, hw: MaxPoolSchedule(), lower_maxpool),
}


def from_dict(data: Mapping[str, Any]) -> Op:
    """Rebuild an op from :meth:`Op.to_dict`."""
    data = dict(data)
    kind = data.pop("kind", None)
    if kind not in KINDS:
        raise ValueError(f"op kind {kind!r} is not one of {sorted(KINDS)}")
    cls = KINDS[kind].op
    for f in fields(cls):
        if isinstance(data.get(f.name), list):
            data[f.name] = tuple(data[f.name])
    return cls(**data)


def default_schedule(op: Op, hw: HardwareConfig) -> Schedule:
    """The toolkit's own heuristic for ``op`` on ``hw`` (what an untuned user gets)."""
    return KINDS[op.KIND].default(op, hw)


def gemmini_schedule(op: Op, hw: HardwareConfig) -> Schedule:
    """The baseline: Gemmini's own library (tiled_matmul_auto / tiled_conv_auto) and its flat
    instruction order; kinds Gemmini's library has no auto-tiler for get the toolkit's heuristic."""
    kind = KINDS[op.KIND]
    return (kind.gemmini or kind.default)(op, hw)


def lower(op: Op, schedule: Schedule, hw: HardwareConfig) -> Program:
    """Render ``op`` under ``schedule`` for ``hw``; ScheduleError before any instruction if it does not fit."""
    if op.KIND not in KINDS:
        raise ScheduleError(f"no lowering for op kind {op.KIND!r}")
    prog = KINDS[op.KIND].lower(op, schedule, hw)
    prog.meta.update(op=op.to_dict(), schedule=schedule.to_dict(), template=f"{op.KIND}_ws.s.j2")
    return prog
