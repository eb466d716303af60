"""The sums (toolkit/tally.py) of conv computes classes in closed form, many classes at once.

A computes class's words (census._computes of tiles._ConvWalk.computes) are, per weight block, a preload
and a compute per run of its tap's valid pixels; the sums need only how many runs each tap has, their
rows and where each starts. So the classes' taps' pixels are laid flat one after another (runs.flat_rows: no
padding, so a pass takes tiles of every size), and one pass of tap_runs finds every run of every class; the
blocks multiply them. tests/test_census.py holds the result equal to the classes' words' sums.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

from isa import ACC_BIT, GARBAGE
from isa.opcodes import Funct

from ..census import Census, acc, operand
from ..tally import COL, SUMS, Accesses
from .geometry import ConvGeometry
from .runs import TapRuns, div_mod, flat_rows, flat_tap_runs, ranks, row_runs
from .specs import Specs, groups, layouts


class ClassReads(NamedTuple):
    """Classes' sums, and their scratchpad reads (rows: all occurrences of each), each from the input
    (``weights`` False: its address moves with the input buffer's base) or the weights, class i's
    from at[i] to at[i + 1]."""
    sums: np.ndarray
    reads: Accesses
    weights: np.ndarray
    at: np.ndarray


def _grid(s: Specs, geo: ConvGeometry) -> dict[str, np.ndarray]:
    """Per tap row of every class (in class order, taps in walk order): its class, its tap, its taps'
    slot offsets, where its class's slot indices start and its tile's sizes."""
    rows = layouts(s.h0, s.nh, s.kh0, s.nkh, geo.stride[0], geo.padding[0])
    cols = layouts(s.w0, s.nw, s.kw0, s.nkw, geo.stride[1], geo.padding[1])
    ntap = s.nkh * s.nkw
    cls = np.repeat(np.arange(len(ntap)), ntap)
    tap = ranks(ntap)
    nkw = s.nkw[cls]
    return {"cls": cls, "tap": tap, "R": rows.size[cls], "C": cols.size[cls], "nh": s.nh[cls], "nw": s.nw[cls],
            "npix": s.npix[cls], "roff": rows.offset[rows.offset_at[cls] + tap // nkw],
            "coff": cols.offset[cols.offset_at[cls] + tap % nkw], "row_index": rows.index, "col_index": cols.index,
            "row0": rows.index_at[cls], "col0": cols.index_at[cls]}


def _valid(g: dict[str, np.ndarray], in_h: int, in_w: int) -> tuple[np.ndarray, ...]:
    """The grid's rows' pixels laid flat (runs.flat_rows): each one's row, where each row starts, which read inside
    the input, and each one's input row (tiles._ConvWalk.computes's ok and a_idx)."""
    row, p, start = flat_rows(g["npix"])
    q, pw = div_mod(p, g["nw"][row])
    pb, ph = div_mod(q, g["nh"][row])
    rs, cs = ph + g["roff"][row], pw + g["coff"][row]   # within the class's slots
    ih, iw = g["row_index"][g["row0"][row] + rs], g["col_index"][g["col0"][row] + cs]
    ok = (ih >= 0) & (ih < in_h) & (iw >= 0) & (iw < in_w)
    return row, start, ok, (pb * g["R"][row] + rs) * g["C"][row] + cs


def _per(cls: np.ndarray, values: np.ndarray, k: int) -> np.ndarray:
    """Sums of ``values`` per class (whole numbers: exact)."""
    return np.bincount(cls, weights=values, minlength=k).astype(np.int64)


def _alike(g: dict[str, np.ndarray], in_h: int, in_w: int) -> tuple[np.ndarray, np.ndarray]:
    """The grid's rows alike in what their runs read: their tile's shape, slots and which of them lie inside
    the input (a pass's many classes' taps are a few such rows). The first row of each kind, and each row's."""
    inside = [_inside(g, axis, extent) for axis, extent in (("row", in_h), ("col", in_w))]
    key = np.column_stack([*(g[x] for x in ("npix", "nh", "nw", "R", "C", "roff", "coff")), *inside])
    # rows in the order of a hash of their key, then a new kind wherever a row differs from the one before
    # (exact: rows whose hashes collide are told apart, at worst alike rows of two kinds)
    mix = np.arange(1, key.shape[1] + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15) | np.uint64(1)
    order = np.argsort(key.astype(np.uint64) @ mix, kind="stable")
    new = np.ones(len(order), bool)
    new[1:] = (key[order[1:]] != key[order[:-1]]).any(axis=1)
    kind = np.empty(len(order), np.int64)
    kind[order] = np.cumsum(new) - 1
    return order[new], kind


def _inside(g: dict[str, np.ndarray], axis: str, extent: int) -> np.ndarray:
    """Per grid row, which of its tile's rows (or columns: ``axis``) read inside the input (bits, a few int64
    columns: equal where the rows' are). A row's are its layout's slots from its tap's offset, so they are found
    once per distinct (first slot, tile length): a pass's many rows hold a few."""
    n = g["nh" if axis == "row" else "nw"]
    width = int(n.max()) + 1
    kinds, which = np.unique((g[f"{axis}0"] + g[f"{axis[0]}off"]) * width + n, return_inverse=True)
    first, n = kinds // width, (kinds % width)[:, None]
    at = np.arange(width - 1)[None, :]
    index = g[f"{axis}_index"][first[:, None] + np.minimum(at, n - 1)]
    packed = np.packbits((index >= 0) & (index < extent) & (at < n), axis=1)
    wide = np.zeros((len(kinds), -(-packed.shape[1] // 8) * 8), np.uint8)
    wide[:, :packed.shape[1]] = packed
    return wide.view(np.int64)[which]


def _grid_runs(g: dict[str, np.ndarray], in_h: int, in_w: int, d: int
               ) -> tuple[TapRuns, np.ndarray, Callable[[np.ndarray], tuple]]:
    """Every grid row's runs (tap_runs: grouped by grid row, ``tap`` the row) and the input row each starts
    at, found once per kind of row (:func:`_alike`); and which pixels of grid rows read padding (:func:`_padding`)."""
    first, kind = _alike(g, in_h, in_w)
    row, start, ok, a_idx = _valid({k: v if k.endswith("_index") else v[first] for k, v in g.items()}, in_h, in_w)
    runs = flat_tap_runs(ok, a_idx, row, start, d)
    per = np.bincount(runs.tap, minlength=len(first))
    count = per[kind]
    at = np.repeat((np.cumsum(per) - per)[kind], count) + ranks(count)
    spread = TapRuns(np.repeat(np.arange(len(kind)), count), runs.start[at], runs.rows[at])
    return spread, a_idx[start[runs.tap[at]] + runs.start[at]], _padding(start, ~ok, kind)


def _padding(start: np.ndarray, padding: np.ndarray, kind: np.ndarray) -> Callable[[np.ndarray], tuple]:
    """Given grid rows, their pixels laid flat: whether each reads padding, and each one's position among the
    rows (``padding``: each pixel of each kind, the kinds laid flat from ``start``; ``kind``: each grid row's)."""
    npix = np.diff(np.append(start, len(padding)))

    def of(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k = kind[rows]
        row, p, _ = flat_rows(npix[k])
        return padding[start[k][row] + p], row
    return of


def _fills(g: dict[str, np.ndarray], padding: Callable[[np.ndarray], tuple], overwrite: np.ndarray, nkb: np.ndarray,
           d: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per class, the fills (and their rows) a class that overwrites its accumulators first zeroes: runs of
    its first tap's pixels that read padding (:func:`_padding`), per output channel block."""
    rows = np.flatnonzero((g["tap"] == 0) & overwrite[g["cls"]])
    valid, row = padding(rows)
    flat, length = row_runs(valid, valid[:-1] & valid[1:], row, d)
    cls = g["cls"][rows][row[flat]]
    return _per(cls, np.ones(len(cls)), k) * nkb, _per(cls, length, k) * nkb


def computes_sums(s: Specs, walk: Any, os_: bool) -> ClassReads:
    """The sums and scratchpad reads of computes classes ``s`` (census._computes of walk.computes of each
    one's first step at base 0; ``walk``: any walk of their op, hardware and geometry)."""
    d, dw, k = walk.d, walk.dw, len(s.nb)
    g = _grid(s, walk.geo)
    runs, a_start, padding = _grid_runs(g, walk.geo.in_h, walk.geo.in_w, d)
    ncb, nkb = s.nc, s.nk
    blocks = ncb if dw else ncb * nkb   # weight blocks per tap (depthwise: a tap's channel block is the output's)
    overwrite = s.first.astype(bool) & (not walk.op.bias)
    nrows = len(g["cls"])
    per_row = np.bincount(runs.tap, minlength=nrows)
    n = _per(g["cls"], per_row, k) * blocks
    firsts = np.zeros(k, np.int64) if os_ else _per(g["cls"], per_row > 0, k) * blocks
    # the first tap of an overwriting class does not accumulate (but for its other input channel blocks)
    plain = overwrite * _per(g["cls"], per_row * (g["tap"] == 0), k) * (blocks if dw else nkb)
    nf, f_rows = _fills(g, padding, overwrite, nkb, d, k)
    sums = np.zeros((k, len(SUMS)), np.int64)
    for name, v in (("preload", nf + n), ("compute_preloaded", nf + (n if os_ else firsts)),
                    ("compute_accumulated", 0 if os_ else n - firsts), ("words", 2 * (nf + n)),
                    ("computes", nf + n), ("weight_loads", firsts), ("preload_rmw", n - plain),
                    ("compute_rows", f_rows + _per(g["cls"], np.bincount(runs.tap, runs.rows, nrows), k) * blocks)):
        sums[:, COL[name]] = v
    return _cut(sums, *_reads(s, walk, g, runs, a_start, per_row, os_))


def _reads(s: Specs, walk: Any, g: dict[str, np.ndarray], runs: TapRuns, a_start: np.ndarray, per_row: np.ndarray,
           os_: bool) -> list[np.ndarray]:
    """Class, address, rows and whether from the weights of each scratchpad read (``a_start``: the input row
    each of ``runs`` starts at): a compute's input rows
    (once per input channel block, every output channel block's compute the same rows), and
    weight-stationary, each weight block's first preload."""
    d, dw, ncb, nkb = walk.d, walk.dw, s.nc, s.nk
    cls = g["cls"][runs.tap]
    rep = np.repeat(np.arange(len(cls)), ncb[cls])
    addr = ranks(ncb[cls]) * s.in_plane[cls[rep]] + a_start[rep]
    parts = [(cls[rep], addr, runs.rows[rep] * (1 if dw else nkb[cls][rep]), np.zeros(len(rep), bool))]
    if not os_:
        rows = np.flatnonzero(per_row > 0)
        cls = g["cls"][rows]
        per = ncb[cls] if dw else ncb[cls] * nkb[cls]
        rep = np.repeat(np.arange(len(rows)), per)
        j, cls = ranks(per), cls[rep]
        ci, kb = (j, 0) if dw else div_mod(j, nkb[cls])   # blocks in (input, output) channel order
        b = kb * s.w_plane[cls] + (g["tap"][rows][rep] * ncb[cls] + ci) * d
        parts.append((cls, b, np.minimum(d, walk.in_c - (s.c0[cls] + ci) * d), np.ones(len(b), bool)))
    return [np.concatenate(x) for x in zip(*parts)]


def _cut(sums: np.ndarray, cls: np.ndarray, addr: np.ndarray, amount: np.ndarray, weights: np.ndarray
         ) -> ClassReads:
    """The classes' sums and reads (those of real scratchpad rows, as toolkit.tally keeps), by class."""
    keep = (addr != GARBAGE) & ((addr & ACC_BIT) == 0)
    kept = np.flatnonzero(keep)
    kept = kept[np.argsort(cls[kept], kind="stable")]
    cls, addr, amount, weights = (x[kept] for x in (cls, addr, amount, weights))
    at = np.searchsorted(cls, np.arange(len(sums) + 1))
    zeros = np.zeros(len(addr), np.int64)
    return ClassReads(sums, Accesses(zeros, addr, zeros, amount), weights, at)


def input_loads(s: Specs, walk: Any, src: int) -> tuple[Census, np.ndarray]:
    """The mvin words (count 1) of input classes ``s``, one class after another (tiles._ConvWalk._input_loads
    of each one's first step, from buffer address ``src``; ``walk``: any of their op, hardware and geometry):
    every class's input slots laid flat one after another (runs.flat_rows), their runs found in one pass; and
    each word's class."""
    geo, d = walk.geo, walk.d
    rows = layouts(s.h0, s.nh, s.kh0, s.nkh, geo.stride[0], geo.padding[0])
    cols = layouts(s.w0, s.nw, s.kw0, s.nkw, geo.stride[1], geo.padding[1])
    of, p, at = flat_rows(s.nb * rows.size * cols.size)   # each class's slots laid flat
    q, lc = div_mod(p, cols.size[of])
    lb, lr = div_mod(q, rows.size[of])
    ih, iw = rows.index[rows.index_at[of] + lr], cols.index[cols.index_at[of] + lc]
    dram = (s.b0[of] + lb) * geo.steps[0] + ih * geo.steps[1] + iw * geo.steps[2]
    valid = (ih >= 0) & (ih < geo.in_h) & (iw >= 0) & (iw < geo.in_w)
    flat, length = row_runs(valid, valid[:-1] & valid[1:] & (np.diff(dram) == geo.mvin_stride), of, d)
    cls = of[flat]
    start = flat - at[cls]
    g, rel, cols_of, ng = groups(s.c0, s.nc, s.mb, walk.in_c, d)
    rep = np.repeat(np.arange(len(cls)), ng[cls])
    grp = (np.cumsum(ng) - ng)[cls[rep]] + ranks(ng[cls])
    local = rel[grp] * s.in_plane[cls[rep]] + start[rep]
    words = np.stack([np.full(len(rep), int(Funct.MVIN), np.uint64),
                      (src + dram[flat][rep] + g[grp] * d).astype(np.uint64),
                      operand(local, length[rep], cols_of[grp])], axis=1)
    zeros = np.zeros(len(rep), np.int64)
    return Census(words, zeros + 1, s.in_plane[cls[rep]], zeros), cls[rep]


def weight_loads(s: Specs, walk: Any, dram: int) -> tuple[Census, np.ndarray]:
    """The mvin2 words (count 1) of weight classes ``s`` (tiles._ConvWalk._weight_loads of each one's first
    step, from buffer address ``dram``), one class after another, and each word's class: per weight block
    (kernel row, kernel column, input channel block), a load per output channel group."""
    d, k1 = walk.d, walk.geo.kernel[1]
    nkw, ncb = s.nkw, s.nc
    g, rel, cols, ng = groups(s.k0, s.nk, s.mb, walk.out_c, d)
    per = s.nkh * nkw * ncb * ng
    cls = np.repeat(np.arange(len(per)), per)
    j = ranks(per)
    block, grp = div_mod(j, ng[cls])   # blocks in walk order, groups within
    grp += (np.cumsum(ng) - ng)[cls]
    tap, ci = div_mod(block, ncb[cls])
    kh, kw = div_mod(tap, nkw[cls])
    row = ((s.kh0[cls] + kh) * k1 + s.kw0[cls] + kw) * walk.in_c + (s.c0[cls] + ci) * d
    words = np.stack([np.full(len(cls), int(Funct.MVIN2), np.uint64),
                      (dram + row * walk.out_c + g[grp] * d).astype(np.uint64),
                      operand(rel[grp] * s.w_plane[cls] + block * d,
                              np.minimum(d, walk.in_c - (s.c0[cls] + ci) * d), cols[grp])], axis=1)
    zeros = np.zeros(len(cls), np.int64)
    return Census(words, zeros + 1, s.w_plane[cls], zeros), cls


def stores(s: Specs, walk: Any, dram: int, out_bytes: int, full: bool) -> tuple[Census, np.ndarray]:
    """The mvout words (count 1) of store classes ``s`` (tiles._ConvWalk._stores of each one's output tile, to
    buffer address ``dram``), one class after another, and each word's class: every class's pixels laid
    flat one after another, their runs of consecutive output pixels found in one pass."""
    op, d = walk.op, walk.d
    of, p, at = flat_rows(s.npix)   # each class's pixels laid flat
    q, pw = div_mod(p, s.nw[of])
    pb, ph = div_mod(q, s.nh[of])
    pix = ((s.b0[of] + pb) * op.out_h + s.h0[of] + ph) * op.out_w + s.w0[of] + pw
    flat, length = row_runs(np.ones(len(pix), bool), np.diff(pix) == 1, of, d)
    cls = of[flat]
    start = flat - at[cls]
    rep = np.repeat(np.arange(len(cls)), s.nk[cls])
    kb_rel = ranks(s.nk[cls])
    kb, cls = s.k0[cls[rep]] + kb_rel, cls[rep]
    words = np.stack([np.full(len(cls), int(Funct.MVOUT), np.uint64),
                      (dram + (pix[flat[rep]] * walk.out_c + kb * d) * out_bytes).astype(np.uint64),
                      operand(acc(kb_rel * s.acc_plane[cls] + start[rep], full=full), length[rep],
                              np.minimum(d, walk.out_c - kb * d))], axis=1)
    zeros = np.zeros(len(cls), np.int64)
    return Census(words, zeros + 1, zeros, zeros), cls
