"""The residual add's schedule (tiles in the accumulator) and its default."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from isa import HardwareConfig

from ..schedule import UNUSED, MemoryPlan, Region, Schedule, ScheduleError, check_int
from .op import ResAdd


@dataclass(frozen=True)
class ResAddSchedule(Schedule):
    """tile_rows: pixel blocks of ``dim`` per tile; tile_c: channel blocks; the tile lives in the accumulator."""

    tile_rows: int
    tile_c: int
    double_buffer: bool = True
    mvin_blocks: int = 1
    acc_bank: int = 0

    OP: ClassVar[str] = "resadd"

    def __post_init__(self) -> None:
        for name in ("tile_rows", "tile_c", "mvin_blocks"):
            check_int(name, getattr(self, name), 1)
        check_int("acc_bank", self.acc_bank, 0)
        if not isinstance(self.double_buffer, bool):
            raise ScheduleError(f"double_buffer={self.double_buffer!r} must be true or false")

    def memory_plan(self, hw: HardwareConfig, op: Any = None) -> MemoryPlan:
        check_int("mvin_blocks", self.mvin_blocks, 1, hw.max_block_len)
        check_int("acc_bank", self.acc_bank, 0, hw.acc_banks - 1)
        c = Region(self.acc_bank * hw.acc_bank_rows, self.tile_rows * self.tile_c * hw.dim,
                   2 if self.double_buffer else 1)
        if c.end > hw.acc_rows:
            raise ScheduleError(f"resadd tiles {self.tile_rows}x{self.tile_c} do not fit: {c.buffers}x{c.rows} "
                                f"accumulator rows from row {c.start}, past the {hw.acc_rows} it has")
        return MemoryPlan(UNUSED, UNUSED, c)


def default_resadd_schedule(op: ResAdd, hw: HardwareConfig) -> ResAddSchedule:
    """Double-buffered tiles of up to half the accumulator: the fewest tiles, then the most even ones
    (the largest smallest tile, so that no tile of a few pixels leaves the DMA port waiting for its
    latency), then the widest channel rows. Each tile's loads run among the previous tile's stores
    (resadd_ws.s.j2), so the port moves a beat nearly every cycle; every tile switch costs a few
    cycles (on the RTL, 256-row tiles lose ~0.5% to 512-row ones)."""
    d = hw.dim
    half = max(1, hw.acc_rows // 2 // d)
    pixels, channels = op.batch * op.h * op.w, op.channels
    row_blocks, chan_blocks = -(-pixels // d), -(-channels // d)

    def rank(t: tuple[int, int]) -> tuple[int, int, int]:
        rows, cols = t
        n = -(-row_blocks // rows) * -(-chan_blocks // cols)
        smallest = min(rows * d, pixels - (row_blocks - 1) // rows * rows * d) * \
            min(cols * d, channels - (chan_blocks - 1) // cols * cols * d)
        return n, -smallest, -cols

    tile_rows, tile_c = min(((r, c) for c in range(1, min(chan_blocks, half) + 1)
                             for r in {min(row_blocks, half // c)}), key=rank)
    return ResAddSchedule(tile_rows, tile_c, mvin_blocks=hw.max_block_len)
