"""conv2d's and depthwise's knob domains (their rows in :data:`toolkit.kinds.KINDS`)."""
from __future__ import annotations

from itertools import permutations

from isa import HardwareConfig

from ..knobs import Domains, legal_dataflows, pipeline_domains, tile_values
from .heuristic import packing_saves_blocks
from .ops import Conv2d, DepthwiseConv2d

# the knobs ConvSchedule.memory_plan and DepthwiseSchedule.memory_plan read
CONV_FIT = frozenset({"tile_b", "tile_oh", "tile_ow", "tile_k", "tile_kh", "tile_kw", "tile_c", "double_buffer",
                      "split_buffers", "in_bank", "w_bank", "acc_bank", "pack_taps", "dataflow"})


def conv_domains(op: Conv2d | DepthwiseConv2d, hw: HardwareConfig, policy: str) -> Domains:
    """Output tiles in pixels, channel tiles in dim blocks, kernel taps, banks; for a conv2d whose
    taps pack into fewer weight blocks, pack_taps too (then tile_c also ranges over the blocks of
    KW * in_c packed channels; memory_plan rejects the tiles beyond either view)."""
    depthwise = op.KIND == "depthwise"
    order = "bhwc" if depthwise else "bhwk"
    channels = -(-(op.channels if depthwise else op.in_c) // hw.dim)
    pack = not depthwise and packing_saves_blocks(op, hw)
    out = {
        **pipeline_domains(),
        "tile_b": tile_values(op.batch, policy),
        "tile_oh": tile_values(op.out_h, policy),
        "tile_ow": tile_values(op.out_w, policy),
        "tile_kh": list(range(1, op.kernel[0] + 1)),
        "tile_kw": list(range(1, op.kernel[1] + 1)),
        "tile_c": sorted(set(tile_values(channels, policy))
                         | set(tile_values(-(-op.kernel[1] * op.in_c // hw.dim), policy) if pack else ())),
        # the batch loop ("b") stays outermost: the other orders only differ for batch > 1
        "loop_order": sorted({"".join(p) for p in permutations(order)
                              if op.batch > 1 or p[0] == "b"}),
        "mvin_blocks": list(range(1, hw.max_block_len + 1)),
        "in_bank": list(range(hw.sp_banks)),
        "w_bank": list(range(hw.sp_banks)),
        "acc_bank": list(range(hw.acc_banks)),
        "dataflow": legal_dataflows(hw),
    }
    if not depthwise:
        out["tile_k"] = tile_values(-(-op.out_c // hw.dim), policy)
        out["pack_taps"] = [False, True] if pack else [False]
    return out
