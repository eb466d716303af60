"""The tuner's knob domains of Gemmini's loops (the "loops" family of tuner.space.Space)."""
from __future__ import annotations

from isa import HardwareConfig

from ..gemm.op import Matmul
from ..gemm.schedule import matmul_blocks
from ..knobs import Domains, tile_values
from .schedule import MATMUL_ORDERS

# the knobs LibraryMatmul.memory_plan reads
LIBRARY_MATMUL_FIT = frozenset({"tile_i", "tile_j", "tile_k"})


def library_matmul_domains(op: Matmul, hw: HardwareConfig, policy: str) -> Domains:
    """tiled_matmul's tiles (in blocks, as the flat family's) and the host's walk over them."""
    blocks = matmul_blocks(op.M, op.N, op.K, hw)
    return {"tile_i": tile_values(blocks["i"], policy), "tile_j": tile_values(blocks["j"], policy),
            "tile_k": tile_values(blocks["k"], policy), "order": list(MATMUL_ORDERS)}
