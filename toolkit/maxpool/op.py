"""The max-pooling op: output = max over each window of an NHWC int8 input (padding never wins)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Mapping

import numpy as np

from isa.numerics import INT8_MIN

from ..ops import Op, Spec
from ..window import Window, check_window, window_max


@dataclass(frozen=True)
class MaxPool2d(Window, Op):
    """output = max over each window of the NHWC int8 input (padding never wins)."""

    batch: int
    in_h: int
    in_w: int
    channels: int
    kernel: tuple[int, int] = (2, 2)
    stride: int = 2
    padding: int = 0

    KIND: ClassVar[str] = "maxpool"

    def __post_init__(self) -> None:
        check_window(self, "channels")
        if self.padding > min(self.kernel) // 2:
            raise ValueError(f"padding={self.padding} must be at most half the kernel {self.kernel}, "
                             "so that every window holds an input pixel")

    def input_specs(self) -> Spec:
        return {"input": ((self.batch, self.in_h, self.in_w, self.channels), "int8")}

    def output_specs(self) -> Spec:
        return {"output": ((self.batch, self.out_h, self.out_w, self.channels), "int8")}

    @property
    def macs(self) -> int:
        return 0

    def reference(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        self.check_inputs(inputs)
        out = window_max(inputs["input"].astype(np.int16), self.kernel, self.stride, self.padding, INT8_MIN - 1)
        return {"output": out.astype(np.int8)}


def maxpool2d(batch: int, in_h: int, in_w: int, channels: int, *, kernel: int | tuple[int, int] = (2, 2),
              stride: int = 2, padding: int = 0) -> MaxPool2d:
    """A max-pooling op over NHWC int8 input (pooled in the store unit where config_st can: see toolkit/maxpool/)."""
    return MaxPool2d(batch, in_h, in_w, channels, kernel, stride, padding)

