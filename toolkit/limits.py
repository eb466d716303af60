"""Size limits: refuse, up front and with the numbers, work that cannot fit or would take too long."""
from __future__ import annotations

from isa import HardwareConfig
from isa.buffers import MAX_DRAM_BYTES

from .ops import Op

# Work past these takes minutes to lower and gigabytes to hold; allow_large=True lifts them.
MAX_INSTRUCTIONS = 10_000_000
MAX_DRAM_FOOTPRINT = 1 << 30


class SizeError(ValueError):
    """An op too large to lower (or to hold in DRAM) without asking for it."""


def check_size(op: Op, hw: HardwareConfig, allow_large: bool = False) -> None:
    """Refuse, with the numbers, an op whose lowering cannot fit; ``allow_large`` lifts the
    soft limits, never the DRAM address space of a program."""
    est = op.size_estimate(hw)
    over = []
    if est.dram_bytes > MAX_DRAM_BYTES:
        raise SizeError(f"{op.key} needs {est.dram_bytes:,} bytes of DRAM, more than a program's address space "
                        f"({MAX_DRAM_BYTES:,} bytes)")
    if est.instructions > MAX_INSTRUCTIONS:
        over.append(f"at least {est.instructions:,} instructions (limit {MAX_INSTRUCTIONS:,})")
    if est.dram_bytes > MAX_DRAM_FOOTPRINT:
        over.append(f"{est.dram_bytes:,} bytes of DRAM (limit {MAX_DRAM_FOOTPRINT:,})")
    if over and not allow_large:
        raise SizeError(f"{op.key} on {hw.name} needs {' and '.join(over)}; pass allow_large=True "
                        "(CLI: --allow-large) if you mean it")
