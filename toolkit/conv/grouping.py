"""The conv census's classes of steps (census.py), grouped for many walks at once: each walk's parts give their
steps' codes (a class's key and the buffers it uses), and one pass over a batch's every walk and part groups
them, numbers the new classes and records what makes them (their steps' tiles, their pieces' makers). A walk's
own grouping is a few thousand steps, which numpy's per-call cost dominates: the batch pays it once.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Hashable, NamedTuple

import numpy as np

from ..census import classes
from .class_table import ClassTable
from .runs import div_mod


class PartSteps(NamedTuple):
    """One part of one walk, before grouping: its grouped steps' codes (a class's key times ``nbuf`` cubed
    plus its input, weight and accumulator buffer in one), which steps those are (step i * scale + offset, or
    ``index``'s where a mask picked them), where its classes are numbered (a context and part), what makes a
    class's piece from its first step, the walk's row (specs.walk_row) and its steps' loops (``inner``: steps
    per tile of each axis b, h, w, k, r; ``size``: tiles of each)."""

    name: str
    where: Hashable
    code: np.ndarray
    nbuf: int
    scale: int
    offset: int
    index: np.ndarray | None
    maker: Callable[[int], Any]
    walk: tuple
    inner: tuple[int, ...]
    size: tuple[int, ...]


# a part's classes: its name, their rows of the class table, counts and input, weight and accumulator buffers
Group = tuple[str, np.ndarray, np.ndarray, np.ndarray]


def loops(shape: tuple[int, ...], order: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Steps per tile and tiles of each axis (b, h, w, k, r) of a walk of tiles ``shape`` nested in ``order``
    (tiles.step_order: the reduction innermost)."""
    nest = (*order, 4)
    inner = [0] * 5
    for n, axis in enumerate(nest):
        inner[axis] = math.prod(shape[x] for x in nest[n + 1:])
    return tuple(inner), tuple(shape)


def group(parts: list[PartSteps], table: ClassTable) -> list[Group]:
    """Each part's classes (in the order of their codes), numbering the new ones in ``table``."""
    lens = np.array([len(p.code) for p in parts], np.int64)
    rec, pos, counts, local = _classes(parts, lens)
    radix = np.array([p.nbuf ** 3 for p in parts], np.int64)[rec]
    key, buf_key = div_mod(local, radix)
    step = _steps(parts, rec, pos)
    ids, new = table.lookup_many([p.where for p in parts], rec, key)
    if len(new):
        _extend(parts, table, rec[new], step[new])
    bufs = _buffers(buf_key, np.array([p.nbuf for p in parts], np.int64)[rec])
    cut = np.searchsorted(rec, np.arange(len(parts) + 1)).tolist()
    return [(p.name, ids[lo:hi], counts[lo:hi], bufs[lo:hi]) for p, lo, hi in zip(parts, cut, cut[1:])]


def _classes(parts: list[PartSteps], lens: np.ndarray) -> tuple[np.ndarray, ...]:
    """Every part's classes, part by part in the order of their codes: each one's part, the position of its
    first step among its part's grouped ones, its count and its code. The parts' codes are laid one after
    another, each part's from the end of the one before, so that one count groups them all."""
    code = np.concatenate([p.code for p in parts])
    start = np.cumsum(lens) - lens
    top = np.zeros(len(parts), np.int64)
    some = lens > 0
    top[some] = np.maximum.reduceat(code, start[some]) + 1
    base = np.cumsum(top) - top
    code += np.repeat(base, lens)
    first, counts = classes([code])
    rec = np.searchsorted(base + top, code[first], side="right")
    return rec, first - start[rec], counts, code[first] - base[rec]


def _steps(parts: list[PartSteps], rec: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """The step of each class's first (its part ``rec``, its position ``pos`` among the part's grouped steps)."""
    scale, offset = (np.array([getattr(p, x) for p in parts], np.int64)[rec] for x in ("scale", "offset"))
    step = pos * scale + offset
    masked = [n for n, p in enumerate(parts) if p.index is not None]
    if masked:
        index = np.concatenate([parts[n].index for n in masked])
        at = np.cumsum([0, *(len(parts[n].index) for n in masked[:-1])])
        where = np.zeros(len(parts), np.int64)
        where[masked] = at
        picked = np.isin(rec, masked)
        step[picked] = index[where[rec[picked]] + pos[picked]]
    return step


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
