"""The max pool's schedule and its default: tiles of the store unit's pooling, or the ReLU lowering's slots."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from isa import HardwareConfig

from ..schedule import UNUSED, MemoryPlan, Region, Schedule, ScheduleError, check_int
from .op import MaxPool2d
from .store import store_plan, tile_image
from .tiles import IMAGE_MAX, store_can_pool


@dataclass(frozen=True)
class MaxPoolSchedule(Schedule):
    """porows x pocols: pooled pixels a tile of the store unit's pooling (double-buffered in the scratchpad).
    slots, acc_bank: the ReLU lowering's, for windows config_st cannot express: accumulator blocks of ``dim``
    rows used round-robin (more lets loads run ahead of stores)."""

    porows: int = 8
    pocols: int = 64
    slots: int = 4
    acc_bank: int = 0

    OP: ClassVar[str] = "maxpool"

    def __post_init__(self) -> None:
        check_int("porows", self.porows, 1, IMAGE_MAX)
        check_int("pocols", self.pocols, 1, IMAGE_MAX)
        check_int("slots", self.slots, 1)
        check_int("acc_bank", self.acc_bank, 0)

    def memory_plan(self, hw: HardwareConfig, op: Any = None) -> MemoryPlan:
        if op is not None and store_can_pool(op.kernel, op.stride, op.padding):
            return store_plan(op, self.porows, self.pocols, hw)
        check_int("acc_bank", self.acc_bank, 0, hw.acc_banks - 1)
        c = Region(self.acc_bank * hw.acc_bank_rows, hw.dim, self.slots)
        if c.end > hw.acc_rows:
            raise ScheduleError(f"maxpool slots={self.slots} do not fit: {c.end - c.start} accumulator rows from "
                                f"row {c.start}, past the {hw.acc_rows} it has")
        return MemoryPlan(UNUSED, UNUSED, c)


def default_maxpool(op: MaxPool2d, hw: HardwareConfig) -> MaxPoolSchedule:
    """Whole output rows a tile where they fit config_st, then as many rows as half the scratchpad holds
    (fewer, larger tiles reload fewer overlapping image rows)."""
    if not store_can_pool(op.kernel, op.stride, op.padding):
        return MaxPoolSchedule()
    pocols = max(c for c in range(1, min(op.out_w, IMAGE_MAX) + 1) if tile_image(op, 1, c)[1] <= IMAGE_MAX)
    best = MaxPoolSchedule(porows=1, pocols=pocols)
    for porows in range(2, min(op.out_h, IMAGE_MAX) + 1):
        try:
            MaxPoolSchedule(porows=porows, pocols=pocols).memory_plan(hw, op)
        except ScheduleError:
            break
        best = MaxPoolSchedule(porows=porows, pocols=pocols)
    return best
