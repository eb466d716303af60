"""gemmini.h's tiled_resadd_auto (line ~3291, through tiled_resadd_stride_auto ~3241): its tile choice,
and the words tiled_resadd (~3202) issues: config_st, config_ex, two config_ld (A and B shrunk into
the accumulator, each with its scale), per tile gemmini_loop_ws with is_resadd (sp_tiled_resadd
~3135), then gemmini_fence().

The call this ports is ``tiled_resadd_auto(batch * h * w, channels, a_scale, b_scale, scale, A, B,
C, relu, WS)``: the NHWC tensors as matrices of pixels x channels.
"""
from __future__ import annotations

from typing import Any

from isa import HardwareConfig

from ..lowering import attributes
from ..resadd import ResAdd
from ..schedule import ScheduleError
from .schedule import LibraryResAdd
from .words import ACT, NULL, acc_rows, at, ceil_div


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
    return dict(op=op, schedule=s.to_dict(), dim=hw.dim, words=attributes(resadd_words(op, s, hw)))


def resadd_words(op: ResAdd, s: LibraryResAdd, hw: HardwareConfig) -> list[dict[str, Any]]:
    """tiled_resadd's loop over tiles of rows i and columns j (elements), each sp_tiled_resadd's loop_ws:
    sizes in blocks with the last block's padding, no K, no D, no accumulate flag."""
    d, rows, cols = hw.dim, op.batch * op.h * op.w, op.channels
    words = []
    for i in range(0, rows, s.tile_i):
        for j in range(0, cols, s.tile_j):
            I, J = min(s.tile_i, rows - i), min(s.tile_j, cols - j)
            offset = i * cols + j
            words.append(dict(
                i=ceil_div(I, d), j=ceil_div(J, d), k=0, pad_i=-I % d, pad_j=-J % d, pad_k=0,
                a=at("A", offset), b=at("B", offset), d=NULL, c=at("C", offset),
                a_stride=cols, b_stride=cols, d_stride=0, c_stride=cols,
                ex_accumulate=0, full_c=0, low_d=0, act=ACT[op.activation], a_spad_id=0, b_spad_id=0, is_resadd=1))
    return words
