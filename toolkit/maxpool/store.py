"""Max pooling in the store unit: each tile's image is loaded into the scratchpad (one row a pixel,
one dim-wide image per channel block), and one pooling mvout per channel block writes its maxima.

Tiles alternate between the two scratchpad halves, so a tile's loads run while the store unit
pools the tile before (the dispatch orders a load after the mvouts still reading its rows).

The input is any int8, so a padded pool loads its padding as edge copies (tiles.py): Gemmini's
store unit would pool a padded position as 0, and an all-negative edge window would store 0.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from isa import HardwareConfig

from ..schedule import UNUSED, MemoryPlan, Region, ScheduleError
from .tiles import IMAGE_MAX, PoolTile, image_extent, pads_as_onnx, pool_tiles


class Load(NamedTuple):
    dram: int       # element offset in the input
    local: int
    rows: int
    cols: int


class Store(NamedTuple):
    dram: int       # element offset in the output
    local: int
    cols: int


class TileCode(NamedTuple):
    pool: str       # the config_st pooling fields
    loads: list[Load]
    stores: list[Store]


def edge_copies(op: Any) -> bool:
    """Whether the tiles load the padding as edge copies: int8 input can be negative (see tiles.py)."""
    return not pads_as_onnx(op.padding, nonnegative=False)


def tile_image(op: Any, porows: int, pocols: int) -> tuple[int, int]:
    """Image rows and columns (edge copies included) the largest tile of ``porows`` x ``pocols`` pooled
    pixels reads (without padding, floor mode's windows stay within the input)."""
    kh, kw = op.kernel
    return image_extent(min(porows, op.out_h), kh, op.stride), image_extent(min(pocols, op.out_w), kw, op.stride)


def store_plan(op: Any, porows: int, pocols: int, hw: HardwareConfig) -> MemoryPlan:
    """Two image buffers, one in each scratchpad half; ScheduleError when a tile does not fit."""
    rows, cols = tile_image(op, porows, pocols)
    if max(rows, cols, min(porows, op.out_h), min(pocols, op.out_w)) > IMAGE_MAX:
        raise ScheduleError(f"maxpool tile porows={porows} pocols={pocols} reads a {rows}x{cols} image: config_st "
                            f"holds at most {IMAGE_MAX} pixels a side")
    if min(porows, op.out_h) > 1 and op.out_w > IMAGE_MAX:
        raise ScheduleError(f"maxpool porows={porows}: an output row of {op.out_w} pixels is past config_st's "
                            f"pool_out_dim ({IMAGE_MAX}); use porows=1")
    block = rows * cols
    buffer = block * -(-op.channels // hw.dim)
    if buffer > hw.sp_rows // 2:
        raise ScheduleError(f"maxpool tile porows={porows} pocols={pocols} does not fit: {buffer} scratchpad rows "
                            f"a buffer, past half the scratchpad ({hw.sp_rows // 2})")
    return MemoryPlan(Region(0, buffer, 2, hw.sp_rows // 2), UNUSED, UNUSED)


def _runs(first: int, count: int, extent: int, most: int) -> list[tuple[int, int, int]]:
    """(offset, source pixel, length) of runs of up to ``most`` of the ``count`` pixels from ``first``, each
    pixel clamped into [0, extent) (an edge copy), each run of consecutive source pixels."""
    runs: list[tuple[int, int, int]] = []
    for i in range(count):
        src = min(max(first + i, 0), extent - 1)
        if runs and runs[-1][1] + runs[-1][2] == src and runs[-1][2] < most:
            runs[-1] = (runs[-1][0], runs[-1][1], runs[-1][2] + 1)
        else:
            runs.append((i, src, 1))
    return runs


def _loads(op: Any, t: PoolTile, b: int, base: int, block: int, hw: HardwareConfig) -> list[Load]:
    """One mvin per run of up to dim pixels of an image row and up to max_mvin_cols channels (an edge copy
    loads its edge pixel again)."""
    out, group = [], hw.max_mvin_cols
    for r in range(t.orows):
        row = min(max(t.row + r, 0), op.in_h - 1)
        for c, col, n in _runs(t.col, t.ocols, op.in_w, hw.dim):
            pixel = (b * op.in_h + row) * op.in_w + col
            for c0 in range(0, op.channels, group):
                out.append(Load(pixel * op.channels + c0, base + (c0 // hw.dim) * block + r * t.ocols + c,
                                n, min(group, op.channels - c0)))
    return out


def store_tiles(op: Any, porows: int, pocols: int, hw: HardwareConfig) -> tuple[int, list[TileCode]]:
    """(block stride, per tile of each image: its config_st pooling fields, loads and stores)."""
    plan = store_plan(op, porows, pocols, hw)
    rows, cols = tile_image(op, porows, pocols)
    block = rows * cols
    tiles = pool_tiles((op.in_h, op.in_w), (op.out_h, op.out_w), (porows, pocols), op.kernel[0], op.stride,
                       op.padding, edge_copies(op))
    out = []
    for b in range(op.batch):
        for t in tiles:
            base = plan.a.base(len(out))
            pixel = (b * op.out_h + t.porow) * op.out_w + t.pocol
            stores = [Store(pixel * op.channels + c0, base + (c0 // hw.dim) * block, min(hw.dim, op.channels - c0))
                      for c0 in range(0, op.channels, hw.dim)]
            out.append(TileCode(t.config_st(op.kernel[0], op.stride, op.out_w if t.porows > 1 else t.pocols),
                                _loads(op, t, b, base, block, hw), stores))
    return block, out
