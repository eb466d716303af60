"""The matmul op: C = epilogue(A @ B + bias), A M×K and B K×N int8 (given K×M, N×K when transposed)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Mapping, Sequence

import numpy as np

from ..ops import (REQUANT_DTYPES, EpilogueOp, Spec, check_choice, check_epilogue, check_out_offset, positive_int,
                   wrap_int32)


@dataclass(frozen=True)
class Matmul(EpilogueOp):
    """C = epilogue(A @ B + bias): A is M x K int8 (given K x M with transpose_a), B is K x N int8
    (given N x K with transpose_b)."""

    M: int
    N: int
    K: int
    bias: str | None = None
    activation: str = "none"
    scale: float | tuple[float, ...] = 1.0   # a tuple: one per output channel
    out_dtype: str = "int8"
    transpose_a: bool = False
    transpose_b: bool = False
    out_offset: int = 0

    KIND: ClassVar[str] = "matmul"
    UNKEYED_DEFAULTS: ClassVar[dict] = {"transpose_a": False, "transpose_b": False}

    def __post_init__(self) -> None:
        for name in ("M", "N", "K"):
            object.__setattr__(self, name, positive_int(name, getattr(self, name)))
        check_choice("bias", self.bias, (None, "row", "full"))
        for name in ("transpose_a", "transpose_b"):
            object.__setattr__(self, name, bool(check_choice(name, getattr(self, name), (False, True))))
        scale = check_epilogue(self.activation, self.scale, self.out_dtype, REQUANT_DTYPES, self.N)
        object.__setattr__(self, "scale", scale)
        object.__setattr__(self, "out_offset", check_out_offset(self.out_offset, self.out_dtype))

    def input_specs(self) -> Spec:
        specs = {"A": ((self.K, self.M) if self.transpose_a else (self.M, self.K), "int8"),
                 "B": ((self.N, self.K) if self.transpose_b else (self.K, self.N), "int8")}
        if self.bias == "row":
            specs["bias"] = ((self.N,), "int32")
        elif self.bias == "full":
            specs["bias"] = ((self.M, self.N), "int32")
        return specs

    def output_specs(self) -> Spec:
        return {"C": ((self.M, self.N), self.out_dtype)}

    @property
    def macs(self) -> int:
        return self.M * self.N * self.K

    def accumulate(self, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        """int32 A @ B + bias. float64 BLAS is exact here: every sum stays below 2^53."""
        a, b = inputs["A"].astype(np.float64), inputs["B"].astype(np.float64)
        acc = (a.T if self.transpose_a else a) @ (b.T if self.transpose_b else b)
        return wrap_int32(acc, inputs["bias"] if self.bias else None)


def matmul(M: int, N: int, K: int, *, bias: str | None = None, activation: str = "none",
           scale: float | Sequence[float] = 1.0, out_dtype: str = "int8", transpose_a: bool = False,
           transpose_b: bool = False, out_offset: int = 0) -> Matmul:
    """A matmul op: ``C = epilogue(A @ B + bias)``; see the numeric semantics. With transpose_a, A is
    given K x M; with transpose_b, B is given N x K. ``out_offset`` (an output zero point) and
    ``out_dtype="uint8"`` need hardware with the store unit's requantization (``store_requant``); ``scale`` as
    N scales, one per column of C, needs its column scales (``store_col_scales``)."""
    return Matmul(M, N, K, bias, activation, scale, out_dtype, transpose_a, transpose_b, out_offset)
