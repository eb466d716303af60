"""Conv schedules: their knobs and memory plan (the input, weight and accumulator tiles)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, NamedTuple

import numpy as np

from isa import HardwareConfig

from ..schedule import (DATAFLOWS, MemoryPlan, Pipelined, PlanArrays, ScheduleError, check_dataflow, check_int, check_plan,
                        dataflows_allowed, place)
from .geometry import ConvGeometry, conv_geometry


def axis_slots(tile: Any, ktile: Any, stride: Any) -> Any:
    """Input indices {o * stride + k} an output tile of ``tile`` (>= 1) and kernel tile of ``ktile`` reads
    (ints or arrays): (tile - 1) * stride + ktile, or tile * ktile when the stride skips inputs (stride >
    ktile), which is then the smaller.

    Without the stride (``None``) the bound for any stride, tile * ktile.
    """
    if stride is None:
        return tile * ktile
    wide, narrow = tile * ktile, (tile - 1) * stride + ktile
    return np.minimum(wide, narrow) if isinstance(wide, np.ndarray) or isinstance(narrow, np.ndarray) \
        else min(wide, narrow)


def plan_rows(t: Tiles, d: int, strides: tuple[Any, Any], depthwise: bool) -> tuple[Any, ...]:
    """Rows of one channel block of the input, weights and accumulators, then of one buffer of each
    region (ints or arrays)."""
    in_plane = t.b * axis_slots(t.oh, t.kh, strides[0]) * axis_slots(t.ow, t.kw, strides[1])
    w_plane = t.kh * t.kw * t.c * d
    acc_plane = t.b * t.oh * t.ow
    return in_plane, w_plane, acc_plane, t.c * in_plane, w_plane * (1 if depthwise else t.k), t.k * acc_plane


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
class ConvScheduleBase(Pipelined):
    """Shared knob checks and memory plan of the conv schedules (pipeline knobs: :class:`Pipelined`).
    Each declares, last (the tuner's features give every field a slot in order), dataflow: "ws"
    (weight-stationary) or "os" (output-stationary: each compute's block of outputs is made in the
    array and leaves into the accumulator)."""

    ORDER: ClassVar[str] = ""

    def tiles(self) -> Tiles:
        raise NotImplementedError

    @property
    def packs_taps(self) -> bool:
        return bool(getattr(self, "pack_taps", False))   # a knob of conv2d only

    def geometry(self, op: Any) -> ConvGeometry:
        """How the tile walk sees ``op`` under this schedule (the tiles count its kernel and channels)."""
        return conv_geometry(op, self.packs_taps)

    def __post_init__(self) -> None:
        super().__post_init__()
        for name, value in vars(self).items():
            if name.startswith("tile_") or name == "mvin_blocks":
                check_int(name, value, 1)
            elif name.endswith("_bank"):
                check_int(name, value, 0)
        if self.dataflow not in DATAFLOWS:
            raise ScheduleError(f"dataflow={self.dataflow!r} is not one of {DATAFLOWS}")
        if sorted(self.loop_order) != sorted(self.ORDER):
            raise ScheduleError(f"loop_order={self.loop_order!r} must be a permutation of {self.ORDER!r}")

    def memory_plan(self, hw: HardwareConfig, op: Any = None) -> ConvPlan:
        """Place the input, weight and accumulator tiles; ScheduleError if they do not fit.

        The input tile's rows depend on the op's stride; without ``op`` the plan
        assumes the worst stride, so a plan that fits then fits every op. With ``op``,
        reduction tiles beyond its kernel or channel blocks (as :meth:`geometry` sees them) are errors.
        """
        check_int("mvin_blocks", self.mvin_blocks, 1, hw.max_block_len)
        check_dataflow(self, hw)
        check_int("in_bank", self.in_bank, 0, hw.sp_banks - 1)
        check_int("w_bank", self.w_bank, 0, hw.sp_banks - 1)
        check_int("acc_bank", self.acc_bank, 0, hw.acc_banks - 1)
        t, d, split = self.tiles(), hw.dim, self.split_buffers
        strides: tuple[int | None, int | None] = (None, None)
        if getattr(op, "pool", None):
            raise ScheduleError(f"{op.key}: the toolkit's conv tiles do not fuse a max pool; its default schedule, "
                                "or schedule='gemmini', pools in the store unit through LOOP_CONV_WS")
        if op is not None:
            g = self.geometry(op)
            strides = g.stride
            for name, tile, extent in (("tile_kh", t.kh, g.kernel[0]), ("tile_kw", t.kw, g.kernel[1]),
                                       ("tile_c", t.c, -(-g.channels // d))):
                if tile > extent:
                    packed = " under pack_taps (kernel (KH, 1) over KW*in_c channels)" if self.packs_taps else ""
                    raise ScheduleError(f"{name}={tile} is more than the {extent} of {op.key}{packed}")
        in_plane, w_plane, acc_plane, a_rows, b_rows, c_rows = plan_rows(t, d, strides, self.OP == "depthwise")
        sp = (hw.sp_bank_rows, hw.sp_banks, split)
        a = place(self.in_bank, a_rows, self.nbuf, *sp)
        b = place(self.w_bank, b_rows, self.nbuf, *sp, after=a if self.w_bank == self.in_bank else None)
        c = place(self.acc_bank, c_rows, self.nbuf, hw.acc_bank_rows, hw.acc_banks, split)
        check_plan(self, hw, (("input", a, "scratchpad"), ("weights", b, "scratchpad"),
                              ("accumulators", c, "accumulator")))
        return ConvPlan(a, b, c, in_plane, w_plane, acc_plane)

    @classmethod
    def plan_arrays(cls, hw: HardwareConfig, op: Any, knobs: Mapping[str, Any]) -> PlanArrays:
        """:meth:`memory_plan` over arrays of knobs (the tuner's space: toolkit.schedule.regions_fit places
        them); a conv's geometry, so its strides and extents, depends on pack_taps."""
        k = {n: np.asarray(v) for n, v in knobs.items()}
        ok = dataflows_allowed(k["dataflow"], hw) & (k["mvin_blocks"] >= 1) & (k["mvin_blocks"] <= hw.max_block_len)
        depthwise = cls.OP == "depthwise"
        t = Tiles(*(k[f"tile_{n}"] for n in ("b", "oh", "ow", "c" if depthwise else "k", "kh", "kw", "c")))
        strides: tuple[Any, Any] = (None, None)
        if op is not None:
            ok = ok & (not getattr(op, "pool", None))
            pack = k.get("pack_taps", np.asarray(False))
            direct, packed = conv_geometry(op, False), conv_geometry(op, True) if pack.any() else None
            pick = (lambda f: np.where(pack, f(packed), f(direct))) if packed else (lambda f: f(direct))  # noqa: E731
            strides = (pick(lambda g: g.stride[0]), pick(lambda g: g.stride[1]))
            ok = ok & (t.kh <= pick(lambda g: g.kernel[0])) & (t.kw <= pick(lambda g: g.kernel[1])) \
                & (t.c <= pick(lambda g: -(-g.channels // hw.dim)))
        rows = plan_rows(t, hw.dim, strides, depthwise)[3:]
        return PlanArrays(rows, (k["in_bank"], k["w_bank"], k["acc_bank"]), ok)

    def describe(self) -> str:
        t = self.tiles()
        return (f"tiles b{t.b} oh{t.oh} ow{t.ow} k{t.k} kh{t.kh} kw{t.kw} c{t.c}, "
                f"{'double' if self.double_buffer else 'single'}-buffered"
                f"{', taps packed' if self.packs_taps else ''}")


@dataclass(frozen=True)
class ConvSchedule(ConvScheduleBase):
    """Direct conv2d, weight-stationary.

    tile_b / tile_oh / tile_ow: images, output rows and output columns (pixels)
    per output tile; tile_k / tile_c: output / input channels in ``dim`` blocks;
    tile_kh / tile_kw: kernel taps per reduction tile. loop_order: the output
    tile loops, outermost first (reduction tiles kh, kw, c are innermost).
    mvin_blocks: dim-wide channel blocks per mvin. in_bank / w_bank / acc_bank:
    where each region starts (weights pack after the input when both name one bank).
    pack_taps: pack each kernel row's taps into the reduction (see :mod:`toolkit.conv.geometry`);
    then the kernel is (KH, 1), so tile_kw is 1, and tile_c counts blocks of KW * in_c channels.
    """

    tile_b: int
    tile_oh: int
    tile_ow: int
    tile_k: int
    tile_kh: int
    tile_kw: int
    tile_c: int
    loop_order: str = "bhwk"
    mvin_blocks: int = 1
    in_bank: int = 0
    w_bank: int = 0
    acc_bank: int = 0
    pack_taps: bool = False
    dataflow: str = "ws"

    OP: ClassVar[str] = "conv2d"
    ORDER: ClassVar[str] = "bhwk"

    def tiles(self) -> Tiles:
        return Tiles(self.tile_b, self.tile_oh, self.tile_ow, self.tile_k, self.tile_kh, self.tile_kw, self.tile_c)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.pack_taps, bool):
            raise ScheduleError(f"pack_taps={self.pack_taps!r} must be true or false")


@dataclass(frozen=True)
class DepthwiseSchedule(ConvScheduleBase):
    """Depthwise conv: as :class:`ConvSchedule`, with one channel tile (tile_c blocks) for input and output."""

    tile_b: int
    tile_oh: int
    tile_ow: int
    tile_c: int
    tile_kh: int
    tile_kw: int
    loop_order: str = "bhwc"
    mvin_blocks: int = 1
    in_bank: int = 0
    w_bank: int = 0
    acc_bank: int = 0
    dataflow: str = "ws"

    OP: ClassVar[str] = "depthwise"
    ORDER: ClassVar[str] = "bhwc"

    def tiles(self) -> Tiles:
        return Tiles(self.tile_b, self.tile_oh, self.tile_ow, self.tile_c, self.tile_kh, self.tile_kw, self.tile_c)
