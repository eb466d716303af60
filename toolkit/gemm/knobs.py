"""Matmul's knob domains (its row in :data:`toolkit.kinds.KINDS`)."""
from __future__ import annotations

from isa import HardwareConfig

from ..knobs import Domains, legal_dataflows, pipeline_domains, tile_values
from .op import Matmul

# the knobs MatmulSchedule.memory_plan reads
MATMUL_FIT = frozenset({"tile_i", "tile_j", "tile_k", "double_buffer", "split_buffers", "a_bank", "b_bank", "c_bank",
                        "dataflow"})


def matmul_domains(op: Matmul, hw: HardwareConfig, policy: str) -> Domains:
    d = hw.dim
    return {
        **pipeline_domains(),
        "tile_i": tile_values(-(-op.M // d), policy),
        "tile_j": tile_values(-(-op.N // d), policy),
        "tile_k": tile_values(-(-op.K // d), policy),
        "loop_order": ["ijk", "jik"],
        "mvin_blocks": list(range(1, hw.max_block_len + 1)),
        "bias_strategy": ["before", "after"] if op.bias else ["before"],  # no bias: the knob does nothing
        "a_bank": list(range(hw.sp_banks)),
        "b_bank": list(range(hw.sp_banks)),
        "c_bank": list(range(hw.acc_banks)),
        "dataflow": legal_dataflows(hw, (op.transpose_a, op.transpose_b)),
    }
