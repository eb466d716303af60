"""Cycle lower bounds the kinds' ideal-cycle functions share (each kind's row names its own)."""
from __future__ import annotations

from isa import HardwareConfig

from .ops import Op


def gemm_cycles(M: int, N: int, K: int, dim: int) -> int:
    """A perfectly fed ``dim x dim`` array's cycles for an M x N x K GEMM: each of A's M rows streams
    once through every (K block, N block) pair of weights, a row a cycle (M is not rounded up to
    blocks: a 49-row tile streams in 49 cycles, not 64)."""
    return M * -(-N // dim) * -(-K // dim)


def dense_cycles(op: Op, hw: HardwareConfig) -> int:
    """An op's MACs over dim^2, what a dense array could do with them (0 for ops without MACs)."""
    return -(-op.macs // hw.dim ** 2)
