"""The cells of many conv tile walks at once (census.py): a walk's steps grouped into cells, the product of each
axis's groups of alike tiles (:func:`tile_groups`; the reduction's, its channel tiles' within each tap tile:
:func:`reduction_groups`), every walk's cells laid
flat one walk after another, with the digits a class's key reads of each cell. A walk's own grid is a few hundred
cells, and its arithmetic a few dozen numpy calls whose fixed cost dominates (a quarter of a millisecond a walk,
whatever its size, measured on ResNet-50's 3x3 conv): a batch's walks pay it once.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from .runs import div_mod, ranks
from .tiles import _ConvWalk, axis_layout, loops, reloads, step_loads, tile_ranges

Digit = tuple[np.ndarray, "np.ndarray | int | None"]   # a key's digit (census._code): values, their radix


@functools.lru_cache(maxsize=4096)
def axis_classes(extent: int, tile: int, kernel: int, ktile: int, stride: int, pad: int, inside: int) -> np.ndarray:
    """[axis tile, kernel tile] -> class: alike when the tile's length, the kernel tile and which of the
    input slots it reads are inside the input (not padding) are."""
    ids: dict[tuple, int] = {}
    out = np.zeros((len(tile_ranges(extent, tile)), len(tile_ranges(kernel, ktile))), dtype=np.int64)
    for a, o in enumerate(tile_ranges(extent, tile)):
        for b, k in enumerate(tile_ranges(kernel, ktile)):
            index = axis_layout(o.start, len(o), k.start, len(k), stride, pad)[1]
            key = (len(o), b, ((index >= 0) & (index < inside)).tobytes())
            out[a, b] = ids.setdefault(key, len(ids))
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=4096)
def tile_groups(n: int, nbuf: int, axis: tuple = ()) -> tuple[np.ndarray, np.ndarray]:
    """An axis's ``n`` tiles grouped by what a step's class, loads and buffers read of its tile there: whether it
    is the first and whether the last, its index mod ``nbuf`` (a buffer is the parity of a count of loads, and
    each axis adds its tile times a fixed step) and (``axis``: :func:`axis_classes`'s arguments) its classes
    under each kernel tile. Steps whose tiles are alike on every axis are of one class (and their first is the one
    of each axis's first tiles): a walk's classes are found over a grid of these, not its every step. Each group's
    first tile and how many it has."""
    rows = axis_classes(*axis).tolist() if axis else [[]] * n
    groups: dict[tuple, list[int]] = {}
    for i, row in enumerate(rows):
        groups.setdefault((i == 0, i == n - 1, i % nbuf, *row), []).append(i)
    firsts, sizes = (np.array([f(g) for g in groups.values()], np.int64) for f in (lambda g: g[0], len))
    for a in (firsts, sizes):
        a.setflags(write=False)
    return firsts, sizes


@functools.lru_cache(maxsize=4096)
def reduction_groups(taps: int, nc: int, nbuf: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`tile_groups` of the reduction's steps (each tap tile's ``nc`` channel tiles): a step's class reads of
    its channel tile only whether it is the first and the last, and its buffers the step's parity (with more than
    one step the input and weights load every step, tiles.reloads, and the reduction is innermost), so a tap's
    channel tiles group as an axis's tiles do. Each group's first step and how many it has."""
    firsts, sizes = tile_groups(nc, nbuf)
    out = (np.arange(taps)[:, None] * nc + firsts).ravel(), np.tile(sizes, taps)
    for a in out:
        a.setflags(write=False)
    return out


class WalkGrid(NamedTuple):
    """What a walk's cells read of it: its tiles per axis (b, h, w, k, r) and the extents they tile, its steps
    per tile of each axis (tiles.loops), kernel column and channel tiles, buffers, steps from
    one load of the input, weights and accumulators to the next, its axes' groups (:func:`tile_groups`, b to k;
    :func:`reduction_groups`) and its row and column tiles' classes (:func:`axis_classes`)."""

    shape: tuple[int, ...]
    extents: tuple[tuple[int, int], ...]
    inner: tuple[int, ...]
    nkw: int
    nc: int
    nbuf: int
    every: tuple[int, int, int]
    groups: tuple[tuple[np.ndarray, np.ndarray], ...]
    rows: np.ndarray
    cols: np.ndarray


def walk_grid(walk: _ConvWalk) -> WalkGrid:
    """The walk's :class:`WalkGrid`. A depthwise conv's reduction is its taps alone (the channel tile is the
    output's): its input changes with the channel tile."""
    op, s, dw, geo, t, d = walk.op, walk.s, walk.dw, walk.geo, walk.t, walk.d
    extents = ((op.batch, t.b), (op.out_h, t.oh), (op.out_w, t.ow), (-(-walk.out_c // d), t.k))
    nkw, nc = -(-geo.kernel[1] // t.kw), 1 if dw else -(-(-(-walk.in_c // d)) // t.c)   # tiles.tile_ranges' counts
    # the reduction's length (a depthwise conv's: each channel tile its own, of the same length)
    shape = (*(-(-n // tile) for n, tile in extents), -(-geo.kernel[0] // t.kh) * nkw * nc)
    order = tuple(s.ORDER.index(x) for x in s.loop_order)
    rows, cols = axes(walk)
    groups = (tile_groups(shape[0], s.nbuf), tile_groups(shape[1], s.nbuf, rows),
              tile_groups(shape[2], s.nbuf, cols), tile_groups(shape[3], s.nbuf),
              reduction_groups(shape[4] // nc, nc, s.nbuf))
    return WalkGrid(shape, extents, loops(shape, order), nkw, nc, s.nbuf,
                    (*reloads(shape, order, dw), shape[4]), groups, axis_classes(*rows), axis_classes(*cols))


def axes(walk: _ConvWalk) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """:func:`axis_classes`'s arguments for the walk's rows and its columns."""
    op, geo, t = walk.op, walk.geo, walk.t
    (sh, sw), (ph, pw) = geo.stride, geo.padding
    return ((op.out_h, t.oh, geo.kernel[0], t.kh, sh, ph, geo.in_h),
            (op.out_w, t.ow, geo.kernel[1], t.kw, sw, pw, geo.in_w))


class Cells(NamedTuple):
    """Every walk's cells, laid flat walk after walk (each walk's in its grid's order: axes b, h, w, k, r, the
    reduction fastest): each one's walk, first step and steps, buffers (``nbuf`` of each; its input, weight and
    accumulator buffer in one, ``buf_key``), whether its first step loads the input and the weights, its reduction
    step, and the digits of the keys (census._code) it reads: whether its output tile along each axis b, h, w, k
    is the last, its row and column tiles' classes (of their kernel tiles), whether its reduction step is the
    first, its tap tile and whether its channel tile is the last."""

    walk: np.ndarray
    first: np.ndarray
    count: np.ndarray
    nbuf: np.ndarray
    buf_key: np.ndarray
    new_in: np.ndarray
    new_w: np.ndarray
    r: np.ndarray
    last: tuple[Digit, ...]
    hcls: Digit
    wcls: Digit
    first_r: Digit
    taps: Digit
    last_c: Digit


def cells(grids: list[WalkGrid]) -> Cells:
    """The cells of the walks of ``grids``."""
    n = np.array([[len(x[0]) for x in g.groups] for g in grids], np.int64)   # groups per axis
    walk = np.repeat(np.arange(len(grids)), n.prod(axis=1))
    index = [ranks(n.prod(axis=1))]   # each cell's group along each axis, split off from the reduction's out
    for axis in (4, 3, 2, 1):
        index[0:1] = div_mod(index[0], n[walk, axis])
    at, size = [], []
    for axis in range(5):
        off = (np.cumsum(n[:, axis]) - n[:, axis])[walk] + index[axis]
        at.append(np.concatenate([g.groups[axis][0] for g in grids])[off])
        size.append(np.concatenate([g.groups[axis][1] for g in grids])[off])
    r = at[4]
    # each cell's walk's steps per tile and tiles of each axis, buffers, steps between loads (3), channel and
    # kernel column tiles
    ints = np.array([(*g.inner, *g.shape, g.nbuf, *g.every, g.nc, g.nkw) for g in grids], np.int64)[walk]
    inner, shape, nbuf, nc, nkw = ints[:, :5], ints[:, 5:10], ints[:, 10], ints[:, 14], ints[:, 15]
    first = sum(x * inner[:, i] for i, x in enumerate(at))   # each cell's first step: its tiles' firsts
    new_in, new_w, bufs = step_loads(first, (ints[:, 11], ints[:, 12], ints[:, 13]), nbuf)
    tap, channel = div_mod(r, nc)
    kh, kw = div_mod(tap, nkw)
    buf_key = (bufs[0] * nbuf + bufs[1]) * nbuf + bufs[2]
    return Cells(walk, first, size[0] * size[1] * size[2] * size[3] * size[4], nbuf, buf_key, new_in, new_w, r,
                 tuple((x == shape[:, i] - 1, 2) for i, x in enumerate(at[:4])),
                 _classes(grids, "rows", walk, at[1], kh), _classes(grids, "cols", walk, at[2], kw), (r == 0, 2),
                 (tap, shape[:, 4] // nc), (channel == nc - 1, 2))


def _classes(grids: list[WalkGrid], which: str, walk: np.ndarray, tile: np.ndarray, ktile: np.ndarray) -> Digit:
    """Each cell's row (or column: ``which``) tile's class under its kernel tile, and the radix of its walk's."""
    tables = [getattr(g, which) for g in grids]
    width = np.array([t.shape[1] for t in tables], np.int64)
    start = np.cumsum([0, *(t.size for t in tables[:-1])])
    flat = np.concatenate([t.ravel() for t in tables])
    return flat[start[walk] + tile * width[walk] + ktile], np.array([t.max() + 1 for t in tables], np.int64)[walk]
