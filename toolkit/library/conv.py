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
from typing import Any, Callable, NamedTuple

from isa import HardwareConfig

from ..conv.ops import Conv2d, ConvOp
from ..schedule import ScheduleError, grow_tiles
from .schedule import LibraryConv, LibrarySchedule
from .words import ACT, NULL, at, ceil_div, check_fits, fits_half

ARGS = ("batches", "porows", "pocols", "pochs", "krows", "kcols", "kchs")   # tiled_conv_stride_auto's args[]


def check_conv(op: ConvOp, call: str) -> int:
    """The one kernel_dim gemmini.h takes; ScheduleError for what its convs cannot do."""
    if op.kernel[0] != op.kernel[1]:
        raise ScheduleError(f"gemmini.h's {call} takes one kernel_dim (a square kernel), not kernel={op.kernel}")
    if op.out_dtype == "int32":   # uint8 comes from the store unit's requantization extension
        raise ScheduleError(f"gemmini.h's {call} writes 8-bit outputs only, not out_dtype={op.out_dtype!r}")
    return op.kernel[0]


def pool_args(op: ConvOp) -> tuple[int, int, int]:
    """tiled_conv's (pool_size, pool_stride, pool_padding): the fused pool's, or (1, 1, 0) without one."""
    return getattr(op, "pool", None) or (1, 1, 0)


def pooled_dims(op: ConvOp) -> tuple[int, int]:
    """tiled_conv's pool_out_row_dim and pool_out_col_dim."""
    size, stride, padding = pool_args(op)
    return ((op.out_h + 2 * padding - size) // stride + 1, (op.out_w + 2 * padding - size) // stride + 1)


def downsample(op: ConvOp) -> bool:
    """tiled_conv's downsample: a 1x1 kernel at stride 2 over even sizes, unpadded and unpooled, reads every other
    pixel."""
    return op.stride == 2 and op.kernel == (1, 1) and op.in_h % 2 == 0 and op.in_w % 2 == 0 and op.padding == 0 \
        and getattr(op, "pool", None) is None


def spad_rows(t: dict[str, int], op: ConvOp, dim: int) -> tuple[int, int]:
    """tiled_conv_total_spad_rows without dilation or transposes: (scratchpad, accumulator) rows."""
    size, pool_stride, _ = pool_args(op)
    stride, ds = op.stride, downsample(op)
    orows, ocols = t["porows"] * pool_stride + size - 1, t["pocols"] * pool_stride + size - 1
    irows, icols = orows * stride + t["krows"] - 1, ocols * stride + t["kcols"] - 1
    ich_banks, och_banks = ceil_div(t["kchs"], dim), ceil_div(t["pochs"], dim)
    a = ich_banks * t["batches"] * (irows >> ds) * (icols >> ds)
    b = och_banks * t["kcols"] * t["krows"] * t["kchs"]
    return a + b, och_banks * t["batches"] * orows * ocols


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


def conv_maxes(op: Conv2d) -> dict[str, int]:
    """tiled_conv_stride_auto's max_args: the whole (pooled) conv."""
    kd = check_conv(op, "tiled_conv_auto")
    porows, pocols = pooled_dims(op)
    return dict(batches=op.batch, porows=porows, pocols=pocols, pochs=op.out_c, krows=kd, kcols=kd, kchs=op.in_c)


def tiled_conv_auto(op: Conv2d, hw: HardwareConfig) -> LibraryConv:
    return LibraryConv(**auto_tiles(op, conv_maxes(op), ("pochs", "kchs"), hw))


class Window(NamedTuple):
    """A tile's input rows (or columns): first index (may be negative) and the padding on each side."""

    start: int
    lo: int
    hi: int


def window(o: int, tile_o: int, k: int, tile_k: int, op: ConvOp, extent: int) -> Window:
    start = o * op.stride + k - op.padding
    end = start + tile_o * op.stride + tile_k - 1
    return Window(start, max(0, -start), max(0, end - extent))


def pool_window(po: int, tile_po: int, op: ConvOp, extent: int) -> tuple[int, Window]:
    """tiled_conv's conv output rows (or columns) of a tile of ``tile_po`` pooled ones from ``po``: their count
    without the pool's padding, and where they start with that padding on each side (pupad, pdpad)."""
    size, stride, padding = pool_args(op)
    start, count = po * stride - padding, tile_po * stride + size - 1
    w = Window(start, max(0, -start), max(0, start + count - extent))
    return count - w.lo - w.hi, w


def loop_fields(op: ConvOp, weight_stride: int, dw: bool) -> dict[str, Any]:
    """gemmini_loop_conv_ws's fields that every tile of ``op`` shares."""
    in_c = getattr(op, op.CHANNELS)
    size, pool_stride, pool_padding = pool_args(op)
    pool_h, pool_w = pooled_dims(op)
    return dict(pool_size=size, pool_stride=pool_stride, pool_padding=pool_padding, pool_out_row_dim=pool_h,
                pool_out_col_dim=pool_w, no_pool=int(getattr(op, "pool", None) is None), batch_size=op.batch, in_row_dim=op.in_h, in_col_dim=op.in_w, in_channels=in_c,
                out_channels=op.out_channels, out_row_dim=op.out_h, out_col_dim=op.out_w, stride=op.stride,
                padding=op.padding, kernel_dim=op.kernel[0], in_stride=in_c, weight_stride=weight_stride,
                out_stride=op.out_channels, no_bias=int(not op.bias), dw=int(dw), downsample=int(downsample(op)),
                activation=ACT[op.activation])


def tile_fields(op: ConvOp, hw: HardwareConfig, corner: tuple[int, int, int, int, int], t: dict[str, int],
                ich: int, och: int) -> dict[str, Any]:
    """sp_tiled_conv's fields of the tile at (b, porow, pocol, krow, kcol) with sizes ``t``: its input
    window's padding, input and output addresses (channel ``ich`` / ``och``) and pixels per row."""
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
                output=at("output", ((b * pool_h + porow) * pool_w + pocol) * op.out_channels + och),
                max_pixels_per_row=1 if wide else min(hw.dim // t["kchs"], t["kcols"]))


def check_tiles(op: ConvOp, s: LibrarySchedule, t: dict[str, int], hw: HardwareConfig) -> None:
    """tiled_conv's (and tiled_conv_dw's) assertions on tiles ``t``: they fit half of each memory."""
    check_fits(s.describe(), *spad_rows(t, op, hw.dim), hw)


def clipped(s: LibrarySchedule, maxes: dict[str, int], starts: dict[str, int]) -> dict[str, int]:
    """The tile's sizes: each tile argument, cut at the end of its dimension."""
    return {n: min(getattr(s, n), maxes[n] - starts[n]) for n in starts}


def conv_context(op: Conv2d, s: LibraryConv, hw: HardwareConfig) -> dict[str, Any]:
    check_tiles(op, s, s.to_dict(), hw)
    return dict(op=op, schedule=s.to_dict(), a_stride=op.stride >> downsample(op), words=conv_words(op, s, hw))


def conv_words(op: Conv2d, s: LibraryConv, hw: HardwareConfig) -> list[dict[str, Any]]:
    """tiled_conv's loop (b, porow, pocol, poch, krow, kcol, kch), the fields of gemmini_loop_conv_ws per
    tile: the bias (or, without one, the dummy pointer (acc_t*)1 + poch) with a tile's first kernel
    tile, the output with its last; input or weights loaded once under a scratchpad id when they span
    at most two tiles (a_reuse, b_reuse)."""
    maxes = conv_maxes(op)
    kd = maxes["krows"]
    count: Callable[[str], int] = lambda n: ceil_div(maxes[n], getattr(s, n))
    kernel_tiles = count("kchs") * count("krows") * count("kcols")
    b_reuse = kernel_tiles * count("pochs") <= 2
    a_reuse = kernel_tiles * count("batches") * count("porows") * count("pocols") <= 2
    fixed = loop_fields(op, op.out_c, dw=False)
    a_spad_id = b_spad_id = 0
    words = []
    for starts in itertools.product(*(range(0, maxes[n], getattr(s, n)) for n in ARGS)):
        b, porow, pocol, poch, krow, kcol, kch = starts
        if a_reuse:
            a_spad_id = 1 if kch + krow + kcol + b + porow + pocol == 0 else 2
        if b_reuse:
            b_spad_id = 1 if kch + poch + krow + kcol == 0 else 2
        t = clipped(s, maxes, dict(zip(ARGS, starts)))
        w = tile_fields(op, hw, (b, porow, pocol, krow, kcol), t, kch, poch)
        last = krow + s.krows >= kd and kcol + s.kcols >= kd and kch + s.kchs >= op.in_c
        first = krow == kcol == kch == 0
        words.append({
            **fixed, **w, "a_spad_id": a_spad_id, "b_spad_id": b_spad_id,
            "input": NULL if a_reuse and poch > 0 else w["input"],
            "output": w["output"] if last else NULL,
            "bias": (at("bias", 4 * poch) if op.bias else 1 + 4 * poch) if first else NULL,
            "weights": NULL if b_reuse and pocol + porow + b > 0 else
            at("weight", (krow * kd * op.in_c + kcol * op.in_c + kch) * op.out_c + poch)})
    return words
