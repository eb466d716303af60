"""The quantization of an imported ONNX model's tensors, and the integer arithmetic that maps its convs and
matmuls onto the accelerator's int8 operands: types, requantization scales, the zero points' shares of the
sums, and the checks an import makes on sizes."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from toolkit.limits import MAX_DRAM_FOOTPRINT

from . import host_ops

ONNX_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 9: "bool",
               10: "float16", 11: "float64", 17: "float8_e4m3fn", 21: "uint4", 22: "int4"}
ACCEL_TYPES = ("int8", "uint8")   # the accelerator's operands and outputs
# 4-bit weights: the 8-bit types hold their values exactly, so the accelerator multiplies them as they are
NARROW_TYPES = {"int4": "int8", "uint4": "uint8"}
# the rest of quantize_static's types (QuantType.QInt16, QUInt16, QInt4, QUInt4, QFLOAT8E4M3FN): an activation
# of one of these is a float island, dequantized, computed and quantized on the host as onnxruntime does
ISLAND_TYPES = ("int16", "uint16", "int4", "uint4", "float8_e4m3fn")
TINY = float(np.finfo(np.float32).tiny)             # the smallest normal float32


@dataclass(frozen=True)
class Quant:
    """A quantization: scale (a float, or a float32 vector for per-channel weights), zero point (likewise),
    integer type."""

    scale: Any
    zero_point: Any = 0
    dtype: str = "int8"

    @property
    def per_tensor(self) -> bool:
        return np.ndim(self.scale) == 0 and np.ndim(self.zero_point) == 0

    @property
    def plain(self) -> bool:
        """Symmetric int8 per tensor: what the accelerator's store unit requantizes to."""
        return self.per_tensor and self.zero_point == 0 and self.dtype == "int8"

    def host(self) -> tuple[float, int, str]:
        return self.scale, self.zero_point, self.dtype


@dataclass(frozen=True)
class Shares:
    """The zero points' share of each int32 sum of a conv or matmul, beyond what the accelerator's int8 operands
    compute: a constant ``offset`` (int64, broadcasting to the sums in ONNX layout) and ``terms``, (int8 input
    tensor, its :data:`host_ops.Term`) pairs that depend on the data."""

    offset: np.ndarray
    terms: tuple[tuple[str, host_ops.Term], ...] = ()


@dataclass(frozen=True)
class FloatBias:
    """A bias quantize_static left in float (``QuantizeBias=False``): onnxruntime adds it to the conv or matmul's
    float output, the int32 sums times ``in_scale`` (x_scale * w_scale, one or one per output channel)."""

    values: np.ndarray
    in_scale: Any



def node_attrs(node: Any) -> dict[str, Any]:
    from onnx import helper
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def requant_scale(x_scale: float, w_scale: Any, y_scale: float) -> np.ndarray:
    """onnxruntime's output multiplier for QLinearConv/QLinearMatMul (one, or one per output channel), in
    float32 as it computes it."""
    with np.errstate(all="ignore"):   # under- and overflow show in the value, which the caller checks
        return np.float32(x_scale) * np.asarray(w_scale, np.float32) / np.float32(y_scale)


def uniform(values: np.ndarray) -> bool:
    return values.size <= 1 or bool(np.all(values == values.reshape(-1)[0]))


def along(values: Any, axis: int, ndim: int) -> Any:
    """A per-channel vector shaped to broadcast along ``axis`` of an ``ndim``-D tensor (a scalar as it is)."""
    if np.ndim(values) == 0:
        return values
    return np.reshape(values, [-1 if d == axis else 1 for d in range(ndim)])


def window_weight_sums(op: Any, weight: np.ndarray) -> np.ndarray:
    """Per output position and channel (N x K x OH x OW), the sum of the weights whose taps fall inside the
    input. The accelerator pads with 0 where onnxruntime pads with the zero point (the real 0), so an input
    zero point zx adds ``-zx`` times this, not times the whole kernel's sum, at the borders."""
    ones = {"input": np.ones((op.batch, op.in_h, op.in_w, getattr(op, op.CHANNELS)), np.int8), "weight": weight}
    sums = replace(op, bias=None, out_dtype="int32", scale=1.0, activation="none").reference(ones)["output"]
    return sums.astype(np.int64).transpose(0, 3, 1, 2)


def window_shares(op: Any, weight: np.ndarray, x: str, zx: int, shift: np.ndarray) -> Shares:
    """The zero points' shares of a conv's sums (``weight`` the int8 w8 in the op's layout, ``shift`` d per output
    channel). Over the taps inside the input, ``sum (x - zx)(w8 + d) = sum x w8 - zx sum w8 - zx d n + d sum x``
    (n: the taps inside, times the channels a conv sums): the first is the accelerator's (it pads with 0), the
    last a term of the input; onnxruntime pads with the zero point, whose taps add nothing."""
    k = shift.size
    offset = -zx * window_weight_sums(op, weight) if zx else np.zeros((1, k, 1, 1), np.int64)
    if not shift.any():
        return Shares(offset)
    if zx:
        offset = offset - zx * shift.reshape(1, k, 1, 1) * window_weight_sums(op, np.ones_like(weight))
    term = host_ops.window_sum_term(shift, op.kernel, op.stride, op.padding, op.KIND == "depthwise")
    return Shares(offset, ((x, term),))


def offset_per_channel(offset: np.ndarray, channels_first: bool) -> np.ndarray | None:
    """The one offset per output channel, or None where it varies with the position (padded borders)."""
    if not channels_first:
        return offset
    return offset[0, :, 0, 0] if np.all(offset == offset[:1, :, :1, :1]) else None


def scale_ratio(num: float, den: float) -> float:
    """float32(num) / float32(den), as onnxruntime divides scales (its callers check the value)."""
    with np.errstate(all="ignore"):
        return float(np.float32(num) / np.float32(den))


def broadcasts(small: tuple[int, ...], big: tuple[int, ...]) -> bool:
    try:
        return np.broadcast_shapes(small, big) == big
    except ValueError:
        return False


def check_bytes(what: str, shape: tuple[int, ...], dtype: str | None) -> None:
    """Refuse by size, before anything allocates it, a tensor no run could hold."""
    size = math.prod(shape) * np.dtype(dtype if dtype in ONNX_DTYPES.values() else "float32").itemsize
    if size > MAX_DRAM_FOOTPRINT:
        raise ValueError(f"{what} is {' x '.join(map(str, shape))} {dtype}: {size:,} bytes, more than the "
                         f"{MAX_DRAM_FOOTPRINT:,} a tensor of a network may take")


class NodeError(ValueError):
    """An import error that names its node."""
