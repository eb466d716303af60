"""DRAM hazards between instructions that no fence orders.

The RTL orders instructions by the local rows they touch, never by DRAM bytes: its load
and store units run apart, and a write lands when its request is accepted (docs/concepts/soc.md,
"The DRAM model"). So a DRAM read-after-write, write-after-read or write-after-write between
two instructions with no ``fence`` between them has no defined outcome, and the checker
refuses it. A loop's primitives run unfenced with each other and with their neighbours.

One order the RTL does keep: an instruction waits for an older one it shares local rows
with (an mvout for the mvin that wrote the rows it stores, an mvin for the mvout still
reading the rows it overwrites), and a unit finishes an mvin once its DRAM rows have
arrived, an mvout once its DRAM writes are acknowledged. So a read and a write of the same
bytes whose local rows meet are ordered (max pooling reloads and stores its running max
so). Only outside loops: overlapping loops are issued in an order of Gemmini's, not the
program's. Two writes are never ordered so: both only read local rows.

The checker records every access as it follows the config state; the search then runs
once, vectorized: each access's DRAM rows become byte intervals (one interval when its
rows touch), keyed by epoch (the fences before it) so that intervals of different epochs
never meet; a sorted sweep finds writes that meet, and each read is paired with the
writes it meets.
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np

from .assembly import DramNames, format_instruction
from .instructions import ACC_BIT, ROW_MASK, Instruction
from .loop_unroll import Unroller
from .program import Program

_FIELDS = 8   # per access, as record() takes them


@dataclass(frozen=True)
class Hazard:
    """``later`` touches DRAM bytes ``lo``..``hi - 1`` that ``earlier`` touched, with nothing ordering them.
    Each side is (program index, position in that instruction's loop expansion or -1, writes?)."""

    earlier: tuple[int, int, bool]
    later: tuple[int, int, bool]
    lo: int
    hi: int

    @property
    def kind(self) -> str:
        return {(True, True): "write-after-write", (True, False): "write-after-read",
                (False, True): "read-after-write"}[self.later[2], self.earlier[2]]

    def reason(self, prog: Program, names: DramNames) -> str:
        """What the later instruction does wrong: the bytes, the earlier instruction (and the loop primitives
        of both), and where a fence is missing."""
        def primitive(index: int, sub: int) -> str:
            return f"its expanded `{format_instruction(_expansion(prog, index)[sub], names)}`"

        (e_index, e_sub, e_write), (l_index, l_sub, l_write) = self.earlier, self.later
        verb = {True: "writes", False: "reads"}
        if e_index == l_index:   # two primitives of one loop: Gemmini overlaps them, and no fence fits between
            earlier, fix = primitive(e_index, e_sub), "no fence can order two primitives of one loop"
        else:
            text = format_instruction(prog.instructions[e_index], names)
            earlier = f"instruction {e_index} `{text}`" + (f" ({primitive(e_index, e_sub)})" if e_sub >= 0 else "")
            fix = f"a `fence` is missing between instructions {e_index} and {l_index}"
        later = primitive(l_index, l_sub) + " " if l_sub >= 0 else ""
        return (f"{later}{verb[l_write]} DRAM bytes {self.lo}..{self.hi - 1} ({names.format(self.lo)}) that "
                f"{earlier} {verb[e_write]}, with no fence between them ({self.kind}: the RTL orders DRAM accesses "
                f"only by fences and shared local rows): {fix}")


class DramAccesses:
    """The DRAM rows each instruction reads or writes, in program order, and the fences between them."""

    def __init__(self, dram_size: int) -> None:
        self.span = dram_size + 1   # one epoch's key range: addresses of two epochs never meet
        self.log = array("q")       # _FIELDS values per access
        self.fences = array("q")    # accesses recorded before each fence

    def record(self, index: int, sub: int, addr: int, rows: int, stride: int, row_bytes: int, write: bool,
               local: int) -> None:
        """Rows ``addr + r * stride`` (r < rows) of ``row_bytes`` bytes each, read or written, by instruction
        ``index`` (``sub``: its primitive's position in the loop's expansion, or -1), from or to ``rows`` local
        rows at address ``local`` (its first block)."""
        self.log.extend((index, sub, addr, rows, stride, row_bytes, write, local))

    def __len__(self) -> int:
        return len(self.log) // _FIELDS

    def since(self, start: int) -> np.ndarray:
        """The accesses recorded from the ``start``-th on, one row of record()'s fields each."""
        return np.frombuffer(self.log, dtype=np.int64)[start * _FIELDS:].reshape(-1, _FIELDS).copy()

    def record_all(self, accesses: np.ndarray) -> None:
        """record() each row of ``accesses`` (as :meth:`since` gives them)."""
        self.log.frombytes(np.ascontiguousarray(accesses, dtype=np.int64).tobytes())

    def fence(self) -> None:
        self.fences.append(len(self.log) // _FIELDS)

    def first_hazard(self) -> Hazard | None:
        """The hazard whose later access comes first in program order, paired with the nearest earlier one."""
        log = _Log.of(np.frombuffer(self.log, dtype=np.int64).reshape(-1, _FIELDS))
        epoch = np.searchsorted(np.frombuffer(self.fences, dtype=np.int64), np.arange(len(log.addr)), side="right")
        base = epoch * self.span
        w = _intervals(log, base, np.flatnonzero(log.write))
        r = _intervals(log, base, _reads_near(log, base, w))
        first = self._first_epoch(log, w, r, epoch)
        if first is None:
            return None
        start, stop = (int(i) for i in np.searchsorted(epoch, [first, first + 1]))
        w, r = w.among(start, stop), r.among(start, stop)

        def hazard_in(p: int) -> bool:
            pw, pr = w.among(start, start + p), r.among(start, start + p)
            return bool(_waw(pw).size or _rw(log, pw, pr).size)

        later = start + _shortest_prefix(hazard_in, stop - start) - 1
        return _pair(log, later, w, r, first * self.span)

    def _first_epoch(self, log: _Log, w: _Intervals, r: _Intervals, epoch: np.ndarray) -> int | None:
        """The first epoch with a hazard. Reads are paired with the writes they meet only before the first
        write-after-write, where writes are apart (so that the pairs stay few)."""
        waw = _waw(w)
        first_waw = int(waw.min() // self.span) if waw.size else None
        if first_waw is not None:
            stop = int(np.searchsorted(epoch, first_waw))
            w, r = w.among(0, stop), r.among(0, stop)
        rw = _rw(log, w, r)
        return int(rw.min() // self.span) if rw.size else first_waw


class _Log(NamedTuple):
    """The recorded accesses, a column each; local rows in one numbering (accumulator rows past the
    scratchpad's)."""

    index: np.ndarray
    sub: np.ndarray
    addr: np.ndarray
    rows: np.ndarray
    stride: np.ndarray
    row_bytes: np.ndarray
    write: np.ndarray
    local_lo: np.ndarray
    local_hi: np.ndarray

    @classmethod
    def of(cls, raw: np.ndarray) -> _Log:
        *fields, write, local = raw.T
        lo = (local & ROW_MASK) + (local & ACC_BIT) // ACC_BIT * (ROW_MASK + 1)
        return cls(*fields, write.astype(bool), lo, lo + raw[:, 3])

    def side(self, i: int) -> tuple[int, int, bool]:
        return int(self.index[i]), int(self.sub[i]), bool(self.write[i])


class _Intervals(NamedTuple):
    """Byte intervals of accesses: owner access, first byte key, last byte key + 1; sorted by first byte."""

    owner: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    def among(self, start: int, stop: int) -> _Intervals:
        """Those of accesses ``start`` .. ``stop - 1``."""
        keep = (self.owner >= start) & (self.owner < stop)
        return _Intervals(self.owner[keep], self.lo[keep], self.hi[keep])


def _intervals(log: _Log, base: np.ndarray, accesses: np.ndarray) -> _Intervals:
    """The intervals of ``accesses``. Rows that touch or overlap (stride <= row bytes; stride 0 repeats one
    row) are one interval, so that one access's intervals never meet."""
    key = base[accesses] + log.addr[accesses]
    rows, stride, row_bytes = log.rows[accesses], log.stride[accesses], log.row_bytes[accesses]
    joined = stride <= row_bytes
    parts = [(accesses[joined], key[joined], key[joined] + (rows[joined] - 1) * stride[joined] + row_bytes[joined])]
    for n in np.unique(rows[~joined]):   # rows are at most dim: one 2-D block per row count
        sel = np.flatnonzero(~joined & (rows == n))
        lo = key[sel, None] + np.arange(n) * stride[sel, None]
        parts.append((np.repeat(accesses[sel], n), lo.ravel(), (lo + row_bytes[sel, None]).ravel()))
    owner, lo, hi = (np.concatenate(column) for column in zip(*parts))
    order = np.argsort(lo, kind="stable")
    return _Intervals(owner[order], lo[order], hi[order])


def _reads_near(log: _Log, base: np.ndarray, w: _Intervals) -> np.ndarray:
    """The reads whose span (first byte to last) meets a write: only they can clash, so only their rows
    are laid out."""
    reads = np.flatnonzero(~log.write)
    if not w.lo.size:
        return reads[:0]
    reach = np.maximum.accumulate(w.hi)
    new = np.concatenate(([True], w.lo[1:] >= reach[:-1]))   # the pieces of the writes' union
    u_lo, u_hi = w.lo[new], reach[np.append(np.flatnonzero(new)[1:] - 1, len(new) - 1)]
    lo = base[reads] + log.addr[reads]
    hi = lo + (log.rows[reads] - 1) * log.stride[reads] + log.row_bytes[reads]
    k = np.searchsorted(u_lo, hi, side="left") - 1   # the last piece that starts before the span ends
    return reads[(k >= 0) & (u_hi[np.maximum(k, 0)] > lo)]


def _waw(w: _Intervals) -> np.ndarray:
    """Keys of write intervals that start before an earlier-starting one ends (of another access)."""
    return w.lo[1:][w.lo[1:] < np.maximum.accumulate(w.hi)[:-1]]


def _rw(log: _Log, w: _Intervals, r: _Intervals) -> np.ndarray:
    """Keys of reads that meet a write no local rows order them by; the writes must be apart."""
    first = np.searchsorted(w.hi, r.lo, side="right")   # apart and sorted, so their ends are sorted too
    count = np.searchsorted(w.lo, r.hi, side="left") - first
    reads = np.repeat(np.arange(len(r.lo)), count)
    writes = np.repeat(first - np.cumsum(count) + count, count) + np.arange(len(reads))
    return r.lo[reads[~_ordered(log, r.owner[reads], w.owner[writes])]]


def _ordered(log: _Log, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Whether accesses a and b (a read and a write) are ordered by the local rows they share: both
    outside loops, their first blocks' rows meet."""
    plain = (log.sub[a] < 0) & (log.sub[b] < 0)
    return plain & (log.local_lo[a] < log.local_hi[b]) & (log.local_lo[b] < log.local_hi[a])


def _pair(log: _Log, later: int, w: _Intervals, r: _Intervals, base: int) -> Hazard:
    """``later`` and the nearest earlier access it clashes with (keys of their epoch from ``base``), and the
    bytes that two of their intervals share."""
    mine = (w if log.write[later] else r).among(later, later + 1)
    others = [w.among(0, later)] + ([r.among(0, later)] if log.write[later] else [])   # two reads never clash
    owner, lo, hi = (np.concatenate(column) for column in zip(*others))
    clash = (log.write[owner] & log.write[later]) | ~_ordered(log, owner, np.full_like(owner, later))
    meets = [(owner[hits].max(), a, b) for a, b in zip(mine.lo, mine.hi)
             if (hits := np.flatnonzero(clash & (lo < b) & (hi > a))).size]
    earlier, a, b = max(meets, key=lambda m: m[0])
    k = np.flatnonzero((owner == earlier) & (lo < b) & (hi > a))[0]
    return Hazard(log.side(earlier), log.side(later), int(max(a, lo[k]) - base), int(min(b, hi[k]) - base))


def _expansion(prog: Program, index: int) -> list[Instruction]:
    """The primitives of the loop at ``index`` (where the unroller places a loop depends on the loops before)."""
    unroller = Unroller(prog.hw)
    for ins in prog.instructions[:index]:
        unroller.feed(ins)
    expanded = unroller.feed(prog.instructions[index])
    assert expanded is not None, "only a loop's accesses have a position in an expansion"
    return expanded


def _shortest_prefix(holds: Callable[[int], bool], total: int) -> int:
    """The least p <= total with holds(p), given holds(total): galloping first, so that the cost follows p."""
    first, last = 1, 1
    while last < total and not holds(last):
        first, last = last + 1, min(2 * last, total)
    while first < last:
        mid = (first + last) // 2
        first, last = (first, mid) if holds(mid) else (mid + 1, last)
    return first
