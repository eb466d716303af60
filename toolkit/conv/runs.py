"""Runs of pixels: the stretches of a tile's pixels that one mvin, mvout or compute covers."""
from __future__ import annotations

from typing import Iterable, NamedTuple

import numpy as np


def runs(valid: np.ndarray, steps: Iterable[tuple[np.ndarray, int]], limit: int) -> list[tuple[int, int]]:
    """(start, length) of the runs of valid elements whose ``steps`` arrays advance by a fixed step,
    split to at most ``limit`` long."""
    cont = valid[:-1] & valid[1:]
    for values, step in steps:
        cont &= np.diff(values) == step
    starts, length = _split_runs(valid[None], cont[None], limit)
    return list(zip(starts.tolist(), length.tolist()))


def _split_runs(valid: np.ndarray, cont: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """The runs of each row of ``valid`` (``cont``: whether each element runs on into the next, a column
    fewer), split to at most ``limit`` long: their flat starts (row * columns + column) and lengths, in
    order."""
    edge = np.ones((len(valid), 1), bool)
    starts = np.flatnonzero(valid & np.hstack([edge, ~cont]))
    breaks = np.flatnonzero(np.hstack([~cont, edge]))           # every row's last element is one
    length = breaks[np.searchsorted(breaks, starts)] - starts + 1
    pieces = -(-length // limit)
    offset = ranks(pieces) * limit
    return np.repeat(starts, pieces) + offset, np.minimum(limit, np.repeat(length, pieces) - offset)


def div_mod(x: np.ndarray, m: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
    """x // m and x % m of non-negative ints, the remainder as x - (x // m) * m: numpy's remainder is a generic
    loop that costs several times a divide's (a conv census's steps and grids take many)."""
    q = x // m
    return q, x - q * m


def ranks(counts: np.ndarray) -> np.ndarray:
    """For groups of ``counts`` elements laid one after another, each element's index within its group."""
    return np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)


class TapRuns(NamedTuple):
    """Runs of pixels, grouped by tap in tap order: each one's tap, first pixel and length."""

    tap: np.ndarray
    start: np.ndarray
    rows: np.ndarray


def flat_rows(lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows of ``lengths`` elements laid one after another, none padded: each element's row and index within
    it, and where each row starts."""
    return np.repeat(np.arange(len(lengths)), lengths), ranks(lengths), np.cumsum(lengths) - lengths


def row_runs(valid: np.ndarray, cont: np.ndarray, row: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_split_runs` of rows laid flat (:func:`flat_rows`, ``row`` each element's): no run goes on from one
    row into the next. Their flat starts and lengths, in order."""
    return _split_runs(valid[None], (cont & (row[:-1] == row[1:]))[None], limit)


def tap_runs(valid: np.ndarray, a_idx: np.ndarray, limit: int) -> TapRuns:
    """:func:`runs` of every tap at once (a row of ``valid`` and of ``a_idx``, the input row of each
    pixel): its valid pixels whose input rows advance by one, at most ``limit`` long, short runs first
    (a stable sort: the next weight block loads while the tap's last compute streams, so a tap that
    ends on a full run hides that load)."""
    taps, npix = valid.shape
    return flat_tap_runs(valid.ravel(), a_idx.ravel(), np.repeat(np.arange(taps), npix), np.arange(taps) * npix,
                         limit)


def flat_tap_runs(valid: np.ndarray, a_idx: np.ndarray, row: np.ndarray, start: np.ndarray, limit: int) -> TapRuns:
    """:func:`tap_runs` of taps laid flat (:func:`flat_rows`: each pixel's tap ``row``, where each tap starts)."""
    flat, rows = row_runs(valid, valid[:-1] & valid[1:] & (np.diff(a_idx) == 1), row, limit)
    tap = row[flat]
    order = np.lexsort((rows, tap))
    return TapRuns(tap[order], flat[order] - start[tap[order]], rows[order])
