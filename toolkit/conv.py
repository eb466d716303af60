"""Convolutions: conv2d and depthwise conv2d ops, their schedules, the default heuristic, the lowering.

Both lower as a *direct* convolution, weight-stationary, with no im2col copy in
DRAM. An output tile is a block of (batch, output rows, output columns, channel
blocks) pixels; each kernel tap (kh, kw) is a GEMM of the tile's output pixels
(rows of A) against that tap's C x K weights. The input tile sits in the
scratchpad one pixel per row (``dim`` channels wide, one plane per channel
block), laid out so that every tap reads its pixels as consecutive rows:

* Along each spatial axis the input indices a tile needs, o * stride + k - padding,
  are stored by *phase* (their residue modulo the stride). Within a phase,
  consecutive output pixels read consecutive scratchpad rows, so computes use
  ``a_stride=1``, and one strided mvin (``dram_stride = stride * C`` bytes)
  gathers a run of every stride-th input pixel. For stride 1 this is the
  plain halo'd tile; for a 1x1 stride-2 conv it loads only the pixels used.
* Padding is never loaded nor read: each tap computes only the output pixels
  whose input is inside the image (fewer ``a_rows``), and pixels the first tap
  misses are zeroed in the accumulator with a garbage compute (``A = 0``) when
  there is no bias to initialise them. So no zeros are needed in the scratchpad
  and no DRAM outside the input buffer is read.
* Pixel runs merge across rows and images whenever both the scratchpad rows and
  the DRAM pixels are consecutive (full-width tiles of 1x1 convs), so small
  feature maps still fill the array's ``dim`` rows.

Depthwise conv (channel multiplier 1) reuses the same input tiles and loops; its
per-tap weights become diagonal ``dim x dim`` blocks built in the scratchpad
(zero the block with a garbage compute, then per row i an mvin of i + 1 weights
and a garbage compute zeroing the first i columns: column-masked writes make the
diagonal). The mesh then does 1/dim useful work, but everything stays on the
ISA and bit-exact.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Iterable, Mapping, NamedTuple

import numpy as np

from isa import HardwareConfig, Program, layout
from isa.assembly import parse_program

from .lowering import LOWERINGS, render
from .ops import EpilogueOp, Op, check_choice, check_epilogue, positive_int, wrap_int32
from .schedule import DEFAULTS, SCHEDULES, MemoryPlan, Region, Schedule, ScheduleError, check_int

Spec = dict[str, tuple[tuple[int, ...], str]]


# ---- ops -------------------------------------------------------------------------------------
def _kernel_pair(value: Any) -> tuple[int, int]:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (value, value)
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ValueError(f"kernel must be an int or a (kh, kw) pair, got {value!r}")
    return positive_int("kernel[0]", value[0]), positive_int("kernel[1]", value[1])


def _check_window(op: Any, channels_name: str) -> None:
    """Validate and normalise the sizes, kernel, stride and padding of a windowed op."""
    for name in ("batch", "in_h", "in_w", channels_name):
        object.__setattr__(op, name, positive_int(name, getattr(op, name)))
    object.__setattr__(op, "kernel", _kernel_pair(op.kernel))
    object.__setattr__(op, "stride", positive_int("stride", op.stride))
    if isinstance(op.padding, bool) or not isinstance(op.padding, (int, np.integer)) or op.padding < 0:
        raise ValueError(f"padding must be a non-negative integer, got {op.padding!r}")
    object.__setattr__(op, "padding", int(op.padding))
    kh, kw = op.kernel
    if kh > op.in_h + 2 * op.padding or kw > op.in_w + 2 * op.padding:
        raise ValueError(f"kernel={op.kernel} is larger than the padded input "
                         f"({op.in_h + 2 * op.padding}x{op.in_w + 2 * op.padding} with padding={op.padding})")


def out_size(extent: int, kernel: int, stride: int, padding: int) -> int:
    return (extent + 2 * padding - kernel) // stride + 1


def taps(x: np.ndarray, kernel: tuple[int, int], stride: int, padding: int, fill: int = 0
         ) -> Iterable[tuple[int, int, np.ndarray]]:
    """(kh, kw, view) per kernel tap: the (N, OH, OW, C) input pixels that tap reads, padded with ``fill``."""
    n, h, w, c = x.shape
    oh, ow = out_size(h, kernel[0], stride, padding), out_size(w, kernel[1], stride, padding)
    xp = np.pad(x, ((0, 0), (padding, padding), (padding, padding), (0, 0)), constant_values=fill)
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            yield i, j, xp[:, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride, :]


class _Window:
    """Output geometry shared by the windowed ops (fields batch, in_h, in_w, kernel, stride, padding)."""

    batch: int
    in_h: int
    in_w: int
    kernel: tuple[int, int]
    stride: int
    padding: int

    @property
    def out_h(self) -> int:
        return out_size(self.in_h, self.kernel[0], self.stride, self.padding)

    @property
    def out_w(self) -> int:
        return out_size(self.in_w, self.kernel[1], self.stride, self.padding)


@dataclass(frozen=True)
class Conv2d(_Window, EpilogueOp):
    """output = epilogue(conv(input, weight) + bias); input NHWC int8, weight HWIO int8, bias K int32."""

    batch: int
    in_h: int
    in_w: int
    in_c: int
    out_c: int
    kernel: tuple[int, int] = (3, 3)
    stride: int = 1
    padding: int = 1
    bias: str | None = None
    activation: str = "none"
    scale: float = 1.0
    out_dtype: str = "int8"

    KIND: ClassVar[str] = "conv2d"

    def __post_init__(self) -> None:
        _check_window(self, "in_c")
        object.__setattr__(self, "out_c", positive_int("out_c", self.out_c))
        check_choice("bias", self.bias, (None, "channel"))
        object.__setattr__(self, "scale", check_epilogue(self.activation, self.scale, self.out_dtype))

    def input_specs(self) -> Spec:
        specs = {"input": ((self.batch, self.in_h, self.in_w, self.in_c), "int8"),
                 "weight": ((*self.kernel, self.in_c, self.out_c), "int8")}
        if self.bias:
            specs["bias"] = ((self.out_c,), "int32")
        return specs

    def output_specs(self) -> Spec:
        return {"output": ((self.batch, self.out_h, self.out_w, self.out_c), self.out_dtype)}

    @property
    def macs(self) -> int:
        return self.batch * self.out_h * self.out_w * self.out_c * self.kernel[0] * self.kernel[1] * self.in_c

    def accumulate(self, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        """int32 accumulators; float64 sums of int8 products are exact (far below 2^53)."""
        acc = np.zeros((self.batch, self.out_h, self.out_w, self.out_c), dtype=np.float64)
        w = inputs["weight"].astype(np.float64)
        for i, j, view in taps(inputs["input"], self.kernel, self.stride, self.padding):
            acc += view.astype(np.float64) @ w[i, j]
        return wrap_int32(acc, inputs["bias"] if self.bias else None)


@dataclass(frozen=True)
class DepthwiseConv2d(_Window, EpilogueOp):
    """Depthwise conv, channel multiplier 1: input NHWC int8, weight (KH, KW, C) int8, bias C int32."""

    batch: int
    in_h: int
    in_w: int
    channels: int
    kernel: tuple[int, int] = (3, 3)
    stride: int = 1
    padding: int = 1
    bias: str | None = None
    activation: str = "none"
    scale: float = 1.0
    out_dtype: str = "int8"

    KIND: ClassVar[str] = "depthwise"

    def __post_init__(self) -> None:
        _check_window(self, "channels")
        check_choice("bias", self.bias, (None, "channel"))
        object.__setattr__(self, "scale", check_epilogue(self.activation, self.scale, self.out_dtype))

    def input_specs(self) -> Spec:
        specs = {"input": ((self.batch, self.in_h, self.in_w, self.channels), "int8"),
                 "weight": ((*self.kernel, self.channels), "int8")}
        if self.bias:
            specs["bias"] = ((self.channels,), "int32")
        return specs

    def output_specs(self) -> Spec:
        return {"output": ((self.batch, self.out_h, self.out_w, self.channels), self.out_dtype)}

    @property
    def macs(self) -> int:
        return self.batch * self.out_h * self.out_w * self.channels * self.kernel[0] * self.kernel[1]

    def accumulate(self, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        acc = np.zeros((self.batch, self.out_h, self.out_w, self.channels), dtype=np.int64)
        w = inputs["weight"].astype(np.int64)
        for i, j, view in taps(inputs["input"], self.kernel, self.stride, self.padding):
            acc += view * w[i, j]
        return wrap_int32(acc, inputs["bias"] if self.bias else None)


def conv2d(batch: int, in_h: int, in_w: int, in_c: int, out_c: int, *, kernel: int | tuple[int, int] = (3, 3),
           stride: int = 1, padding: int = 1, bias: str | None = None, activation: str = "none",
           scale: float = 1.0, out_dtype: str = "int8") -> Conv2d:
    """A conv2d op (NHWC input, HWIO weight): ``output = epilogue(conv + bias)``."""
    return Conv2d(batch, in_h, in_w, in_c, out_c, kernel, stride, padding, bias, activation, scale, out_dtype)


def depthwise_conv2d(batch: int, in_h: int, in_w: int, channels: int, *, kernel: int | tuple[int, int] = (3, 3),
                     stride: int = 1, padding: int = 1, bias: str | None = None, activation: str = "none",
                     scale: float = 1.0, out_dtype: str = "int8") -> DepthwiseConv2d:
    """A depthwise conv2d op (channel multiplier 1; weight (KH, KW, C))."""
    return DepthwiseConv2d(batch, in_h, in_w, channels, kernel, stride, padding, bias, activation, scale,
                           out_dtype)


# ---- schedules -------------------------------------------------------------------------------
def axis_slots(tile: int, ktile: int, stride: int | None) -> int:
    """Input indices {o * stride + k} an output tile of ``tile`` and kernel tile of ``ktile`` reads.

    Without the stride (``None``) the bound for any stride, tile * ktile.
    """
    if stride is None or stride > ktile:
        return tile * ktile
    return (tile - 1) * stride + ktile


class Tiles(NamedTuple):
    b: int
    oh: int
    ow: int
    k: int       # output-channel blocks (the channel tile itself for depthwise)
    kh: int
    kw: int
    c: int       # input-channel blocks


@dataclass(frozen=True)
class ConvPlan(MemoryPlan):
    """a: input tile, b: weights, c: accumulators; planes are the rows of one channel block."""

    in_plane: int
    w_plane: int
    acc_plane: int


@dataclass(frozen=True)
class _ConvScheduleBase(Schedule):
    """Shared knob checks and memory plan of the conv schedules."""

    ORDER: ClassVar[str] = ""

    def tiles(self) -> Tiles:
        raise NotImplementedError

    def __post_init__(self) -> None:
        for name, value in self.to_dict().items():
            if name.startswith("tile_") or name == "mvin_blocks":
                check_int(name, value, 1)
            elif name.endswith("_bank"):
                check_int(name, value, 0)
        if sorted(self.loop_order) != sorted(self.ORDER):
            raise ScheduleError(f"loop_order={self.loop_order!r} must be a permutation of {self.ORDER!r}")
        if not isinstance(self.double_buffer, bool):
            raise ScheduleError(f"double_buffer={self.double_buffer!r} must be true or false")

    def memory_plan(self, hw: HardwareConfig, op: Any = None) -> ConvPlan:
        """Place the input, weight and accumulator tiles; ScheduleError if they do not fit.

        The input tile's rows depend on the op's stride; without ``op`` the plan
        assumes the worst stride, so a plan that fits then fits every op.
        """
        check_int("mvin_blocks", self.mvin_blocks, 1, hw.max_block_len)
        check_int("in_bank", self.in_bank, 0, hw.sp_banks - 1)
        check_int("w_bank", self.w_bank, 0, hw.sp_banks - 1)
        check_int("acc_bank", self.acc_bank, 0, hw.acc_banks - 1)
        t, d = self.tiles(), hw.dim
        nbuf = 2 if self.double_buffer else 1
        stride = op.stride if op is not None else None
        in_plane = t.b * axis_slots(t.oh, t.kh, stride) * axis_slots(t.ow, t.kw, stride)
        w_plane = t.kh * t.kw * t.c * d
        acc_plane = t.b * t.oh * t.ow
        a = Region(self.in_bank * hw.sp_bank_rows, t.c * in_plane, nbuf)
        b_start = a.end if self.w_bank == self.in_bank else self.w_bank * hw.sp_bank_rows
        b = Region(b_start, w_plane * (1 if self.OP == "depthwise" else t.k), nbuf)
        c = Region(self.acc_bank * hw.acc_bank_rows, t.k * acc_plane, nbuf)
        for name, region, limit, mem in (("input", a, hw.sp_rows, "scratchpad"),
                                          ("weights", b, hw.sp_rows, "scratchpad"),
                                          ("accumulators", c, hw.acc_rows, "accumulator")):
            if region.end > limit:
                raise ScheduleError(f"{self.describe()} does not fit: {name} need {nbuf}x{region.rows} {mem} rows "
                                    f"from row {region.start}, past the {limit} the {mem} has")
        if a.start < b.end and b.start < a.end:
            raise ScheduleError(f"{self.describe()} does not fit: input (rows {a.start}..{a.end - 1}) and weights "
                                f"(rows {b.start}..{b.end - 1}) overlap; choose other banks")
        return ConvPlan(a, b, c, in_plane, w_plane, acc_plane)

    def describe(self) -> str:
        t = self.tiles()
        return (f"tiles b{t.b} oh{t.oh} ow{t.ow} k{t.k} kh{t.kh} kw{t.kw} c{t.c}, "
                f"{'double' if self.double_buffer else 'single'}-buffered")


@dataclass(frozen=True)
class ConvSchedule(_ConvScheduleBase):
    """Direct conv2d, weight-stationary.

    tile_b / tile_oh / tile_ow: images, output rows and output columns (pixels)
    per output tile; tile_k / tile_c: output / input channels in ``dim`` blocks;
    tile_kh / tile_kw: kernel taps per reduction tile. loop_order: the output
    tile loops, outermost first (reduction tiles kh, kw, c are innermost).
    mvin_blocks: dim-wide channel blocks per mvin. in_bank / w_bank / acc_bank:
    where each region starts (weights pack after the input when both name one bank).
    """

    tile_b: int
    tile_oh: int
    tile_ow: int
    tile_k: int
    tile_kh: int
    tile_kw: int
    tile_c: int
    loop_order: str = "bhwk"
    double_buffer: bool = True
    mvin_blocks: int = 1
    in_bank: int = 0
    w_bank: int = 0
    acc_bank: int = 0

    OP: ClassVar[str] = "conv2d"
    ORDER: ClassVar[str] = "bhwk"

    def tiles(self) -> Tiles:
        return Tiles(self.tile_b, self.tile_oh, self.tile_ow, self.tile_k, self.tile_kh, self.tile_kw, self.tile_c)


@dataclass(frozen=True)
class DepthwiseSchedule(_ConvScheduleBase):
    """Depthwise conv: as :class:`ConvSchedule`, with one channel tile (tile_c blocks) for input and output."""

    tile_b: int
    tile_oh: int
    tile_ow: int
    tile_c: int
    tile_kh: int
    tile_kw: int
    loop_order: str = "bhwc"
    double_buffer: bool = True
    mvin_blocks: int = 1
    in_bank: int = 0
    w_bank: int = 0
    acc_bank: int = 0

    OP: ClassVar[str] = "depthwise"
    ORDER: ClassVar[str] = "bhwc"

    def tiles(self) -> Tiles:
        return Tiles(self.tile_b, self.tile_oh, self.tile_ow, self.tile_c, self.tile_kh, self.tile_kw, self.tile_c)


def default_conv_schedule(op: Conv2d | DepthwiseConv2d, hw: HardwareConfig, *, double_buffer: bool = True
                          ) -> ConvSchedule | DepthwiseSchedule:
    """Gemmini's tiled_conv_auto: start from the whole output, shrink the largest dimension until the
    tiles fit half of each memory (double buffering), then grow output columns, then anything, greedily."""
    d = hw.dim
    dw = isinstance(op, DepthwiseConv2d)
    channels_in = op.channels if dw else op.in_c
    limits = {"b": op.batch, "oh": op.out_h, "ow": op.out_w, "kh": op.kernel[0], "kw": op.kernel[1],
              "c": -(-channels_in // d)}
    if not dw:
        limits["k"] = -(-op.out_c // d)
    blocks = {"k", "c"}   # counted in dim blocks, compared (like Gemmini) in channels

    def build(t: dict[str, int]) -> ConvSchedule | DepthwiseSchedule:
        common = dict(tile_b=t["b"], tile_oh=t["oh"], tile_ow=t["ow"], tile_kh=t["kh"], tile_kw=t["kw"],
                      tile_c=t["c"], double_buffer=double_buffer, mvin_blocks=hw.max_block_len)
        return DepthwiseSchedule(**common) if dw else ConvSchedule(tile_k=t["k"], **common)

    def fits(t: dict[str, int]) -> bool:
        try:
            build(t).memory_plan(hw, op)   # banks 0, 0: weights pack after the input
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
    grown = True
    while grown:
        grown = False
        for name in tiles:
            trial = dict(tiles, **{name: tiles[name] + 1})
            if trial[name] <= limits[name] and fits(trial):
                tiles, grown = trial, True
    sched = build(tiles)
    plan = sched.memory_plan(hw, op)
    w_bank = -(-plan.a.end // hw.sp_bank_rows)   # weights in their own bank when they fit there
    if w_bank < hw.sp_banks and w_bank * hw.sp_bank_rows + plan.b.rows * plan.b.buffers <= hw.sp_rows:
        sched = sched.replace(w_bank=w_bank)
    return sched


# ---- lowering ----------------------------------------------------------------------------------
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


def _tile_ranges(extent: int, tile: int) -> list[range]:
    return [range(s, min(extent, s + tile)) for s in range(0, extent, tile)]


def conv_tiles(op: Conv2d | DepthwiseConv2d, s: ConvSchedule | DepthwiseSchedule, hw: HardwareConfig
               ) -> tuple[list[ConvTile], ConvPlan]:
    """Walk the tile loops; decide residency, and the runs each tile loads, computes and stores."""
    plan = s.memory_plan(hw, op)
    d = hw.dim
    dw = isinstance(op, DepthwiseConv2d)
    t = s.tiles()
    C = op.channels if dw else op.in_c
    K = op.channels if dw else op.out_c
    H, W, st, pad = op.in_h, op.in_w, op.stride, op.padding
    KH, KW = op.kernel
    OH, OW = op.out_h, op.out_w
    ranges = {"b": _tile_ranges(op.batch, t.b), "h": _tile_ranges(OH, t.oh), "w": _tile_ranges(OW, t.ow),
              "k" if not dw else "c": _tile_ranges(-(-K // d), t.k)}
    order = s.loop_order
    reduction = [(kh, kw, cb) for kh in _tile_ranges(KH, t.kh) for kw in _tile_ranges(KW, t.kw)
                 for cb in ([None] if dw else _tile_ranges(-(-C // d), t.c))]

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
            roff, rin = axis_layout(hs.start, nh, khs.start, len(khs), st, pad)
            coff, cin = axis_layout(ws.start, nw, kws.start, len(kws), st, pad)
            RS, CS = len(rin), len(cin)
            key_in = (bs, hs, ws, khs, kws, cbs)
            if held_in != key_in:
                n_in += 1
                held_in = key_in
                lb, lr, lc = (a.ravel() for a in np.meshgrid(np.arange(nb), np.arange(RS), np.arange(CS),
                                                             indexing="ij"))
                ih, iw = rin[lr], cin[lc]
                ok = (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
                dram = (((bs.start + lb) * H + ih) * W + iw) * C
                base = plan.a.base(n_in - 1)
                for start, n in runs(ok, [(dram, st * C)], d):
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
                    pieces = runs(ok, [(a_idx, 1)], d)
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


def _buffers(op: Op) -> dict:
    specs = [(name, "input", dtype, shape) for name, (shape, dtype) in op.input_specs().items()]
    specs += [(name, "output", dtype, shape) for name, (shape, dtype) in op.output_specs().items()]
    return layout(specs)


def lower_conv(op: Conv2d | DepthwiseConv2d, s: ConvSchedule | DepthwiseSchedule, hw: HardwareConfig) -> Program:
    tiles, plan = conv_tiles(op, s, hw)
    dw = isinstance(op, DepthwiseConv2d)
    C = op.channels if dw else op.in_c
    K = op.channels if dw else op.out_c
    out_bytes = 4 if op.out_dtype == "int32" else 1
    text = render("depthwise_ws.s.j2" if dw else "conv2d_ws.s.j2", op=op, C=C, K=K, out_bytes=out_bytes,
                  schedule=s.to_dict(), dim=hw.dim, plan=plan, tiles=tiles)
    return parse_program(text, hw, _buffers(op))


SCHEDULES.update(conv2d=ConvSchedule, depthwise=DepthwiseSchedule)
DEFAULTS.update(conv2d=default_conv_schedule, depthwise=default_conv_schedule)
LOWERINGS.update(conv2d=lower_conv, depthwise=lower_conv)
