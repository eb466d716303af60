"""Matmul's knobs: tiles in ``dim`` blocks, loop order, mvin width, bias strategy, bank placement."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

import numpy as np

from isa import HardwareConfig

from ..schedule import (DATAFLOWS, MemoryPlan, Pipelined, PlanArrays, ScheduleError, check_dataflow, check_int, check_plan,
                        dataflows_allowed, place)


LOOP_ORDERS = ("ijk", "jik")


BIAS_STRATEGIES = ("before", "after")


@dataclass(frozen=True)
class MatmulSchedule(Pipelined):
    """Weight-stationary tiled matmul. Tile sizes count ``dim``-wide blocks.

    loop_order: outer loops over tiles, k innermost ("ijk" or "jik").
    mvin_blocks: dim-wide blocks per mvin of A, B and bias (1..max_block_len).
    bias_strategy: "before" loads the bias into the accumulator ahead of the
    computes; "after" adds it with an accumulating mvin before the store.
    a_bank / b_bank / c_bank: the bank where each region starts; B packs right
    after A when both name one bank. dataflow: "ws" (weight-stationary) or "os"
    (output-stationary: each C block stays in the array over its k blocks). The
    double buffering and software-pipeline knobs are :class:`Pipelined`'s.
    """

    tile_i: int
    tile_j: int
    tile_k: int
    loop_order: str = "ijk"
    mvin_blocks: int = 1
    bias_strategy: str = "before"
    a_bank: int = 0
    b_bank: int = 0
    c_bank: int = 0
    dataflow: str = "ws"

    OP: ClassVar[str] = "matmul"

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("tile_i", "tile_j", "tile_k", "mvin_blocks"):
            check_int(name, getattr(self, name), 1)
        for name in ("a_bank", "b_bank", "c_bank"):
            check_int(name, getattr(self, name), 0)
        if self.loop_order not in LOOP_ORDERS:
            raise ScheduleError(f"loop_order={self.loop_order!r} is not one of {LOOP_ORDERS}")
        if self.bias_strategy not in BIAS_STRATEGIES:
            raise ScheduleError(f"bias_strategy={self.bias_strategy!r} is not one of {BIAS_STRATEGIES}")
        if self.dataflow not in DATAFLOWS:
            raise ScheduleError(f"dataflow={self.dataflow!r} is not one of {DATAFLOWS}")

    def memory_plan(self, hw: HardwareConfig, op: Any = None) -> MemoryPlan:
        """Place A, B (scratchpad) and C (accumulator); ScheduleError if they do not fit, or if the
        dataflow is not one the hardware has (with ``op``: one its transposed operands allow).
        Matmul regions depend on the tiles alone (conv's depend on the stride)."""
        check_dataflow(self, hw, (op.transpose_a, op.transpose_b) if op is not None else (False, False))
        check_int("mvin_blocks", self.mvin_blocks, 1, hw.max_block_len)
        check_int("a_bank", self.a_bank, 0, hw.sp_banks - 1)
        check_int("b_bank", self.b_bank, 0, hw.sp_banks - 1)
        check_int("c_bank", self.c_bank, 0, hw.acc_banks - 1)
        split = self.split_buffers
        rows_a, rows_b, rows_c = _region_rows(self.tile_i, self.tile_j, self.tile_k, hw.dim)
        a = place(self.a_bank, rows_a, self.nbuf, hw.sp_bank_rows, hw.sp_banks, split)
        b = place(self.b_bank, rows_b, self.nbuf, hw.sp_bank_rows, hw.sp_banks, split,
                  after=a if self.b_bank == self.a_bank else None)
        c = place(self.c_bank, rows_c, self.nbuf, hw.acc_bank_rows, hw.acc_banks, split)
        check_plan(self, hw, (("A", a, "scratchpad"), ("B", b, "scratchpad"), ("C", c, "accumulator")))
        return MemoryPlan(a, b, c)

    @classmethod
    def plan_arrays(cls, hw: HardwareConfig, op: Any, knobs: Mapping[str, Any]) -> PlanArrays:
        """:meth:`memory_plan` over arrays of knobs (the tuner's space: toolkit.schedule.regions_fit places them)."""
        transposes = (op.transpose_a, op.transpose_b) if op is not None else (False, False)
        mvin = np.asarray(knobs["mvin_blocks"])
        ok = dataflows_allowed(knobs["dataflow"], hw, transposes) & (mvin >= 1) & (mvin <= hw.max_block_len)
        return PlanArrays(_region_rows(knobs["tile_i"], knobs["tile_j"], knobs["tile_k"], hw.dim),
                          (knobs["a_bank"], knobs["b_bank"], knobs["c_bank"]), ok)

    def describe(self) -> str:
        return (f"tiles {self.tile_i}x{self.tile_j}x{self.tile_k}, "
                f"{'double' if self.double_buffer else 'single'}-buffered")


def _region_rows(tile_i: Any, tile_j: Any, tile_k: Any, d: int) -> tuple[Any, Any, Any]:
    """Rows of one buffer of A, B and C (ints or arrays)."""
    return tile_i * tile_k * d, tile_k * tile_j * d, tile_i * tile_j * d


def matmul_blocks(M: int, N: int, K: int, hw: HardwareConfig) -> dict[str, int]:
    d = hw.dim
    return {"i": -(-M // d), "j": -(-N // d), "k": -(-K // d)}
