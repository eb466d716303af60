"""Conv lowering: the tile walk rendered through conv2d_ws.s.j2 / depthwise_ws.s.j2."""
from __future__ import annotations

from isa import HardwareConfig, Program, layout, parse_program

from ..lowering import render
from ..ops import Op
from .ops import Conv2d, DepthwiseConv2d
from .schedule import ConvSchedule, DepthwiseSchedule
from .tiles import conv_tiles


def _buffers(op: Op) -> dict:
    specs = [(name, "input", dtype, shape) for name, (shape, dtype) in op.input_specs().items()]
    specs += [(name, "output", dtype, shape) for name, (shape, dtype) in op.output_specs().items()]
    return layout(specs)


def lower_conv(op: Conv2d | DepthwiseConv2d, s: ConvSchedule | DepthwiseSchedule, hw: HardwareConfig) -> Program:
    tiles, plan = conv_tiles(op, s, hw)
    dw = isinstance(op, DepthwiseConv2d)
    C = op.channels if dw else op.in_c
    K = op.channels if dw else op.out_c
    out_bytes = 4 if op.out_dtype == "int32" else 1
    text = render("depthwise_ws.s.j2" if dw else "conv2d_ws.s.j2", op=op, C=C, K=K, out_bytes=out_bytes,
                  schedule=s.to_dict(), pipe=s, dim=hw.dim, plan=plan,
                  tiles=tiles)
    return parse_program(text, hw, _buffers(op))
