"""Residual add: ``C = epilogue(rne(A * a_scale) + rne(B * b_scale))``, with its schedule and lowering.

It does not use the mesh: it runs through the accumulator and the load/store
units, as Gemmini's resadd does. A is moved into the accumulator with its mvin
scale, B added with an accumulating mvin and its own scale, and the mvout
applies the output scale and ReLU.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

import numpy as np

from isa import HardwareConfig, Program, layout, parse_program
from isa.numerics import mvin_scale

from .lowering import blocks, render
from .ops import EpilogueOp, Spec, check_epilogue, positive_int, wrap_int32
from .schedule import UNUSED, MemoryPlan, Region, Schedule, ScheduleError, check_int


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
        return MemoryPlan(UNUSED, UNUSED, c)


def default_resadd_schedule(op: ResAdd, hw: HardwareConfig) -> ResAddSchedule:
    """Double-buffered tiles of up to half the accumulator: the fewest tiles, then the most even ones
    (the largest smallest tile, so that no tile of a few pixels leaves the DMA port waiting for its
    latency), then the widest channel rows. Each tile's loads run among the previous tile's stores
    (resadd_ws.s.j2), so the port moves a beat nearly every cycle; every tile switch costs a few
    cycles (on the RTL, 256-row tiles lose ~0.5% to 512-row ones)."""
    d = hw.dim
    half = max(1, hw.acc_rows // 2 // d)
    pixels, channels = op.batch * op.h * op.w, op.channels
    row_blocks, chan_blocks = -(-pixels // d), -(-channels // d)

    def rank(t: tuple[int, int]) -> tuple[int, int, int]:
        rows, cols = t
        n = -(-row_blocks // rows) * -(-chan_blocks // cols)
        smallest = min(rows * d, pixels - (row_blocks - 1) // rows * rows * d) * \
            min(cols * d, channels - (chan_blocks - 1) // cols * cols * d)
        return n, -smallest, -cols

    tile_rows, tile_c = min(((r, c) for c in range(1, min(chan_blocks, half) + 1)
                             for r in {min(row_blocks, half // c)}), key=rank)
    return ResAddSchedule(tile_rows, tile_c, mvin_blocks=hw.max_block_len)


def lower_resadd(op: ResAdd, s: ResAddSchedule, hw: HardwareConfig) -> Program:
    plan = s.memory_plan(hw, op)
    d = hw.dim
    M, C = op.batch * op.h * op.w, op.channels
    tiles = []
    for ti in range(-(-M // (d * s.tile_rows))):
        for tj in range(-(-C // (d * s.tile_c))):
            tiles.append(dict(acc=plan.c.base(len(tiles)), rows=blocks(ti, s.tile_rows, M, d),
                              groups=blocks(tj, s.tile_c, C, d, s.mvin_blocks),
                              stores=blocks(tj, s.tile_c, C, d, 1 if op.out_dtype == "int32" else s.mvin_blocks)))
    buffers = layout([("A", "input", "int8", op.shape), ("B", "input", "int8", op.shape),
                      ("C", "output", op.out_dtype, op.shape)])
    text = render("resadd_ws.s.j2", op=op, C=C, dim=d, tile_c=s.tile_c, schedule=s.to_dict(),
                  out_bytes=4 if op.out_dtype == "int32" else 1, tiles=tiles, overlap=s.double_buffer)
    return parse_program(text, hw, buffers)
