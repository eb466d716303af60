"""The conv census's classes of steps (census.py), grouped for many walks at once: each walk's parts give the
cells of its grid (steps alike on every tile axis: cells.py) with their codes (a class's key and the
buffers it uses), and one pass over a batch's every walk and part groups them, numbers the new classes and
records what makes them (their first steps' tiles, their pieces' makers). A walk's own grouping is a few
hundred cells, which numpy's per-call cost would dominate: the batch pays it once.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Hashable, NamedTuple

import numpy as np

from .class_table import ClassTable
from .runs import div_mod


class PartSteps(NamedTuple):
    """One part of one walk, before grouping: its cells' codes (a class's key times ``nbuf`` cubed plus its
    input, weight and accumulator buffer in one), steps and first steps; where its classes are numbered (a
    context and part), what makes a class's piece from its first step, the walk's row (specs.walk_row) and its
    steps' loops (``inner``: steps per tile of each axis b, h, w, k, r; ``size``: tiles of each)."""

    name: str
    where: Hashable
    code: np.ndarray
    count: np.ndarray
    first: np.ndarray
    nbuf: int
    maker: Callable[[int], Any]
    walk: tuple
    inner: tuple[int, ...]
    size: tuple[int, ...]


_TABLE_MEMORY = threading.local()   # .seen, .rank: _code_table's, one per thread

# a part's classes: its name, their rows of the class table, counts and input, weight and accumulator buffers
Group = tuple[str, np.ndarray, np.ndarray, np.ndarray]


def group(parts: list[PartSteps], table: ClassTable) -> list[Group]:
    """Each part's classes (in the order of their codes), numbering the new ones in ``table``."""
    rec, counts, step, local = _classes(parts)
    radix = np.array([p.nbuf ** 3 for p in parts], np.int64)[rec]
    key, buf_key = div_mod(local, radix)
    ids, new = table.lookup_many([p.where for p in parts], rec, key)
    if len(new):
        _extend(parts, table, rec[new], step[new])
    bufs = _buffers(buf_key, np.array([p.nbuf for p in parts], np.int64)[rec])
    cut = np.searchsorted(rec, np.arange(len(parts) + 1)).tolist()
    return [(p.name, ids[lo:hi], counts[lo:hi], bufs[lo:hi]) for p, lo, hi in zip(parts, cut, cut[1:])]


def _classes(parts: list[PartSteps]) -> tuple[np.ndarray, ...]:
    """Every part's classes, part by part in the order of their codes: each one's part, steps, first step and
    code. The parts' codes are laid one after another, each part's from the end of the one before, so that one
    count groups them all (in a table of every code, where they are dense enough)."""
    lens = np.array([len(p.code) for p in parts], np.int64)
    code = np.concatenate([p.code for p in parts])
    top = np.zeros(len(parts), np.int64)
    some = lens > 0
    top[some] = np.maximum.reduceat(code, (np.cumsum(lens) - lens)[some]) + 1
    base = np.cumsum(top) - top
    code += np.repeat(base, lens)
    n_codes = int(top.sum())
    if n_codes > 32 * len(code) + (1 << 20):   # too sparse for a table: sort them
        present, cls = np.unique(code, return_inverse=True)
    else:   # a table of every code, its rank written only where a code is (a batch's span a few times 2**20)
        seen, rank = _code_table(n_codes)
        seen[code] = True
        present = np.flatnonzero(seen)
        rank[present] = np.arange(len(present))
        cls = rank[code]
        seen[present] = False   # clean for the next batch
    counts = np.bincount(cls, np.concatenate([p.count for p in parts]), len(present)).astype(np.int64)   # exact
    first = np.full(len(present), np.iinfo(np.int64).max)
    np.minimum.at(first, cls, np.concatenate([p.first for p in parts]))
    rec = np.searchsorted(base + top, present, side="right")
    return rec, counts, first, present - base[rec]


def _code_table(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Whether each of ``n`` codes is present (all False) and their ranks, kept per thread between batches: the
    table spans megabytes, and fresh memory faults in page by page as a batch's codes are written (a third of the
    grouping's time, measured on ResNet-50's 3x3 conv)."""
    seen = getattr(_TABLE_MEMORY, "seen", None)
    if seen is None or len(seen) < n:
        _TABLE_MEMORY.seen, _TABLE_MEMORY.rank = np.zeros(2 * n, bool), np.empty(2 * n, np.int32)
    return _TABLE_MEMORY.seen[:n], _TABLE_MEMORY.rank[:n]


def _extend(parts: list[PartSteps], table: ClassTable, rec: np.ndarray, step: np.ndarray) -> None:
    """Record the new classes (their parts ``rec``, first steps ``step``): their makers, walks and tiles."""
    inner, size = (np.array([getattr(p, x) for p in parts], np.int64)[rec] for x in ("inner", "size"))
    tiles = div_mod(step[:, None] // inner, size)[1]
    walks = np.array([p.walk for p in parts], np.int64)[rec]
    table.extend([p.maker for p in parts], rec, step, walks, tiles)


def _buffers(buf_key: np.ndarray, nbuf: np.ndarray) -> np.ndarray:
    """The input, weight and accumulator buffer (columns) of each class's ``buf_key`` (the three in one)."""
    rest, acc = div_mod(buf_key, nbuf)
    inp, w = div_mod(rest, nbuf)
    return np.stack([inp, w, acc], axis=1)
