"""The conv2d and depthwise conv2d ops and their numpy references."""
from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np

from isa.numerics import INT8_MIN

from ..ops import (REQUANT_DTYPES, EpilogueOp, Spec, check_choice, check_epilogue, check_out_offset, positive_int,
                   wrap_int32)
from ..maxpool.tiles import pads_as_onnx
from ..window import Window, check_window, out_size, taps, window_max


@dataclass(frozen=True)
class ConvOp(Window, EpilogueOp):
    """What conv2d and depthwise share: the input size, the window, a per-channel bias and the epilogue.

    The fields after the input size are keyword-only, so each kind's channel counts follow the input
    size in its constructor and in its key (``Op.params``).
    """

    batch: int
    in_h: int
    in_w: int
    _: KW_ONLY
    kernel: tuple[int, int] = (3, 3)
    stride: int = 1
    padding: int = 1
    bias: str | None = None
    activation: str = "none"
    scale: float | tuple[float, ...] = 1.0   # a tuple: one per output channel
    out_dtype: str = "int8"
    out_offset: int = 0

    CHANNELS: ClassVar[str] = ""   # the field that counts input channels

    def __post_init__(self) -> None:
        check_window(self, self.CHANNELS)
        check_choice("bias", self.bias, (None, "channel"))
        scale = check_epilogue(self.activation, self.scale, self.out_dtype, REQUANT_DTYPES, self.out_channels)
        object.__setattr__(self, "scale", scale)
        object.__setattr__(self, "out_offset", check_out_offset(self.out_offset, self.out_dtype))

    @property
    def out_channels(self) -> int:
        raise NotImplementedError

    @property
    def weight_shape(self) -> tuple[int, ...]:
        raise NotImplementedError

    def input_specs(self) -> Spec:
        specs = {"input": ((self.batch, self.in_h, self.in_w, getattr(self, self.CHANNELS)), "int8"),
                 "weight": (self.weight_shape, "int8")}
        if self.bias:
            specs["bias"] = ((self.out_channels,), "int32")
        return specs

    def output_specs(self) -> Spec:
        return {"output": ((self.batch, self.out_h, self.out_w, self.out_channels), self.out_dtype)}

    @property
    def macs(self) -> int:
        """Every output pixel uses every weight once."""
        return self.batch * self.out_h * self.out_w * math.prod(self.weight_shape)


def check_pool(pool: Any, out_h: int, out_w: int) -> tuple[int, int, int] | None:
    """A fused max pool as (kernel, stride, padding), ONNX MaxPool's rules: padding at most half the kernel."""
    if pool is None:
        return None
    if not isinstance(pool, (tuple, list)) or len(pool) != 3:
        raise ValueError(f"pool must be None or (kernel, stride, padding), got {pool!r}")
    kernel, stride = positive_int("pool kernel", pool[0]), positive_int("pool stride", pool[1])
    padding = pool[2]
    if isinstance(padding, bool) or not isinstance(padding, (int, np.integer)) or not 0 <= padding <= kernel // 2:
        raise ValueError(f"pool padding={padding!r} must be an integer from 0 to half the pool kernel ({kernel})")
    if kernel > min(out_h, out_w) + 2 * padding:
        raise ValueError(f"pool kernel={kernel} is larger than the padded {out_h}x{out_w} conv output")
    return kernel, stride, int(padding)


@dataclass(frozen=True)
class Conv2d(ConvOp):
    """output = maxpool(epilogue(conv(input, weight) + bias)); input NHWC int8, weight HWIO int8, bias K int32;
    the max pool (kernel, stride, padding) only with ``pool`` (ONNX MaxPool: padding is never the max)."""

    in_c: int
    out_c: int
    pool: tuple[int, int, int] | None = field(default=None, kw_only=True)

    KIND: ClassVar[str] = "conv2d"
    CHANNELS: ClassVar[str] = "in_c"

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "out_c", positive_int("out_c", self.out_c))
        object.__setattr__(self, "pool", check_pool(self.pool, self.out_h, self.out_w))
        if self.pool and self.out_dtype == "int32":
            raise ValueError(f"pool: a fused max pool stores 8-bit values, not out_dtype={self.out_dtype!r}")

    def params(self) -> dict[str, Any]:
        """As every op's, without ``pool`` when there is none (the keys of unpooled convs stay as they were)."""
        params = super().params()
        if self.pool is None:
            del params["pool"]
        return params

    @property
    def pool_pads_as_onnx(self) -> bool:
        """Whether Gemmini's store-path pooling, which pools a padded position as the byte 0, gives this op's
        ONNX max: no pool (or no pool padding), or no stored byte below 0 (uint8, or ReLU without a negative
        out_offset)."""
        nonnegative = self.out_dtype == "uint8" or (self.activation == "relu" and self.out_offset >= 0)
        return self.pool is None or pads_as_onnx(self.pool[2], nonnegative)

    @property
    def pooled_hw(self) -> tuple[int, int]:
        """The output's rows and columns: the conv's, or with ``pool`` the pooled conv's."""
        if self.pool is None:
            return self.out_h, self.out_w
        k, s, p = self.pool
        return out_size(self.out_h, k, s, p), out_size(self.out_w, k, s, p)

    def output_specs(self) -> Spec:
        return {"output": ((self.batch, *self.pooled_hw, self.out_c), self.out_dtype)}

    def reference(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        out = super().reference(inputs)
        if self.pool is None:
            return out
        k, s, p = self.pool
        return {"output": window_max(out["output"].astype(np.int16), (k, k), s, p, INT8_MIN - 1).astype(self.out_dtype)}

    @property
    def out_channels(self) -> int:
        return self.out_c

    @property
    def weight_shape(self) -> tuple[int, ...]:
        return (*self.kernel, self.in_c, self.out_c)

    def accumulate(self, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        """int32 accumulators; float64 sums of int8 products are exact (far below 2^53). Each tap is one
        matrix product of all output pixels (a 4-D product runs as one small product per image row: 4-10x
        slower on ResNet-50's convs)."""
        acc = np.zeros((self.batch * self.out_h * self.out_w, self.out_c), dtype=np.float64)
        w = inputs["weight"].astype(np.float64)
        for i, j, view in taps(inputs["input"], self.kernel, self.stride, self.padding):
            acc += view.astype(np.float64).reshape(len(acc), -1) @ w[i, j]
        return wrap_int32(acc.reshape(self.batch, self.out_h, self.out_w, self.out_c),
                          inputs["bias"] if self.bias else None)


@dataclass(frozen=True)
class DepthwiseConv2d(ConvOp):
    """Depthwise conv, channel multiplier 1: input NHWC int8, weight (KH, KW, C) int8, bias C int32."""

    channels: int

    KIND: ClassVar[str] = "depthwise"
    CHANNELS: ClassVar[str] = "channels"

    @property
    def out_channels(self) -> int:
        return self.channels

    @property
    def weight_shape(self) -> tuple[int, ...]:
        return (*self.kernel, self.channels)

    def accumulate(self, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        acc = np.zeros((self.batch, self.out_h, self.out_w, self.channels), dtype=np.int64)
        w = inputs["weight"].astype(np.int64)
        for i, j, view in taps(inputs["input"], self.kernel, self.stride, self.padding):
            acc += view * w[i, j]
        return wrap_int32(acc, inputs["bias"] if self.bias else None)


def conv2d(batch: int, in_h: int, in_w: int, in_c: int, out_c: int, *, kernel: int | tuple[int, int] = (3, 3),
           stride: int = 1, padding: int = 1, bias: str | None = None, activation: str = "none",
           scale: float | Sequence[float] = 1.0, out_dtype: str = "int8", pool: tuple[int, int, int] | None = None,
           out_offset: int = 0) -> Conv2d:
    """A conv2d op (NHWC input, HWIO weight): ``output = epilogue(conv + bias)``, max-pooled in the store path
    with ``pool=(kernel, stride, padding)``. ``out_offset`` and ``out_dtype="uint8"`` need the store unit's
    requantization (``HardwareConfig.store_requant``); ``scale`` as out_c scales, one per output channel, needs
    its column scales (``HardwareConfig.store_col_scales``)."""
    return Conv2d(batch, in_h, in_w, in_c, out_c, kernel=kernel, stride=stride, padding=padding, bias=bias,
                  activation=activation, scale=scale, out_dtype=out_dtype, pool=pool, out_offset=out_offset)


def depthwise_conv2d(batch: int, in_h: int, in_w: int, channels: int, *, kernel: int | tuple[int, int] = (3, 3),
                     stride: int = 1, padding: int = 1, bias: str | None = None, activation: str = "none",
                     scale: float | Sequence[float] = 1.0, out_dtype: str = "int8",
                     out_offset: int = 0) -> DepthwiseConv2d:
    """A depthwise conv2d op (channel multiplier 1; weight (KH, KW, C)); ``scale`` may be one per channel, as
    conv2d's."""
    return DepthwiseConv2d(batch, in_h, in_w, channels, kernel=kernel, stride=stride, padding=padding, bias=bias,
                           activation=activation, scale=scale, out_dtype=out_dtype, out_offset=out_offset)
