"""The row normalization's lowering: per tile, the rows moved into the accumulator, then per group of
``stat_ids`` rows each pass of the unit (isa.norm): LayerNorm's sum/mean, variance/inv_stddev, output;
softmax's max, sum of exponentials/inverse, output."""
from __future__ import annotations

from isa import HardwareConfig, Program, layout, parse_program
from isa.norm import PASSES, Act, NormCmd, row_consts, row_store_scale

from ..lowering import blocks, igelu_config, render, softmax_config
from .op import RowNorm
from .schedule import NormSchedule, row_view

STORE_ONLY = ((NormCmd.RESET, NormCmd.RESET),)   # I-GELU: no statistics, one store of each row


def passes(op: RowNorm) -> tuple:
    """The unit's passes of ``op``'s function (isa.norm.PASSES)."""
    return PASSES.get(Act[op.function.upper()], STORE_ONLY)


def _stores(op: RowNorm, s: NormSchedule, d: int, acc: int, row_block) -> list[dict]:
    """One row block's passes: per group of stat_ids rows, per pass, per row (its stat id chosen first when
    there are several), the row's mvouts of mvout_blocks column blocks, the last with the pass's final command."""
    chunks = blocks(0, -(-op.cols // d), op.cols, d, s.mvout_blocks)
    if op.function == "igelu":   # no statistics: whole row blocks
        return [dict(row=row_block.start, col=c.start, size=c.size, norm="reset", rows=row_block.size,
                     local=acc + row_block.idx * d * -(-op.cols // d) + c.idx * d) for c in chunks]
    out = []
    for first in range(0, row_block.size, s.stat_ids):
        group = range(first, min(first + s.stat_ids, row_block.size))
        for running, final in passes(op):
            for r in group:
                if s.stat_ids > 1:
                    out.append(dict(stat_id=r - first))
                for c in chunks:
                    cmd = final if c.idx == chunks[-1].idx else running
                    out.append(dict(row=row_block.start + r, col=c.start, size=c.size, norm=cmd.name.lower(),
                                    local=acc + row_block.idx * d * -(-op.cols // d) + c.idx * d + r))
    return out


def lower_norm(op: RowNorm, s: NormSchedule, hw: HardwareConfig) -> Program:
    plan = s.memory_plan(hw, op)
    key, shape, op, d = op.key, op.shape, row_view(op, hw), hw.dim   # X and Y keep the op's shape
    tiles = []
    for t in range(-(-op.rows // (d * s.tile_rows))):
        acc = plan.c.base(t)
        row_blocks = blocks(t, s.tile_rows, op.rows, d)
        tiles.append(dict(acc=acc, rows=row_blocks, groups=blocks(0, -(-op.cols // d), op.cols, d, s.mvin_blocks),
                          stores=[w for rb in row_blocks for w in _stores(op, s, d, acc, rb)]))
    buffers = layout([("X", "input", op.in_dtype, shape), ("Y", "output", "int8", shape)])
    text = render("norm_ws.s.j2", op=op, key=key, dim=d, col_blocks=-(-op.cols // d), schedule=s.to_dict(), tiles=tiles,
                  in_bytes=4 if op.in_dtype == "int32" else 1, norm=_norm_words(op), overlap=s.double_buffer,
                  load_scale=float(1 << op.input_shift), activation=_ACTIVATION[op.function],
                  acc_scale=row_store_scale(op.function, op.scale, _acc_step(op)))
    return parse_program(text, hw, buffers)


_ACTIVATION = {"layernorm": "layernorm", "softmax": "none", "igelu": "igelu"}   # softmax: config_norm's act_msb


def _acc_step(op: RowNorm) -> float:
    """The real value of one accumulator step: the input's, over the int8 load's 2^k."""
    return op.input_scale / (1 << op.input_shift)


def _norm_words(op: RowNorm) -> str:
    """The config_norm words after config_st: softmax's or I-GELU's constants (at the accumulator's step), else
    the one stat id the default uses."""
    if op.function == "softmax":
        return softmax_config(row_consts("softmax", _acc_step(op)))
    if op.function == "igelu":
        return igelu_config(row_consts("igelu", _acc_step(op)))
    return "\nconfig_norm stat_id=0 set_stats_id_only=1"
