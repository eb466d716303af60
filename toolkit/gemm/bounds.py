"""Matmul's ideal cycles (its row in :data:`toolkit.kinds.KINDS`)."""
from __future__ import annotations

from isa import HardwareConfig

from ..bounds import gemm_cycles
from .op import Matmul


def matmul_ideal_cycles(op: Matmul, hw: HardwareConfig) -> int:
    return gemm_cycles(op.M, op.N, op.K, hw.dim)
