"""A lowering's instruction census without rendering: each distinct instruction word and how many times
the stream holds it.

A kind's census (``toolkit/<kind>/census.py``) walks the same tiles as its lowering, but groups the
steps into classes whose instructions are alike (the same block sizes, the same buffers of each double
buffer), builds one class's words once, and counts its steps. It mirrors what the kind's template
emits for a step, but not the order: the tuner's features (``tuner/features.py``) are sums over the
words, so a census gives them exactly (tests/test_census.py checks it against the rendered stream).
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from isa import ACC_BIT, ACCUM_BIT, FULL_BIT, ConfigEx, ConfigLd, ConfigSt, Fence, encode_all
from isa.loop_words import OPERAND
from isa.opcodes import Funct

_ADDR, _COLS, _ROWS = OPERAND


class Census(NamedTuple):
    """Instruction words (funct, rs1, rs2), how many times each occurs, and at each mvin the block
    stride and shrink flag of its load state's config_ld (0 elsewhere)."""

    words: np.ndarray    # (n, 3) uint64
    count: np.ndarray    # (n,) int64
    stride: np.ndarray   # (n,) int64
    shrink: np.ndarray   # (n,) int64


def operand(addr: np.ndarray | int, rows: np.ndarray | int, cols: np.ndarray | int) -> np.ndarray:
    """Operand words (isa/loop_words.py's OPERAND layout) of local addresses, rows and columns."""
    return ((np.asarray(rows, dtype=np.uint64) << np.uint64(_ROWS.lo))
            | (np.asarray(cols, dtype=np.uint64) << np.uint64(_COLS.lo))
            | (np.asarray(addr, dtype=np.uint64) << np.uint64(_ADDR.lo)))


def acc(row: np.ndarray | int, accumulate: np.ndarray | bool = False, full: bool = False) -> np.ndarray:
    """Accumulator addresses of rows (isa.acc_addr over arrays)."""
    flags = ACC_BIT | (FULL_BIT if full else 0)
    return np.asarray(row, dtype=np.int64) | flags | np.where(accumulate, ACCUM_BIT, 0)


class Words:
    """Words of one class of steps, gathered from arrays, then counted."""

    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, ...]] = []

    def add(self, funct: int | np.ndarray, rs1: np.ndarray, rs2: np.ndarray, stride: int = 0) -> None:
        """Words of one shape (arrays broadcast together); ``stride``: the mvins' config_ld block stride."""
        rs1, rs2 = np.broadcast_arrays(np.asarray(rs1, dtype=np.uint64), np.asarray(rs2, dtype=np.uint64))
        n = rs1.size
        if n:
            self.parts.append((np.broadcast_to(np.asarray(funct, dtype=np.uint64), rs1.shape).ravel(),
                               rs1.ravel(), rs2.ravel(), np.full(n, stride, dtype=np.int64)))

    def census(self, count: int) -> Census:
        if not self.parts:
            return empty()
        funct, rs1, rs2, stride = (np.concatenate(c) for c in zip(*self.parts))
        words = np.stack([funct, rs1, rs2], axis=1)
        return Census(words, np.full(len(words), count, dtype=np.int64), stride, np.zeros(len(words), np.int64))


def computes(c: Census) -> int:
    """How many computes (preloaded or accumulated) the census counts."""
    funct = c.words[:, 0]
    return int(c.count[(funct == Funct.COMPUTE_PRELOADED) | (funct == Funct.COMPUTE_ACCUMULATED)].sum())


def empty() -> Census:
    return Census(np.zeros((0, 3), np.uint64), *(np.zeros(0, np.int64) for _ in range(3)))


def join(parts: Sequence[Census]) -> Census:
    return Census(*(np.concatenate(c) for c in zip(*parts))) if parts else empty()


def frame(config_ld: int, *, config_ex: int = 1, config_st: int = 1, fences: int = 1) -> Census:
    """Config words and fences, each once: a stream opens with config_ex, its config_ld and config_st and
    closes with a fence. The features read only their kinds (each mvin's config_ld stride is its own, in
    the census), so their fields are the defaults."""
    ins = [*[ConfigEx()] * config_ex, *[ConfigLd()] * config_ld, *[ConfigSt()] * config_st, *[Fence()] * fences]
    words = encode_all(ins)
    zeros = np.zeros(len(words), np.int64)
    return Census(words, np.ones(len(words), np.int64), zeros, zeros)


def classes(keys: Sequence[np.ndarray], active: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Group steps by their key columns (small non-negative ints): the first step of each class and how
    many steps it has, over the ``active`` steps only; classes in the order of their keys (the first key
    most significant)."""
    idx = None if active is None else np.flatnonzero(active)   # None: every step, no gather
    code, n_codes = 0, 1
    for x in keys:
        x = np.asarray(x, np.int64) if idx is None else np.asarray(x, np.int64)[idx]
        size = int(x.max(initial=0)) + 1
        code, n_codes = code * size + x, n_codes * size
    if n_codes > 4 * len(code) + 4096:   # codes too sparse to count in a table
        _, first, counts = np.unique(code, return_index=True, return_counts=True)
    else:   # np.unique's classes in its order, without its sort: a table of every code
        counts, first = np.bincount(code, minlength=n_codes), np.full(n_codes, len(code))
        np.minimum.at(first, code, np.arange(len(code)))
        present = np.flatnonzero(counts)
        first, counts = first[present], counts[present]
    return (first if idx is None else idx[first]), counts
