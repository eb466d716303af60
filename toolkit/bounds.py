"""Cycle lower bounds the kinds' ideal-cycle functions share (each kind's row names its own)."""
from __future__ import annotations

from isa import HardwareConfig

from .ops import Op


def gemm_cycles(M: int, N: int, K: int, dim: int) -> int:
    """A perfectly fed ``dim x dim`` array's cycles for an M x N x K GEMM: its ceil-blocked MACs / dim^2."""
    return -(-M // dim) * -(-N // dim) * -(-K // dim) * dim


def dense_cycles(op: Op, hw: HardwareConfig) -> int:
    """An op's MACs over dim^2, what a dense array could do with them (0 for ops without MACs)."""
    return -(-op.macs // hw.dim ** 2)
