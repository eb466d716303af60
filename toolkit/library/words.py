"""What the library modules share when they write loop-word fields: the tiles' walk, their fields as arrays
(a DRAM address as :class:`Addresses`), and those arrays as the template's rows or the loop words' values."""
from __future__ import annotations

import collections
import itertools
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

import numpy as np

from isa import Buffer, HardwareConfig

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


def walk_starts(nest: Sequence[str], steps: Mapping[str, int], maxes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """Each tile's first index of every argument of ``nest`` (the loops, outermost first, stepping by ``steps``
    through ``maxes``), in the walk's order: an array each, a value a tile."""
    grids = np.meshgrid(*(np.arange(0, maxes[n], steps[n]) for n in nest), indexing="ij")
    return {n: g.ravel() for n, g in zip(nest, grids)}


class Addresses(NamedTuple):
    """Per tile, a DRAM address of a loop word: ``buffer`` plus its byte offset where ``where``, else NULL (the
    loop skips that phase)."""
    buffer: str
    offsets: np.ndarray
    where: np.ndarray

    def text(self) -> list[str | int]:
        """As the assembly writes them (:func:`at`)."""
        return [at(self.buffer, x) if w else NULL for x, w in zip(self.offsets.tolist(), self.where.tolist())]

    def values(self, buffers: Mapping[str, Buffer]) -> np.ndarray:
        """As the assembly parses them, against the program's ``buffers``."""
        return np.where(self.where, buffers[self.buffer].addr + self.offsets, NULL)


def tiles_as_rows(columns: Mapping[str, Any]) -> list[Any]:
    """Per tile, an object whose attributes are ``columns``' fields (an array or :class:`Addresses` of each, a
    value a tile, or one value for every tile), in Python values: a named tuple a tile, which the template reads
    as fast as Python can (a dict a tile, then an object of it, took a tenth of a loop candidate's features)."""
    tile = collections.namedtuple("Tile", list(columns))
    return list(map(tile._make, zip(*map(_tile_values, columns.values()))))


def _tile_values(column: Any) -> Iterable[Any]:
    if isinstance(column, Addresses):
        return column.text()
    return column.tolist() if isinstance(column, np.ndarray) else itertools.repeat(column)


def loop_columns(columns: Mapping[str, Any], buffers: Mapping[str, Buffer]) -> dict[str, np.ndarray]:
    """``columns`` (a library call's fields, as :func:`tiles_as_rows` takes them) as the loop words' values, each
    :class:`Addresses` against the program's ``buffers``."""
    return {name: c.values(buffers) if isinstance(c, Addresses) else c for name, c in columns.items()}
