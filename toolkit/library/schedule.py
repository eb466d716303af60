"""Schedules of ``schedule="gemmini"``: one call of gemmini.h's library and the tile arguments its
auto-tiler passes on (ucb-bar/gemmini-rocc-tests 180c468, include/gemmini.h).

They have no other knobs: the instruction stream is the library's (a few config words, then per
tile the LOOP_WS or LOOP_CONV_WS words), which the loop unrollers expand as Gemmini's do. Their
dicts carry the call's name (``"call"``), so a record or ``prog.meta`` says which it was.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar, Mapping

import numpy as np

from isa import HardwareConfig

from ..gemm.op import Matmul
from ..gemm.schedule import matmul_blocks
from ..schedule import MemoryPlan, Region, Schedule, ScheduleError, check_int
from .conv_tiles import conv_tile_rows, conv_tiles_fit, dw_maxes, spad_rows, tile_args
from .words import acc_rows, check_fits


@dataclass(frozen=True)
class LibrarySchedule(Schedule):
    """Base: gemmini.h's ``CALL`` with these tile arguments, rendered through ``TEMPLATE``."""

    CALL: ClassVar[str] = ""
    TEMPLATE: ClassVar[str] = ""
    # whether its loops are LOOP_CONV_WS, whose computes wait for all of a loop's loads (LOOP_WS: each compute
    # for its own); toolkit.family.loop_cycles' pipeline takes it from here, not from the op's kind: a pointwise
    # conv runs as LOOP_CONV_WS under tiled_conv_auto and as LOOP_WS under tiled_matmul_nn_auto
    CONV_LOOPS: ClassVar[bool] = False

    def __post_init__(self) -> None:
        for f in fields(self):
            if f.type in (int, "int"):
                check_int(f.name, getattr(self, f.name), 1)

    def to_dict(self) -> dict[str, Any]:
        return {"call": self.CALL, **super().to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "LibrarySchedule":
        data = dict(data)
        call = data.pop("call", None)
        if call != cls.CALL:
            raise ScheduleError(f"{cls.__name__} is gemmini.h's {cls.CALL}, not call={call!r}")
        return super().from_dict(data)

    def describe(self) -> str:
        return f"{self.CALL}(" + ", ".join(f"{f.name}={getattr(self, f.name)!r}" if isinstance(getattr(self, f.name), str)
                                           else f"{f.name}={getattr(self, f.name)}" for f in fields(self)) + ")"


MATMUL_ORDERS = ("ij", "ji")   # the host's walk over output tiles, k innermost: i outer (gemmini.h's), or j


@dataclass(frozen=True)
class LibraryMatmul(LibrarySchedule):
    """tiled_matmul's tile_I, tile_J, tile_K, in ``dim`` blocks (tiled_matmul_auto's choice by default),
    and ``order``, the host's walk over the output tiles: "ij" (gemmini.h's tiled_matmul_outer: rows of
    tiles, each row's tiles in turn) or "ji" (columns of tiles). k stays innermost, so a tile's partial
    sums stay in its accumulator half until its last k tile stores them. A schedule of Gemmini's loops
    that the tuner may change: its words are gemmini_loop_ws's, per tile."""

    tile_i: int
    tile_j: int
    tile_k: int
    order: str = "ij"

    OP: ClassVar[str] = "matmul"
    CALL: ClassVar[str] = "tiled_matmul_auto"
    TEMPLATE: ClassVar[str] = "matmul_library.s.j2"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.order not in MATMUL_ORDERS:
            raise ScheduleError(f"order={self.order!r} is not one of {MATMUL_ORDERS}")

    def memory_plan(self, hw: HardwareConfig, op: Any = None) -> MemoryPlan:
        """Where each loop's tiles go (A at the bottom of a scratchpad half, B ending at its top, C in an
        accumulator half: LoopMatmul's slots); ScheduleError unless they fit half of each memory (or, with
        ``op``, a tile is larger than the matmul)."""
        d = hw.dim
        if op is not None:
            check_tiles_within(self, op, hw)
        a, b, c = self.tile_i * self.tile_k * d, self.tile_k * self.tile_j * d, self.tile_i * self.tile_j * d
        check_fits(self.describe(), a + b, c, hw)
        half = hw.sp_rows // 2
        return MemoryPlan(Region(0, a, 2, half), Region(half - b, b, 2, half), Region(0, c, 2, hw.acc_rows // 2))


@dataclass(frozen=True)
class LibraryPointwise(LibraryMatmul):
    """tiled_matmul_nn_auto on a pointwise conv (1x1, stride 1, no padding, no pool): the NHWC input read as A
    (pixels x input channels), the weights as B, the output as C, the conv's bias as a row bias. Gemmini's own
    ResNet-50 calls it for its stride-1 1x1 convs (gemmini-rocc-tests 180c468, imagenet/resnet50.c); it is
    tiled_matmul_auto with a dense matrix's strides (include/gemmini_nn.h:127), so its tiles and words are
    LibraryMatmul's on :func:`pointwise_matmul`'s view of the conv."""

    OP: ClassVar[str] = "conv2d"
    CALL: ClassVar[str] = "tiled_matmul_nn_auto"

    def memory_plan(self, hw: HardwareConfig, op: Any = None) -> MemoryPlan:
        """LibraryMatmul's plan of the conv's matmul view; ScheduleError where ``op`` is no pointwise conv."""
        return super().memory_plan(hw, None if op is None else pointwise_matmul(op))


def is_pointwise(op: Any) -> bool:
    """Whether ``op`` is a conv that is a matmul in DRAM: a 1x1 kernel, stride 1, no padding, no pool."""
    return op.KIND == "conv2d" and op.kernel == (1, 1) and op.stride == 1 and op.padding == 0 and op.pool is None


def pointwise_matmul(op: Any) -> Matmul:
    """The matmul that a pointwise conv ``op`` is, byte for byte in DRAM; ScheduleError for any other op."""
    if not is_pointwise(op):
        raise ScheduleError(f"tiled_matmul_nn_auto runs a conv as a matmul only where it is one (1x1 kernel, "
                            f"stride 1, no padding, no pool), not {op.key}")
    return Matmul(op.batch * op.in_h * op.in_w, op.out_c, op.in_c, bias="row" if op.bias else None,
                  activation=op.activation, scale=op.scale, out_dtype=op.out_dtype, out_offset=op.out_offset)


# the host's walk over a conv's output tiles, kernel tiles innermost: pixel tiles outer and each one's
# output-channel tiles in turn (gemmini.h's tiled_conv), or output-channel tiles outermost
CONV_ORDERS = ("pixels", "channels")


@dataclass(frozen=True)
class LibraryConv(LibrarySchedule):
    """tiled_conv's tile arguments: batches, pooled output rows, columns and channels, kernel rows,
    columns and input channels (pixels and channels, not blocks; tiled_conv_auto's choice by default),
    and the host's walk over the tiles: ``order`` (CONV_ORDERS) and ``resident``. Without ``resident``
    the scratchpad keeps an input or weight tile across tiles only where the conv has at most two of
    them (gemmini.h's a_reuse, b_reuse); with it, the last two input and the last two weight tiles stay
    under scratchpad ids 1 and 2 and are not loaded again (under "channels" a weight tile stays for
    all the pixel tiles, under "pixels" an input tile for all its output-channel tiles, where the
    kernel is one or two tiles). A schedule of Gemmini's loops the tuner may change: its words are
    gemmini_loop_conv_ws's, per tile."""

    batches: int
    porows: int
    pocols: int
    pochs: int
    krows: int
    kcols: int
    kchs: int
    order: str = "pixels"
    resident: bool = False

    OP: ClassVar[str] = "conv2d"
    CALL: ClassVar[str] = "tiled_conv_auto"
    TEMPLATE: ClassVar[str] = "conv_library.s.j2"
    CONV_LOOPS: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.order not in CONV_ORDERS:
            raise ScheduleError(f"order={self.order!r} is not one of {CONV_ORDERS}")
        if not isinstance(self.resident, bool):
            raise ScheduleError(f"resident={self.resident!r} must be True or False")

    def memory_plan(self, hw: HardwareConfig, op: Any = None) -> MemoryPlan:
        """Where each loop's tiles go (the input at the bottom of a scratchpad half, the weights ending at
        its top, the output in an accumulator half: LoopConv's slots); ScheduleError, naming the tile
        argument, where a tile is larger than the conv ``op`` or the tiles do not fit half of each memory."""
        if op is None:
            raise ScheduleError(f"{self.describe()}: whether tiled_conv's tiles fit depends on the conv; give it")
        return conv_plan(self.describe(), tile_args(self), op, hw)

    @classmethod
    def fit_arrays(cls, hw: HardwareConfig, op: Any, tiles: Mapping[str, np.ndarray]) -> np.ndarray:
        """Whether :meth:`memory_plan` takes each point of ``tiles`` (an array of each tile argument, a value a
        point), all at once: what tuner.space asks of every point."""
        return conv_tiles_fit(tiles, op, hw)


@dataclass(frozen=True)
class LibraryDepthwise(LibrarySchedule):
    """tiled_conv_dw_auto's batches, porows, pocols; one channel and (our weight layout) one kernel
    tap per loop, see toolkit/library/depthwise.py."""

    batches: int
    porows: int
    pocols: int

    OP: ClassVar[str] = "depthwise"
    CALL: ClassVar[str] = "tiled_conv_dw_auto"
    TEMPLATE: ClassVar[str] = "conv_library.s.j2"
    CONV_LOOPS: ClassVar[bool] = True

    def memory_plan(self, hw: HardwareConfig, op: Any = None) -> MemoryPlan:
        """LibraryConv's plan of one channel's tiles and one kernel tap; ScheduleError as LibraryConv's."""
        if op is None:
            raise ScheduleError(f"{self.describe()}: whether tiled_conv_dw's tiles fit depends on the conv; give it")
        tiles = dict(batches=self.batches, porows=self.porows, pocols=self.pocols, pochs=1, krows=1, kcols=1, kchs=1)
        return conv_plan(self.describe(), tiles, op, hw, dw_maxes(op))


@dataclass(frozen=True)
class LibraryResAdd(LibrarySchedule):
    """tiled_resadd_auto's tile_I (pixels) and tile_J (channels), in elements."""

    tile_i: int
    tile_j: int

    OP: ClassVar[str] = "resadd"
    CALL: ClassVar[str] = "tiled_resadd_auto"
    TEMPLATE: ClassVar[str] = "resadd_library.s.j2"

    def memory_plan(self, hw: HardwareConfig, op: Any = None) -> MemoryPlan:
        """A and B go into an accumulator half each tile (shrunk, the second added to the first), nothing into
        the scratchpad; ScheduleError unless the tile fits half the accumulator."""
        rows = acc_rows(self.tile_i, self.tile_j, hw.dim)
        check_fits(self.describe(), 0, rows, hw)
        half = hw.sp_rows // 2
        return MemoryPlan(Region(0, 0, 2, half), Region(0, 0, 2, half), Region(0, rows, 2, hw.acc_rows // 2))


@dataclass(frozen=True)
class LibraryNorm(LibrarySchedule):
    """tiled_norm_auto's tile_I: rows per tile (its tile_J is always the whole row)."""

    tile_i: int

    OP: ClassVar[str] = "norm"
    CALL: ClassVar[str] = "tiled_norm_auto"
    TEMPLATE: ClassVar[str] = "norm_library.s.j2"


CALLS: dict[str, type[LibrarySchedule]] = {
    cls.CALL: cls for cls in (LibraryMatmul, LibraryPointwise, LibraryConv, LibraryDepthwise, LibraryResAdd,
                              LibraryNorm)}


def library_class(call: Any) -> type[LibrarySchedule]:
    """The schedule class of gemmini.h's ``call`` (the ``"call"`` of a library schedule's dict)."""
    if call not in CALLS:
        raise ScheduleError(f"call={call!r} is not one of gemmini.h's {sorted(CALLS)}")
    return CALLS[call]


def conv_plan(what: str, tiles: dict[str, int], op: Any, hw: HardwareConfig,
              maxes: dict[str, int] | None = None) -> MemoryPlan:
    """tiled_conv's slots for ``tiles``: the input at the bottom of a scratchpad half, the weights ending at its
    top, the output in an accumulator half (conv_tile_rows' errors where they do not fit)."""
    spad, acc = conv_tile_rows(what, tiles, op, hw, maxes)
    weights = spad_rows(dict(tiles, batches=0), op, hw.dim)[0]   # no pixels: the weight rows alone
    half = hw.sp_rows // 2
    return MemoryPlan(Region(0, spad - weights, 2, half), Region(half - weights, weights, 2, half),
                      Region(0, acc, 2, hw.acc_rows // 2))


def check_tiles_within(s: LibraryMatmul, op: Any, hw: HardwareConfig) -> None:
    """ScheduleError where a tile is larger than the matmul's blocks (tiled_matmul's assertions)."""
    blocks = matmul_blocks(op.M, op.N, op.K, hw)
    if s.tile_i > blocks["i"] or s.tile_j > blocks["j"] or s.tile_k > blocks["k"]:
        raise ScheduleError(f"{s.describe()}: a tile is larger than the {op.M}x{op.N}x{op.K} matmul's "
                            f"{blocks['i']}x{blocks['j']}x{blocks['k']} blocks")
    if getattr(op, "activation", "") in ("layernorm", "softmax") and s.tile_j != blocks["j"]:
        raise ScheduleError(f"{s.describe()}: activation={op.activation!r} normalizes whole rows of C, so tile_j "
                            f"must be all {blocks['j']} column blocks")
