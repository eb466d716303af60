"""The conv2d and depthwise conv2d ops and their numpy references."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Mapping

import numpy as np

from ..ops import EpilogueOp, Spec, check_choice, check_epilogue, positive_int, wrap_int32
from ..window import Window, check_window, taps


@dataclass(frozen=True)
class Conv2d(Window, EpilogueOp):
    """output = epilogue(conv(input, weight) + bias); input NHWC int8, weight HWIO int8, bias K int32."""

    batch: int
    in_h: int
    in_w: int
    in_c: int
    out_c: int
    kernel: tuple[int, int] = (3, 3)
    stride: int = 1
    padding: int = 1
    bias: str | None = None
    activation: str = "none"
    scale: float = 1.0
    out_dtype: str = "int8"

    KIND: ClassVar[str] = "conv2d"

    def __post_init__(self) -> None:
        check_window(self, "in_c")
        object.__setattr__(self, "out_c", positive_int("out_c", self.out_c))
        check_choice("bias", self.bias, (None, "channel"))
        object.__setattr__(self, "scale", check_epilogue(self.activation, self.scale, self.out_dtype))

    def input_specs(self) -> Spec:
        specs = {"input": ((self.batch, self.in_h, self.in_w, self.in_c), "int8"),
                 "weight": ((*self.kernel, self.in_c, self.out_c), "int8")}
        if self.bias:
            specs["bias"] = ((self.out_c,), "int32")
        return specs

    def output_specs(self) -> Spec:
        return {"output": ((self.batch, self.out_h, self.out_w, self.out_c), self.out_dtype)}

    @property
    def macs(self) -> int:
        return self.batch * self.out_h * self.out_w * self.out_c * self.kernel[0] * self.kernel[1] * self.in_c

    def accumulate(self, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        """int32 accumulators; float64 sums of int8 products are exact (far below 2^53)."""
        acc = np.zeros((self.batch, self.out_h, self.out_w, self.out_c), dtype=np.float64)
        w = inputs["weight"].astype(np.float64)
        for i, j, view in taps(inputs["input"], self.kernel, self.stride, self.padding):
            acc += view.astype(np.float64) @ w[i, j]
        return wrap_int32(acc, inputs["bias"] if self.bias else None)


@dataclass(frozen=True)
class DepthwiseConv2d(Window, EpilogueOp):
    """Depthwise conv, channel multiplier 1: input NHWC int8, weight (KH, KW, C) int8, bias C int32."""

    batch: int
    in_h: int
    in_w: int
    channels: int
    kernel: tuple[int, int] = (3, 3)
    stride: int = 1
    padding: int = 1
    bias: str | None = None
    activation: str = "none"
    scale: float = 1.0
    out_dtype: str = "int8"

    KIND: ClassVar[str] = "depthwise"

    def __post_init__(self) -> None:
        check_window(self, "channels")
        check_choice("bias", self.bias, (None, "channel"))
        object.__setattr__(self, "scale", check_epilogue(self.activation, self.scale, self.out_dtype))

    def input_specs(self) -> Spec:
        specs = {"input": ((self.batch, self.in_h, self.in_w, self.channels), "int8"),
                 "weight": ((*self.kernel, self.channels), "int8")}
        if self.bias:
            specs["bias"] = ((self.channels,), "int32")
        return specs

    def output_specs(self) -> Spec:
        return {"output": ((self.batch, self.out_h, self.out_w, self.channels), self.out_dtype)}

    @property
    def macs(self) -> int:
        return self.batch * self.out_h * self.out_w * self.channels * self.kernel[0] * self.kernel[1]

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
    return Conv2d(batch, in_h, in_w, in_c, out_c, kernel, stride, padding, bias, activation, scale, out_dtype)


def depthwise_conv2d(batch: int, in_h: int, in_w: int, channels: int, *, kernel: int | tuple[int, int] = (3, 3),
                     stride: int = 1, padding: int = 1, bias: str | None = None, activation: str = "none",
                     scale: float = 1.0, out_dtype: str = "int8") -> DepthwiseConv2d:
    """A depthwise conv2d op (channel multiplier 1; weight (KH, KW, C))."""
    return DepthwiseConv2d(batch, in_h, in_w, channels, kernel, stride, padding, bias, activation, scale,
                           out_dtype)
