"""Row normalizations on Gemmini's normalization unit: LayerNorm and softmax over a matrix's rows.

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
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

import numpy as np

from isa.norm import layernorm_input_shift, layernorm_rows, softmax_consts, softmax_input_shift, softmax_rows

from ..ops import Op, Spec, check_choice, positive_f32, positive_int

FUNCTIONS = ("layernorm", "softmax")
IN_DTYPES = ("int32", "int8")


@dataclass(frozen=True)
class RowNorm(Op):
    """``function`` ("layernorm" or "softmax") over each of the ``rows`` rows of ``cols`` values of X."""

    rows: int
    cols: int
    function: str = "layernorm"
    scale: float = 1.0
    input_scale: float = 0.05   # softmax: the real value of one input step (gemmini.h's tiled_norm fixes 0.05)
    in_dtype: str = "int32"

    KIND: ClassVar[str] = "norm"

    def __post_init__(self) -> None:
        for name in ("rows", "cols"):
            object.__setattr__(self, name, positive_int(name, getattr(self, name)))
        check_choice("function", self.function, FUNCTIONS)
        check_choice("in_dtype", self.in_dtype, IN_DTYPES)
        for name in ("scale", "input_scale"):
            object.__setattr__(self, name, positive_f32(name, getattr(self, name)))
        if self.function == "softmax":
            softmax_consts(self.input_scale)   # ValueError where I-exp has no constants for it

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
        if self.in_dtype != "int8":
            return 0
        if self.function == "layernorm":
            return layernorm_input_shift(self.cols)
        return softmax_input_shift(self.cols, self.input_scale)

    def reference(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        self.check_inputs(inputs)
        k = self.input_shift
        x = inputs["X"].astype(np.int32) << k
        if self.function == "layernorm":
            return {"Y": layernorm_rows(x, self.scale)}
        return {"Y": softmax_rows(x, softmax_consts(self.input_scale / (1 << k)), self.scale)}


def layernorm(rows: int, cols: int, *, scale: float = 1.0, in_dtype: str = "int32") -> RowNorm:
    """LayerNorm over each row of X (int32 accumulator values, or int8), int8 out: ``(x - mean) / std`` times
    ``scale``, in Gemmini's integer arithmetic (no gamma, no beta: fold them into the next op)."""
    return RowNorm(rows, cols, "layernorm", scale, in_dtype=in_dtype)


def softmax(rows: int, cols: int, *, input_scale: float, scale: float = 1.0, in_dtype: str = "int32") -> RowNorm:
    """Softmax over each row of X, int8 out (127 * probability * ``scale``), with I-BERT's integer exp at
    ``input_scale``, the real value of one input step."""
    return RowNorm(rows, cols, "softmax", scale, input_scale, in_dtype)
