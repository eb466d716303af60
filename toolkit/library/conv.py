"""gemmini.h's tiled_conv_auto (line ~2834, through tiled_conv_stride_auto ~2638): its tile choice,
and the words tiled_conv (~2168) issues: config_st, config_ex, then per tile gemmini_loop_conv_ws
(~360, through sp_tiled_conv ~1348).

The call this ports is ``tiled_conv_auto(batch, in_h, in_w, in_c, out_c, out_h, out_w, stride,
1, 1, padding, kernel_dim, false x5, input, weight, bias, output, act, scale, 0, 0, 0, WS)``:
in_stride = in_c, weight_stride = out_stride = out_c; a conv2d's fused ``pool`` is its pool_size,
pool_stride and pool_padding (else no pooling: gemmini.h's size 1, stride 1). The tile sizes are pixels and
channels, not blocks, and the sizing moves channels by one, so its tiles split channels
unevenly (256 input channels as 144 + 112, say). HAS_FIRST_LAYER_OPTIMIZATIONS is defined, as in
Gemmini's default configuration: a tile of at most dim / 2 input channels packs
``max_pixels_per_row`` kernel columns into a row.
"""
from __future__ import annotations

import itertools
from typing import Any, Callable, Mapping

import numpy as np

from isa import HardwareConfig
from isa.loop_words import LOOP_CONV_WORDS

from ..conv.ops import Conv2d, ConvOp
from ..lowering import attributes
from ..schedule import ScheduleError, grow_tiles
from .conv_tiles import (ARGS, conv_maxes, downsample, fused_pool, pool_args, pool_window, pooled_dims, spad_rows,
                         window)
from .schedule import CONV_ORDERS, LibraryConv, LibrarySchedule
from .words import ACT, NULL, at, ceil_div, fits_half

def auto_tiles(op: ConvOp, maxes: dict[str, int], channels: tuple[str, ...], hw: HardwareConfig) -> dict[str, int]:
    """tiled_conv_stride_auto's (and tiled_conv_dw_auto's) search: from the whole conv, shrink the largest
    argument until the tiles fit half of each memory (channels by a block, or down to a multiple of
    one; output columns kept while at most dim wide and more than one row is left), then grow the
    output columns, then every argument round-robin, one at a time."""
    def fits(t: dict[str, int]) -> bool:
        return fits_half(*spad_rows(t, op, hw.dim), hw)

    t = dict(maxes)
    while not fits(t):
        keep_cols = t["pocols"] <= hw.dim and t["porows"] > 1
        name = max((n for n in ARGS if not (n == "pocols" and keep_cols)), key=t.__getitem__)   # first of equals
        if t[name] == 1:
            raise ScheduleError(f"even the smallest tiles of {op.key} do not fit {hw.name}")
        if name in channels:
            t[name] = max(1, t[name] // hw.dim * hw.dim if t[name] % hw.dim else t[name] - hw.dim)
        else:
            t[name] -= 1
    t = grow_tiles(t, maxes, fits, ("pocols",), op.key)
    return grow_tiles(t, maxes, fits, ARGS, op.key)


def tiled_conv_auto(op: Conv2d, hw: HardwareConfig) -> LibraryConv:
    return LibraryConv(**auto_tiles(op, conv_maxes(op), ("pochs", "kchs"), hw))


def loop_fields(op: ConvOp, weight_stride: int, dw: bool) -> dict[str, Any]:
    """gemmini_loop_conv_ws's fields that every tile of ``op`` shares."""
    in_c = getattr(op, op.CHANNELS)
    size, pool_stride, pool_padding = pool_args(op)
    pool_h, pool_w = pooled_dims(op)
    return dict(pool_size=size, pool_stride=pool_stride, pool_padding=pool_padding, pool_out_row_dim=pool_h,
                pool_out_col_dim=pool_w, no_pool=int(fused_pool(op) is None), batch_size=op.batch, in_row_dim=op.in_h, in_col_dim=op.in_w, in_channels=in_c,
                out_channels=op.out_channels, out_row_dim=op.out_h, out_col_dim=op.out_w, stride=op.stride,
                padding=op.padding, kernel_dim=op.kernel[0], in_stride=in_c, weight_stride=weight_stride,
                out_stride=op.out_channels, no_bias=int(not op.bias), dw=int(dw), downsample=int(downsample(op)),
                activation=ACT[op.activation])


def tile_fields(op: ConvOp, hw: HardwareConfig, corner: tuple[int, int, int, int, int], t: dict[str, int],
                ich: int, och: int, output: str = "output") -> dict[str, Any]:
    """sp_tiled_conv's fields of the tile at (b, porow, pocol, krow, kcol) with sizes ``t``: its input
    window's padding, input and output addresses (channel ``ich`` / ``och``, in the buffer ``output``) and pixels
    per row."""
    b, porow, pocol, krow, kcol = corner
    orows, prows = pool_window(porow, t["porows"], op, op.out_h)
    ocols, pcols = pool_window(pocol, t["pocols"], op, op.out_w)
    rows = window(prows.start + prows.lo, orows, krow, t["krows"], op, op.in_h)
    cols = window(pcols.start + pcols.lo, ocols, kcol, t["kcols"], op, op.in_w)
    pixel = (b * op.in_h + rows.start + rows.lo) * op.in_w + cols.start + cols.lo
    wide = downsample(op) or t["kchs"] > hw.dim   # HAS_FIRST_LAYER_OPTIMIZATIONS packs narrow tiles
    pool_h, pool_w = pooled_dims(op)
    return dict(t, upad=rows.lo, dpad=rows.hi, lpad=cols.lo, rpad=cols.hi, orows=orows, ocols=ocols,
                pupad=prows.lo, pdpad=prows.hi, plpad=pcols.lo, prpad=pcols.hi,
                input=at("input", pixel * getattr(op, op.CHANNELS) + ich),
                output=at(output, ((b * pool_h + porow) * pool_w + pocol) * op.out_channels + och),
                max_pixels_per_row=1 if wide else min(hw.dim // t["kchs"], t["kcols"]))


def clipped(s: LibrarySchedule, maxes: dict[str, int], starts: dict[str, int]) -> dict[str, int]:
    """The tile's sizes: each tile argument, cut at the end of its dimension."""
    return {n: min(getattr(s, n), maxes[n] - starts[n]) for n in starts}


def conv_context(op: Conv2d, s: LibraryConv, hw: HardwareConfig, output: str = "output") -> dict[str, Any]:
    """The template's context: the words of ``s``'s tiles, writing the buffer ``output``."""
    s.memory_plan(hw, op)
    return dict(op=op, schedule=s.to_dict(), a_stride=op.stride >> downsample(op),
                words=attributes(conv_words(op, s, hw, output)))


# LibraryConv.order -> the loop nest of the host's walk, outermost first (kernel tiles innermost, so that a
# tile's partial sums stay in its accumulator half until its last kernel tile stores them)
NESTS = {"pixels": ARGS, "channels": ("pochs", "batches", "porows", "pocols", "krows", "kcols", "kchs")}
assert set(NESTS) == set(CONV_ORDERS)


def conv_walk(s: LibraryConv, maxes: dict[str, int]) -> list[dict[str, int]]:
    """Each tile's first index of every tiled_conv argument, in the host's walk ``s.order``."""
    nest = NESTS[s.order]
    return [dict(zip(nest, starts)) for starts in itertools.product(*(range(0, maxes[n], getattr(s, n)) for n in nest))]


def conv_loop_words(op: Conv2d, tiles: Mapping[str, np.ndarray]) -> np.ndarray:
    """The words gemmini_loop_conv_ws issues over :func:`conv_walk`'s tiles, at each point's tile arguments
    (``tiles``: an array of each, one value a point): seven a tile (isa.loop_words.LOOP_CONV_WORDS)."""
    maxes = conv_maxes(op)
    loops = np.prod([ceil_div(maxes[n], np.asarray(tiles[n], dtype=np.int64)) for n in ARGS], axis=0)
    return loops * len(LOOP_CONV_WORDS)


Reuse = tuple[int, bool]   # a tile's scratchpad id (0: the loop's slot) and whether the loop loads it


class Slots:
    """Scratchpad ids 1 and 2, each holding the last tile loaded under it: a tile that one holds is not
    loaded again, and a new one goes under the id that the previous loop did not use."""

    def __init__(self) -> None:
        self.held: dict[int, tuple | None] = {1: None, 2: None}
        self.last = 2

    def take(self, key: tuple) -> Reuse:
        hit = next((i for i, k in self.held.items() if k == key), None)
        self.last = hit or 3 - self.last
        self.held[self.last] = key
        return self.last, hit is None


def reuse(s: LibraryConv, maxes: dict[str, int]) -> Callable[[dict[str, int]], tuple[Reuse, Reuse]]:
    """Per tile (in walk order), the input's and the weights' :data:`Reuse`: with ``s.resident``, two
    :class:`Slots`; else gemmini.h's, one id per tile where the conv has at most two input tiles (a_reuse) or
    weight tiles (b_reuse), each loaded by the first loop that needs it (in either order)."""
    if s.resident:
        inputs, weights = Slots(), Slots()
        return lambda t: (inputs.take(tuple(t[n] for n in ARGS if n != "pochs")),
                          weights.take(tuple(t[n] for n in ("pochs", "krows", "kcols", "kchs"))))
    count: Callable[[str], int] = lambda n: ceil_div(maxes[n], getattr(s, n))
    kernel_tiles = count("kchs") * count("krows") * count("kcols")
    b_reuse = kernel_tiles * count("pochs") <= 2
    a_reuse = kernel_tiles * count("batches") * count("porows") * count("pocols") <= 2

    def ids(t: dict[str, int]) -> tuple[Reuse, Reuse]:
        kernel, pixels = t["kchs"] + t["krows"] + t["kcols"], t["batches"] + t["porows"] + t["pocols"]
        a = (1 if kernel + pixels == 0 else 2, t["pochs"] == 0) if a_reuse else (0, True)
        b = (1 if kernel + t["pochs"] == 0 else 2, pixels == 0) if b_reuse else (0, True)
        return a, b
    return ids


def conv_words(op: Conv2d, s: LibraryConv, hw: HardwareConfig, output: str = "output") -> list[dict[str, Any]]:
    """tiled_conv's loop (gemmini.h's b, porow, pocol, poch, krow, kcol, kch, or ``s.order``'s), the fields of
    gemmini_loop_conv_ws per tile: the bias (or, without one, the dummy pointer (acc_t*)1 + poch) with a
    tile's first kernel tile, the output with its last; input or weights kept in the scratchpad under an id
    as :func:`reuse` says."""
    maxes = conv_maxes(op)
    kd = maxes["krows"]
    fixed = loop_fields(op, op.out_c, dw=False)
    ids = reuse(s, maxes)
    words = []
    for starts in conv_walk(s, maxes):
        b, porow, pocol, poch, krow, kcol, kch = (starts[n] for n in ARGS)
        (a_spad_id, load_input), (b_spad_id, load_weights) = ids(starts)
        w = tile_fields(op, hw, (b, porow, pocol, krow, kcol), clipped(s, maxes, starts), kch, poch, output)
        last = krow + s.krows >= kd and kcol + s.kcols >= kd and kch + s.kchs >= op.in_c
        first = krow == kcol == kch == 0
        words.append({
            **fixed, **w, "a_spad_id": a_spad_id, "b_spad_id": b_spad_id,
            "input": w["input"] if load_input else NULL,
            "output": w["output"] if last else NULL,
            "bias": (at("bias", 4 * poch) if op.bias else 1 + 4 * poch) if first else NULL,
            "weights": at("weight", (krow * kd * op.in_c + kcol * op.in_c + kch) * op.out_c + poch)
            if load_weights else NULL})
    return words
