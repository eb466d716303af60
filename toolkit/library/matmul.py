"""gemmini.h's tiled_matmul_auto (line ~1231): its tile choice, and the words tiled_matmul_outer
(~692) issues: config_ex, config_st, three config_ld, per tile (i0, j0, k0) gemmini_loop_ws
(~349, through sp_tiled_matmul_ws ~684), then gemmini_fence().

The call this ports is ``tiled_matmul_auto(M, N, K, A, B, bias, C, stride_A=K, stride_B=N,
stride_D=N, stride_C=N, 1.0, 1.0, 1.0, act, scale, 0, repeating_bias=(bias == "row"), false, false,
full_C=(out_dtype == "int32"), low_D=false, 0, WS)``. DRAM strides in the loop words are elements,
as gemmini.h passes them; those of config_ld / config_st are bytes.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, NamedTuple

import numpy as np

from isa import HardwareConfig
from isa.instructions import ACTIVATIONS

from ..gemm.op import Matmul
from ..gemm.schedule import matmul_blocks
from ..lowering import norm_config
from ..schedule import ScheduleError, grow_tiles
from .schedule import LibraryMatmul
from .words import ACT, NULL, Addresses, fits_half, tiles_as_rows, walk_starts

ROW_ACTIVATIONS = ("layernorm", "softmax")   # normalize each row of C: a tile holds whole rows
MATMUL_BUFFERS = {"a": "A", "b": "B", "d": "bias", "c": "C"}   # the DRAM buffers of A, B, D and C: the op's


def tiled_matmul_auto(op: Matmul, hw: HardwareConfig) -> LibraryMatmul:
    """Start at db_max_tile_i_j = isqrt((ACC_ROWS / 2) / DIM) and db_max_tile_k = (BANK_NUM * BANK_ROWS
    / 4 / DIM) / db_max_tile_i_j (each at most the matrix), then grow J, I, K round-robin while A and B
    fit half the scratchpad and C half the accumulator (512^3 on the gemmini preset: 5x6x32)."""
    if op.transpose_a or op.transpose_b:   # not emitted yet: toolkit/library's words set no transpose bits
        raise ScheduleError("schedule='gemmini' does not take transposed operands (transpose_a/transpose_b): "
                            "use the default schedule")
    d = hw.dim
    tile_ij = math.isqrt(hw.acc_rows // 2 // d)
    tile_k = hw.sp_rows // 2 // 2 // d // tile_ij if tile_ij else 0
    if not tile_k:
        raise ScheduleError(f"tiled_matmul_auto has no tiles on {hw.name}: half its accumulator or a quarter "
                            f"of its scratchpad holds no {d}x{d} block")
    limits = matmul_blocks(op.M, op.N, op.K, hw)
    start = {"i": min(limits["i"], tile_ij), "j": min(limits["j"], tile_ij), "k": min(limits["k"], tile_k)}
    if op.activation in ROW_ACTIVATIONS:   # LAYERNORM, SOFTMAX: whole rows in a tile, from one block of I and K
        start = {"i": 1, "j": limits["j"], "k": 1}
        if not fits_half(*matmul_rows(start, d), hw):
            raise ScheduleError(f"tiled_matmul_auto with {op.activation.upper()}: a row of {op.N} columns does not "
                                f"fit half of {hw.name}'s accumulator")
    t = grow_tiles(start, limits, lambda t: fits_half(*matmul_rows(t, d), hw), ("j", "i", "k"),
                   op.key)   # the start fits by construction
    return LibraryMatmul(t["i"], t["j"], t["k"])


def matmul_rows(t: dict[str, int], dim: int) -> tuple[int, int]:
    """tiled_matmul_total_spad_rows and tiled_matmul_total_acc_rows of tiles ``t`` (in blocks)."""
    return (t["i"] * t["k"] + t["k"] * t["j"]) * dim, t["i"] * t["j"] * dim


class Axis(NamedTuple):
    """One of tiled_matmul_outer's dimensions: tile count, the last tile's blocks, padding in elements."""

    tiles: int
    last: int
    pad: int

    def size(self, n: int, tile: int) -> int:
        return tile if n < self.tiles - 1 else self.last

    def padding(self, n: int) -> int:
        return self.pad if n == self.tiles - 1 else 0


def axis(extent: int, tile: int, dim: int) -> Axis:
    blocks = -(-extent // dim)
    return Axis(-(-blocks // tile), blocks % tile or tile, blocks * dim - extent)


def matmul_context(op: Matmul, s: LibraryMatmul, hw: HardwareConfig) -> dict[str, Any]:
    """What matmul_library.s.j2 lays out: the config words' values and each tile's loop_ws fields.
    Tiles past the matrix or the memories are refused, as tiled_matmul's assertions refuse them."""
    s.memory_plan(hw, op)
    return dict(matmul_head(op, s, hw), words=tiles_as_rows(matmul_columns(op, s, hw)))


def matmul_head(op: Matmul, s: LibraryMatmul, hw: HardwareConfig) -> dict[str, Any]:
    """The template's context but the tiles' own words: the config words' values."""
    full_c = op.out_dtype == "int32"
    repeating_bias = op.bias == "row"
    # config_ex and config_st take gemmini.h's act & 3 (SOFTMAX's high bit is config_norm's)
    return dict(op=op, schedule=s.to_dict(), dim=hw.dim, act=ACTIVATIONS[ACT[op.activation] & 3],
                norm=norm_config(op), c_row_bytes=op.N * (4 if full_c else 1),
                d_row_bytes=0 if repeating_bias else op.N * 4, words=())


WALKS = {"ij": ("i", "j", "k"), "ji": ("j", "i", "k")}   # LibraryMatmul.order -> the host's loop nest, k innermost


def matmul_columns(op: Matmul, s: LibraryMatmul, hw: HardwareConfig, names: Mapping[str, str] = MATMUL_BUFFERS
                   ) -> dict[str, Any]:
    """tiled_matmul_outer's loop over the (i0, j0, k0) tiles in ``s.order``, the fields of gemmini_loop_ws's words
    per tile (an array, or :class:`~.words.Addresses`, of each, a value a tile; one value where all share it),
    A, B, D and C in the DRAM buffers ``names`` names.
    A (or B) is loaded once and kept under a scratchpad id when it spans at most two tiles (a_reuse, b_reuse);
    the bias goes with a tile's first k0, C with its last; the last tiles carry the padding."""
    d = hw.dim
    axes = {"i": axis(op.M, s.tile_i, d), "j": axis(op.N, s.tile_j, d), "k": axis(op.K, s.tile_k, d)}
    tiles = {"i": s.tile_i, "j": s.tile_j, "k": s.tile_k}
    at_ = walk_starts(WALKS[s.order], dict.fromkeys(axes, 1), {n: a.tiles for n, a in axes.items()})
    i0, j0, k0 = at_["i"], at_["j"], at_["k"]
    I, J, K = axes.values()
    c_bytes = 4 if op.out_dtype == "int32" else 1
    a_reuse, b_reuse = I.tiles * K.tiles <= 2, J.tiles * K.tiles <= 2
    row, col, depth = i0 * s.tile_i * d, j0 * s.tile_j * d, k0 * s.tile_k * d
    bias_row = 0 if op.bias == "row" else row
    last = {n: at_[n] == a.tiles - 1 for n, a in axes.items()}
    return dict(
        **{n: np.where(last[n], a.last, tiles[n]) for n, a in axes.items()},
        **{f"pad_{n}": np.where(last[n], a.pad, 0) for n, a in axes.items()},
        a=Addresses(names["a"], row * op.K + depth, ~(a_reuse & (j0 > 0))),
        b=Addresses(names["b"], depth * op.N + col, ~(b_reuse & (i0 > 0))),
        d=Addresses(names["d"], (bias_row * op.N + col) * 4, k0 == 0) if op.bias else NULL,
        c=Addresses(names["c"], (row * op.N + col) * c_bytes, last["k"]),
        a_stride=op.K, b_stride=op.N, d_stride=0 if op.bias == "row" else op.N, c_stride=op.N,
        # no bias: the first k0 overwrites the accumulator, later ones add to it
        ex_accumulate=((k0 > 0) | bool(op.bias)).astype(np.int64), full_c=int(c_bytes == 4), low_d=0,
        act=ACT[op.activation],
        a_spad_id=np.where(i0 + k0 == 0, 1, 2) if a_reuse else 0,
        b_spad_id=np.where(j0 + k0 == 0, 1, 2) if b_reuse else 0, a_transpose=0, b_transpose=0, is_resadd=0)
