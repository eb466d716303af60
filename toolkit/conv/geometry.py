"""What the conv tile walk sees of an op: the input it loads, as pixels in DRAM, and the kernel over them.

The direct lowering sees the op as it is. With ``pack_taps`` (conv2d only), the KW
taps of one kernel row become the channels of one *virtual* pixel: in NHWC the taps
(kw, c) of output column ow are KW*C consecutive bytes of the (zero-padded) input
row, from column ow * stride. So the conv becomes one with kernel (KH, 1), stride
(stride, 1) and no column padding over virtual pixels of KW*C channels, whose
weights are the HWIO weight's rows unchanged (row (kh, kw, c) is virtual row
(kh, kw*C + c)). Few-channel convs (ResNet's conv1: C = 3) then fill the array's
rows: 21 of 32 instead of 3 of 16 per tap. Column padding is made real: the program
first copies the input into a zero-initialised scratch buffer ``padded`` that has
``padding`` zero columns on each side (see :mod:`toolkit.conv.packed`); row padding
stays virtual, skipped by the tile walk as in the direct conv.
"""
from __future__ import annotations

from typing import Any, NamedTuple


class ConvGeometry(NamedTuple):
    """The input pixels the tile walk loads and the kernel that reads them.

    Input pixel (b, ih, iw) (0 <= ih < in_h, 0 <= iw < in_w) is ``channels`` int8 bytes at
    byte ``b * steps[0] + ih * steps[1] + iw * steps[2]`` of buffer ``source``; output
    pixel (oh, ow) reads input (oh * stride[0] + kh - padding[0], ow * stride[1] + kw - padding[1]).
    Weight row (kh, kw, c) is row ``(kh * kernel[1] + kw) * channels + c`` of the weight buffer.
    """

    source: str
    in_h: int
    in_w: int
    channels: int
    kernel: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int]
    steps: tuple[int, int, int]

    @property
    def mvin_stride(self) -> int:
        """DRAM bytes between the pixels one strided mvin gathers (every stride-th along a row)."""
        return self.stride[1] * self.steps[2]


def direct_geometry(op: Any) -> ConvGeometry:
    H, W, C = op.in_h, op.in_w, (op.channels if op.KIND == "depthwise" else op.in_c)
    return ConvGeometry("input", H, W, C, op.kernel, (op.stride, op.stride), (op.padding, op.padding),
                        (H * W * C, W * C, C))


def padded_width(op: Any) -> int:
    """Columns of the scratch copy a packed conv reads: the input with its column padding."""
    return op.in_w + 2 * op.padding


def packed_geometry(op: Any) -> ConvGeometry:
    """Virtual pixel (b, ih, ow): the KW*C bytes of the padded row ih from column ow * stride."""
    KH, KW = op.kernel
    C, Wp = op.in_c, padded_width(op)
    source = "padded" if op.padding else "input"
    return ConvGeometry(source, op.in_h, op.out_w, KW * C, (KH, 1), (op.stride, 1), (op.padding, 0),
                        (op.in_h * Wp * C, Wp * C, op.stride * C))


def conv_geometry(op: Any, pack_taps: bool = False) -> ConvGeometry:
    return packed_geometry(op) if pack_taps else direct_geometry(op)
