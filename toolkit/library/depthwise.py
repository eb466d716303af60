"""gemmini.h's tiled_conv_dw_auto (line ~2923): its tile choice, and the words tiled_conv_dw (~2455)
issues: config_st, config_ex, then per tile, channel and kernel tile gemmini_loop_conv_ws with dw set.

One departure, forced by our weight layout. tiled_conv_dw reads a channel's weights as a KxK block
at ``weights + (ch * K + krow) * K + kcol`` (channel-major, C x K x K), and LoopConv's dw path steps
through it one element per tap. Our depthwise weight is (KH, KW, C): a channel's taps lie C apart.
So the kernel is tiled one tap at a time (krows = kcols = 1, which tiled_conv_dw supports: partial
sums stay in the accumulator, the bias goes with the first tap, the output with the last), and
each tap's weight address is that of its element in our layout. tiled_conv_dw_auto's sizing runs
with the kernel arguments held at 1 accordingly. A 1x1 depthwise conv is exactly the library's.
"""
from __future__ import annotations

import itertools
from typing import Any

from isa import HardwareConfig

from ..conv.ops import DepthwiseConv2d
from ..lowering import attributes
from .conv import auto_tiles, clipped, loop_fields, tile_fields
from .conv_tiles import dw_maxes
from .schedule import LibraryDepthwise
from .words import NULL, at


def tiled_conv_dw_auto(op: DepthwiseConv2d, hw: HardwareConfig) -> LibraryDepthwise:
    t = auto_tiles(op, dw_maxes(op), ("pochs",), hw)
    return LibraryDepthwise(t["batches"], t["porows"], t["pocols"])


def depthwise_context(op: DepthwiseConv2d, s: LibraryDepthwise, hw: HardwareConfig) -> dict[str, Any]:
    s.memory_plan(hw, op)
    return dict(op=op, schedule=s.to_dict(), a_stride=op.stride, words=attributes(depthwise_words(op, s, hw)))


def depthwise_words(op: DepthwiseConv2d, s: LibraryDepthwise, hw: HardwareConfig) -> list[dict[str, Any]]:
    """tiled_conv_dw's loop (b, porow, pocol, ch, krow, kcol), the fields of gemmini_loop_conv_ws per tile:
    one output channel and one input channel each, weight_stride 1, no scratchpad reuse ids."""
    maxes = dw_maxes(op)
    kh, kw = op.kernel
    fixed = loop_fields(op, weight_stride=1, dw=True)
    words = []
    for b, porow, pocol, ch, krow, kcol in itertools.product(
            range(0, op.batch, s.batches), range(0, op.out_h, s.porows), range(0, op.out_w, s.pocols),
            range(op.channels), range(kh), range(kw)):
        t = clipped(s, maxes, dict(batches=b, porows=porow, pocols=pocol))
        w = tile_fields(op, hw, (b, porow, pocol, krow, kcol), dict(t, pochs=1, krows=1, kcols=1, kchs=1), ch, ch)
        words.append({
            **fixed, **w, "a_spad_id": 0, "b_spad_id": 0,
            "output": w["output"] if krow == kh - 1 and kcol == kw - 1 else NULL,
            "bias": (at("bias", 4 * ch) if op.bias else 1 + 4 * ch) if krow == kcol == 0 else NULL,
            "weights": at("weight", (krow * kw + kcol) * op.channels + ch)})   # the departure: our (KH, KW, C)
    return words
