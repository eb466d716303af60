"""gemmini.h's tiled_norm_auto (line ~3556): its tile choice, and the words tiled_norm (~3508) and
sp_tiled_norm (~3416) issue: config_st (the activation's two bits and C_scale), config_ex, two config_ld
(int32 rows, block stride DIM), for SOFTMAX two config_norm with I-exp's constants at its fixed
bert_scale of 0.05, then per tile of rows: the rows moved into the accumulator, and for each group of
NORM_STAT_IDS rows (the unit's stat ids: what gemmini_params.h of a Gemmini with it defines) each pass's
config_norm and one-row mvouts; then gemmini_fence().

The call this ports is ``tiled_norm_auto(rows, cols, X, Y, scale, LAYERNORM or SOFTMAX, WS)`` with X int32.
"""
from __future__ import annotations

from typing import Any

from isa import HardwareConfig
from isa.norm import softmax_consts

from ..norm import RowNorm
from ..lowering import softmax_config
from ..norm.lowering import passes
from ..norm.schedule import int32_blocks
from ..schedule import ScheduleError
from .schedule import LibraryNorm
from .words import at, ceil_div

BERT_SCALE = 0.05   # tiled_norm's "TODO let bert-scale be set by the programmer"


def tiled_norm_auto(op: RowNorm, hw: HardwareConfig) -> LibraryNorm:
    """The whole matrix, less a row at a time until its row blocks' accumulator rows fit the accumulator."""
    if op.function == "igelu":
        raise ScheduleError("gemmini.h's tiled_norm normalizes rows (LAYERNORM, SOFTMAX); its I-GELU is "
                            "tiled_matmul_auto's activation (tk.matmul(activation='igelu'))")
    if op.in_dtype != "int32":
        raise ScheduleError(f"gemmini.h's tiled_norm reads int32 rows (acc_t), not in_dtype={op.in_dtype!r}")
    if op.function == "softmax" and op.input_scale != BERT_SCALE:
        raise ScheduleError(f"gemmini.h's tiled_norm fixes the softmax's bert_scale at {BERT_SCALE}, not "
                            f"input_scale={op.input_scale}")
    if not hw.norm_stats:
        raise ScheduleError(f"hardware {hw.name} has no normalization unit (HardwareConfig.norm_stats = 0)")
    d, tile_i = hw.dim, op.rows
    while ceil_div(tile_i, d) * d * ceil_div(op.cols, d) > hw.acc_rows:
        if tile_i == 1:
            raise ScheduleError(f"tiled_norm_auto: Can't fit pre-normalized tensor into accumulator (a row of "
                                f"{op.cols} values on {hw.name})")
        tile_i -= 1
    return LibraryNorm(tile_i)


def norm_context(op: RowNorm, s: LibraryNorm, hw: HardwareConfig) -> dict[str, Any]:
    norm = softmax_config(softmax_consts(BERT_SCALE)) if op.function == "softmax" else ""
    return dict(op=op, schedule=s.to_dict(), dim=hw.dim, norm=norm, act=2 if op.function == "layernorm" else 0,
                lines=[line for i in range(0, op.rows, s.tile_i)
                       for line in sp_tiled_norm(op, min(s.tile_i, op.rows - i), i, hw)])


def sp_tiled_norm(op: RowNorm, rows: int, first: int, hw: HardwareConfig) -> list[dict[str, Any]]:
    """One tile's words: mvins of A_blocks column blocks, then per row block, per group of stat ids, per pass,
    per stat id its config_norm (LAYERNORM: all fields, zero; SOFTMAX: the stat id only) and the row's mvouts."""
    d, J = hw.dim, op.cols
    a_blocks, c_blocks = min(ceil_div(J, d), int32_blocks(hw)), min(ceil_div(J, d), hw.max_block_len)
    padded_blocks, stat_ids, out = ceil_div(J, d), hw.norm_stats, []
    for i in range(0, rows, d):
        n = min(d, rows - i)
        base = i * padded_blocks   # i * (rounded_up_J / DIM)
        out += [dict(op="mvin", dram=at("X", ((first + i) * J + j) * 4), local=base + j, rows=n,
                     cols=min(a_blocks * d, J - j)) for j in range(0, J, a_blocks * d)]
        for row in range(0, n, stat_ids):
            for running, final in passes(op):
                for sid in range(min(stat_ids, n - row)):
                    out.append(dict(op="config_norm", stat_id=sid, only=int(op.function == "softmax")))
                    r = row + sid
                    for jj in range(0, J, c_blocks * d):
                        cmd = final if jj + c_blocks * d >= J else running
                        out.append(dict(op="mvout", dram=at("Y", (first + i) * J + jj + r * J), local=base + jj + r,
                                        norm="" if cmd == 0 else "." + cmd.name.lower(),
                                        cols=min(J - jj, c_blocks * d)))
    return out
