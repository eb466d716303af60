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

import numpy as np

from isa import HardwareConfig
from isa.encoding import split_operand
from isa.instructions import Instruction
from isa.loop_unroll import issued_words
from isa.opcodes import Funct

from .estimate import WEIGHT_BUFFERS, tap_cycles
from .floor import memory_cycles
from .ops import Op


def loop_cycles(op: Op, words: np.ndarray, host_words: int, hw: HardwareConfig,
                count: np.ndarray | None = None) -> float:
    """The estimate of a program of Gemmini's loops (see the module's docstring): ``words``, the encoded
    primitives their unrollers issue (isa.encoding.encode_all of isa.loop_unroll.primitives), each standing
    ``count`` times (default once: isa.loop_unroll.issued_groups gives alike loops' words once), and
    ``host_words``, the words the host issued for them."""
    count = np.ones(len(words), dtype=np.int64) if count is None else count
    funct = words[:, 0].astype(np.int64)
    addr, cols, rows = (x.astype(np.int64) for x in split_operand(words[:, 2]))
    a_rows = split_operand(words[:, 1])[2].astype(np.int64)
    is_pre = funct == Funct.PRELOAD
    computes = np.flatnonzero((funct == Funct.COMPUTE_PRELOADED) | (funct == Funct.COMPUTE_ACCUMULATED))
    # each compute streams its rows through the weight block of the preload before it
    block = np.cumsum(is_pre)[computes]
    blocks, first = np.unique(block, return_index=True)
    streamed = np.add.reduceat(a_rows[computes], first) if len(computes) else np.zeros(0, np.int64)
    last = a_rows[computes][np.r_[first[1:], len(computes)] - 1] if len(computes) else streamed
    # a block's cycles are whole WEIGHT_BUFFERS-ths: summed as integers, so that any grouping gives the same
    parts = np.rint(tap_cycles(streamed, last, hw.dim) * WEIGHT_BUFFERS).astype(np.int64)
    array = int(parts @ count[computes[first]]) / WEIGHT_BUFFERS if len(computes) else 0.0
    moves = (funct == Funct.MVIN) | (funct == Funct.MVIN2) | (funct == Funct.MVIN3) | (funct == Funct.MVOUT)
    dma = int((rows * cols * np.where(funct == Funct.MVIN3, 4, 1) * count)[moves].sum())
    return float(max(host_words * hw.host_cmd_cycles, array, dma / hw.dma_beat_bytes, *memory_cycles(op, hw)))


def program_loop_cycles(op: Op, instructions: Iterable[Instruction], hw: HardwareConfig) -> float:
    """:func:`loop_cycles` of a rendered program of loops."""
    return loop_cycles(op, *issued_words(instructions, hw), hw)


def flat_cycles(words: int, accelerator: float | None, hw: HardwareConfig) -> float:
    """The estimate of a flat stream of ``words``: the accelerator's (the kind's closed form, None where it
    has none) or its words at the host's cost, whichever is more."""
    return max(accelerator or 0.0, words * hw.host_cmd_cycles)
