"""gemmini_nn.h's tiled_matmul_nn_auto on a pointwise conv, as Gemmini's own ResNet-50 calls it.

gemmini-rocc-tests' imagenet/resnet50.c (180c468, its direct-convolution build) runs 20 of its 53 convs through
tiled_conv_auto (the stem, the 3x3s, the strided downsamples) and the other 33, every 1x1 conv of stride 1,
through tiled_matmul_nn_auto: the NHWC input is already the matrix A (pixels x input channels) and the HWIO
weights B. tiled_matmul_nn_auto is tiled_matmul_auto with a dense matrix's strides (include/gemmini_nn.h:127),
so its tiles and words are toolkit/library/matmul.py's on the conv's matmul view, over the conv's own buffers.
On the SoC the two calls differ in their stores: LOOP_CONV_WS writes one 16-column block a mvout, LOOP_WS up to
max_block_len, whole 64-byte L2 blocks (benchmarks/bench_pointwise.py).
"""
from __future__ import annotations

from typing import Any

from isa import HardwareConfig

from ..conv.ops import Conv2d
from .matmul import matmul_columns, matmul_head, tiled_matmul_auto
from .schedule import LibraryPointwise, pointwise_matmul
from .words import tiles_as_rows

POINTWISE_BUFFERS = {"a": "input", "b": "weight", "d": "bias", "c": "output"}   # the conv's names of A, B, D, C


def tiled_matmul_nn_auto(op: Conv2d, hw: HardwareConfig) -> LibraryPointwise:
    """tiled_matmul_auto's tiles of the pointwise conv's matmul (ScheduleError for any other conv)."""
    t = tiled_matmul_auto(pointwise_matmul(op), hw)
    return LibraryPointwise(t.tile_i, t.tile_j, t.tile_k)


def pointwise_context(op: Conv2d, s: LibraryPointwise, hw: HardwareConfig) -> dict[str, Any]:
    """matmul_library.s.j2's context of the conv's matmul view, over the conv's buffers (tiles refused as
    toolkit.library.matmul.matmul_context refuses them)."""
    s.memory_plan(hw, op)
    return dict(pointwise_head(op, s, hw), words=tiles_as_rows(pointwise_columns(op, s, hw)))


def pointwise_head(op: Conv2d, s: LibraryPointwise, hw: HardwareConfig) -> dict[str, Any]:
    return matmul_head(pointwise_matmul(op), s, hw)


def pointwise_columns(op: Conv2d, s: LibraryPointwise, hw: HardwareConfig) -> dict[str, Any]:
    return matmul_columns(pointwise_matmul(op), s, hw, POINTWISE_BUFFERS)
