"""Conv heuristics: the earlier port of Gemmini's tiled_conv_auto (schedule="gemmini-flat"; the baseline
itself, gemmini.h's own words, is toolkit/library/) and the toolkit's pipelined default."""
from __future__ import annotations

from typing import Any

from isa import HardwareConfig

from ..schedule import ScheduleError, grow_tiles
from .geometry import conv_geometry
from .ops import Conv2d, DepthwiseConv2d
from .schedule import ConvSchedule, DepthwiseSchedule


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


def default_conv_schedule(op: Conv2d | DepthwiseConv2d, hw: HardwareConfig, *, pack_taps: bool | None = None
                          ) -> ConvSchedule | DepthwiseSchedule:
    """The toolkit's heuristic: tiled_conv_auto's sizing under the software pipeline, with the halves
    of each double buffer in different banks (input and weights in banks of their own where the
    scratchpad has four or more). A conv2d packs its taps (``pack_taps``; None: where that saves
    weight blocks and a tap fills less than one block, in_c < dim, as in the network stems, where it
    won 3.3x (ResNet-50 conv1) and 1.3x (MobileNetV2 stem) on the RTL; with in_c >= dim it saves at
    most a block per kernel row and costs the padding copy: the tuner may still try it)."""
    pipelined: dict = dict(load_ahead=1, store_delay=1, split_buffers=True)
    if isinstance(op, Conv2d):
        if pack_taps is None:
            pack_taps = op.in_c < hw.dim and packing_saves_blocks(op, hw)
        pipelined["pack_taps"] = pack_taps
    placements = [dict(w_bank=1), dict(w_bank=0)] if hw.sp_banks >= 4 else [dict(w_bank=0)]
    for placement in placements:
        try:
            return _sized(op, hw, {**pipelined, **placement})
        except ScheduleError:
            continue
    return gemmini_conv_schedule(op, hw)
