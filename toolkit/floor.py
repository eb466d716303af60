"""The floor under a hardware point: the fewest cycles any schedule of an op can take.

It is the largest of three bounds, each a fact of the op and the hardware, not of a schedule:

- compute: the MACs that touch real input (a padded tap multiplies a zero, so a schedule may skip it)
  at dim^2 a cycle;
- memory: the compulsory bytes at the memory's bandwidth in each direction. On the accelerator alone
  (``l2_kib`` 0) that is one DMA port at ``dma_beat_bytes`` a cycle. On the SoC every input byte
  crosses the system bus (``dma_beat_bytes`` each way) and, unless the L2 starts warm, the memory
  bus's D channel (``mem_beat_bytes``); the A channel carries a Get beat per 64 B block read and the
  write-back of whatever output the L2 cannot keep (more than ``l2_kib``);
- host: the fewest commands at the host's cost (``host_cmd_cycles`` each). The fewest commands issue
  Gemmini's loops: each loop's outputs stay in the accumulator until stored, so a loop covers at most
  an accumulator of them, and costs its words (6 for LOOP_WS, 7 for LOOP_CONV_WS). A kind without loop
  words moves every input and output with the largest mvin and mvout. A row normalization (the
  normalization unit) passes each row three times (its statistics need two, the output one), each pass
  one-row mvouts of at most dim x max_block_len columns: a stat id holds one row's statistics, so no
  mvout serves two rows of a pass.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isa import HardwareConfig
from isa.loop_words import LOOP_CONV_WORDS, LOOP_WS_WORDS

from .ops import Op

L2_BLOCK_BYTES = 64   # InclusiveCache's block: one Get on the memory bus's A channel per block read


@dataclass(frozen=True)
class Floor:
    """Each bound in cycles; :attr:`cycles` is the largest, :attr:`bound` names it."""

    compute: int
    dram_read: int
    dram_write: int
    host: int

    @property
    def cycles(self) -> int:
        return max(self.compute, self.dram_read, self.dram_write, self.host)

    @property
    def bound(self) -> str:
        terms = {"compute": self.compute, "dram_read": self.dram_read, "dram_write": self.dram_write,
                 "host": self.host}
        return max(terms, key=terms.__getitem__)


def valid_taps(extent: int, kernel: int, stride: int, padding: int, out: int) -> int:
    """Over the ``out`` output positions of one axis, the kernel taps that land inside the input."""
    pos = np.arange(out)[:, None] * stride - padding + np.arange(kernel)[None, :]
    return int(((pos >= 0) & (pos < extent)).sum())


def real_macs(op: Op) -> int:
    """The op's MACs less those of padded taps (a conv's or depthwise conv's)."""
    if op.KIND not in ("conv2d", "depthwise"):
        return op.macs
    taps = (valid_taps(op.in_h, op.kernel[0], op.stride, op.padding, op.out_h)
            * valid_taps(op.in_w, op.kernel[1], op.stride, op.padding, op.out_w))
    return op.macs // (op.out_h * op.out_w * op.kernel[0] * op.kernel[1]) * taps


def memory_cycles(op: Op, hw: HardwareConfig) -> tuple[int, int]:
    """(read, write) cycles of the compulsory bytes (see the module's docstring)."""
    reads, writes = op.input_bytes, op.output_bytes
    if not hw.l2_kib:
        one_port = -(-(reads + writes) // hw.dma_beat_bytes)
        return one_port, one_port
    l2 = hw.l2_kib * 1024
    from_dram = max(0, reads - l2) if hw.l2_warm else reads
    written_back = max(0, writes + (reads - from_dram) - l2) if hw.l2_warm else max(0, writes - l2)
    read = max(-(-reads // hw.dma_beat_bytes), -(-from_dram // hw.mem_beat_bytes))
    write = max(-(-writes // hw.dma_beat_bytes),
                -(-from_dram // L2_BLOCK_BYTES) + -(-written_back // hw.mem_beat_bytes))
    return read, write


def fewest_commands(op: Op, hw: HardwareConfig) -> int:
    """The fewest words any program of ``op`` issues (see the module's docstring)."""
    d = hw.dim
    if op.KIND == "matmul":
        rows, words = op.M * -(-op.N // d), len(LOOP_WS_WORDS)
    elif op.KIND in ("conv2d", "depthwise"):
        rows, words = op.batch * op.out_h * op.out_w * -(-op.out_channels // d), len(LOOP_CONV_WORDS)
    elif op.KIND == "resadd":   # A, B and C all sit in the accumulator
        shape = next(iter(op.output_specs().values()))[0]
        rows, words = 3 * int(np.prod(shape[:-1])) * -(-shape[-1] // d), len(LOOP_WS_WORDS)
    elif op.KIND == "norm":   # the largest mvins, and three passes of one-row mvouts
        return -(-op.rows * op.cols // (hw.dim * hw.max_mvin_cols)) + 3 * op.rows * -(-op.cols // hw.max_mvin_cols)
    else:
        return op.size_estimate(hw).instructions
    return words * -(-rows // hw.acc_rows)


def floor(op: Op, hw: HardwareConfig) -> Floor:
    """The three bounds of ``op`` on ``hw``."""
    read, write = memory_cycles(op, hw)
    return Floor(-(-real_macs(op) // hw.dim ** 2), read, write, hw.host_cmd_cycles * fewest_commands(op, hw))
