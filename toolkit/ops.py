"""The Op base: parameters, input/output specs, random inputs, numpy references, the shared epilogue.

An op knows nothing of schedules or hardware: it is the workload. Every op kind
is listed in :data:`toolkit.kinds.KINDS`, which rebuilds ops from their dicts.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Mapping

import numpy as np

from isa import HardwareConfig
from isa.numerics import store_epilogue

Spec = dict[str, tuple[tuple[int, ...], str]]   # input or output name -> (shape, dtype)

ACTIVATION_NAMES = ("none", "relu")
OUT_DTYPES = ("int8", "int32")
REQUANT_DTYPES = (*OUT_DTYPES, "uint8")   # of ops with an out_offset: uint8 needs the store unit's extension
OUT_OFFSET_RANGE = (-256, 255)   # config_st's out_offset: 9-bit two's complement
_F32_MAX = float(np.finfo(np.float32).max)


def positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def check_choice(name: str, value: Any, choices: tuple) -> Any:
    if value not in choices:
        raise ValueError(f"{name}={value!r} is not one of {choices}")
    return value


def check_out_offset(out_offset: Any, out_dtype: str) -> int:
    """An output offset (zero point), added after rounding by the store unit's requantization extension."""
    lo, hi = OUT_OFFSET_RANGE
    if isinstance(out_offset, bool) or not isinstance(out_offset, (int, np.integer)) or not lo <= out_offset <= hi:
        raise ValueError(f"out_offset must be an integer from {lo} to {hi}, got {out_offset!r}")
    if out_offset and out_dtype == "int32":
        raise ValueError(f"out_offset must be 0 when out_dtype='int32' (got {out_offset})")
    return int(out_offset)


def positive_f32(name: str, scale: Any) -> float:
    try:
        scale = float(scale)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {scale!r}") from None
    if not math.isfinite(scale) or not 0 < scale <= _F32_MAX or np.float32(scale) == 0:
        raise ValueError(f"{name} must be a positive finite float32, got {scale!r}")
    return scale


def check_epilogue(activation: str, scale: Any, out_dtype: str, dtypes: tuple[str, ...] = OUT_DTYPES,
                   channels: int | None = None, activations: tuple[str, ...] = ACTIVATION_NAMES
                   ) -> float | tuple[float, ...]:
    """The checked scale: a float, or where the op has ``channels`` output channels also a sequence of one
    scale per channel (a tuple; per-channel requantization, the store unit's column-scale extension)."""
    check_choice("activation", activation, activations)
    check_choice("out_dtype", out_dtype, dtypes)
    if channels is not None and isinstance(scale, (list, tuple, np.ndarray)):
        if len(scale) != channels:
            raise ValueError(f"scale has {len(scale)} entries, expected one per output channel ({channels})")
        if out_dtype == "int32":
            raise ValueError("scale must be 1.0 when out_dtype='int32' (got a per-channel vector)")
        return tuple(positive_f32(f"scale[{i}]", s) for i, s in enumerate(np.asarray(scale).tolist()))
    scale = positive_f32("scale", scale)
    if out_dtype == "int32" and scale != 1.0:
        raise ValueError(f"scale must be 1.0 when out_dtype='int32' (got {scale})")
    return scale


def epilogue(acc: np.ndarray, activation: str, scale: float, out_dtype: str, out_offset: int = 0) -> np.ndarray:
    """int32 accumulators -> output, per the numeric semantics (and the store unit's requantization
    extension for an offset or uint8)."""
    return store_epilogue(acc, scale, activation == "relu", out_dtype, out_offset)


def spec_bytes(specs: "Spec") -> int:
    """The bytes of the tensors ``specs`` (name -> (shape, dtype)) hold."""
    return sum(math.prod(shape) * np.dtype(dtype).itemsize for shape, dtype in specs.values())


@dataclass(frozen=True)
class SizeEstimate:
    """Lower bounds on a lowered op's size: its instruction count and DRAM footprint in bytes."""

    instructions: int
    dram_bytes: int


@dataclass(frozen=True)
class Op:
    """Base of every op. Subclasses are frozen dataclasses of their parameters."""

    KIND: ClassVar[str] = ""
    # parameters added after records were keyed: left out of the key while at these values, so that
    # the records of the workloads that existed before keep their keys
    UNKEYED_DEFAULTS: ClassVar[dict[str, Any]] = {}

    # ---- description ------------------------------------------------------------
    def params(self) -> dict[str, Any]:
        """The parameters in constructor order: keyword-only fields (shared by a base class) last."""
        return {f.name: getattr(self, f.name) for f in sorted(fields(self), key=lambda f: f.kw_only)}

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.KIND, **self.params()}

    @property
    def key(self) -> str:
        """Workload key for records: kind and every parameter (but those at their UNKEYED_DEFAULTS)."""
        return f"{self.KIND}(" + ",".join(f"{k}={v}" for k, v in self.params().items()
                                          if k not in self.UNKEYED_DEFAULTS or v != self.UNKEYED_DEFAULTS[k]) + ")"

    def input_specs(self) -> Spec:
        raise NotImplementedError

    def output_specs(self) -> Spec:
        raise NotImplementedError

    @property
    def macs(self) -> int:
        raise NotImplementedError

    @property
    def input_bytes(self) -> int:
        return spec_bytes(self.input_specs())

    @property
    def output_bytes(self) -> int:
        return spec_bytes(self.output_specs())

    @property
    def compulsory_bytes(self) -> int:
        """DRAM bytes any schedule must move: every input read once, every output written once."""
        return self.input_bytes + self.output_bytes

    def size_estimate(self, hw: HardwareConfig) -> SizeEstimate:
        """What lowering ``self`` for ``hw`` needs at the least, known before any lowering."""
        def elems(specs: dict[str, tuple[tuple[int, ...], str]]) -> int:
            return sum(math.prod(shape) for shape, _ in specs.values())

        # each compute does at most dim^3 MACs and comes with its preload; each mvin moves at
        # most dim rows of max_mvin_cols, each mvout dim x dim elements
        computes = -(-self.macs // hw.dim ** 3)
        moves = -(-elems(self.input_specs()) // (hw.dim * hw.max_mvin_cols)) + -(-elems(self.output_specs())
                                                                                  // hw.dim ** 2)
        return SizeEstimate(2 * computes + moves, self.compulsory_bytes)

    # ---- data ---------------------------------------------------------------------
    def random_inputs(self, seed: int = 0) -> dict[str, np.ndarray]:
        """Inputs drawn uniformly over their dtype (biases over a range that keeps int32 safe)."""
        rng = np.random.default_rng(seed)
        out = {}
        for name, (shape, dtype) in self.input_specs().items():
            lo, hi = (-128, 128) if dtype == "int8" else (-(1 << 20), 1 << 20)
            out[name] = rng.integers(lo, hi, size=shape, dtype=np.int64).astype(dtype)
        return out

    def check_inputs(self, inputs: Mapping[str, np.ndarray]) -> None:
        for name, (shape, dtype) in self.input_specs().items():
            if name not in inputs:
                raise ValueError(f"inputs: missing {name!r} ({dtype} of shape {shape})")
            arr = inputs[name]
            if not isinstance(arr, np.ndarray) or arr.dtype != np.dtype(dtype) or arr.shape != shape:
                got = f"{arr.dtype} {arr.shape}" if isinstance(arr, np.ndarray) else type(arr).__name__
                raise ValueError(f"inputs[{name!r}]: expected {dtype} of shape {shape}, got {got}")

    def reference(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        raise NotImplementedError


@dataclass(frozen=True)
class EpilogueOp(Op):
    """An op whose one output is the store epilogue of int32 accumulators (matmul, convs, resadd).
    Subclasses have the fields activation, scale and out_dtype (and may have out_offset), and define
    ``accumulate``."""

    def params(self) -> dict[str, Any]:
        """As every op's, without ``out_offset`` at 0 (the dicts and keys of ops without one stay as they were)."""
        params = super().params()
        if params.get("out_offset") == 0:
            del params["out_offset"]
        return params

    @property
    def col_scaled(self) -> bool:
        """Whether ``scale`` is one per output channel (the store unit's column-scale extension)."""
        return isinstance(self.scale, tuple)

    @property
    def store_scale(self) -> float:
        """config_st's one scale: the op's, or 1.0 where the column-scale vector replaces it."""
        return 1.0 if self.col_scaled else self.scale

    @property
    def requantizes(self) -> bool:
        """Whether the store needs the requantization extension (an output offset or uint8)."""
        return bool(getattr(self, "out_offset", 0)) or self.out_dtype == "uint8"

    def accumulate(self, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        raise NotImplementedError

    def reference(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        self.check_inputs(inputs)
        (name,) = self.output_specs()
        return {name: epilogue(self.accumulate(inputs), self.activation, self.scale, self.out_dtype,
                               getattr(self, "out_offset", 0))}


def wrap_int32(exact: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
    """Exact sums (held in float64 or int64) plus ``bias``, wrapped to int32 as the accumulator wraps."""
    acc = exact.astype(np.int64)
    if bias is not None:
        acc += bias
    return acc.astype(np.int32)


