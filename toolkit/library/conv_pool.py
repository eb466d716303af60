"""A conv2d whose pool the store unit cannot fuse as ONNX MaxPool: the conv, then the pool apart.

Gemmini's store unit pools a padded position as 0 (its garbage rows read zeros), where
``conv2d(pool=...)`` means ONNX MaxPool, whose padding never wins. The two differ where the conv can
store a negative byte (no ReLU, or a negative out_offset) and the pool has padding. Such a conv runs
gemmini.h's tiled_conv without the pool (the LibraryConv's tiles are the conv's own: conv_tiles.py's
``fused_pool``) into a DRAM scratch buffer, then, after the fence tiled_conv's callers issue,
tk.maxpool2d's store-unit pooling of that buffer, whose tiles load the padding as copies of the edge
pixels (toolkit/maxpool/tiles.py): the same bits as ONNX, at the cost of a DRAM round trip.
"""
from __future__ import annotations

from dataclasses import replace

from isa import HardwareConfig, Program, layout, parse_program

from ..conv.ops import Conv2d
from ..lowering import render, requant_fields
from ..maxpool import default_maxpool, maxpool2d
from ..maxpool.lowering import store_text
from ..maxpool.tiles import store_can_pool
from .conv import conv_context
from .schedule import LibraryConv

SCRATCH = "conv"   # the unpooled conv's output


def lower_unfused_pool(op: Conv2d, s: LibraryConv, hw: HardwareConfig) -> Program:
    """``op`` (with a pool whose padding the store unit would pool as 0) as the conv under ``s``, then the pool."""
    conv = replace(op, pool=None)
    kernel, stride, padding = op.pool
    pool = maxpool2d(op.batch, op.out_h, op.out_w, op.out_c, kernel=kernel, stride=stride, padding=padding)
    if not store_can_pool(pool.kernel, pool.stride, pool.padding):
        raise ValueError(f"pool={op.pool}: past config_st's 2-bit pooling fields (kernel and stride at most 3)")
    text = render(s.TEMPLATE, requant=requant_fields(conv), **conv_context(conv, s, hw, output=SCRATCH))
    text += "\n" + store_text(pool, default_maxpool(pool, hw), hw, source=SCRATCH)
    specs = [(name, "input", dtype, shape) for name, (shape, dtype) in op.input_specs().items()]
    specs += [(SCRATCH, "scratch", conv.out_dtype, conv.output_specs()["output"][0])]
    specs += [(name, "output", dtype, shape) for name, (shape, dtype) in op.output_specs().items()]
    return parse_program(text, hw, layout(specs))
