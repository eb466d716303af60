"""The matmul op: C = epilogue(A @ B + bias), A M×K and B K×N int8 (given K×M, N×K when transposed)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Mapping, Sequence

import numpy as np

from isa.norm import igelu_consts, igelu_rows, layernorm_rows, softmax_consts, softmax_rows

from ..ops import (ACTIVATION_NAMES, REQUANT_DTYPES, EpilogueOp, Spec, check_choice, check_epilogue,
                   check_out_offset, positive_int, wrap_int32)

# The normalization unit's (isa.norm), a matmul's store activations only: I-GELU, and LayerNorm and softmax over
# each row of C (gemmini.h's tiled_matmul_auto with LAYERNORM or SOFTMAX: a tile holds whole rows)
NORM_ACTIVATIONS = ("igelu", "layernorm", "softmax")
MATMUL_ACTIVATIONS = (*ACTIVATION_NAMES, *NORM_ACTIVATIONS)


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
    input_scale: float = 1.0   # I-GELU's and softmax's S: the real value of one accumulator step (bert_scale)

    KIND: ClassVar[str] = "matmul"
    UNKEYED_DEFAULTS: ClassVar[dict] = {"transpose_a": False, "transpose_b": False, "input_scale": 1.0}

    def __post_init__(self) -> None:
        for name in ("M", "N", "K"):
            object.__setattr__(self, name, positive_int(name, getattr(self, name)))
        check_choice("bias", self.bias, (None, "row", "full"))
        for name in ("transpose_a", "transpose_b"):
            object.__setattr__(self, name, bool(check_choice(name, getattr(self, name), (False, True))))
        # I-GELU's output step is negative (isa.norm.igelu_step): its store scale may be
        negative = self.activation == "igelu" and isinstance(self.scale, (int, float)) and self.scale < 0
        scale = check_epilogue(self.activation, -self.scale if negative else self.scale, self.out_dtype,
                               REQUANT_DTYPES, self.N, MATMUL_ACTIVATIONS)
        object.__setattr__(self, "scale", -scale if negative else scale)
        object.__setattr__(self, "out_offset", check_out_offset(self.out_offset, self.out_dtype))
        if self.activation in NORM_ACTIVATIONS:
            self._check_normalized()

    def _check_normalized(self) -> None:
        if self.out_dtype != "int8" or self.out_offset or self.col_scaled:
            raise ValueError(f"activation={self.activation!r} stores int8 through the normalization unit: "
                             "out_dtype='int8', no out_offset, one scale")
        s = float(self.input_scale)
        if not np.isfinite(np.float32(s)) or s <= 0:
            raise ValueError(f"input_scale={self.input_scale!r} must be a positive finite float32")
        if self.activation == "igelu" and igelu_consts(s).qc == 0:
            raise ValueError(f"input_scale={s}: I-GELU's constants at it are zero")
        if self.activation == "softmax":
            softmax_consts(s)   # ValueError where I-exp has none

    def params(self) -> dict:
        """As every epilogue op's, with ``input_scale`` only where I-GELU or softmax reads it."""
        params = super().params()
        if self.activation not in ("igelu", "softmax"):
            del params["input_scale"]
        return params

    def reference(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        if self.activation not in NORM_ACTIVATIONS:
            return super().reference(inputs)
        self.check_inputs(inputs)
        acc = self.accumulate(inputs)
        if self.activation == "layernorm":
            return {"C": layernorm_rows(acc, self.scale)}
        if self.activation == "softmax":
            return {"C": softmax_rows(acc, softmax_consts(self.input_scale), self.scale)}
        return {"C": igelu_rows(acc, igelu_consts(self.input_scale), self.scale)}

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
           transpose_b: bool = False, out_offset: int = 0, input_scale: float = 1.0) -> Matmul:
    """A matmul op: ``C = epilogue(A @ B + bias)``; see the numeric semantics. With transpose_a, A is
    given K x M; with transpose_b, B is given N x K. ``out_offset`` (an output zero point) and
    ``out_dtype="uint8"`` need hardware with the store unit's requantization (``store_requant``); ``scale`` as
    N scales, one per column of C, needs its column scales (``store_col_scales``). ``activation="igelu"`` is
    the normalization unit's I-GELU (isa.norm) at ``input_scale``, the real value of one accumulator step; its
    output step is ``isa.norm.igelu_step(input_scale)`` (negative), so ``scale`` is that over the output's step.
    ``activation="layernorm"`` or ``"softmax"`` (at ``input_scale``) normalizes each row of C in the store path,
    as gemmini.h's tiled_matmul_auto with LAYERNORM or SOFTMAX (its schedules only: a tile holds whole rows)."""
    return Matmul(M, N, K, bias, activation, scale, out_dtype, transpose_a, transpose_b, out_offset, input_scale)
