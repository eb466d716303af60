"""The row normalization's schedule (tiles of whole rows in the accumulator) and its default."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from isa import HardwareConfig

from ..schedule import UNUSED, MemoryPlan, Region, Schedule, ScheduleError, check_int
from .op import RowNorm


def int32_blocks(hw: HardwareConfig) -> int:
    """dim-wide blocks one mvin of int32 rows may move: a quarter of max_block_len, as gemmini.h's
    MAX_BLOCK_LEN_ACC (the DMA's bytes a move, at four bytes a value)."""
    return max(1, hw.max_block_len // 4)


def row_view(op: RowNorm, hw: HardwareConfig) -> RowNorm:
    """The rows the unit walks. I-GELU is elementwise, so its row-major X and Y read as rows of fewer columns
    (the fewest splits of a row that fit two row blocks in the accumulator); LayerNorm and softmax need whole rows."""
    if op.function != "igelu":
        return op
    for k in range(1, op.cols + 1):
        if op.cols % k == 0 and 2 * hw.dim * -(-(op.cols // k) // hw.dim) <= hw.acc_rows:
            return replace(op, rows=op.rows * k, cols=op.cols // k)
    return replace(op, rows=op.rows * op.cols, cols=1)


@dataclass(frozen=True)
class NormSchedule(Schedule):
    """tile_rows: row blocks of ``dim`` rows per tile (each row whole: its column blocks dim accumulator
    rows apart, as gemmini.h's sp_tiled_norm lays them); stat_ids: rows normalized at once, each on its own
    stat id (a config_norm chooses it before each pass of each row; with 1 a single config_norm serves
    the whole program); mvin_blocks / mvout_blocks: column blocks a move carries; double_buffer: the next
    tile's loads run among this tile's stores."""

    tile_rows: int
    stat_ids: int = 1
    mvin_blocks: int = 1
    mvout_blocks: int = 1
    double_buffer: bool = True

    OP: ClassVar[str] = "norm"

    def __post_init__(self) -> None:
        for name in ("tile_rows", "stat_ids", "mvin_blocks", "mvout_blocks"):
            check_int(name, getattr(self, name), 1)
        if not isinstance(self.double_buffer, bool):
            raise ScheduleError(f"double_buffer={self.double_buffer!r} must be true or false")

    def memory_plan(self, hw: HardwareConfig, op: Any = None) -> MemoryPlan:
        if op is None:
            raise ScheduleError("a norm schedule's memory plan needs its op (a tile holds whole rows)")
        check_int("stat_ids", self.stat_ids, 1, max(1, hw.norm_stats))
        check_int("mvin_blocks", self.mvin_blocks, 1, hw.max_block_len)
        check_int("mvout_blocks", self.mvout_blocks, 1, hw.max_block_len)
        if not hw.norm_stats:
            raise ScheduleError(f"hardware {hw.name} has no normalization unit (HardwareConfig.norm_stats = 0)")
        op = row_view(op, hw)
        c = Region(0, self.tile_rows * hw.dim * -(-op.cols // hw.dim), 2 if self.double_buffer else 1)
        if c.end > hw.acc_rows:
            raise ScheduleError(f"norm tiles of {self.tile_rows} row blocks of {op.cols} columns do not fit: "
                                f"{c.buffers}x{c.rows} accumulator rows, past the {hw.acc_rows} it has")
        return MemoryPlan(UNUSED, UNUSED, c)


def default_norm_schedule(op: RowNorm, hw: HardwareConfig) -> NormSchedule:
    """The fewest tiles, double-buffered where two fit the accumulator; one stat id (our unit holds the store
    path while a row's statistics finish, so several ids buy nothing and cost a config_norm per row and
    pass); the widest moves."""
    op, d = row_view(op, hw), hw.dim
    row_blocks, col_blocks = -(-op.rows // d), -(-op.cols // d)
    per_block = d * col_blocks
    if per_block > hw.acc_rows:
        raise ScheduleError(f"a row of {op.cols} values needs {per_block} accumulator rows laid out in dim blocks; "
                            f"{hw.name} has {hw.acc_rows}")
    double = 2 * per_block <= hw.acc_rows
    tile_rows = min(row_blocks, hw.acc_rows // (per_block * (2 if double else 1)))
    # int32 moves as gemmini.h's MAX_BLOCK_LEN_ACC (the tuner may try wider: on the SoC preset LayerNorm over
    # 128 x 768 took 165,057 cycles with 4-block int32 mvins against 165,083, softmax 128 x 128 24,087 against 23,836)
    mvin_cap = int32_blocks(hw) if op.in_dtype == "int32" else hw.max_block_len
    return NormSchedule(tile_rows, 1, min(col_blocks, mvin_cap), min(col_blocks, hw.max_block_len),
                        double and row_blocks > tile_rows)
