"""Max pooling, with its schedule and lowering.

Pools config_st can express (square windows up to 3, strides up to 3) run in the store unit,
as Gemmini's do: see toolkit/maxpool_store.py. Others are built from the accumulator's ReLU,
exactly: ``max(m, x) = m + relu(x - m)``. The running max lives in the output buffer; per tap:
``x`` and ``-m`` (mvin scale -1) are summed in the accumulator, stored with ReLU as int32 to a
DRAM scratch buffer, and, after a fence, ``m`` and that difference are summed and stored back as
the new ``m``. It is bit-exact but costs two DRAM round trips and two fences per tap.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, NamedTuple

import numpy as np

from isa import HardwareConfig, Program, layout, parse_program
from isa.numerics import INT8_MIN

from .lowering import render
from .maxpool_store import store_plan, store_tiles, tile_image
from .ops import Op, Spec
from .pool_tiles import IMAGE_MAX, store_can_pool
from .schedule import UNUSED, MemoryPlan, Region, Schedule, ScheduleError, check_int
from .window import Window, check_window, taps


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
        out = np.full((self.batch, self.out_h, self.out_w, self.channels), INT8_MIN - 1, dtype=np.int16)
        for _, _, view in taps(inputs["input"].astype(np.int16), self.kernel, self.stride, self.padding,
                               fill=INT8_MIN - 1):
            np.maximum(out, view, out=out)
        return {"output": out.astype(np.int8)}


def maxpool2d(batch: int, in_h: int, in_w: int, channels: int, *, kernel: int | tuple[int, int] = (2, 2),
              stride: int = 2, padding: int = 0) -> MaxPool2d:
    """A max-pooling op over NHWC int8 input (pooled in the store unit where config_st can: see toolkit/maxpool.py)."""
    return MaxPool2d(batch, in_h, in_w, channels, kernel, stride, padding)


@dataclass(frozen=True)
class MaxPoolSchedule(Schedule):
    """porows x pocols: pooled pixels a tile of the store unit's pooling (double-buffered in the scratchpad).
    slots, acc_bank: the ReLU lowering's, for windows config_st cannot express: accumulator blocks of ``dim``
    rows used round-robin (more lets loads run ahead of stores)."""

    porows: int = 8
    pocols: int = 64
    slots: int = 4
    acc_bank: int = 0

    OP: ClassVar[str] = "maxpool"

    def __post_init__(self) -> None:
        check_int("porows", self.porows, 1, IMAGE_MAX)
        check_int("pocols", self.pocols, 1, IMAGE_MAX)
        check_int("slots", self.slots, 1)
        check_int("acc_bank", self.acc_bank, 0)

    def memory_plan(self, hw: HardwareConfig, op: Any = None) -> MemoryPlan:
        if op is not None and store_can_pool(op.kernel, op.stride, op.padding):
            return store_plan(op, self.porows, self.pocols, hw)
        check_int("acc_bank", self.acc_bank, 0, hw.acc_banks - 1)
        c = Region(self.acc_bank * hw.acc_bank_rows, hw.dim, self.slots)
        if c.end > hw.acc_rows:
            raise ScheduleError(f"maxpool slots={self.slots} do not fit: {c.end - c.start} accumulator rows from "
                                f"row {c.start}, past the {hw.acc_rows} it has")
        return MemoryPlan(UNUSED, UNUSED, c)


def default_maxpool(op: MaxPool2d, hw: HardwareConfig) -> MaxPoolSchedule:
    """Whole output rows a tile where they fit config_st, then as many rows as half the scratchpad holds
    (fewer, larger tiles reload fewer overlapping image rows)."""
    if not store_can_pool(op.kernel, op.stride, op.padding):
        return MaxPoolSchedule()
    pocols = max(c for c in range(1, min(op.out_w, IMAGE_MAX) + 1) if tile_image(op, 1, c)[1] <= IMAGE_MAX)
    best = MaxPoolSchedule(porows=1, pocols=pocols)
    for porows in range(2, min(op.out_h, IMAGE_MAX) + 1):
        try:
            MaxPoolSchedule(porows=porows, pocols=pocols).memory_plan(hw, op)
        except ScheduleError:
            break
        best = MaxPoolSchedule(porows=porows, pocols=pocols)
    return best


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
    if store_can_pool(op.kernel, op.stride, op.padding):
        return _lower_in_store(op, s, hw)
    plan = s.memory_plan(hw, op)
    units = pool_runs(op, plan, hw.dim)
    steps = max(len(u.taps) for u in units) - 1
    out_shape = (op.batch, op.out_h, op.out_w, op.channels)
    buffers = layout([("input", "input", "int8", (op.batch, op.in_h, op.in_w, op.channels)),
                      ("output", "output", "int8", out_shape), ("diff", "scratch", "int32", out_shape)])
    passes = [[(u, u.taps[j]) for u in units if len(u.taps) > j] for j in range(1, steps + 1)]
    text = render("maxpool_ws.s.j2", op=op, C=op.channels, schedule=s.to_dict(), units=units, passes=passes)
    return parse_program(text, hw, buffers)


def _lower_in_store(op: MaxPool2d, s: MaxPoolSchedule, hw: HardwareConfig) -> Program:
    block, tiles = store_tiles(op, s.porows, s.pocols, hw)
    buffers = layout([("input", "input", "int8", (op.batch, op.in_h, op.in_w, op.channels)),
                      ("output", "output", "int8", (op.batch, op.out_h, op.out_w, op.channels))])
    text = render("maxpool_store.s.j2", op=op, C=op.channels, schedule=s.to_dict(), block=block, tiles=tiles)
    return parse_program(text, hw, buffers)
