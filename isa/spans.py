"""Local rows as the checker tracks them: a span is (accumulator?, first row, last row + 1) of one memory.

isa.checker collects the spans each primitive touches and keeps their union per loop, to find the rows a loop's
loads write that the loop running beside it (Gemmini runs two at once) still uses. isa.execute_check makes the
same union of an execute phase's spans from arrays.
"""
from __future__ import annotations

from bisect import bisect_right

import numpy as np

from .buffers import MAX_DRAM_BYTES
from .instructions import ACC_BIT, GARBAGE, ROW_MASK

Span = tuple[bool, int, int]   # (accumulator?, first row, last row + 1) of local memory


def span(addr: int, first: int, count: int, stride: int) -> Span:
    """Rows first .. first + (count - 1) * stride of the memory ``addr`` names (garbage: none)."""
    if addr == GARBAGE:
        return (False, 0, 0)
    lo = (addr & ROW_MASK) + first
    return (bool(addr & ACC_BIT), lo, lo + (count - 1) * stride + 1)


def _row(acc: bool, row: int) -> str:
    return f"{'accumulator' if acc else 'scratchpad'} row {row}"


def union(spans: list[Span]) -> list[Span]:
    """The rows of ``spans`` as sorted runs apart from each other (empty spans, the garbage's, dropped)."""
    runs: list[Span] = []
    for acc, lo, hi in sorted(s for s in spans if s[2] > s[1]):
        if runs and runs[-1][0] == acc and lo <= runs[-1][2]:
            runs[-1] = (acc, runs[-1][1], max(runs[-1][2], hi))
        else:
            runs.append((acc, lo, hi))
    return runs


def union_of_columns(spans: np.ndarray) -> list[Span]:
    """:func:`union` of spans given as three rows of columns (accumulator? as 0 or 1, first, past last)."""
    acc, lo, hi = spans[:, spans[2] > spans[1]]
    if not len(lo):
        return []
    order = np.lexsort((hi, lo, acc))
    acc, lo, hi = acc[order], lo[order], hi[order]
    lift = acc * (1 << 40)   # the accumulator's spans sort after the scratchpad's: a run never spans both
    reach = np.maximum.accumulate(hi + lift) - lift   # the furthest row so far
    new = np.r_[True, (acc[1:] != acc[:-1]) | (lo[1:] > reach[:-1])]
    starts = np.flatnonzero(new)
    ends = np.maximum.reduceat(hi, starts)
    return [(bool(x), int(y), int(z)) for x, y, z in zip(acc[starts].tolist(), lo[starts].tolist(), ends.tolist())]


def first_overlap(spans: list[Span], runs: list[Span]) -> str | None:
    """The first row that a span of ``spans`` shares with ``runs`` (of :func:`union`)."""
    for acc, lo, hi in spans:
        k = bisect_right(runs, (acc, lo, MAX_DRAM_BYTES))
        for u_acc, u_lo, u_hi in runs[max(k - 1, 0):k + 1]:
            if u_acc == acc and u_lo < hi and lo < u_hi:
                return _row(acc, max(lo, u_lo))
    return None
