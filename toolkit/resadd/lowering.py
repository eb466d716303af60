"""The residual add's lowering: per tile, A and B moved into the accumulator with their scales, C stored."""
from __future__ import annotations

from isa import HardwareConfig, Program, layout, parse_program

from ..lowering import blocks, render
from .op import ResAdd
from .schedule import ResAddSchedule


def lower_resadd(op: ResAdd, s: ResAddSchedule, hw: HardwareConfig) -> Program:
    plan = s.memory_plan(hw, op)
    d = hw.dim
    M, C = op.batch * op.h * op.w, op.channels
    tiles = []
    for ti in range(-(-M // (d * s.tile_rows))):
        for tj in range(-(-C // (d * s.tile_c))):
            tiles.append(dict(acc=plan.c.base(len(tiles)), rows=blocks(ti, s.tile_rows, M, d),
                              groups=blocks(tj, s.tile_c, C, d, s.mvin_blocks),
                              stores=blocks(tj, s.tile_c, C, d, 1 if op.out_dtype == "int32" else s.mvin_blocks)))
    buffers = layout([("A", "input", "int8", op.shape), ("B", "input", "int8", op.shape),
                      *([("bias", "input", "int32", (C,))] if op.bias else []), ("C", "output", op.out_dtype, op.shape)])
    text = render("resadd_ws.s.j2", op=op, C=C, dim=d, tile_c=s.tile_c, schedule=s.to_dict(),
                  out_bytes=4 if op.out_dtype == "int32" else 1, tiles=tiles, overlap=s.double_buffer)
    return parse_program(text, hw, buffers)
