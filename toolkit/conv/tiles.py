"""The conv tile walk: residency, and the runs each tile loads, computes and stores."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, NamedTuple

import numpy as np

from isa import HardwareConfig

from .ops import Conv2d, DepthwiseConv2d
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


@dataclass
class ConvTile:
    in_loads: list
    w_loads: list
    diagonals: list
    bias_loads: list
    fills: list
    taps: list
    stores: list


def runs(valid: np.ndarray, steps: Iterable[tuple[np.ndarray, int]], limit: int) -> list[tuple[int, int]]:
    """(start, length) of the runs of valid elements whose ``steps`` arrays advance by a fixed step,
    split to at most ``limit`` long."""
    cont = valid[:-1] & valid[1:]
    for values, step in steps:
        cont &= np.diff(values) == step
    starts = np.flatnonzero(valid & np.r_[True, ~cont])
    breaks = np.flatnonzero(np.r_[~cont, True])
    ends = breaks[np.searchsorted(breaks, starts)]
    return [(int(s) + o, min(limit, int(e) - int(s) + 1 - o))
            for s, e in zip(starts, ends) for o in range(0, int(e) - int(s) + 1, limit)]


def axis_layout(o0: int, n: int, k0: int, nk: int, stride: int, padding: int) -> tuple[list[int], np.ndarray]:
    """The phase layout of one spatial axis of an input tile.

    Output pixels o0..o0+n-1 under taps k0..k0+nk-1 read input o * stride + k - padding.
    Returns ``offset`` (tap k reads slot (o - o0) + offset[k - k0]) and the input
    index held by each slot; slots group by phase, consecutive within one.
    """
    span: dict[int, tuple[int, int]] = {}
    for k in range(k0, k0 + nk):
        r, q = (k - padding) % stride, (k - padding) // stride
        lo, hi = span.get(r, (q, q))
        span[r] = (min(lo, q), max(hi, q))
    base, index = {}, []
    for r in sorted(span):
        lo, hi = span[r]
        base[r] = len(index)
        index.extend((o0 + lo + j) * stride + r for j in range(n + hi - lo))
    offset = [base[(k - padding) % stride] + (k - padding) // stride - span[(k - padding) % stride][0]
              for k in range(k0, k0 + nk)]
    return offset, np.array(index)


def tile_ranges(extent: int, tile: int) -> list[range]:
    return [range(s, min(extent, s + tile)) for s in range(0, extent, tile)]


def conv_tiles(op: Conv2d | DepthwiseConv2d, s: ConvSchedule | DepthwiseSchedule, hw: HardwareConfig
               ) -> tuple[list[ConvTile], ConvPlan]:
    """Walk the tile loops; decide residency, and the runs each tile loads, computes and stores.

    The input is the schedule's :class:`~toolkit.conv.geometry.ConvGeometry` of ``op``; weight
    rows (kh, kw, c) of that geometry are rows of the op's weight buffer as they are."""
    plan = s.memory_plan(hw, op)
    geo = s.geometry(op)
    d = hw.dim
    dw = isinstance(op, DepthwiseConv2d)
    t = s.tiles()
    C, K = geo.channels, (op.channels if dw else op.out_c)
    H, W = geo.in_h, geo.in_w
    (KH, KW), (sh, sw), (pad_h, pad_w) = geo.kernel, geo.stride, geo.padding
    OH, OW = op.out_h, op.out_w
    ranges = {"b": tile_ranges(op.batch, t.b), "h": tile_ranges(OH, t.oh), "w": tile_ranges(OW, t.ow),
              "k" if not dw else "c": tile_ranges(-(-K // d), t.k)}
    order = s.loop_order
    reduction = [(kh, kw, cb) for kh in tile_ranges(KH, t.kh) for kw in tile_ranges(KW, t.kw)
                 for cb in ([None] if dw else tile_ranges(-(-C // d), t.c))]

    def chans(block: int, total: int) -> int:
        return min(d, total - block * d)

    def groups(blocks: range, total: int) -> list[tuple[int, int, int]]:
        """(first block, relative index, columns) of mvin_blocks-wide channel groups."""
        out = []
        for g in range(blocks.start, blocks.stop, s.mvin_blocks):
            last = min(blocks.stop, g + s.mvin_blocks)
            out.append((g, g - blocks.start, min(total, last * d) - g * d))
        return out

    tiles: list[ConvTile] = []
    held_in = held_w = None
    n_in = n_w = n_acc = 0
    for outer in np.ndindex(*(len(ranges[c]) for c in order)):
        pick = {c: ranges[c][i] for c, i in zip(order, outer)}
        bs, hs, ws = pick["b"], pick["h"], pick["w"]
        kbs = pick["c" if dw else "k"]
        nb, nh, nw = len(bs), len(hs), len(ws)
        npix = nb * nh * nw
        pb, ph, pw = np.meshgrid(np.arange(nb), np.arange(nh), np.arange(nw), indexing="ij")
        pb, ph, pw = pb.ravel(), ph.ravel(), pw.ravel()
        acc_base = plan.c.base(n_acc)
        for r_index, (khs, kws, cbs) in enumerate(reduction):
            first, last = r_index == 0, r_index == len(reduction) - 1
            cbs = kbs if dw else cbs
            tile = ConvTile([], [], [], [], [], [], [])
            # input tile: rows and columns in phase layout, one plane per channel block
            roff, rin = axis_layout(hs.start, nh, khs.start, len(khs), sh, pad_h)
            coff, cin = axis_layout(ws.start, nw, kws.start, len(kws), sw, pad_w)
            RS, CS = len(rin), len(cin)
            key_in = (bs, hs, ws, khs, kws, cbs)
            if held_in != key_in:
                n_in += 1
                held_in = key_in
                lb, lr, lc = (a.ravel() for a in np.meshgrid(np.arange(nb), np.arange(RS), np.arange(CS),
                                                             indexing="ij"))
                ih, iw = rin[lr], cin[lc]
                ok = (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
                dram = (bs.start + lb) * geo.steps[0] + ih * geo.steps[1] + iw * geo.steps[2]
                base = plan.a.base(n_in - 1)
                for start, n in runs(ok, [(dram, geo.mvin_stride)], d):
                    for g, rel, cols in groups(cbs, C):
                        tile.in_loads.append(Load(int(dram[start]) + g * d, base + rel * plan.in_plane + start,
                                                  n, cols))
            in_base = plan.a.base(n_in - 1)
            key_w = (khs, kws, cbs) if dw else (khs, kws, cbs, kbs)
            if held_w != key_w:
                n_w += 1
                held_w = key_w
                base = plan.b.base(n_w - 1)
                for i, kh in enumerate(khs):
                    for j, kw in enumerate(kws):
                        for ci, cb in enumerate(cbs):
                            blk = ((i * len(kws) + j) * len(cbs) + ci) * d
                            if dw:
                                tile.diagonals.append(Diagonal(base + blk, chans(cb, C), (kh * KW + kw) * C + cb * d))
                                continue
                            for g, rel, cols in groups(kbs, K):
                                tile.w_loads.append(Load(((kh * KW + kw) * C + cb * d) * K + g * d,
                                                         base + rel * plan.w_plane + blk, chans(cb, C), cols))
            w_base = plan.b.base(n_w - 1)
            if first and op.bias:
                for g, rel, cols in groups(kbs, K):
                    for r0 in range(0, npix, d):
                        tile.bias_loads.append(Load(g * d * 4, acc_base + rel * plan.acc_plane + r0,
                                                    min(d, npix - r0), cols))
            for i, kh in enumerate(khs):
                for j, kw in enumerate(kws):
                    rs, cs = ph + roff[i], pw + coff[j]
                    ih, iw = rin[rs], cin[cs]
                    ok = (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
                    a_idx = (pb * RS + rs) * CS + cs
                    # short runs first: the next weight block loads (dim cycles) while the tap's
                    # last compute streams, so a tap that ends on a full run hides that load
                    pieces = sorted(runs(ok, [(a_idx, 1)], d), key=lambda piece: piece[1])
                    # the first tap overwrites the accumulators it covers; the rest are zeroed first
                    overwrite = first and kh == 0 and kw == 0 and not op.bias
                    if overwrite:
                        for start, n in runs(~ok, [], d):
                            for kb_rel, kb in enumerate(kbs):
                                tile.fills.append(Fill(acc_base + kb_rel * plan.acc_plane + start, n,
                                                       chans(kb, K)))
                    for ci, cb in enumerate(cbs):
                        blk = ((i * len(kws) + j) * len(cbs) + ci) * d
                        for kb_rel, kb in enumerate(kbs):
                            if dw and kb != cb:
                                continue
                            comps = [Compute(in_base + ci * plan.in_plane + int(a_idx[p]),
                                             acc_base + kb_rel * plan.acc_plane + p, n,
                                             not (overwrite and (dw or ci == 0)))
                                     for p, n in pieces]
                            if comps:
                                b = w_base + (0 if dw else kb_rel * plan.w_plane) + blk
                                tile.taps.append(Tap(b, chans(cb, C), chans(kb, K), comps))
            if last:
                out_pix = ((bs.start + pb) * OH + hs.start + ph) * OW + ws.start + pw
                for start, n in runs(np.ones(npix, bool), [(out_pix, 1)], d):
                    for kb_rel, kb in enumerate(kbs):
                        tile.stores.append(Load(int(out_pix[start]) * K + kb * d,
                                                acc_base + kb_rel * plan.acc_plane + start, n, chans(kb, K)))
            tiles.append(tile)
        n_acc += 1
    return tiles, plan
