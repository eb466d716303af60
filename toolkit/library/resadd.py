"""gemmini.h's tiled_resadd_auto (line ~3291, through tiled_resadd_stride_auto ~3241): its tile choice,
and the words tiled_resadd (~3202) issues: config_st, config_ex, two config_ld (A and B shrunk into
the accumulator, each with its scale), per tile gemmini_loop_ws with is_resadd (sp_tiled_resadd
~3135), then gemmini_fence().

The call this ports is ``tiled_resadd_auto(batch * h * w, channels, a_scale, b_scale, scale, A, B,
C, relu, WS)``: the NHWC tensors as matrices of pixels x channels.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from isa import HardwareConfig

from ..resadd import ResAdd
from ..schedule import ScheduleError
from .schedule import LibraryResAdd
from .words import ACT, NULL, Addresses, acc_rows, ceil_div, tiles_as_rows, walk_starts


def tiled_resadd_auto(op: ResAdd, hw: HardwareConfig) -> LibraryResAdd:
    """From the whole matrix, halve the rows (while they are at least as many as the columns, or the
    columns are one block) or drop a block of columns, until the tile fits half the accumulator."""
    if op.out_dtype != "int8":
        raise ScheduleError(f"gemmini.h's tiled_resadd_auto writes int8 outputs only, not out_dtype={op.out_dtype!r}")
    if op.bias:
        raise ScheduleError("gemmini.h's tiled_resadd_auto adds no bias (bias='channel' is the toolkit's own)")
    d = hw.dim
    tile_i, tile_j = op.batch * op.h * op.w, op.channels
    while acc_rows(tile_i, tile_j, d) > hw.acc_rows // 2:
        if tile_i >= tile_j or tile_j <= d:
            tile_i //= 2
        else:
            tile_j -= d
    if not tile_i:
        raise ScheduleError(f"tiled_resadd_auto has no tiles on {hw.name}: half its accumulator holds no row "
                            f"of {min(op.channels, d)} channels")
    return LibraryResAdd(tile_i, tile_j)


def resadd_context(op: ResAdd, s: LibraryResAdd, hw: HardwareConfig) -> dict[str, Any]:
    s.memory_plan(hw, op)
    return dict(resadd_head(op, s, hw), words=tiles_as_rows(resadd_columns(op, s, hw)))


def resadd_head(op: ResAdd, s: LibraryResAdd, hw: HardwareConfig) -> dict[str, Any]:
    """The template's context but the tiles' own words."""
    return dict(op=op, schedule=s.to_dict(), dim=hw.dim, words=())


def resadd_columns(op: ResAdd, s: LibraryResAdd, hw: HardwareConfig) -> dict[str, Any]:
    """tiled_resadd's loop over tiles of rows i and columns j (elements), each sp_tiled_resadd's loop_ws:
    sizes in blocks with the last block's padding, no K, no D, no accumulate flag. An array of each field, a
    value a tile (one value where all share it), as matmul.matmul_columns lays them out."""
    d, rows, cols = hw.dim, op.batch * op.h * op.w, op.channels
    at_ = walk_starts(("i", "j"), {"i": s.tile_i, "j": s.tile_j}, {"i": rows, "j": cols})
    i, j = at_["i"], at_["j"]
    tile_i, tile_j = np.minimum(s.tile_i, rows - i), np.minimum(s.tile_j, cols - j)
    offset, every = i * cols + j, np.ones(len(i), bool)
    return dict(
        i=ceil_div(tile_i, d), j=ceil_div(tile_j, d), k=0, pad_i=-tile_i % d, pad_j=-tile_j % d, pad_k=0,
        a=Addresses("A", offset, every), b=Addresses("B", offset, every), d=NULL, c=Addresses("C", offset, every),
        a_stride=cols, b_stride=cols, d_stride=0, c_stride=cols, ex_accumulate=0, full_c=0, low_d=0,
        act=ACT[op.activation], a_spad_id=0, b_spad_id=0, a_transpose=0, b_transpose=0, is_resadd=1)
