"""The column-padding copy in front of a conv with packed taps (see :mod:`toolkit.conv.geometry`).

A packed conv reads each kernel row's taps as KW*C consecutive bytes of a padded
input row, so the padding columns must hold zeros in DRAM. The program copies the
input into the scratch buffer ``padded`` (B, H, W + 2 * padding, C), which both
backends zero before a run, through the scratchpad: an mvin gathers up to ``dim``
input rows of up to ``dim * max_block_len`` bytes (one ``dim``-wide block each
``dim`` rows apart), and one mvout per block writes them at their padded offset.
Scratchpad mvouts move int8 rows unchanged. Chunks rotate through a ring of slots so
that a chunk's mvin need not wait for the previous chunk's mvouts. A ``fence`` then
keeps the conv's loads behind the copy: the hardware tracks local rows, not DRAM.
"""
from __future__ import annotations

from typing import NamedTuple

from isa import HardwareConfig

from .geometry import padded_width
from .ops import Conv2d

RING_SLOTS = 8


class Store(NamedTuple):
    dram: int
    local: int
    cols: int


class CopyChunk(NamedTuple):
    """Input bytes [src, src + cols) of ``rows`` consecutive rows, into ``local`` and out by ``stores``."""

    src: int
    local: int
    rows: int
    cols: int
    stores: list


class PadCopy(NamedTuple):
    src_stride: int    # bytes between input rows
    dst_stride: int    # bytes between padded rows
    block_stride: int  # scratchpad rows between the dim-wide blocks of one chunk
    chunks: list


def pad_copy(op: Conv2d, hw: HardwareConfig) -> PadCopy:
    """The chunks that copy every input row (images and rows flatten: ``padded`` pads columns only)."""
    d, width = hw.dim, hw.dim * hw.max_block_len
    row_bytes, padded_row = op.in_w * op.in_c, padded_width(op) * op.in_c
    slots = max(1, min(RING_SLOTS, hw.sp_rows // width))
    chunks = []
    for r0 in range(0, op.batch * op.in_h, d):
        rows = min(d, op.batch * op.in_h - r0)
        for x in range(0, row_bytes, width):
            cols = min(width, row_bytes - x)
            local = (len(chunks) % slots) * width
            dst = r0 * padded_row + op.padding * op.in_c + x
            stores = [Store(dst + b, local + (b // d) * d, min(d, cols - b)) for b in range(0, cols, d)]
            chunks.append(CopyChunk(r0 * row_bytes + x, local, rows, cols, stores))
    return PadCopy(row_bytes, padded_row, d, chunks)
