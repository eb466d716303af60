"""conv2d's ideal cycles (its row in :data:`toolkit.kinds.KINDS`; depthwise's are its dense MACs)."""
from __future__ import annotations

from isa import HardwareConfig

from ..bounds import gemm_cycles
from .ops import Conv2d


def conv_ideal_cycles(op: Conv2d, hw: HardwareConfig) -> int:
    """Its im2col GEMM's: output pixels x output channels x (taps x input channels)."""
    return gemm_cycles(op.batch * op.out_h * op.out_w, op.out_c, op.kernel[0] * op.kernel[1] * op.in_c, hw.dim)
