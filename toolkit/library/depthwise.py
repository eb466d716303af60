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

from types import SimpleNamespace
from typing import Any

import numpy as np

from isa import HardwareConfig

from ..conv.ops import DepthwiseConv2d
from .conv import auto_tiles, clipped, loop_fields, tile_fields
from .conv_tiles import dw_maxes
from .schedule import LibraryDepthwise
from .words import NULL, Addresses, tiles_as_rows, walk_starts


def tiled_conv_dw_auto(op: DepthwiseConv2d, hw: HardwareConfig) -> LibraryDepthwise:
    t = auto_tiles(op, dw_maxes(op), ("pochs",), hw)
    return LibraryDepthwise(t["batches"], t["porows"], t["pocols"])


def depthwise_context(op: DepthwiseConv2d, s: LibraryDepthwise, hw: HardwareConfig) -> dict[str, Any]:
    s.memory_plan(hw, op)
    return dict(depthwise_head(op, s, hw), words=tiles_as_rows(depthwise_columns(op, s, hw)))


def depthwise_fields(op: DepthwiseConv2d, s: LibraryDepthwise, hw: HardwareConfig) -> dict[str, Any]:
    """Every field of ``s``'s loop words: those every tile shares, then :func:`depthwise_columns`."""
    return {**loop_fields(op, 1, dw=True), **depthwise_columns(op, s, hw)}


def depthwise_head(op: DepthwiseConv2d, s: LibraryDepthwise, hw: HardwareConfig) -> dict[str, Any]:
    """The template's context but the tiles' own words: what every tile shares."""
    return dict(op=op, schedule=s.to_dict(), a_stride=op.stride, fixed=SimpleNamespace(**loop_fields(op, 1, dw=True)),
                words=())


def depthwise_columns(op: DepthwiseConv2d, s: LibraryDepthwise, hw: HardwareConfig) -> dict[str, Any]:
    """tiled_conv_dw's loop (b, porow, pocol, ch, krow, kcol), the fields of gemmini_loop_conv_ws per tile but those
    every tile shares (conv.loop_fields): one output channel and one input channel each, weight_stride 1, no
    scratchpad reuse ids. Every tile at once, as conv.conv_columns lays them out."""
    maxes = dw_maxes(op)
    kh, kw = op.kernel
    sizes = dict(batches=s.batches, porows=s.porows, pocols=s.pocols)
    at_ = walk_starts(("batches", "porows", "pocols", "ch", "krow", "kcol"), dict(sizes, ch=1, krow=1, kcol=1),
                      dict(maxes, ch=op.channels, krow=kh, kcol=kw))
    b, porow, pocol, ch, krow, kcol = at_.values()
    ones = np.ones(len(b), np.int64)
    t = dict(clipped(sizes, maxes, dict(batches=b, porows=porow, pocols=pocol)), pochs=ones, krows=ones, kcols=ones,
             kchs=ones)
    w = tile_fields(op, hw, (b, porow, pocol, krow, kcol), t, ch, ch)
    first = (krow == 0) & (kcol == 0)
    input_at, output_at = w.pop("input"), w.pop("output")
    return {
        **w, "a_spad_id": 0 * ones, "b_spad_id": 0 * ones,
        "output_addr": Addresses("output", output_at, (krow == kh - 1) & (kcol == kw - 1)),
        "bias_addr": Addresses("bias", 4 * ch, first) if op.bias else np.where(first, 1 + 4 * ch, NULL),
        "weights_addr": Addresses("weight", (krow * kw + kcol) * op.channels + ch, ones > 0),   # (KH, KW, C)
        "input_addr": Addresses("input", input_at, ones > 0)}
