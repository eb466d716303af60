"""The conv2d and depthwise conv2d ops and their numpy references."""
from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass
from typing import ClassVar, Mapping

import numpy as np

from ..ops import EpilogueOp, Spec, check_choice, check_epilogue, positive_int, wrap_int32
from ..window import Window, check_window, taps


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
    scale: float = 1.0
    out_dtype: str = "int8"

    CHANNELS: ClassVar[str] = ""   # the field that counts input channels

    def __post_init__(self) -> None:
        check_window(self, self.CHANNELS)
        check_choice("bias", self.bias, (None, "channel"))
        object.__setattr__(self, "scale", check_epilogue(self.activation, self.scale, self.out_dtype))

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


@dataclass(frozen=True)
class Conv2d(ConvOp):
    """output = epilogue(conv(input, weight) + bias); input NHWC int8, weight HWIO int8, bias K int32."""

    in_c: int
    out_c: int

    KIND: ClassVar[str] = "conv2d"
    CHANNELS: ClassVar[str] = "in_c"

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "out_c", positive_int("out_c", self.out_c))

    @property
    def out_channels(self) -> int:
        return self.out_c

    @property
    def weight_shape(self) -> tuple[int, ...]:
        return (*self.kernel, self.in_c, self.out_c)

    def accumulate(self, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        """int32 accumulators; float64 sums of int8 products are exact (far below 2^53)."""
        acc = np.zeros((self.batch, self.out_h, self.out_w, self.out_c), dtype=np.float64)
        w = inputs["weight"].astype(np.float64)
        for i, j, view in taps(inputs["input"], self.kernel, self.stride, self.padding):
            acc += view.astype(np.float64) @ w[i, j]
        return wrap_int32(acc, inputs["bias"] if self.bias else None)


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
           scale: float = 1.0, out_dtype: str = "int8") -> Conv2d:
    """A conv2d op (NHWC input, HWIO weight): ``output = epilogue(conv + bias)``."""
    return Conv2d(batch, in_h, in_w, in_c, out_c, kernel=kernel, stride=stride, padding=padding, bias=bias,
                  activation=activation, scale=scale, out_dtype=out_dtype)


def depthwise_conv2d(batch: int, in_h: int, in_w: int, channels: int, *, kernel: int | tuple[int, int] = (3, 3),
                     stride: int = 1, padding: int = 1, bias: str | None = None, activation: str = "none",
                     scale: float = 1.0, out_dtype: str = "int8") -> DepthwiseConv2d:
    """A depthwise conv2d op (channel multiplier 1; weight (KH, KW, C))."""
    return DepthwiseConv2d(batch, in_h, in_w, channels, kernel=kernel, stride=stride, padding=padding, bias=bias,
                           activation=activation, scale=scale, out_dtype=out_dtype)
