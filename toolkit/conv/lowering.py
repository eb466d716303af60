"""Conv lowering: the tile walk rendered through conv2d_ws.s.j2 / depthwise_ws.s.j2 (after the
padding copy of pad_copy.s.j2 when packed taps read a padded scratch copy of the input)."""
from __future__ import annotations

from isa import HardwareConfig, Program, parse_program

from ..lowering import op_buffers, render, requant_fields
from .geometry import padded_width
from .ops import Conv2d, DepthwiseConv2d
from .packed import pad_copy
from .schedule import ConvSchedule, DepthwiseSchedule
from .tiles import conv_tiles


def lower_conv(op: Conv2d | DepthwiseConv2d, s: ConvSchedule | DepthwiseSchedule, hw: HardwareConfig) -> Program:
    tiles, plan = conv_tiles(op, s, hw)
    dw = isinstance(op, DepthwiseConv2d)
    K = op.channels if dw else op.out_c
    out_bytes = 4 if op.out_dtype == "int32" else 1
    geo = s.geometry(op)
    copy, scratch = None, []
    if geo.source == "padded":
        copy = pad_copy(op, hw)
        scratch.append(("padded", "int8", (op.batch, op.in_h, padded_width(op), op.in_c)))
    text = render("depthwise_ws.s.j2" if dw else "conv2d_ws.s.j2", op=op, K=K, out_bytes=out_bytes,
                  requant=requant_fields(op),
                  schedule=s.to_dict(), pipe=s, dim=hw.dim, plan=plan, geo=geo, copy=copy,
                  tiles=tiles)
    return parse_program(text, hw, op_buffers(op, tuple(scratch)))
