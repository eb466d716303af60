"""tiled_conv's tile arguments and what they take of the memories (gemmini.h ~2168, tiled_conv_total_spad_rows),
apart from the words: LibraryConv's memory plan (toolkit/library/schedule.py) and the auto-tilers
(toolkit/library/conv.py, depthwise.py) both size tiles with them.

The tile sizes are pixels and channels, not blocks; a conv's fused ``pool`` makes its rows and columns
pooled outputs.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Mapping, NamedTuple, Union

import numpy as np

from isa import HardwareConfig

from ..schedule import ScheduleError
from .words import ceil_div

if TYPE_CHECKING:
    from ..conv.ops import Conv2d, ConvOp

ARGS = ("batches", "porows", "pocols", "pochs", "krows", "kcols", "kchs")   # tiled_conv_stride_auto's args[]
# what each argument is a tile of, for errors that name it
ARG_EXTENTS = dict(batches="images", porows="output rows", pocols="output columns", pochs="output channels",
                   krows="kernel rows", kcols="kernel columns", kchs="input channels")
Ints = Union[int, np.ndarray]   # one tile's value, or an array of them (a value a point)


def check_conv(op: "ConvOp", call: str) -> int:
    """The one kernel_dim gemmini.h takes; ScheduleError for what its convs cannot do."""
    if op.kernel[0] != op.kernel[1]:
        raise ScheduleError(f"gemmini.h's {call} takes one kernel_dim (a square kernel), not kernel={op.kernel}")
    if op.out_dtype == "int32":   # uint8 comes from the store unit's requantization extension
        raise ScheduleError(f"gemmini.h's {call} writes 8-bit outputs only, not out_dtype={op.out_dtype!r}")
    return op.kernel[0]


def fused_pool(op: "ConvOp") -> tuple[int, int, int] | None:
    """The pool tiled_conv fuses: the conv's, but none where the store unit's pooling (a padded position as 0) is
    not the op's ONNX MaxPool and the pool runs apart (conv_pool.py); the tiles are then the conv's own."""
    return getattr(op, "pool", None) if getattr(op, "pool_pads_as_onnx", True) else None


def pool_args(op: "ConvOp") -> tuple[int, int, int]:
    """tiled_conv's (pool_size, pool_stride, pool_padding): the fused pool's, or (1, 1, 0) without one."""
    return fused_pool(op) or (1, 1, 0)


def pooled_dims(op: "ConvOp") -> tuple[int, int]:
    """tiled_conv's pool_out_row_dim and pool_out_col_dim."""
    size, stride, padding = pool_args(op)
    return ((op.out_h + 2 * padding - size) // stride + 1, (op.out_w + 2 * padding - size) // stride + 1)


def downsample(op: "ConvOp") -> bool:
    """tiled_conv's downsample: a 1x1 kernel at stride 2 over even sizes, unpadded and unpooled, reads every other
    pixel."""
    return op.stride == 2 and op.kernel == (1, 1) and op.in_h % 2 == 0 and op.in_w % 2 == 0 and op.padding == 0 \
        and fused_pool(op) is None


def spad_rows(t: Mapping[str, Ints], op: "ConvOp", dim: int) -> tuple[Ints, Ints]:
    """tiled_conv_total_spad_rows without dilation or transposes: (scratchpad, accumulator) rows (of arrays of
    tiles, arrays)."""
    size, pool_stride, _ = pool_args(op)
    stride, ds = op.stride, downsample(op)
    orows, ocols = t["porows"] * pool_stride + size - 1, t["pocols"] * pool_stride + size - 1
    irows, icols = orows * stride + t["krows"] - 1, ocols * stride + t["kcols"] - 1
    ich_banks, och_banks = ceil_div(t["kchs"], dim), ceil_div(t["pochs"], dim)
    a = ich_banks * t["batches"] * (irows >> ds) * (icols >> ds)
    b = och_banks * t["kcols"] * t["krows"] * t["kchs"]
    return a + b, och_banks * t["batches"] * orows * ocols


class Window(NamedTuple):
    """A tile's input rows (or columns): first index (may be negative) and the padding on each side."""

    start: Ints
    lo: Ints
    hi: Ints


def _positive(x: Ints) -> Ints:
    """max(0, x) of an int, or of each of an array's (the space's fit test asks of all its points at once)."""
    return x * (x > 0)


def window(o: Ints, tile_o: Ints, k: Ints, tile_k: Ints, op: ConvOp, extent: int) -> Window:
    start = o * op.stride + k - op.padding
    end = start + tile_o * op.stride + tile_k - 1
    return Window(start, _positive(-start), _positive(end - extent))


def pool_window(po: Ints, tile_po: Ints, op: ConvOp, extent: int) -> tuple[Ints, Window]:
    """tiled_conv's conv output rows (or columns) of a tile of ``tile_po`` pooled ones from ``po``: their count
    without the pool's padding, and where they start with that padding on each side (pupad, pdpad)."""
    size, stride, padding = pool_args(op)
    start, count = po * stride - padding, tile_po * stride + size - 1
    w = Window(start, _positive(-start), _positive(start + count - extent))
    return count - w.lo - w.hi, w


def conv_maxes(op: "Conv2d") -> dict[str, int]:
    """tiled_conv_stride_auto's max_args: the whole (pooled) conv."""
    kd = check_conv(op, "tiled_conv_auto")
    porows, pocols = pooled_dims(op)
    return dict(batches=op.batch, porows=porows, pocols=pocols, pochs=op.out_c, krows=kd, kcols=kd, kchs=op.in_c)


def dw_maxes(op: "ConvOp") -> dict[str, int]:
    """tiled_conv_dw_auto's max_args: one channel, and (our layout, see depthwise.py) one kernel tap."""
    check_conv(op, "tiled_conv_dw_auto")
    return dict(batches=op.batch, porows=op.out_h, pocols=op.out_w, pochs=1, krows=1, kcols=1, kchs=1)


def conv_tile_rows(what: str, tiles: dict[str, int], op: "ConvOp", hw: HardwareConfig,
                   maxes: dict[str, int] | None = None) -> tuple[int, int]:
    """The (scratchpad, accumulator) rows of ``tiles``, tiled_conv's arguments for ``op`` (``what`` names them in
    errors; ``maxes`` the conv's extents, conv_maxes by default); ScheduleError, naming the argument, where a
    tile is larger than the conv, or where the tiles do not fit half of each memory (gemmini.h's assertions:
    the other halves hold the next tile)."""
    maxes = conv_maxes(op) if maxes is None else maxes
    for name in ARGS:
        if tiles[name] > maxes[name]:
            raise ScheduleError(f"{what}: {name}={tiles[name]} is larger than the conv's {maxes[name]} "
                                f"{ARG_EXTENTS[name]}")
    for out_arg, po, k_arg, k, padding_only in padding_windows(tiles, op, maxes):
        if padding_only:
            raise ScheduleError(f"{what}: the tile of {out_arg} from {po} and {k_arg} from {k} reads only "
                                f"padding (padding={op.padding}); take larger {k_arg} or {out_arg}")
    spad, acc = spad_rows(tiles, op, hw.dim)
    half_sp, half_acc = hw.sp_rows // 2, hw.acc_rows // 2
    if spad > half_sp:
        raise ScheduleError(f"{what} does not fit {hw.name}: its input and weight tiles need {spad} scratchpad rows "
                            f"(of {half_sp}, half the scratchpad); shrink kchs, krows, kcols, pochs or the "
                            "output tile (batches, porows, pocols)")
    if acc > half_acc:
        raise ScheduleError(f"{what} does not fit {hw.name}: its output tile needs {acc} accumulator rows (of "
                            f"{half_acc}, half the accumulator); shrink pochs, batches, porows or pocols")
    return spad, acc


# per axis of the image: its output tile argument, kernel tile argument, and the op's output and input extents
AXES = (("porows", "krows", "out_h", "in_h"), ("pocols", "kcols", "out_w", "in_w"))


def edges(size: int, tile: Ints) -> list[tuple[Ints, Ints]]:
    """The first and the last tile of ``size`` in tiles of ``tile``: (start, its size)."""
    last = (size - 1) // tile * tile
    return [(0, np.minimum(tile, size)), (last, size - last)]


def padding_windows(tiles: Mapping[str, Ints], op: "Conv2d", maxes: dict[str, int]
                    ) -> Iterator[tuple[str, Ints, str, Ints, Any]]:
    """(output argument, its tile's start, kernel argument, its tile's start, whether the tile's input rows (or
    columns) lie wholly in the padding, further out than the tile reaches): LoopConv cannot load such a tile
    (gemmini.h's auto-tiler keeps the whole kernel, so it never meets one). The windows move out with the output
    and kernel tiles' starts, so the first and the last of each are the extremes. Of arrays of tiles, arrays."""
    for out_arg, k_arg, out_dim, in_dim in AXES:
        for po, tile_po in edges(maxes[out_arg], tiles[out_arg]):
            count, pooled = pool_window(po, tile_po, op, getattr(op, out_dim))
            for k, tile_k in edges(maxes[k_arg], tiles[k_arg]):
                w = window(pooled.start + pooled.lo, count, k, tile_k, op, getattr(op, in_dim))
                yield out_arg, po, k_arg, k, w.lo + w.hi > count * op.stride + tile_k - 1


def conv_tiles_fit(tiles: Mapping[str, np.ndarray], op: "Conv2d", hw: HardwareConfig) -> np.ndarray:
    """Whether :func:`conv_tile_rows` takes each point of ``tiles`` (an array of each argument, a value a
    point), all at once: a tile within the conv that reads more than padding, and fits half of each memory."""
    maxes = conv_maxes(op)
    ok = np.logical_and.reduce([np.asarray(tiles[n]) <= maxes[n] for n in ARGS])
    for *_, padding_only in padding_windows(tiles, op, maxes):
        ok &= ~padding_only
    spad, acc = spad_rows(tiles, op, hw.dim)
    return ok & (spad <= hw.sp_rows // 2) & (acc <= hw.acc_rows // 2)


def tile_args(s: Any) -> dict[str, int]:
    """A schedule's tiled_conv arguments by name (its other fields left out)."""
    return {name: getattr(s, name) for name in ARGS}
