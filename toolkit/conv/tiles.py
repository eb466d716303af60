"""The conv tile walk: residency, and the runs each tile loads, computes and stores."""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Iterator, NamedTuple

import numpy as np

from isa import HardwareConfig

from .ops import Conv2d, DepthwiseConv2d
from .runs import div_mod, ranks, runs, tap_runs
from .schedule import ConvPlan, ConvSchedule, DepthwiseSchedule


class Load(NamedTuple):
    dram: int
    local: int
    rows: int
    cols: int


class Compute(NamedTuple):
    a: int
    c: int
    rows: int
    accumulate: bool


class Tap(NamedTuple):
    """One weight block in the array and the computes that use it."""

    b: int
    b_rows: int
    b_cols: int
    computes: list


class Fill(NamedTuple):
    """Local rows zeroed by a garbage compute (A = 0)."""

    local: int
    rows: int
    cols: int


class Diagonal(NamedTuple):
    """A depthwise weight block: row i gets weights c0..c0+i from ``dram``, then columns < i zeroed."""

    local: int
    size: int
    dram: int


class StepComputes(NamedTuple):
    """A step's computes in the walk's order, as arrays: each one's weight block (local row, rows,
    columns), whether it is the block's first (a :class:`Tap` starts there), and its input row,
    accumulator row, rows and whether it accumulates."""

    b: np.ndarray
    b_rows: np.ndarray
    b_cols: np.ndarray
    first: np.ndarray
    a: np.ndarray
    c: np.ndarray
    rows: np.ndarray
    accumulate: np.ndarray


@dataclass
class ConvTile:
    in_loads: list
    w_loads: list
    diagonals: list
    bias_loads: list
    fills: list
    taps: list
    stores: list


@functools.lru_cache(maxsize=65536)
def axis_layout(o0: int, n: int, k0: int, nk: int, stride: int, padding: int) -> tuple[tuple[int, ...], np.ndarray]:
    """The phase layout of one spatial axis of an input tile.

    Output pixels o0..o0+n-1 under taps k0..k0+nk-1 read input o * stride + k - padding.
    Returns ``offset`` (tap k reads slot (o - o0) + offset[k - k0]) and the input
    index held by each slot; slots group by phase, consecutive within one. Cached (the walk asks it
    per step, the census per class): both read-only.
    """
    span: dict[int, tuple[int, int]] = {}
    for k in range(k0, k0 + nk):
        r, q = (k - padding) % stride, (k - padding) // stride
        lo, hi = span.get(r, (q, q))
        span[r] = (min(lo, q), max(hi, q))
    base, index, slots = {}, [], 0
    for r in sorted(span):
        lo, hi = span[r]
        base[r], slots = slots, slots + n + hi - lo
        index.append((o0 + lo + np.arange(n + hi - lo)) * stride + r)
    offset = tuple(base[(k - padding) % stride] + (k - padding) // stride - span[(k - padding) % stride][0]
                   for k in range(k0, k0 + nk))
    held = np.concatenate(index)
    held.setflags(write=False)
    return offset, held


def tile_ranges(extent: int, tile: int) -> list[range]:
    return [range(s, min(extent, s + tile)) for s in range(0, extent, tile)]


def loops(shape: tuple[int, ...], order: tuple[int, ...]) -> tuple[int, ...]:
    """Steps per tile of each axis (b, h, w, k, r) of the walk of tiles ``shape`` (batch, row, column, channel and
    reduction tiles), the output tile loops nested in ``order`` (outermost first), the reduction innermost: a
    step's tile of each axis is a digit of the step's number."""
    nest = (*order, 4)
    inner = [0] * 5
    for n, axis in enumerate(nest):
        inner[axis] = math.prod(shape[x] for x in nest[n + 1:])
    return tuple(inner)


def reloads(shape: tuple[int, ...], order: tuple[int, ...], depthwise: bool) -> tuple[int, int]:
    """Steps from one load of the input, and of the weights, to the next, in the walk of :func:`loops`: a loop's
    digit changes every (its steps per tile) steps, if it counts more than one tile, and the first of several such
    loops to change is the innermost. A depthwise conv's input changes with its channel tile."""
    inner = loops(shape, order)
    every_in, every_w = (min([inner[x] for x in held if shape[x] > 1], default=math.prod(shape))
                         for held in ((0, 1, 2, 4, *((3,) if depthwise else ())), (3, 4)))
    return every_in, every_w


def step_loads(step: np.ndarray, every: tuple[int, int, int], nbuf: int
               ) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Whether each of ``step`` loads its input and its weights, and which of ``nbuf`` buffers of the input,
    weights and accumulators it uses (``every``: steps from one load of each to the next)."""
    loads = [step // n for n in every]   # each operand's loads so far, less one
    return loads[0] * every[0] == step, loads[1] * every[1] == step, tuple(div_mod(n, nbuf)[1] for n in loads)


def first_loads(shape: tuple[int, ...], order: tuple[int, ...], every: int) -> np.ndarray:
    """Over the tile axes (b, h, w, k, r), broadcast: whether a step loads an operand reloaded every ``every``
    steps (:func:`reloads`), :func:`step_loads`'s before the steps are put in order: where the tiles of the loops
    that change faster (fewer steps per tile) are their first."""
    inner, out = loops(shape, order), np.ones((1,) * 5, bool)
    for axis, n in enumerate(shape):
        if inner[axis] < every:
            out = out & (np.arange(n) == 0).reshape((-1,) + (1,) * (4 - axis))
    return out


def pixel_grid(*extents: int) -> list[np.ndarray]:
    """Each point's index along each axis of a grid of ``extents``, flattened in row-major order."""
    return list(np.indices(extents).reshape(len(extents), -1))


class _Resident:
    """The block a double-buffered region holds: a new key goes into the next buffer."""

    def __init__(self) -> None:
        self.key: tuple | None = None
        self.loads = 0

    def hold(self, key: tuple) -> bool:
        """Hold ``key``; True when it was not held already, so that it has to be loaded."""
        if self.key == key:
            return False
        self.key, self.loads = key, self.loads + 1
        return True


class _Output(NamedTuple):
    """One output tile: its batch, row, column and output channel block ranges, and the first of the
    accumulator rows that hold its pixels. (A named tuple, as :class:`_Step`: the census makes one per class.)"""

    bs: range
    hs: range
    ws: range
    kbs: range
    acc_base: int

    @property
    def pixels(self) -> list[np.ndarray]:
        """(batch, row, column) within the tile of each pixel, in the order the accumulator rows hold them."""
        return pixel_grid(len(self.bs), len(self.hs), len(self.ws))

    @property
    def npix(self) -> int:
        return len(self.bs) * len(self.hs) * len(self.ws)


class _Step(NamedTuple):
    """One reduction step of an output tile: kernel row, kernel column and input channel block ranges, and
    the phase layout (:func:`axis_layout`) of the input tile they read, along its rows and its columns. A
    named tuple: the census makes one per class of steps (tens of thousands a batch), and a frozen
    dataclass's construction costs several times a tuple's."""

    khs: range
    kws: range
    cbs: range
    row_offset: tuple[int, ...]
    row_index: np.ndarray
    col_offset: tuple[int, ...]
    col_index: np.ndarray
    first: bool
    last: bool


class _ConvWalk:
    """The tile walk of one conv under one schedule (see :func:`conv_tiles`)."""

    def __init__(self, op: Conv2d | DepthwiseConv2d, s: ConvSchedule | DepthwiseSchedule,
                 hw: HardwareConfig) -> None:
        self.op, self.s = op, s
        self.plan = s.memory_plan(hw, op)
        self.geo = s.geometry(op)
        self.d = hw.dim
        self.dw = isinstance(op, DepthwiseConv2d)
        self.in_c = self.geo.channels   # the geometry's: KW * in_c under packed taps
        self.out_c = op.channels if self.dw else op.out_c
        self.t = s.tiles()

    def tiles(self) -> list[ConvTile]:
        """Every step of every output tile; input and weights load where they differ from those held."""
        held_in, held_w = _Resident(), _Resident()
        tiles = []
        for out in self._outputs():
            for step in self._steps(out):
                load_in = held_in.hold((out.bs, out.hs, out.ws, step.khs, step.kws, step.cbs))
                load_w = held_w.hold((step.khs, step.kws, step.cbs) if self.dw
                                     else (step.khs, step.kws, step.cbs, out.kbs))
                tiles.append(self._tile(out, step, self.plan.a.base(held_in.loads - 1),
                                        self.plan.b.base(held_w.loads - 1), load_in, load_w))
        return tiles

    def _tile(self, out: _Output, step: _Step, in_base: int, w_base: int, load_in: bool, load_w: bool
              ) -> ConvTile:
        """One step: loads of the input / weights it does not find held (to ``in_base`` / ``w_base``),
        the bias on the first step, its taps, and the stores after the last."""
        fills, taps = self._taps(out, step, in_base, w_base)
        return ConvTile(in_loads=self._input_loads(out, step, in_base) if load_in else [],
                        w_loads=self._weight_loads(step, out.kbs, w_base) if load_w and not self.dw else [],
                        diagonals=self._diagonals(step, w_base) if load_w and self.dw else [],
                        bias_loads=self._bias_loads(out) if step.first and self.op.bias else [],
                        fills=fills, taps=taps, stores=self._stores(out) if step.last else [])

    def _outputs(self) -> Iterator[_Output]:
        """The output tiles in the schedule's loop order, each with the next accumulator buffer."""
        op, t, order = self.op, self.t, self.s.loop_order
        channel_loop = "c" if self.dw else "k"   # a depthwise conv's output channels are its channels
        ranges = {"b": tile_ranges(op.batch, t.b), "h": tile_ranges(op.out_h, t.oh),
                  "w": tile_ranges(op.out_w, t.ow), channel_loop: tile_ranges(-(-self.out_c // self.d), t.k)}
        for n, outer in enumerate(np.ndindex(*(len(ranges[c]) for c in order))):
            pick = {c: ranges[c][i] for c, i in zip(order, outer)}
            yield _Output(pick["b"], pick["h"], pick["w"], pick[channel_loop], self.plan.c.base(n))

    def reduction(self, kbs: range) -> list[tuple[range, range, range]]:
        """The reduction tiles of an output tile of channel blocks ``kbs``: kernel rows, kernel columns and
        (but depthwise, where they are ``kbs``) input channel blocks."""
        t = self.t
        return [(khs, kws, cbs) for khs in tile_ranges(self.geo.kernel[0], t.kh)
                for kws in tile_ranges(self.geo.kernel[1], t.kw)
                for cbs in ([kbs] if self.dw else tile_ranges(-(-self.in_c // self.d), t.c))]

    def step(self, out: _Output, r: int, reduction: list[tuple[range, range, range]]) -> _Step:
        """Reduction step ``r`` of ``out``, with the phase layouts of the input tile it reads."""
        (sh, sw), (pad_h, pad_w) = self.geo.stride, self.geo.padding
        khs, kws, cbs = reduction[r]
        row_offset, row_index = axis_layout(out.hs.start, len(out.hs), khs.start, len(khs), sh, pad_h)
        col_offset, col_index = axis_layout(out.ws.start, len(out.ws), kws.start, len(kws), sw, pad_w)
        return _Step(khs, kws, cbs, row_offset, row_index, col_offset, col_index, r == 0, r == len(reduction) - 1)

    def _steps(self, out: _Output) -> Iterator[_Step]:
        """The reduction steps of ``out``."""
        reduction = self.reduction(out.kbs)
        return (self.step(out, r, reduction) for r in range(len(reduction)))

    def _chans(self, block: int, total: int) -> int:
        """Channels in ``dim`` block ``block`` of ``total``."""
        return min(self.d, total - block * self.d)

    def _groups(self, blocks: range, total: int) -> list[tuple[int, int, int]]:
        """(first block, relative index, columns) of mvin_blocks-wide channel groups."""
        out = []
        for g in range(blocks.start, blocks.stop, self.s.mvin_blocks):
            last = min(blocks.stop, g + self.s.mvin_blocks)
            out.append((g, g - blocks.start, min(total, last * self.d) - g * self.d))
        return out

    def _inside(self, ih: np.ndarray, iw: np.ndarray) -> np.ndarray:
        """Which input rows and columns are in the input (not padding)."""
        return (ih >= 0) & (ih < self.geo.in_h) & (iw >= 0) & (iw < self.geo.in_w)

    def _block_offset(self, step: _Step, i: int, j: int, ci: int) -> int:
        """Local rows from the held weights' start to the block of the step's i-th kernel row, j-th kernel
        column and ci-th channel block."""
        return ((i * len(step.kws) + j) * len(step.cbs) + ci) * self.d

    def _weight_blocks(self, step: _Step) -> Iterator[tuple[int, int, int]]:
        """(first weight row, channel block, local offset) of each weight block ``step`` holds."""
        for i, kh in enumerate(step.khs):
            for j, kw in enumerate(step.kws):
                for ci, cb in enumerate(step.cbs):
                    row = (kh * self.geo.kernel[1] + kw) * self.in_c + cb * self.d
                    yield row, cb, self._block_offset(step, i, j, ci)

    def _input_loads(self, out: _Output, step: _Step, base: int) -> list[Load]:
        """The input tile in phase layout from ``base``, one plane per channel block; padding is not loaded."""
        geo, d = self.geo, self.d
        lb, lr, lc = pixel_grid(len(out.bs), len(step.row_index), len(step.col_index))
        ih, iw = step.row_index[lr], step.col_index[lc]
        dram = (out.bs.start + lb) * geo.steps[0] + ih * geo.steps[1] + iw * geo.steps[2]
        return [Load(int(dram[start]) + g * d, base + rel * self.plan.in_plane + start, n, cols)
                for start, n in runs(self._inside(ih, iw), [(dram, geo.mvin_stride)], d)
                for g, rel, cols in self._groups(step.cbs, self.in_c)]

    def _weight_loads(self, step: _Step, kbs: range, base: int) -> list[Load]:
        """The step's weight blocks from ``base``, one plane per output channel block."""
        return [Load(row * self.out_c + g * self.d, base + rel * self.plan.w_plane + blk,
                     self._chans(cb, self.in_c), cols)
                for row, cb, blk in self._weight_blocks(step) for g, rel, cols in self._groups(kbs, self.out_c)]

    def _diagonals(self, step: _Step, base: int) -> list[Diagonal]:
        """The depthwise step's weight blocks from ``base``."""
        return [Diagonal(base + blk, self._chans(cb, self.in_c), row) for row, cb, blk in self._weight_blocks(step)]

    def _bias_loads(self, out: _Output) -> list[Load]:
        """The bias, broadcast into every accumulator row of the tile."""
        return [Load(g * self.d * 4, out.acc_base + rel * self.plan.acc_plane + r0, min(self.d, out.npix - r0), cols)
                for g, rel, cols in self._groups(out.kbs, self.out_c) for r0 in range(0, out.npix, self.d)]

    def _taps(self, out: _Output, step: _Step, in_base: int, w_base: int) -> tuple[list[Fill], list[Tap]]:
        """:meth:`computes` as the lowering renders them: fills, and a Tap per weight block."""
        fills, comps = self.computes(out, step, in_base, w_base)
        b, b_rows, b_cols, first, a, c, rows, accumulate = (x.tolist() for x in comps)
        starts = [*np.flatnonzero(comps.first).tolist(), len(a)]
        return fills, [Tap(b[s], b_rows[s], b_cols[s], list(map(Compute, a[s:e], c[s:e], rows[s:e], accumulate[s:e])))
                       for s, e in zip(starts, starts[1:])]

    def computes(self, out: _Output, step: _Step, in_base: int, w_base: int) -> tuple[list[Fill], StepComputes]:
        """The step's computes: tap by tap (kernel row, then column), each tap's weight blocks (input channel
        block, then output channel block; depthwise, the one block of the tap's channels), each block's runs
        of pixels (:func:`tap_runs`: short runs first). The first tap of an unbiased tile overwrites the
        accumulators it covers; the rows it leaves (pixels whose input is padding) are zeroed first."""
        pb, ph, pw = out.pixels
        nkw, ncb, nkb = len(step.kws), len(step.cbs), len(out.kbs)
        rs = np.repeat(ph + np.array(step.row_offset)[:, None], nkw, axis=0)     # (taps, pixels)
        cs = np.tile(pw + np.array(step.col_offset)[:, None], (len(step.khs), 1))
        ok = self._inside(step.row_index[rs], step.col_index[cs])
        a_idx = (pb * len(step.row_index) + rs) * len(step.col_index) + cs
        pieces = tap_runs(ok, a_idx, self.d)
        overwrite = step.first and not self.op.bias   # a first step's first tap is kernel row 0, column 0
        tap, ci, kb = (x.ravel() for x in np.indices((len(ok), ncb, nkb)))   # the weight blocks
        if self.dw:
            keep = step.cbs.start + ci == out.kbs.start + kb
            tap, ci, kb = tap[keep], ci[keep], kb[keep]
        per_tap = np.bincount(pieces.tap, minlength=len(ok))
        count = per_tap[tap]   # computes per block
        rank = ranks(count)
        piece = np.repeat(np.cumsum(per_tap)[tap] - count, count) + rank
        tap, ci, kb = (np.repeat(x, count) for x in (tap, ci, kb))
        start = pieces.start[piece]
        return (self._fills(out, ok[0]) if overwrite else []), StepComputes(
            b=w_base + (0 if self.dw else kb * self.plan.w_plane) + self._block_offset(step, tap // nkw, tap % nkw, ci),
            b_rows=np.minimum(self.d, self.in_c - (step.cbs.start + ci) * self.d),   # _chans, over arrays
            b_cols=np.minimum(self.d, self.out_c - (out.kbs.start + kb) * self.d),
            first=rank == 0, a=in_base + ci * self.plan.in_plane + a_idx[tap, start],
            c=out.acc_base + kb * self.plan.acc_plane + start, rows=pieces.rows[piece],
            accumulate=~(overwrite & (tap == 0) & ((ci == 0) | self.dw)))

    def _fills(self, out: _Output, ok: np.ndarray) -> list[Fill]:
        """Zero the accumulator rows of the pixels where ``ok`` is False."""
        return [Fill(out.acc_base + kb_rel * self.plan.acc_plane + start, n, self._chans(kb, self.out_c))
                for start, n in runs(~ok, [], self.d) for kb_rel, kb in enumerate(out.kbs)]

    def _stores(self, out: _Output) -> list[Load]:
        """The finished tile's accumulator rows to the output, in runs of consecutive output pixels."""
        op, (pb, ph, pw) = self.op, out.pixels
        out_pix = ((out.bs.start + pb) * op.out_h + out.hs.start + ph) * op.out_w + out.ws.start + pw
        return [Load(int(out_pix[start]) * self.out_c + kb * self.d,
                     out.acc_base + kb_rel * self.plan.acc_plane + start, n, self._chans(kb, self.out_c))
                for start, n in runs(np.ones(out.npix, bool), [(out_pix, 1)], self.d)
                for kb_rel, kb in enumerate(out.kbs)]


def conv_tiles(op: Conv2d | DepthwiseConv2d, s: ConvSchedule | DepthwiseSchedule, hw: HardwareConfig
               ) -> tuple[list[ConvTile], ConvPlan]:
    """Walk the tile loops; decide residency, and the runs each tile loads, computes and stores.

    The input is the schedule's :class:`~toolkit.conv.geometry.ConvGeometry` of ``op``; weight
    rows (kh, kw, c) of that geometry are rows of the op's weight buffer as they are."""
    walk = _ConvWalk(op, s, hw)
    return walk.tiles(), walk.plan
