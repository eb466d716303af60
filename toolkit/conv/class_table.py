"""The conv census's kept classes (census.py) as a table: a class is a row number, its sums a row of one
array and its scratchpad accesses a stretch of another, so that a batch of candidates reads all its classes'
sums and accesses with one index each, and a kept class costs no Python object but its key (its words' piece is
made only for a census that joins them).
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Hashable

import numpy as np

from isa import ROW_MASK, HardwareConfig

from ..tally import SUMS
from .runs import ranks

ACCESS = ("addr", "off", "amount", "shift", "read")   # an access's rows: toolkit.tally.Accesses's, what
# shifts its address (census._SP, _IN, _W, _ACC) and whether a read
SLOTS = 8   # a class's accesses by what shifts them and whether reads: slot shift * 2 + read
SPAN = ("lo", "hi", "addr_lo", "addr_hi", "amount", "n")   # per slot: its rows' least and most (addr + off), its
# addresses' least and most, the rows it touches and how many accesses
_NONE = np.array([np.iinfo(np.int64).max, np.iinfo(np.int64).min] * 2 + [0, 0], np.int64)   # a slot without any


def _room(a: np.ndarray, n: int) -> np.ndarray:
    """``a`` with at least ``n`` rows (twice as many as it needs, so that appends cost amortized O(1))."""
    if len(a) >= n:
        return a
    out = np.zeros((2 * n, *a.shape[1:]), a.dtype)
    out[:len(a)] = a
    return out


class ClassTable:
    """Classes by their key (context, part, key code): each one's spec (a row of ``spec``: specs.Specs, what
    the closed forms read) and what makes its piece (its words, made when first asked for: most classes are
    only tallied), and once tallied (``known``) its sums (a row of ``sums``) and its accesses (``length``
    columns of chunk ``chunk`` from ``start``). A chunk is one pass's accesses as the pass made them: copying
    them into larger arrays costs more (fresh memory for the copy) than gathering from a chunk per pass."""

    def __init__(self, make_specs: Callable[[np.ndarray, np.ndarray], np.ndarray], spec_columns: int,
                 rows: int = 0) -> None:
        """``rows``: the classes to make room for at once (zeros, so untouched pages cost nothing): growing the
        arrays as classes come copies them into fresh memory, each page faulted in anew (164 MB in 48 grows
        over 800 neighbours of ResNet-50's 3x3 conv)."""
        self.make_specs = make_specs   # the specs of steps (specs.step_specs) of walks
        self.spec = np.zeros((rows, spec_columns), np.int64)
        self.maker, self.step = np.zeros(rows, np.int64), np.zeros(rows, np.int64)   # each class's maker, first step
        self.sums = np.zeros((rows, len(SUMS)), np.int64)
        self.chunk, self.start, self.length = (np.zeros(rows, np.int64) for _ in range(3))
        self.known = np.zeros(rows, bool)
        self.span = np.zeros((rows, SLOTS, len(SPAN)), np.int64)   # each class's slots (SPAN)
        self.local = threading.local()   # .scratch: a batch's accesses (_accesses), one per thread
        self.n = 0
        self.clear()

    def clear(self) -> None:
        """Forget every class, keeping the arrays: the classes that come next are written over the old ones' rows,
        whose pages are in memory (fresh zeroed pages fault in one by one as rows are first written)."""
        self.known[:self.n] = False
        self.ids: dict[Hashable, dict[int, int]] = {}   # per context and part, a class's key code -> its row
        self.n = 0
        self.pending: list[tuple[np.ndarray, np.ndarray]] = []   # new classes' walks' rows, their steps' tiles
        self.ready = 0   # classes with their spec made
        self.makers: list[Callable[[int], Any]] = []   # a step's piece, one per part of a walk
        self.made: dict[int, Any] = {}
        self.chunks: list[tuple[np.ndarray, ...]] = []   # a pass's accesses: the ACCESS rows, an array each

    def __len__(self) -> int:
        return self.n

    def lookup_many(self, wheres: list[Hashable], part: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The class of each key code, of context and part ``wheres[part]`` (``part`` ascending), numbering the
        new ones after the last (a code twice in one context and part, once); and where in ``codes`` each new
        class first is."""
        ids = np.full(len(codes), -1, np.int64)
        cut, listed = np.searchsorted(part, np.arange(len(wheres) + 1)).tolist(), codes.tolist()
        for n, where in enumerate(wheres):
            known = self.ids.get(where)
            if known:
                ids[cut[n]:cut[n + 1]] = [known.get(c, -1) for c in listed[cut[n]:cut[n + 1]]]
        miss = np.flatnonzero(ids < 0)
        if not len(miss):
            return ids, miss
        names: dict[Hashable, int] = {}   # parts of one context and part share their new classes
        place = np.array([names.setdefault(w, len(names)) for w in wheres], np.int64)
        miss = miss[np.lexsort((codes[miss], place[part[miss]]))]   # stable: a class's first miss first
        place, code = place[part[miss]], codes[miss]
        step = np.ones(len(miss), bool)
        step[1:] = (place[1:] != place[:-1]) | (code[1:] != code[:-1])
        ids[miss] = self.n + np.cumsum(step) - 1
        first = miss[step]
        cut = [*np.flatnonzero(np.diff(place[step], prepend=-1)).tolist(), len(first)]   # a context's new classes
        owner, new, rows = part[first].tolist(), codes[first].tolist(), ids[first].tolist()
        for lo, hi in zip(cut, cut[1:]):
            self.ids.setdefault(wheres[owner[lo]], {}).update(zip(new[lo:hi], rows[lo:hi]))
        self.n += len(first)
        return ids, first

    def extend(self, makers: list[Callable[[int], Any]], maker: np.ndarray, first: np.ndarray, walks: np.ndarray,
               tiles: np.ndarray) -> None:
        """The classes :meth:`lookup_many` just numbered: what makes their pieces (``makers[maker]`` of each one's
        first step, ``first``), and what makes their specs (their walks' rows and those steps' ``tiles``), with
        every pending class's at once (:meth:`specs`)."""
        n = self.n
        self.maker, self.step = (_room(a, n) for a in (self.maker, self.step))
        self.maker[n - len(first):n], self.step[n - len(first):n] = len(self.makers) + maker, first
        self.makers.extend(makers)
        self.pending.append((walks, tiles))

    def specs(self, ids: np.ndarray) -> np.ndarray:
        """The spec rows of classes ``ids``: those of the classes numbered since the last call made first, all
        at once."""
        if self.pending:
            walks, tiles = zip(*self.pending)
            rows = self.make_specs(np.concatenate(walks), np.concatenate(tiles))
            n = self.ready + len(rows)
            self.spec = _room(self.spec, n)
            self.spec[self.ready:n], self.ready, self.pending = rows, n, []
        return self.spec[ids]

    def piece(self, i: int) -> Any:
        """Class ``i``'s piece, made once."""
        got = self.made.get(i)
        if got is None:
            got = self.made[i] = self.makers[int(self.maker[i])](int(self.step[i]))
        return got

    def unknown(self, ids: np.ndarray) -> np.ndarray:
        """Those of ``ids`` not yet tallied."""
        inside, known = ids < len(self.known), np.zeros(len(ids), bool)
        known[inside] = self.known[ids[inside]]
        return ids[~known]

    def record(self, ids: np.ndarray, sums: np.ndarray, access: tuple[np.ndarray, ...], at: np.ndarray) -> None:
        """The tallies of classes ``ids``: their ``sums``, and their ``access`` columns (rows ``ACCESS``),
        class i's from at[i] to at[i + 1]."""
        n = self.n
        self.sums, self.chunk, self.start, self.length, self.known, self.span = (
            _room(a, n) for a in (self.sums, self.chunk, self.start, self.length, self.known, self.span))
        self.chunks.append(access)
        self.sums[ids], self.known[ids], self.chunk[ids] = sums, True, len(self.chunks) - 1
        self.start[ids], self.length[ids] = at[:-1], np.diff(at)
        self.span[ids] = _spans(access, at)

    def _accesses(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The accesses (rows ``ACCESS``, then two spare rows) of classes ``ids``, chunk by chunk, in the
        thread's scratch (overwritten by its next call: fresh memory for a batch's few million accesses cost
        more in page faults than the gathers themselves), and the position in ``ids`` of each one's class. Every
        index is in range, so the gathers clip (np.take's default mode buffers its output for the bounds check)."""
        order = np.argsort(self.chunk[ids], kind="stable")
        length = self.length[ids[order]]
        chunk, at = (np.repeat(x[ids[order]], length) for x in (self.chunk, self.start))
        at += ranks(length)
        scratch = getattr(self.local, "scratch", None)
        if scratch is None or scratch.shape[1] < len(at):
            scratch = self.local.scratch = np.empty((len(ACCESS) + 2, 2 * len(at)), np.int64)
        out = scratch[:, :len(at)]
        bounds = np.searchsorted(chunk, np.arange(len(self.chunks) + 1))
        for c in np.unique(chunk).tolist():
            lo, hi = bounds[c], bounds[c + 1]
            for row, into in zip(self.chunks[c], out):
                np.take(row, at[lo:hi], out=into[lo:hi], mode="clip")
        return out, np.repeat(order, length)

    def bank_rows(self, ids: np.ndarray, counts: np.ndarray, bases: np.ndarray, which: np.ndarray,
                  hw: HardwareConfig) -> tuple[np.ndarray, np.ndarray]:
        """Rows written and read per scratchpad bank by classes ``ids`` of candidates (their counts, rows of
        bases and candidates ``which``), one row per candidate (whole numbers: exact in any order). A class
        whose every slot's rows lie in one bank under its bases (most: a buffer rarely straddles two banks)
        adds each slot's rows there; the others, access by access (:meth:`_access_rows`)."""
        n = int(which.max()) + 1
        cls, slot = np.nonzero(self.span[ids, :, -1] > 0)   # each class's slots with accesses (a few of SLOTS)
        lo, hi, addr_lo, addr_hi, amount = self.span[ids[cls], slot, :-1].T
        base = bases[cls, slot // 2]
        bank = (base + lo) // hw.sp_bank_rows
        one = (base + addr_lo >= 0) & (base + addr_hi <= ROW_MASK) & ((base + hi) // hw.sp_bank_rows == bank)
        whole = np.ones(len(ids), bool)
        whole[cls[~one]] = False
        keep = whole[cls]
        cls, slot, bank, amount = cls[keep], slot[keep], bank[keep], amount[keep]
        if len(cls) and bank.max() >= hw.sp_banks:
            raise ValueError("conv_tallies: a scratchpad row past the last bank")
        at = (which[cls] * 2 + slot % 2) * hw.sp_banks + bank
        rows = np.bincount(at, weights=counts[cls] * amount, minlength=n * 2 * hw.sp_banks)
        if not whole.all():
            rest = ~whole
            rows += self._access_rows(ids[rest], counts[rest], bases[rest], which[rest], n, hw)
        rows = rows.reshape(n, 2, hw.sp_banks)
        return rows[:, 0], rows[:, 1]

    def _access_rows(self, ids: np.ndarray, counts: np.ndarray, bases: np.ndarray, which: np.ndarray, n: int,
                     hw: HardwareConfig) -> np.ndarray:
        """:meth:`bank_rows` access by access, flat (candidate, written or read, bank) of ``n`` candidates. In
        place in the scratch's rows."""
        (addr, off, amount, shift, read, at, bank), cls = self._accesses(ids)
        np.multiply(cls, bases.shape[1], out=at)
        at += shift
        np.take(bases.ravel(), at, out=bank, mode="clip")   # each access's base
        bank += addr
        bank &= ROW_MASK
        bank += off
        bank //= hw.sp_bank_rows
        if len(bank) and bank.max() >= hw.sp_banks:
            raise ValueError("conv_tallies: a scratchpad row past the last bank")
        np.take(which * 2, cls, out=at, mode="clip")
        at += read
        at *= hw.sp_banks
        at += bank
        np.take(counts, cls, out=bank, mode="clip")
        bank *= amount
        return np.bincount(at, weights=bank, minlength=n * 2 * hw.sp_banks)


def _spans(access: tuple[np.ndarray, ...], at: np.ndarray) -> np.ndarray:
    """Per class (its ``access`` columns from at[i] to at[i + 1]) and slot, :data:`SPAN`. A class's accesses of one
    slot mostly lie together (a part's words in order): each stretch of them is reduced at once, then the stretches
    into their slots."""
    addr, off, amount, shift, read = access
    key = np.repeat(np.arange(len(at) - 1), np.diff(at)) * SLOTS + shift * 2 + read
    start = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]])) if len(key) else np.zeros(0, np.int64)
    out = np.tile(_NONE, ((len(at) - 1) * SLOTS, 1))
    for col, (how, x) in enumerate(((np.minimum, addr + off), (np.maximum, addr + off), (np.minimum, addr),
                                    (np.maximum, addr), (np.add, amount))):
        how.at(out[:, col], key[start], how.reduceat(x, start) if len(x) else x)
    np.add.at(out[:, -1], key[start], np.diff(np.append(start, len(key))))
    return out.reshape(len(at) - 1, SLOTS, len(SPAN))
