"""Row normalizations on Gemmini's normalization unit: LayerNorm and softmax over a matrix's rows, and
its I-GELU over each element.

The input X holds what the accumulator would (int32, or int8 moved in sign-extended), one row per
normalized vector; the output Y is int8. Each op's reference is the unit's integer arithmetic
(isa.norm, I-BERT's kernels as Gemmini computes them), so the accelerator is held bit-exact to it:

* layernorm: ``(x - mean) * (scale / isqrt(var))``, mean and var C-truncated integer divisions, the
  product in float32, rounded half to even and clipped to int8. Gemmini's unit has no gamma or beta
  (the ONNX importer applies them in a 1x1 depthwise conv after it). int8 rows enter the accumulator
  times 2^k, the largest k up to 8 whose squared deviations cannot sum past int32
  (:func:`isa.norm.layernorm_input_shift`: 3 at 768 columns), so that the truncated mean and the integer
  square root of the variance keep k more bits.
* softmax: ``iexp(x - max) * (scale * 127 / sum(iexp))``, I-exp's constants from ``input_scale`` (the
  real value of one input step, gemmini.h's bert_scale), so ``scale=1.0`` gives 127 for probability 1.
  int8 rows enter the accumulator times 2^k (the load's scale, exact), I-exp's constants at ``input_scale /
  2^k``: the largest k up to 8 for which a row's sum of exponentials cannot pass int32. Without it, int8
  logits at 0.1 a step give I-exp a q_ln2 of 6 and outputs up to 8 steps off the float softmax; with it, 1.
* igelu: I-BERT's integer GELU (isa.norm.igelu) at ``input_scale``, stored at ``scale`` / its output step
  (config_st's IGELU, no statistics); int8 values times 2^k, the largest k up to 8 whose products stay in
  int32 (:func:`isa.norm.igelu_input_shift`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

import numpy as np

from isa.norm import ROW_FUNCTIONS, igelu_consts, row_function, row_input_shift, softmax_consts

from ..ops import Op, Spec, check_choice, positive_f32, positive_int

IN_DTYPES = ("int32", "int8")


@dataclass(frozen=True)
class RowNorm(Op):
    """``function`` ("layernorm", "softmax" or "igelu") over each of the ``rows`` rows of ``cols`` values of X."""

    rows: int
    cols: int
    function: str = "layernorm"
    scale: float = 1.0
    input_scale: float = 0.05   # softmax, igelu: the real value of one input step (gemmini.h's tiled_norm fixes 0.05)
    in_dtype: str = "int32"

    KIND: ClassVar[str] = "norm"

    def __post_init__(self) -> None:
        for name in ("rows", "cols"):
            object.__setattr__(self, name, positive_int(name, getattr(self, name)))
        check_choice("function", self.function, ROW_FUNCTIONS)
        check_choice("in_dtype", self.in_dtype, IN_DTYPES)
        for name in ("scale", "input_scale"):
            object.__setattr__(self, name, positive_f32(name, getattr(self, name)))
        if self.function == "softmax":
            softmax_consts(self.input_scale)   # ValueError where I-exp has no constants for it
        if self.function == "igelu":
            if igelu_consts(self.input_scale).qc == 0:
                raise ValueError(f"input_scale={self.input_scale}: I-GELU's constants at it are zero")
            self.input_shift   # ValueError where int8 values through I-GELU at it overflow int32

    @property
    def shape(self) -> tuple[int, int]:
        return self.rows, self.cols

    def input_specs(self) -> Spec:
        return {"X": (self.shape, self.in_dtype)}

    def output_specs(self) -> Spec:
        return {"Y": (self.shape, "int8")}

    @property
    def macs(self) -> int:
        return 0

    def random_inputs(self, seed: int = 0) -> dict[str, np.ndarray]:
        """Rows spread as the op's inputs are in use: softmax logits within +-8 (real units), LayerNorm
        values of a few thousand steps (int8 inputs: their whole range)."""
        rng = np.random.default_rng(seed)
        if self.in_dtype == "int8":
            return {"X": rng.integers(-128, 128, self.shape).astype(np.int8)}
        spread = int(8 / self.input_scale) if self.function == "softmax" else 4096
        return {"X": rng.integers(-spread, spread + 1, self.shape).astype(np.int32)}

    @property
    def input_shift(self) -> int:
        """k: int8 softmax inputs enter the accumulator times 2^k (see the module's docstring); else 0."""
        return row_input_shift(self.function, self.cols, self.input_scale) if self.in_dtype == "int8" else 0

    def reference(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        self.check_inputs(inputs)
        return {"Y": row_function(self.function, inputs["X"], self.scale, self.input_scale)}


def layernorm(rows: int, cols: int, *, scale: float = 1.0, in_dtype: str = "int32") -> RowNorm:
    """LayerNorm over each row of X (int32 accumulator values, or int8), int8 out: ``(x - mean) / std`` times
    ``scale``, in Gemmini's integer arithmetic (no gamma, no beta: fold them into the next op)."""
    return RowNorm(rows, cols, "layernorm", scale, in_dtype=in_dtype)


def softmax(rows: int, cols: int, *, input_scale: float, scale: float = 1.0, in_dtype: str = "int32") -> RowNorm:
    """Softmax over each row of X, int8 out (127 * probability * ``scale``), with I-BERT's integer exp at
    ``input_scale``, the real value of one input step."""
    return RowNorm(rows, cols, "softmax", scale, input_scale, in_dtype)


def igelu(rows: int, cols: int, *, input_scale: float, scale: float = 1.0, in_dtype: str = "int8") -> RowNorm:
    """GELU of each element of X, int8 out (``gelu(x * input_scale) * scale``, so ``scale`` is one over the
    output's step), with I-BERT's integer I-GELU in the store path at ``input_scale``, the real value of one input
    step. int8 values enter the accumulator times 2^k, the most for which no I-GELU product passes int32."""
    return RowNorm(rows, cols, "igelu", scale, input_scale, in_dtype)
