"""A loop's execute phase checked at once from its words, as isa.checker checks it one primitive at a time.

An execute phase (isa.loop_shared: a loop's preloads and computes) is most of a loop's primitives: a
ResNet-50 conv's tile holds thousands. The checker's own walk makes an instruction of each and checks its
fields, its rows and the array's state in Python, which took most of a network's check. Here the same
rules are numpy over the phase's words: each count between 1 and dim, no operand in the accumulator but
C, no flags where the checker refuses them, every row inside its memory under config_ex's strides, and
the preloads and computes in turn. The phase passes here only where every primitive passes there; any
other phase (a failing one among them) goes back to the walk, whose error names the primitive.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .config import HardwareConfig
from .encoding import split_operand
from .instructions import ACC_BIT, ACCUM_BIT, FULL_BIT, GARBAGE, NORM_MASK, ROW_MASK, ConfigEx
from .opcodes import Funct
from .spans import Span, union_of_columns

PAIR_FUNCTS = (Funct.PRELOAD, Funct.COMPUTE_PRELOADED, Funct.COMPUTE_ACCUMULATED)
_FLAGS = ACCUM_BIT | FULL_BIT | NORM_MASK   # no scratchpad address carries them


class Checked(NamedTuple):
    """What a phase that passes leaves: the array's state after it (isa.checker's array_state) and the local
    rows its primitives touch, as the checker's spans (accumulator?, first row, last row + 1)."""
    after: tuple
    spans: list[Span]


def checked_pairs(words: np.ndarray, hw: HardwareConfig, ex: ConfigEx | None, preloaded: object, held: bool,
                  weights: bool) -> Checked | None:
    """The words of preload/compute pairs (a preload, then its compute, in turn) checked from the array state
    (``ex``, ``preloaded``, ``held``, ``weights``) they start in; None where the checker would refuse one of
    them, or the words are not such pairs from a state with no preload pending."""
    funct = words[:, 0].astype(np.int64)
    if ex is None or preloaded is not None or not len(words) or len(words) % 2 or \
            (funct[0::2] != Funct.PRELOAD).any() or not np.isin(funct[1::2], PAIR_FUNCTS[1:]).all():
        return None
    os = ex.dataflow == 0
    if funct[1] == Funct.COMPUTE_ACCUMULATED and not (held if os else weights):
        return None   # the first compute keeps results (OS) or weights (WS) the array does not hold
    (b, b_cols, b_rows), (c, c_cols, c_rows) = (np.array(split_operand(words[0::2, k]), dtype=np.int64)
                                                for k in (1, 2))
    (a, a_cols, a_rows), (d, d_cols, d_rows) = (np.array(split_operand(words[1::2, k]), dtype=np.int64)
                                                for k in (1, 2))
    counts = np.concatenate([b_rows, b_cols, c_rows, c_cols, a_rows, a_cols, d_rows, d_cols])
    if counts.min() < 1 or counts.max() > hw.dim:
        return None
    spans = [_scratchpad(b, b_rows, 1, hw), _scratchpad(a, a_rows, ex.a_stride, hw),
             _scratchpad(d, d_rows, 1, hw), _accumulator(c, c_rows, ex.c_stride, hw)]
    if any(s is None for s in spans):
        return None
    return Checked((ex, None, os, weights or not os), union_of_columns(np.concatenate(spans, axis=1)))


def _scratchpad(addr: np.ndarray, rows: np.ndarray, stride: int, hw: HardwareConfig) -> np.ndarray | None:
    """The (accumulator?, first, past last) rows of operands that read the scratchpad (the garbage address
    none), or None where one names the accumulator, carries a flag or runs past the scratchpad."""
    real = addr != GARBAGE
    if (addr[real] & (ACC_BIT | _FLAGS)).any():
        return None
    last = addr + (rows - 1) * stride
    if (last[real] >= hw.sp_rows).any():
        return None
    return np.stack([np.zeros(int(real.sum()), np.int64), addr[real], last[real] + 1])


def _accumulator(addr: np.ndarray, rows: np.ndarray, stride: int, hw: HardwareConfig) -> np.ndarray | None:
    """As :func:`_scratchpad`, of the preloads' C, which the computes write: an accumulator address with no
    .full or norm flag, or a scratchpad one with none at all; checked at the preload (its first row) and at
    the compute (all of them, under config_ex's C stride)."""
    real = addr != GARBAGE
    addr, rows = addr[real], rows[real]
    acc = (addr & ACC_BIT) != 0
    if (addr & np.where(acc, FULL_BIT | NORM_MASK, _FLAGS)).any():
        return None
    first = addr & ROW_MASK
    last = first + (rows - 1) * stride
    if (last >= np.where(acc, hw.acc_rows, hw.sp_rows)).any():
        return None
    return np.stack([acc.astype(np.int64), first, last + 1])
