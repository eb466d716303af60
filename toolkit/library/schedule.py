"""Schedules of ``schedule="gemmini"``: one call of gemmini.h's library and the tile arguments its
auto-tiler passes on (ucb-bar/gemmini-rocc-tests 180c468, include/gemmini.h).

They have no other knobs: the instruction stream is the library's (a few config words, then per
tile the LOOP_WS or LOOP_CONV_WS words), which the loop unrollers expand as Gemmini's do. Their
dicts carry the call's name (``"call"``), so a record or ``prog.meta`` says which it was.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar, Mapping

from ..schedule import Schedule, ScheduleError, check_int


@dataclass(frozen=True)
class LibrarySchedule(Schedule):
    """Base: gemmini.h's ``CALL`` with these tile arguments, rendered through ``TEMPLATE``."""

    CALL: ClassVar[str] = ""
    TEMPLATE: ClassVar[str] = ""

    def __post_init__(self) -> None:
        for f in fields(self):
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
        return f"{self.CALL}(" + ", ".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self)) + ")"


@dataclass(frozen=True)
class LibraryMatmul(LibrarySchedule):
    """tiled_matmul_auto's tile_I, tile_J, tile_K, in ``dim`` blocks."""

    tile_i: int
    tile_j: int
    tile_k: int

    OP: ClassVar[str] = "matmul"
    CALL: ClassVar[str] = "tiled_matmul_auto"
    TEMPLATE: ClassVar[str] = "matmul_library.s.j2"


@dataclass(frozen=True)
class LibraryConv(LibrarySchedule):
    """tiled_conv_auto's tile arguments of tiled_conv: batches, pooled output rows, columns and
    channels, kernel rows, columns and input channels (pixels and channels, not blocks)."""

    batches: int
    porows: int
    pocols: int
    pochs: int
    krows: int
    kcols: int
    kchs: int

    OP: ClassVar[str] = "conv2d"
    CALL: ClassVar[str] = "tiled_conv_auto"
    TEMPLATE: ClassVar[str] = "conv_library.s.j2"


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


@dataclass(frozen=True)
class LibraryResAdd(LibrarySchedule):
    """tiled_resadd_auto's tile_I (pixels) and tile_J (channels), in elements."""

    tile_i: int
    tile_j: int

    OP: ClassVar[str] = "resadd"
    CALL: ClassVar[str] = "tiled_resadd_auto"
    TEMPLATE: ClassVar[str] = "resadd_library.s.j2"


CALLS: dict[str, type[LibrarySchedule]] = {
    cls.CALL: cls for cls in (LibraryMatmul, LibraryConv, LibraryDepthwise, LibraryResAdd)}


def library_class(call: Any) -> type[LibrarySchedule]:
    """The schedule class of gemmini.h's ``call`` (the ``"call"`` of a library schedule's dict)."""
    if call not in CALLS:
        raise ScheduleError(f"call={call!r} is not one of gemmini.h's {sorted(CALLS)}")
    return CALLS[call]
