"""What the library modules share when they write loop-word fields."""
from __future__ import annotations

from isa import HardwareConfig

from ..schedule import ScheduleError

NULL = 0                            # a NULL pointer in a loop word: skip that phase
ACT = {"none": 0, "relu": 1, "layernorm": 2, "igelu": 3, "softmax": 4}   # gemmini.h's activations


def at(buffer: str, offset: int) -> str:
    """A DRAM address as the assembly writes it: ``buffer+offset`` (bytes)."""
    return f"{buffer}+{offset}"


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def fits_half(spad: int, acc: int, hw: HardwareConfig) -> bool:
    """Whether a tile's rows fit half the scratchpad and half the accumulator (double buffering: the
    other halves hold the next tile), as gemmini.h's auto-tilers and assertions ask."""
    return spad <= hw.sp_rows // 2 and acc <= hw.acc_rows // 2


def check_fits(what: str, spad: int, acc: int, hw: HardwareConfig) -> None:
    """gemmini.h's GEMMINI_ASSERTIONS in tiled_matmul / tiled_conv: ScheduleError unless the tile fits."""
    if not fits_half(spad, acc, hw):
        raise ScheduleError(f"{what} does not fit {hw.name}: its tiles need {spad} scratchpad rows (of "
                            f"{hw.sp_rows // 2}) and {acc} accumulator rows (of {hw.acc_rows // 2})")


def acc_rows(rows: int, cols: int, dim: int) -> int:
    """Accumulator rows of a ``rows`` x ``cols`` tile of a resadd: ``dim``-row blocks of each ``dim`` columns."""
    return ceil_div(rows, dim) * dim * ceil_div(cols, dim)
