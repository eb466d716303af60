"""Max pooling's lowering.

Pools config_st can express (square windows up to 3, strides up to 3) run in the store unit,
as Gemmini's do: see store.py. Others are built from the accumulator's ReLU,
exactly: ``max(m, x) = m + relu(x - m)``. The running max lives in the output buffer; per tap:
``x`` and ``-m`` (mvin scale -1) are summed in the accumulator, stored with ReLU as int32 to a
DRAM scratch buffer, and, after a fence, ``m`` and that difference are summed and stored back as
the new ``m``. It is bit-exact but costs two DRAM round trips and two fences per tap.
"""
from __future__ import annotations

from typing import NamedTuple

from isa import HardwareConfig, Program, layout, parse_program

from ..lowering import render
from ..schedule import MemoryPlan
from .op import MaxPool2d
from .schedule import MaxPoolSchedule
from .store import store_tiles
from .tiles import store_can_pool


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


def store_text(op: MaxPool2d, s: MaxPoolSchedule, hw: HardwareConfig, source: str = "input") -> str:
    """The assembly of the pool in the store unit, reading the buffer ``source`` and writing ``output``."""
    block, tiles = store_tiles(op, s.porows, s.pocols, hw)
    return render("maxpool_store.s.j2", op=op, C=op.channels, schedule=s.to_dict(), block=block, tiles=tiles,
                  source=source)


def _lower_in_store(op: MaxPool2d, s: MaxPoolSchedule, hw: HardwareConfig) -> Program:
    buffers = layout([("input", "input", "int8", (op.batch, op.in_h, op.in_w, op.channels)),
                      ("output", "output", "int8", (op.batch, op.out_h, op.out_w, op.channels))])
    return parse_program(store_text(op, s, hw), hw, buffers)
