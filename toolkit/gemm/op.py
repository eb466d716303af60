"""The matmul op: C = epilogue(A @ B + bias), A M×K and B K×N int8."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Mapping

import numpy as np

from ..ops import EpilogueOp, Spec, check_choice, check_epilogue, positive_int, wrap_int32


@dataclass(frozen=True)
class Matmul(EpilogueOp):
    """C = epilogue(A @ B + bias): A is M x K int8, B is K x N int8."""

    M: int
    N: int
    K: int
    bias: str | None = None
    activation: str = "none"
    scale: float = 1.0
    out_dtype: str = "int8"

    KIND: ClassVar[str] = "matmul"

    def __post_init__(self) -> None:
        for name in ("M", "N", "K"):
            object.__setattr__(self, name, positive_int(name, getattr(self, name)))
        check_choice("bias", self.bias, (None, "row", "full"))
        object.__setattr__(self, "scale", check_epilogue(self.activation, self.scale, self.out_dtype))

    def input_specs(self) -> Spec:
        specs = {"A": ((self.M, self.K), "int8"), "B": ((self.K, self.N), "int8")}
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
        acc = inputs["A"].astype(np.float64) @ inputs["B"].astype(np.float64)
        return wrap_int32(acc, inputs["bias"] if self.bias else None)


def matmul(M: int, N: int, K: int, *, bias: str | None = None, activation: str = "none", scale: float = 1.0,
           out_dtype: str = "int8") -> Matmul:
    """A matmul op: ``C = epilogue(A @ B + bias)``; see the numeric semantics."""
    return Matmul(M, N, K, bias, activation, scale, out_dtype)
