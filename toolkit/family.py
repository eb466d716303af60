"""Which family a default takes on a hardware point: the toolkit's flat stream or Gemmini's loops.

A flat stream issues a word per mvin, preload, compute and mvout; Gemmini's loops (LOOP_WS,
LOOP_CONV_WS) issue a few words per tile and the accelerator's unrollers issue the rest. With a host
that pays for every word (``host_cmd_cycles``, the SoC) a flat stream of a dense layer is bound by
the host: on the gemmini preset a 512^3 matmul's 68k words take 26 cycles each, 1.78M cycles, where
its loops run in 0.54M. Each family's estimate is the largest of what bounds it:

- flat: the kind's closed-form estimate of the accelerator (toolkit.estimate), and its words at the
  host's cost (counted from the census, or rendered);
- loops: the host's words, the array's time over the unrolled primitives (each weight block's rows,
  :func:`toolkit.estimate.tap_cycles`), the DMA's bytes at a beat a cycle, and the memory's floor
  (toolkit.floor). Gemmini's unrollers overlap a loop's phases with the next loop's, so the largest
  bounds the whole.

Both are estimates that rank, never measurements (benchmarks/bench_utilization.py measures).
"""
from __future__ import annotations

from typing import Iterable

from isa import HardwareConfig
from isa.instructions import ComputePreloaded, Instruction, Mvin, Mvout, Preload

from .estimate import tap_cycles
from .floor import memory_cycles
from .ops import Op


def loop_cycles(op: Op, walk: Iterable[tuple[Instruction, int]], hw: HardwareConfig) -> float:
    """The estimate of a program of Gemmini's loops (see the module's docstring) from ``walk``, its
    primitives each with the words the host issued for it (isa.loop_unroll.issued)."""
    words = array = rows = last = dma = 0
    for prim, issued_words in walk:
        words += issued_words
        if isinstance(prim, Preload):
            array += tap_cycles(rows, last, hw.dim) if rows else 0
            rows = 0
        elif isinstance(prim, ComputePreloaded):   # ComputeAccumulated too
            rows, last = rows + prim.a_rows, prim.a_rows
        elif isinstance(prim, (Mvin, Mvout)):
            dma += prim.rows * prim.cols * (4 if isinstance(prim, Mvin) and prim.state == 2 else 1)
    array += tap_cycles(rows, last, hw.dim) if rows else 0
    return max(words * hw.host_cmd_cycles, array, dma / hw.dma_beat_bytes, *memory_cycles(op, hw))


def flat_cycles(words: int, accelerator: float | None, hw: HardwareConfig) -> float:
    """The estimate of a flat stream of ``words``: the accelerator's (the kind's closed form, None where it
    has none) or its words at the host's cost, whichever is more."""
    return max(accelerator or 0.0, words * hw.host_cmd_cycles)
