"""Conv census classes as arrays: each class's first step (its output tile, reduction tile and its walk's
planes) a row of ints, so that the closed forms (closed.py) read every new class of a pass with an index,
not a Python object per class.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .runs import ranks
from .tiles import _ConvWalk, axis_layout


class Specs(NamedTuple):
    """Per class, its first step: the output tile's images, rows, columns and output channel blocks (first,
    how many), the reduction tile's kernel rows, kernel columns and input channel blocks (a depthwise conv's
    are its output tile's), whether the step is its tile's first and last, and its walk's planes (rows of one
    channel block of the input, weights and accumulators) and mvin width in blocks."""

    b0: np.ndarray
    nb: np.ndarray
    h0: np.ndarray
    nh: np.ndarray
    w0: np.ndarray
    nw: np.ndarray
    k0: np.ndarray
    nk: np.ndarray
    kh0: np.ndarray
    nkh: np.ndarray
    kw0: np.ndarray
    nkw: np.ndarray
    c0: np.ndarray
    nc: np.ndarray
    first: np.ndarray
    last: np.ndarray
    in_plane: np.ndarray
    w_plane: np.ndarray
    acc_plane: np.ndarray
    mb: np.ndarray

    @property
    def npix(self) -> np.ndarray:
        return self.nb * self.nh * self.nw


def walk_row(walk: _ConvWalk) -> tuple[int, ...]:
    """What :func:`step_specs` reads of a walk: its seven tiles (tiles.Tiles), the extents they tile (images,
    rows, columns, output channel blocks, kernel rows, kernel columns, input channel blocks), whether depthwise,
    its planes and its mvin width."""
    op, t, geo, d, plan = walk.op, walk.t, walk.geo, walk.d, walk.plan
    return (*t, op.batch, op.out_h, op.out_w, -(-walk.out_c // d), *geo.kernel, -(-walk.in_c // d), int(walk.dw),
            plan.in_plane, plan.w_plane, plan.acc_plane, walk.s.mvin_blocks)


def step_specs(walks: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """The rows (columns :class:`Specs`) of steps of walks, each step's walk a row of ``walks`` (:func:`walk_row`)
    and its batch, row, column, output channel and reduction tile a row of ``steps`` (tiles.loops): each
    axis tile i of ``tile`` over ``extent`` starts at i * tile and holds min(tile, extent - start)
    (tiles.tile_ranges); reduction tile r is a kernel row tile, kernel column tile, then channel tile (a
    depthwise conv's channel tile is its output's)."""
    tb, toh, tow, tk, tkh, tkw, tc, batch, out_h, out_w, kb, kh, kw, cb, dw, in_plane, w_plane, acc_plane, mb = walks.T
    b, h, w, k, r = steps.T
    nkw = -(-kw // tkw)
    nc = np.where(dw == 1, 1, -(-cb // tc))
    nr = -(-kh // tkh) * nkw * nc

    def span(i: np.ndarray, tile: np.ndarray, extent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        start = i * tile
        return start, np.minimum(tile, extent - start)

    k0, nk = span(k, tk, kb)
    c0, ncb = span(r % nc, tc, cb)
    return np.stack([*span(b, tb, batch), *span(h, toh, out_h), *span(w, tow, out_w), k0, nk,
                     *span(r // (nkw * nc), tkh, kh), *span((r // nc) % nkw, tkw, kw), np.where(dw == 1, k0, c0),
                     np.where(dw == 1, nk, ncb), r == 0, r == nr - 1, in_plane, w_plane, acc_plane, mb], axis=1)


class Layouts(NamedTuple):
    """Per class, the phase layout (tiles.axis_layout) of its input tile along one axis: its slots, where its
    taps' offsets start in ``offset`` and where its slots' input indices start in ``index`` (classes of one
    layout share them)."""

    size: np.ndarray
    offset_at: np.ndarray
    offset: np.ndarray
    index_at: np.ndarray
    index: np.ndarray


def layouts(o0: np.ndarray, n: np.ndarray, k0: np.ndarray, nk: np.ndarray, stride: int, pad: int) -> Layouts:
    """:class:`Layouts` of classes' output tiles (first, length) under their kernel tiles along one axis:
    each distinct one laid out once."""
    key = np.stack([o0, n, k0, nk], axis=1)
    code = ((o0 * (n.max() + 1) + n) * (k0.max() + 1) + k0) * (nk.max() + 1) + nk
    _, first, kind = np.unique(code, return_index=True, return_inverse=True)
    made = [axis_layout(*row, stride, pad) for row in key[first].tolist()]
    offsets = [np.array(offset, np.int64) for offset, _ in made]
    size = np.array([len(index) for _, index in made], np.int64)
    at = np.cumsum([0, *map(len, offsets[:-1])])
    return Layouts(size[kind], at[kind], np.concatenate(offsets), (np.cumsum(size) - size)[kind],
                   np.concatenate([index for _, index in made]).astype(np.int64))


def groups(start: np.ndarray, n: np.ndarray, mb: np.ndarray, total: int, d: int) -> tuple[np.ndarray, ...]:
    """Each class's mvin_blocks-wide channel groups (tiles._ConvWalk._groups) of its ``n`` channel blocks from
    ``start`` (of ``total`` channels), ``mb`` blocks wide: their first blocks, indices relative to ``start``
    and columns, and how many each class has."""
    ng = -(-n // mb)
    cls = np.repeat(np.arange(len(n)), ng)
    rel = ranks(ng) * mb[cls]
    g = start[cls] + rel
    cols = np.minimum(total, np.minimum(start[cls] + n[cls], g + mb[cls]) * d) - g * d
    return g, rel, cols, ng
