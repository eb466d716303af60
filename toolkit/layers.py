"""Layer ops beside the GEMMs: residual add and max pooling, with their schedules and lowerings.

Neither uses the mesh; both run through the accumulator and the load/store
units, as Gemmini's resadd does.

* ``resadd``: ``C = epilogue(rne(A * a_scale) + rne(B * b_scale))``. A is moved
  into the accumulator with its mvin scale, B added with an accumulating mvin
  and its own scale, and the mvout applies the output scale and ReLU.
* ``maxpool``: the ISA has no max unit, and its only non-linearity is the ReLU
  on the way out of the accumulator. Max is built from it, exactly:
  ``max(m, x) = m + relu(x - m)``. The running max lives in the output buffer;
  per tap: ``x`` and ``-m`` (mvin scale -1) are summed in the accumulator,
  stored with ReLU as int32 to a DRAM scratch buffer, and, after a fence, ``m``
  and that difference are summed and stored back as the new ``m``. It is bit-exact
  but costs two DRAM round trips and two fences per tap: a real accelerator
  would add a max unit (Gemmini pools in its store unit).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, NamedTuple

import numpy as np

from isa import HardwareConfig, Program, layout
from isa.assembly import parse_program
from isa.numerics import INT8_MIN, mvin_scale

from .conv import Spec, _check_window, _Window, conv2d, depthwise_conv2d, taps
from .lowering import LOWERINGS, blocks, render
from .ops import EpilogueOp, Op, check_epilogue, positive_int, wrap_int32
from .schedule import DEFAULTS, SCHEDULES, MemoryPlan, Region, Schedule, ScheduleError, check_int

__all__ = ["conv2d", "depthwise_conv2d", "maxpool2d", "resadd"]   # the layer ops of the public API

_NOWHERE = Region(0, 0, 1)


def _finite_f32(name: str, value: Any) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(value) or not np.isfinite(np.float32(value)):
        raise ValueError(f"{name} must be a finite float32, got {value!r}")
    return value


# ---- residual add ------------------------------------------------------------------------------
@dataclass(frozen=True)
class ResAdd(EpilogueOp):
    """C = epilogue(rne(A * a_scale) + rne(B * b_scale)); A, B and C are NHWC, A and B int8."""

    batch: int
    h: int
    w: int
    channels: int
    a_scale: float = 1.0
    b_scale: float = 1.0
    activation: str = "relu"
    scale: float = 1.0
    out_dtype: str = "int8"

    KIND: ClassVar[str] = "resadd"

    def __post_init__(self) -> None:
        for name in ("batch", "h", "w", "channels"):
            object.__setattr__(self, name, positive_int(name, getattr(self, name)))
        for name in ("a_scale", "b_scale"):
            object.__setattr__(self, name, _finite_f32(name, getattr(self, name)))
        object.__setattr__(self, "scale", check_epilogue(self.activation, self.scale, self.out_dtype))

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return self.batch, self.h, self.w, self.channels

    def input_specs(self) -> Spec:
        return {"A": (self.shape, "int8"), "B": (self.shape, "int8")}

    def output_specs(self) -> Spec:
        return {"C": (self.shape, self.out_dtype)}

    @property
    def macs(self) -> int:
        return 0

    def accumulate(self, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        """What the accumulator holds: each input through the mvin scale, summed with int32 wrap-around."""
        a = mvin_scale(inputs["A"], self.a_scale, to_int8=False).astype(np.int64)
        return wrap_int32(a + mvin_scale(inputs["B"], self.b_scale, to_int8=False))


def resadd(batch: int, h: int, w: int, channels: int, *, a_scale: float = 1.0, b_scale: float = 1.0,
           activation: str = "relu", scale: float = 1.0, out_dtype: str = "int8") -> ResAdd:
    """A residual add: ``C = epilogue(rne(A * a_scale) + rne(B * b_scale))``, ReLU by default."""
    return ResAdd(batch, h, w, channels, a_scale, b_scale, activation, scale, out_dtype)


@dataclass(frozen=True)
class ResAddSchedule(Schedule):
    """tile_rows: pixel blocks of ``dim`` per tile; tile_c: channel blocks; the tile lives in the accumulator."""

    tile_rows: int
    tile_c: int
    double_buffer: bool = True
    mvin_blocks: int = 1
    acc_bank: int = 0

    OP: ClassVar[str] = "resadd"

    def __post_init__(self) -> None:
        for name in ("tile_rows", "tile_c", "mvin_blocks"):
            check_int(name, getattr(self, name), 1)
        check_int("acc_bank", self.acc_bank, 0)
        if not isinstance(self.double_buffer, bool):
            raise ScheduleError(f"double_buffer={self.double_buffer!r} must be true or false")

    def memory_plan(self, hw: HardwareConfig, op: Any = None) -> MemoryPlan:
        check_int("mvin_blocks", self.mvin_blocks, 1, hw.max_block_len)
        check_int("acc_bank", self.acc_bank, 0, hw.acc_banks - 1)
        c = Region(self.acc_bank * hw.acc_bank_rows, self.tile_rows * self.tile_c * hw.dim,
                   2 if self.double_buffer else 1)
        if c.end > hw.acc_rows:
            raise ScheduleError(f"resadd tiles {self.tile_rows}x{self.tile_c} do not fit: {c.buffers}x{c.rows} "
                                f"accumulator rows from row {c.start}, past the {hw.acc_rows} it has")
        return MemoryPlan(_NOWHERE, _NOWHERE, c)


def default_resadd_schedule(op: ResAdd, hw: HardwareConfig) -> ResAddSchedule:
    """Whole channel rows when they fit half the accumulator, then as many pixel blocks as fit."""
    d = hw.dim
    half = hw.acc_rows // 2 // d
    tile_c = min(-(-op.channels // d), half)
    tile_rows = min(-(-op.batch * op.h * op.w // d), half // tile_c)
    return ResAddSchedule(tile_rows, tile_c, mvin_blocks=hw.max_block_len)


def lower_resadd(op: ResAdd, s: ResAddSchedule, hw: HardwareConfig) -> Program:
    plan = s.memory_plan(hw, op)
    d = hw.dim
    M, C = op.batch * op.h * op.w, op.channels
    tiles = []
    for ti in range(-(-M // (d * s.tile_rows))):
        for tj in range(-(-C // (d * s.tile_c))):
            tiles.append(dict(acc=plan.c.base(len(tiles)), rows=blocks(ti, s.tile_rows, M, d),
                              groups=blocks(tj, s.tile_c, C, d, s.mvin_blocks), cols=blocks(tj, s.tile_c, C, d)))
    buffers = layout([("A", "input", "int8", op.shape), ("B", "input", "int8", op.shape),
                      ("C", "output", op.out_dtype, op.shape)])
    text = render("resadd_ws.s.j2", op=op, C=C, dim=d, plane=s.tile_rows * d, schedule=s.to_dict(),
                  out_bytes=4 if op.out_dtype == "int32" else 1, tiles=tiles)
    return parse_program(text, hw, buffers)


# ---- max pooling -----------------------------------------------------------------------------
@dataclass(frozen=True)
class MaxPool2d(_Window, Op):
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
        _check_window(self, "channels")
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
        out = np.full((self.batch, self.out_h, self.out_w, self.channels), INT8_MIN - 1, dtype=np.int16)
        for _, _, view in taps(inputs["input"].astype(np.int16), self.kernel, self.stride, self.padding,
                               fill=INT8_MIN - 1):
            np.maximum(out, view, out=out)
        return {"output": out.astype(np.int8)}


def maxpool2d(batch: int, in_h: int, in_w: int, channels: int, *, kernel: int | tuple[int, int] = (2, 2),
              stride: int = 2, padding: int = 0) -> MaxPool2d:
    """A max-pooling op over NHWC int8 input (lowered through ReLU: see toolkit/layers.py)."""
    return MaxPool2d(batch, in_h, in_w, channels, kernel, stride, padding)


@dataclass(frozen=True)
class MaxPoolSchedule(Schedule):
    """slots: accumulator blocks of ``dim`` rows used round-robin (more lets loads run ahead of stores)."""

    slots: int = 4
    acc_bank: int = 0

    OP: ClassVar[str] = "maxpool"

    def __post_init__(self) -> None:
        check_int("slots", self.slots, 1)
        check_int("acc_bank", self.acc_bank, 0)

    def memory_plan(self, hw: HardwareConfig, op: Any = None) -> MemoryPlan:
        check_int("acc_bank", self.acc_bank, 0, hw.acc_banks - 1)
        c = Region(self.acc_bank * hw.acc_bank_rows, hw.dim, self.slots)
        if c.end > hw.acc_rows:
            raise ScheduleError(f"maxpool slots={self.slots} do not fit: {c.end - c.start} accumulator rows from "
                                f"row {c.start}, past the {hw.acc_rows} it has")
        return MemoryPlan(_NOWHERE, _NOWHERE, c)


class PoolRun(NamedTuple):
    """A run of output pixels and one channel block: its accumulator slot and DRAM element offsets."""

    local: int
    rows: int
    cols: int
    out: int          # element offset of the run in the output (and, x4 bytes, in the diff scratch)
    taps: list        # element offset in the input of each valid tap, in order


def pool_runs(op: MaxPool2d, plan: MemoryPlan, dim: int) -> list[PoolRun]:
    """Runs of output pixels within one output row that share their valid taps, at most ``dim`` long."""
    H, W, C, s, p = op.in_h, op.in_w, op.channels, op.stride, op.padding
    kh_n, kw_n = op.kernel
    out: list[PoolRun] = []
    for b in range(op.batch):
        for oh in range(op.out_h):
            khs = [kh for kh in range(kh_n) if 0 <= oh * s + kh - p < H]
            sets = [tuple(kw for kw in range(kw_n) if 0 <= ow * s + kw - p < W) for ow in range(op.out_w)]
            ow = 0
            while ow < op.out_w:
                n = 1
                while ow + n < op.out_w and n < dim and sets[ow + n] == sets[ow]:
                    n += 1
                for c0 in range(0, C, dim):
                    tap_offsets = [((b * H + oh * s + kh - p) * W + ow * s + kw - p) * C + c0
                                   for kh in khs for kw in sets[ow]]
                    out.append(PoolRun(plan.c.base(len(out)), n, min(dim, C - c0),
                                       ((b * op.out_h + oh) * op.out_w + ow) * C + c0, tap_offsets))
                ow += n
    return out


def lower_maxpool(op: MaxPool2d, s: MaxPoolSchedule, hw: HardwareConfig) -> Program:
    plan = s.memory_plan(hw, op)
    units = pool_runs(op, plan, hw.dim)
    steps = max(len(u.taps) for u in units) - 1
    out_shape = (op.batch, op.out_h, op.out_w, op.channels)
    buffers = layout([("input", "input", "int8", (op.batch, op.in_h, op.in_w, op.channels)),
                      ("output", "output", "int8", out_shape), ("diff", "scratch", "int32", out_shape)])
    passes = [[(u, u.taps[j]) for u in units if len(u.taps) > j] for j in range(1, steps + 1)]
    text = render("maxpool_ws.s.j2", op=op, C=op.channels, schedule=s.to_dict(), units=units, passes=passes)
    return parse_program(text, hw, buffers)


SCHEDULES.update(resadd=ResAddSchedule, maxpool=MaxPoolSchedule)
DEFAULTS.update(resadd=default_resadd_schedule, maxpool=lambda op, hw: MaxPoolSchedule())
LOWERINGS.update(resadd=lower_resadd, maxpool=lower_maxpool)
