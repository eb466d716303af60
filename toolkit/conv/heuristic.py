"""Conv heuristics: the earlier port of Gemmini's tiled_conv_auto (schedule="gemmini-flat"; the baseline
itself, gemmini.h's own words, is toolkit/library/) and the toolkit's pipelined default."""
from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from isa import HardwareConfig

from ..estimate import STEP_OVERHEAD, dma_row_cycles, pipeline_columns, tap_cycles
from ..knobs import tile_values
from ..schedule import ScheduleError, grow_tiles
from .geometry import conv_geometry
from .ops import Conv2d, DepthwiseConv2d
from .schedule import ConvSchedule, DepthwiseSchedule
from .tiles import first_loads, reloads, tile_ranges


def _sized(op: Conv2d | DepthwiseConv2d, hw: HardwareConfig, knobs: dict[str, Any]
           ) -> ConvSchedule | DepthwiseSchedule:
    """tiled_conv_auto's sizing with ``knobs``: start from the whole output, shrink the largest dimension
    until the tiles fit, then grow output columns, then anything, greedily."""
    d = hw.dim
    dw = isinstance(op, DepthwiseConv2d)
    g = conv_geometry(op, knobs.get("pack_taps", False))
    limits = {"b": op.batch, "oh": op.out_h, "ow": op.out_w, "kh": g.kernel[0], "kw": g.kernel[1],
              "c": -(-g.channels // d)}
    if not dw:
        limits["k"] = -(-op.out_c // d)
    blocks = {"k", "c"}   # counted in dim blocks, compared (like Gemmini) in channels

    def build(t: dict[str, int]) -> ConvSchedule | DepthwiseSchedule:
        common = dict(tile_b=t["b"], tile_oh=t["oh"], tile_ow=t["ow"], tile_kh=t["kh"], tile_kw=t["kw"],
                      tile_c=t["c"], mvin_blocks=hw.max_block_len, **knobs)
        return DepthwiseSchedule(**common) if dw else ConvSchedule(tile_k=t["k"], **common)

    def fits(t: dict[str, int]) -> bool:
        try:
            build(t).memory_plan(hw, op)
        except ScheduleError:
            return False
        return True

    tiles = dict(limits)
    while not fits(tiles):
        shrinkable = [n for n, v in tiles.items() if v > 1]
        if not shrinkable:
            raise ScheduleError(f"even the smallest tiles of {op.key} do not fit {hw.name}")
        # keep a row of output columns whole while it is at most dim wide: it fills the array's rows
        preferred = [n for n in shrinkable if not (n == "ow" and tiles[n] <= d and tiles["oh"] > 1)] or shrinkable
        largest = max(preferred, key=lambda n: tiles[n] * (d if n in blocks else 1))
        tiles[largest] -= 1
    while tiles["ow"] < limits["ow"] and fits(dict(tiles, ow=tiles["ow"] + 1)):
        tiles["ow"] += 1
    # the tiles fit now, so grow_tiles only grows them, round-robin in the limits' order
    return build(grow_tiles(tiles, limits, fits, list(tiles), op.key))


def gemmini_conv_schedule(op: Conv2d | DepthwiseConv2d, hw: HardwareConfig, *, double_buffer: bool = True
                          ) -> ConvSchedule | DepthwiseSchedule:
    """schedule="gemmini-flat": tiled_conv_auto's kind of sizing (here in dim blocks) in our own
    instruction stream: the tiles fit half of each memory (double buffering), weights packed after
    the input (then moved to a bank of their own where they fit), flat order."""
    sched = _sized(op, hw, dict(double_buffer=double_buffer))
    plan = sched.memory_plan(hw, op)
    w_bank = -(-plan.a.end // hw.sp_bank_rows)   # weights in their own bank when they fit there
    if w_bank < hw.sp_banks and w_bank * hw.sp_bank_rows + plan.b.rows * plan.b.buffers <= hw.sp_rows:
        sched = sched.replace(w_bank=w_bank)
    return sched


def packing_saves_blocks(op: Conv2d | DepthwiseConv2d, hw: HardwareConfig) -> bool:
    """Whether packing a conv2d's kernel-row taps into the reduction needs fewer weight blocks per
    kernel row than tap by tap (few input channels: ResNet's and MobileNet's stems)."""
    if not isinstance(op, Conv2d):
        return False
    KW, C, d = op.kernel[1], op.in_c, hw.dim
    return -(-KW * C // d) < KW * -(-C // d)


@functools.lru_cache(maxsize=65536)
def _axis(o0: int, n: int, k0: int, nk: int, stride: int, pad: int, extent: int) -> tuple[tuple[int, ...], int]:
    """Along one axis: the valid outputs of o0..o0+n-1 under each tap k0..k0+nk-1, and the valid inputs they read."""
    per = tuple(sum(0 <= x * stride + kk - pad < extent for x in range(o0, o0 + n)) for kk in range(k0, k0 + nk))
    read = {x * stride + kk - pad for x in range(o0, o0 + n) for kk in range(k0, k0 + nk)}
    return per, sum(0 <= i < extent for i in read)


_CONTIGUOUS = np.array([False, True])[:, None, None]   # _tap_table's last axis, over (tap rows, tap columns)


def _tap_table(images: np.ndarray, vr: np.ndarray, vc: np.ndarray, dim: int) -> np.ndarray:
    """[images, valid rows per tap, valid columns per tap, contiguous]: array cycles of the taps of one
    reduction tile for one (input, output) block pair (``vr``, ``vc``: :class:`_Axis`'s valid rows and columns per
    tap of each class of tile): each tap streams its valid pixels, in runs of a row
    of the tile (or the whole tile when contiguous). Summed tap by tap (a running sum: the float that adding
    them one at a time gives); a kernel tile's missing taps (a ragged last one's) add nothing."""
    rows = (images[:, None, None, None, None] * vr[None, :, None, :, None] * vc[None, None, :, None, :])[:, :, :, None]
    last = np.where(_CONTIGUOUS, rows, vc[None, None, :, None, None, :])   # a tap's last run: a row, or all of it
    cycles = np.where(rows > 0, tap_cycles(rows, last, dim), 0.0)
    return np.cumsum(cycles.reshape(*cycles.shape[:4], -1), axis=4)[..., -1]


@dataclass(frozen=True, eq=False)   # a cache key by identity: its cache makes one per axis
class _Axis:
    """One spatial axis of a conv's tiles (output rows or columns): each output tile's and kernel tile's size,
    and per (output tile, kernel tile) the index in ``per`` of its valid outputs under each tap (few distinct:
    the tiles inside the input share one; a ragged kernel tile's padded with 0) and the valid inputs it reads.
    Read-only, cached: the tilings that share an axis's tiles share it."""

    sizes: np.ndarray
    ksizes: np.ndarray
    cls: np.ndarray
    read: np.ndarray
    per: np.ndarray


def _read_only(*arrays: np.ndarray) -> None:
    for a in arrays:
        a.setflags(write=False)


@functools.lru_cache(maxsize=4096)
def _spatial_axis(n_out: int, tile: int, kernel: int, ktile: int, stride: int, pad: int, extent: int) -> _Axis:
    """The :class:`_Axis` of output rows (columns) ``n_out`` in tiles of ``tile`` under a kernel of ``kernel``
    taps in tiles of ``ktile``."""
    per_tap: dict[tuple[int, ...], int] = {}
    cls, read = [], []
    outs, ktiles = tile_ranges(n_out, tile), tile_ranges(kernel, ktile)
    for o in outs:
        axis = [_axis(o.start, len(o), k.start, len(k), stride, pad, extent) for k in ktiles]
        cls.append([per_tap.setdefault(per, len(per_tap)) for per, _ in axis])
        read.append([n for _, n in axis])
    width = max(map(len, per_tap))
    out = _Axis(np.array([len(o) for o in outs]), np.array([len(k) for k in ktiles]), np.array(cls), np.array(read),
                np.array([[*p, *[0] * (width - len(p))] for p in per_tap]))
    _read_only(out.sizes, out.ksizes, out.cls, out.read, out.per)
    return out


@dataclass(frozen=True, eq=False)
class _Channels:
    """One channel axis of a conv's tiles (input or output channels, tiled in dim blocks): each tile's blocks,
    channels, and port cycles of one DRAM row of it (a row per mvin_blocks-wide group of its blocks)."""

    blocks: np.ndarray
    channels: np.ndarray
    row_cycles: np.ndarray


@functools.lru_cache(maxsize=4096)
def _channel_axis(channels: int, tile: int, mvin_blocks: int, hw: HardwareConfig) -> _Channels:
    """The :class:`_Channels` of ``channels`` in tiles of ``tile`` dim blocks."""
    d = hw.dim
    tiles = tile_ranges(-(-channels // d), tile)
    cycles = [sum(dma_row_cycles(min(channels, min(bs.stop, g0 + mvin_blocks) * d) - g0 * d, hw)
                  for g0 in range(bs.start, bs.stop, mvin_blocks)) for bs in tiles]
    out = _Channels(np.array([len(bs) for bs in tiles]),
                    np.array([min(channels, bs.stop * d) - bs.start * d for bs in tiles]), np.array(cycles))
    _read_only(out.blocks, out.channels, out.row_cycles)
    return out


@functools.lru_cache(maxsize=1024)
def _pixel_tiles(batch: int, tile_b: int, rows: _Axis, cols: _Axis, dim: int) -> tuple[np.ndarray, ...]:
    """Over (b, h, w, kernel row tiles, kernel column tiles): a pixel tile's tap cycles (:func:`_tap_table`, of
    one input-channel block) and the input pixels it reads; over (b, h, w): its pixels. Cached, read-only: a
    search's neighbours share their pixel tiles (the last 1,024: a stem's small tiles take ~70 KB each)."""
    images = [len(bs) for bs in tile_ranges(batch, tile_b)]
    distinct = sorted(set(images))   # a tile size or two
    table = _tap_table(np.array(distinct), rows.per, cols.per, dim)
    b_cls = np.array([distinct.index(i) for i in images])[:, None, None, None, None]
    taps = table[b_cls, rows.cls[None, :, None, :, None], cols.cls[None, None, :, None, :],
                 (cols.ksizes == 1).astype(int)]   # a tap one column wide reads its input in one run
    sizes = np.array(images)
    valid_in = sizes[:, None, None, None, None] * rows.read[None, :, None, :, None] * cols.read[None, None, :, None, :]
    npix = sizes[:, None, None] * rows.sizes[:, None] * cols.sizes
    _read_only(taps, valid_in, npix)
    return taps, valid_in, npix


@dataclass(frozen=True, eq=False)
class _TileCosts:
    """What :func:`pipelined_conv_cycles` walks, per tile of each axis (r the reduction tiles: kernel rows,
    columns, input-channel blocks): over (b, h, w, r) a pixel tile's tap cycles, input DMA cycles and input
    block writes; over (k, r) a weight tile's DMA cycles and block writes; the output-channel blocks of each
    k, the pixels of each (b, h, w); and the tiles of each axis (b, h, w, k, r)."""

    taps: np.ndarray
    in_rows: np.ndarray
    in_writes: np.ndarray
    w_rows: np.ndarray
    w_writes: np.ndarray
    kblocks: np.ndarray
    npix: np.ndarray
    shape: tuple[int, int, int, int, int]


def _tile_costs(op: Conv2d, s: ConvSchedule, hw: HardwareConfig) -> _TileCosts:
    """The :class:`_TileCosts` of a tiling. A pixel tile's costs are products of per-axis terms (each axis's
    cached), so they are built per axis and broadcast, over r's three axes, then r flattened (kernel rows
    outermost)."""
    g, t = s.geometry(op), s.tiles()
    (sh, sw), (ph, pw) = g.stride, g.padding
    rows = _spatial_axis(op.out_h, t.oh, g.kernel[0], t.kh, sh, ph, g.in_h)
    cols = _spatial_axis(op.out_w, t.ow, g.kernel[1], t.kw, sw, pw, g.in_w)
    chans, outs = _channel_axis(g.channels, t.c, s.mvin_blocks, hw), _channel_axis(op.out_c, t.k, s.mvin_blocks, hw)
    taps, valid_in, npix = _pixel_tiles(op.batch, t.b, rows, cols, hw.dim)
    b, h, w = npix.shape
    pixel_shape = (b, h, w, -1)
    weight_rows = (rows.ksizes[:, None] * cols.ksizes)[:, :, None] * chans.channels   # kernel rows x columns x channels
    return _TileCosts(
        taps=(taps[..., None] * chans.blocks).reshape(pixel_shape),
        in_rows=(valid_in[..., None] * chans.row_cycles).reshape(pixel_shape),
        in_writes=(valid_in[..., None] * chans.blocks).reshape(pixel_shape),
        w_rows=outs.row_cycles[:, None] * weight_rows.ravel(),
        w_writes=outs.blocks[:, None] * weight_rows.ravel(),
        kblocks=outs.blocks, npix=npix, shape=(b, h, w, len(outs.blocks), weight_rows.size))


_TILE_COSTS: dict[tuple, _TileCosts] = {}
_CYCLES: dict[tuple, float] = {}


def forget_tile_costs() -> None:
    """Drop the kept tile costs and estimates, and the axes' and pixel tiles' caches (a benchmark's cold start)."""
    _TILE_COSTS.clear()
    _CYCLES.clear()
    for cache in (_spatial_axis, _channel_axis, _pixel_tiles):
        cache.cache_clear()


def _kept(kept: dict[tuple, Any], key: tuple, make: Callable[[], Any]) -> Any:
    """``kept[key]``, made first where missing (all of ``kept`` dropped when full: a search's recent ones stay)."""
    if key not in kept:
        if len(kept) >= 4096:
            kept.clear()
        kept[key] = make()
    return kept[key]


def _tile_costs_of(op: Conv2d, s: ConvSchedule, hw: HardwareConfig) -> _TileCosts:
    """:func:`_tile_costs`, kept per tiling: it reads only the tiles, the mvin width and the geometry, so
    schedules that differ in placement, loop order or pipeline knobs (a search's neighbours) share it."""
    return _kept(_TILE_COSTS, (op, hw, s.tiles(), s.mvin_blocks, s.packs_taps), lambda: _tile_costs(op, s, hw))


def kept_conv_cycles(op: Conv2d, s: ConvSchedule, hw: HardwareConfig) -> float:
    """:func:`pipelined_conv_cycles`, kept per what it reads (the tiling, loop order, buffering and pipeline
    knobs): a search's neighbours that differ in placement or dataflow (an output-stationary estimate is its
    tiles' weight-stationary one) share it."""
    key = (op, hw, type(s), s.tiles(), s.mvin_blocks, s.packs_taps, s.loop_order, s.nbuf, s.load_ahead,
           s.store_delay)
    return _kept(_CYCLES, key, lambda: pipelined_conv_cycles(op, s, hw))


def _in_steps(shape: tuple[int, ...], order: tuple[int, ...], arrays: int) -> tuple[np.ndarray, np.ndarray]:
    """``arrays`` zeroed arrays over the walk's steps (:func:`~.tiles.loops`: the tile axes (b, h, w, k, r) nested
    in ``order``, the reduction innermost), flat (a row each), and a view of them over the tile axes: a ufunc's
    ``out`` there writes its result in step order, with no array of its own to copy. One allocation for all."""
    loops = (*order, 4)
    steps = np.zeros((arrays, *[shape[axis] for axis in loops]))
    return steps.reshape(arrays, -1), steps.transpose(0, *[1 + loops.index(axis) for axis in range(5)])


def pipelined_conv_cycles(op: Conv2d, s: ConvSchedule, hw: HardwareConfig, limit: float = math.inf) -> float:
    """A cycle estimate of a pipelined conv2d schedule (load_ahead, store_delay), used only to pick the
    default's tiles: the tile walk's steps, in loop order, through :func:`~toolkit.estimate.pipeline_cycles`.

    Computes: a tap (a weight block) streams its valid pixels in runs of at most ``dim`` (rows of the
    output tile, or the whole tile when a tap's input is contiguous, tile_kw = 1), short runs first
    (tiles.py): :func:`~toolkit.estimate.tap_cycles`. DMA: input rows (one per valid input pixel and
    channel group) and weight rows (one per weight row and output-channel group) at
    :func:`~toolkit.estimate.dma_row_cycles`, a stored row a beat; the load unit writes a block a
    cycle (a bias row, read once, into every pixel of the tile). Within ~2% of the RTL on ResNet-50's
    and MobileNetV2's convs over the tile shapes we measured (the stems' padding copy aside).
    Infinity where the computes alone pass ``limit``."""
    c, d = _tile_costs_of(op, s, hw), hw.dim
    out_beats = -(-d * (4 if op.out_dtype == "int32" else 1) // hw.dma_beat_bytes)
    order = tuple(s.ORDER.index(x) for x in s.loop_order)
    (compute, load, store, writes), at = _in_steps(c.shape, order, 4)
    np.multiply(c.taps[:, :, :, None, :], c.kblocks[:, None], out=at[0])
    if limit < math.inf and compute.sum() + len(compute) * STEP_OVERHEAD * d > limit:
        return math.inf
    # an operand is loaded where its tile differs from the step before's: every step, where the reduction (the
    # innermost loop) has several tiles
    every = (1, 1) if c.shape[4] > 1 else reloads(c.shape, order, False)

    def loaded(x: np.ndarray, operand: int) -> np.ndarray:   # x on the steps that load the operand (0: input)
        return x if every[operand] == 1 else x * first_loads(c.shape, order, every[operand])

    np.add(loaded(c.in_rows[:, :, :, None, :], 0), loaded(c.w_rows, 1), out=at[1])
    blocks = c.npix[..., None] * c.kblocks   # an output tile's rows: stored after its last step
    at[2, ..., -1] = blocks * out_beats
    if s.load_ahead:   # the load unit's writes, which only a step that loads ahead waits on
        np.add(loaded(c.in_writes[:, :, :, None, :], 0), loaded(c.w_writes, 1), out=at[3])
        if op.bias:   # a bias row, read once, written to each pixel of the tile before its first step
            at[3, ..., 0] += blocks
    return pipeline_columns(compute, load, store, writes if s.load_ahead else None, d,
                            load_ahead=bool(s.load_ahead), store_delay=bool(s.store_delay))


# Over 40 lines: the docstring's rules; the code is two small closures and the loop over tiles.
def _placements(hw: HardwareConfig) -> list[dict[str, int]]:
    """Where the weights may go, preferred first: a bank of their own where the scratchpad has four
    or more, else (or where that fits fewer channels) after the input."""
    return [dict(w_bank=1), dict(w_bank=0)] if hw.sp_banks >= 4 else [dict(w_bank=0)]


# Over 40 lines: the docstring's rules and the two helpers that apply them (build, most_channels) kept together.
def _conv_candidates(op: Conv2d, hw: HardwareConfig, knobs: dict[str, Any]) -> list[ConvSchedule]:
    """Pipelined conv2d schedules to choose among: every balanced output tile (images, rows, columns,
    output-channel blocks) of at least 2*dim pixels (a short tap waits for a weight buffer) and rows
    of at least dim columns (each row of a tile is mvins and mvouts of its own, and a store queue of
    mvouts of a few rows starves the array), where the output has them; with the whole kernel (else
    a kernel row, else one tap) and the most input-channel blocks that fit, evened out over the
    channel tiles; input and weights in banks of their own where the scratchpad has four or more
    (the weights after the input too, where that fits more channels)."""
    d = hw.dim
    g = conv_geometry(op, knobs["pack_taps"])
    Cb, Kb = -(-g.channels // d), -(-op.out_c // d)
    KH, KW = g.kernel
    least = min(op.batch * op.out_h * op.out_w, 2 * d)
    narrowest = min(op.out_w, d)   # narrower output rows make DRAM runs (mvins, mvouts) of a few pixels each
    placements = _placements(hw)

    def build(t: tuple[int, ...], c: int, placement: dict) -> ConvSchedule:
        b, oh, ow, k, kh, kw = t
        return ConvSchedule(tile_b=b, tile_oh=oh, tile_ow=ow, tile_k=k, tile_kh=kh, tile_kw=kw, tile_c=c,
                            mvin_blocks=hw.max_block_len, **knobs, **placement)

    def most_channels(t: tuple[int, ...], placement: dict) -> int:
        lo, hi = 0, Cb
        while lo < hi:   # fitting is monotone in tile_c
            mid = (lo + hi + 1) // 2
            try:
                build(t, mid, placement).memory_plan(hw, op)
                lo = mid
            except ScheduleError:
                hi = mid - 1
        return -(-Cb // -(-Cb // lo)) if lo else 0

    out = []
    for b, oh, ow, k in itertools.product(tile_values(op.batch), tile_values(op.out_h), tile_values(op.out_w),
                                          tile_values(Kb)):
        if b * oh * ow < least or b * oh * ow * k > hw.acc_rows // 2 or ow < narrowest:
            continue
        for kh, kw in dict.fromkeys(((KH, KW), (KH, 1), (1, 1))):
            best = 0
            for placement in placements:
                c = most_channels((b, oh, ow, k, kh, kw), placement)
                if c > best:
                    best = c
                    out.append(build((b, oh, ow, k, kh, kw), c, placement))
            if best:
                break
    return out


@functools.lru_cache(maxsize=1024)
def _default_conv2d(op: Conv2d, hw: HardwareConfig, pack_taps: bool) -> ConvSchedule | None:
    """The candidate (and tiled_conv_auto's sizing under the pipeline, the default before them) that
    :func:`pipelined_conv_cycles` finds fastest; None where none fits."""
    knobs: dict = dict(load_ahead=1, store_delay=1, split_buffers=True, pack_taps=pack_taps)
    candidates = _conv_candidates(op, hw, knobs)
    for placement in _placements(hw):
        try:   # tiled_conv_auto's sizing under the pipeline, as the default had it
            candidates.append(_sized(op, hw, {**knobs, **placement}))
            break
        except ScheduleError:
            continue
    best, best_cycles = None, math.inf
    for s in sorted(candidates, key=lambda s: -s.tile_b * s.tile_oh * s.tile_ow * s.tile_k * s.tile_c):
        cycles = pipelined_conv_cycles(op, s, hw, best_cycles)   # the larger tiles first: they bound the rest
        if cycles < best_cycles:
            best, best_cycles = s, cycles
    return best


def default_conv_schedule(op: Conv2d | DepthwiseConv2d, hw: HardwareConfig, *, pack_taps: bool | None = None
                          ) -> ConvSchedule | DepthwiseSchedule:
    """The toolkit's heuristic: the software pipeline, with the halves of each double buffer in
    different banks (input and weights in banks of their own where the scratchpad has four or more);
    a conv2d's tiles are the candidate :func:`pipelined_conv_cycles` finds fastest (see
    :func:`_conv_candidates`: on ResNet-50 they beat Gemmini's own tiled_conv_auto on every layer, as
    tiled_conv_auto's sizing under the pipeline did not on 9), a depthwise conv's tiled_conv_auto's
    sizing. A conv2d packs its taps (``pack_taps``; None: where that saves
    weight blocks and a tap fills less than one block, in_c < dim, as in the network stems, where it
    won 3.3x (ResNet-50 conv1) and 1.3x (MobileNetV2 stem) on the RTL; with in_c >= dim it saves at
    most a block per kernel row and costs the padding copy: the tuner may still try it)."""
    pipelined: dict = dict(load_ahead=1, store_delay=1, split_buffers=True)
    if isinstance(op, Conv2d):
        if pack_taps is None:
            pack_taps = op.in_c < hw.dim and packing_saves_blocks(op, hw)
        chosen = _default_conv2d(op, hw, pack_taps)
        if chosen is not None:
            return chosen
        pipelined["pack_taps"] = pack_taps
    placements = _placements(hw)
    for placement in placements:
        try:
            return _sized(op, hw, {**pipelined, **placement})
        except ScheduleError:
            continue
    return gemmini_conv_schedule(op, hw)
