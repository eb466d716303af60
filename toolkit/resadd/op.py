"""Residual add: ``C = epilogue(rne(A * a_scale) + rne(B * b_scale) [+ bias])``.

It does not use the mesh: it runs through the accumulator and the load/store
units, as Gemmini's resadd does. A is moved into the accumulator with its mvin
scale, B added with an accumulating mvin and its own scale, and the mvout
applies the output scale and ReLU. ``bias="channel"`` (beyond Gemmini's
tiled_resadd) adds an int32 vector, one per channel, with a third accumulating
mvin: the zero points of an asymmetric add (networks/onnx_layers.py) fold there.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

import numpy as np

from isa.numerics import mvin_scale

from ..ops import EpilogueOp, Spec, check_epilogue, positive_int, wrap_int32


def _finite_f32(name: str, value: Any) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(value) or not np.isfinite(np.float32(value)):
        raise ValueError(f"{name} must be a finite float32, got {value!r}")
    return value


@dataclass(frozen=True)
class ResAdd(EpilogueOp):
    """C = epilogue(rne(A * a_scale) + rne(B * b_scale) [+ bias]); A, B and C are NHWC, A and B int8, bias C int32."""

    batch: int
    h: int
    w: int
    channels: int
    a_scale: float = 1.0
    b_scale: float = 1.0
    activation: str = "relu"
    scale: float = 1.0
    out_dtype: str = "int8"
    bias: str | None = None

    KIND: ClassVar[str] = "resadd"
    UNKEYED_DEFAULTS: ClassVar[dict] = {"bias": None}

    def __post_init__(self) -> None:
        for name in ("batch", "h", "w", "channels"):
            object.__setattr__(self, name, positive_int(name, getattr(self, name)))
        for name in ("a_scale", "b_scale"):
            object.__setattr__(self, name, _finite_f32(name, getattr(self, name)))
        object.__setattr__(self, "scale", check_epilogue(self.activation, self.scale, self.out_dtype))
        if self.bias not in (None, "channel"):
            raise ValueError(f"bias={self.bias!r} must be None or 'channel' (an int32 vector, one per channel)")

    def params(self) -> dict[str, Any]:
        """As every epilogue op's, without ``bias`` when there is none (the dicts of ops without one stay as
        they were)."""
        params = super().params()
        if params.get("bias") is None:
            del params["bias"]
        return params

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return self.batch, self.h, self.w, self.channels

    def input_specs(self) -> Spec:
        specs = {"A": (self.shape, "int8"), "B": (self.shape, "int8")}
        return {**specs, "bias": ((self.channels,), "int32")} if self.bias else specs

    def output_specs(self) -> Spec:
        return {"C": (self.shape, self.out_dtype)}

    @property
    def macs(self) -> int:
        return 0

    def accumulate(self, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        """What the accumulator holds: each input through the mvin scale, summed with int32 wrap-around."""
        a = mvin_scale(inputs["A"], self.a_scale, to_int8=False).astype(np.int64)
        return wrap_int32(a + mvin_scale(inputs["B"], self.b_scale, to_int8=False), inputs["bias"] if self.bias else None)


def resadd(batch: int, h: int, w: int, channels: int, *, a_scale: float = 1.0, b_scale: float = 1.0,
           activation: str = "relu", scale: float = 1.0, out_dtype: str = "int8", bias: str | None = None) -> ResAdd:
    """A residual add: ``C = epilogue(rne(A * a_scale) + rne(B * b_scale) [+ bias])``, ReLU by default;
    ``bias="channel"`` adds an int32 vector ``bias``, one per channel, in the accumulator."""
    return ResAdd(batch, h, w, channels, a_scale, b_scale, activation, scale, out_dtype, bias)
