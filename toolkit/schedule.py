"""The Schedule base: knobs of one op's lowering, memory plans, the software-pipeline knobs, loading.

Each kind's schedule (``toolkit/<kind>/schedule.py``) subclasses :class:`Schedule` or
:class:`Pipelined`; its heuristics live beside it.

A schedule is a frozen dataclass of knobs. ``memory_plan`` places its buffers in the
scratchpad and accumulator, and is the single place that decides whether a
schedule fits: the lowering and the tuner's space both ask it.
"""
from __future__ import annotations

import json
from dataclasses import MISSING, dataclass, fields, replace
from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping, NamedTuple, Sequence

import numpy as np

from isa import HardwareConfig
from isa.checker import transpose_error


class ScheduleError(ValueError):
    """A schedule that is malformed or does not fit the hardware."""


@dataclass(frozen=True)
class Region:
    start: int
    rows: int          # rows of one buffer
    buffers: int       # 1, or 2 when double-buffered
    stride: int = 0    # rows from one buffer's start to the next's (0: packed, = rows)

    @property
    def step(self) -> int:
        return self.stride or self.rows

    @property
    def end(self) -> int:
        return self.base(self.buffers - 1) + self.rows

    def base(self, index: int) -> int:
        return self.start + (index % self.buffers) * self.step

    def spans(self) -> list[tuple[int, int]]:
        """[first, last] rows of each buffer."""
        return [(self.base(i), self.base(i) + self.rows - 1) for i in range(self.buffers)]

    def overlaps(self, other: "Region") -> bool:
        return any(lo <= o_hi and o_lo <= hi for lo, hi in self.spans() for o_lo, o_hi in other.spans())


def place(first_bank: int, rows: int, nbuf: int, bank_rows: int, banks: int, split: bool,
          after: Region | None = None) -> Region:
    """A region of ``nbuf`` buffers from ``first_bank``, or packed right after ``after``'s first buffer.

    ``split`` puts the second buffer half the banks further on, so that the DMA filling
    one buffer and the array reading the other use different single-ported banks."""
    stride = (banks // 2) * bank_rows if split and nbuf > 1 and banks > 1 else 0
    if after is None:
        return Region(first_bank * bank_rows, rows, nbuf, stride)
    start = after.start + (after.rows if stride else after.rows * after.buffers)
    return Region(start, rows, nbuf, stride)


@dataclass(frozen=True)
class MemoryPlan:
    a: Region
    b: Region
    c: Region


UNUSED = Region(0, 0, 1)   # a region a plan leaves empty (resadd and maxpool use the accumulator only)


@dataclass(frozen=True)
class Schedule:
    """Base: knobs as dataclass fields, with dict round trips."""

    OP: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}   # knobs are scalars: no deep copy

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Schedule":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ScheduleError(f"unknown {cls.__name__} knob(s) {unknown}; knobs are {sorted(known)}")
        missing = sorted(f.name for f in fields(cls) if f.name not in data and f.default is MISSING)
        if missing:
            raise ScheduleError(f"{cls.__name__} is missing knob(s) {missing}")
        return cls(**data)

    def replace(self, **changes: Any) -> "Schedule":
        return replace(self, **changes)


DATAFLOWS = ("ws", "os")


def dataflow_error(dataflow: Any, hw: HardwareConfig, transposes: tuple[bool, bool] = (False, False)) -> str | None:
    """Why ``dataflow`` is not one the hardware has or, with the op's transposed operands (A, B), one
    Gemmini's single transposer allows (isa.checker.transpose_error); None when it is."""
    if dataflow not in DATAFLOWS:
        return f"dataflow={dataflow!r} is not one of {DATAFLOWS}"
    if not hw.has_dataflow(dataflow):
        return f"dataflow={dataflow!r}: hardware {hw.name} has only dataflows={hw.dataflows!r}"
    if reason := transpose_error(dataflow, *transposes):
        return (f"dataflow={dataflow!r} with transpose_a={transposes[0]}, "
                f"transpose_b={transposes[1]}: {reason}")
    return None


def check_dataflow(s: Schedule, hw: HardwareConfig, transposes: tuple[bool, bool] = (False, False)) -> None:
    """ScheduleError unless ``s.dataflow`` passes :func:`dataflow_error`."""
    if reason := dataflow_error(s.dataflow, hw, transposes):
        raise ScheduleError(reason)


def dataflows_allowed(dataflow: np.ndarray, hw: HardwareConfig, transposes: tuple[bool, bool] = (False, False)
                      ) -> np.ndarray:
    """Which of an array of dataflows pass :func:`dataflow_error` (asked once per dataflow)."""
    dataflow = np.asarray(dataflow)
    allowed = np.zeros(dataflow.shape, dtype=bool)
    for v in DATAFLOWS:
        if dataflow_error(v, hw, transposes) is None:
            allowed |= dataflow == v
    return allowed


def check_int(name: str, value: Any, lo: int, hi: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < lo or (hi is not None and value > hi):
        bound = f"between {lo} and {hi}" if hi is not None else f">= {lo}"
        raise ScheduleError(f"{name}={value!r} must be an integer {bound}")


@dataclass(frozen=True, kw_only=True)
class Pipelined(Schedule):
    """Knobs of the software pipeline every tiled lowering shares (keyword-only).

    The lowering walks steps (one tile of the loop nest each): loads, computes, stores.
    load_ahead=1 issues a step's loads among the previous step's computes, into the other
    half of each double buffer, so the DMA fills one buffer while the array reads the
    other; 0 keeps Gemmini's flat load-compute-store order. store_delay=1 issues a step's
    stores among the next step's computes, so they do not hold up its loads.
    spread: the share of a step's computes over which those loads and stores are
    interleaved (1.0 evenly over all of them; smaller issues them sooner, in a denser run).
    split_buffers: the second half of each double buffer starts half the banks further on
    (see :func:`place`), so DMA writes and the array's reads fall in different banks.
    """

    double_buffer: bool = True
    load_ahead: int = 0
    store_delay: int = 0
    spread: float = 1.0
    split_buffers: bool = False

    def __post_init__(self) -> None:
        check_int("load_ahead", self.load_ahead, 0, 1)
        check_int("store_delay", self.store_delay, 0, 1)
        for name in ("double_buffer", "split_buffers"):
            if not isinstance(getattr(self, name), bool):
                raise ScheduleError(f"{name}={getattr(self, name)!r} must be true or false")
        if isinstance(self.spread, bool) or not isinstance(self.spread, (int, float)) or not 0 < self.spread <= 1:
            raise ScheduleError(f"spread={self.spread!r} must be a number in (0, 1]")
        if (self.load_ahead or self.store_delay) and not self.double_buffer:
            raise ScheduleError("load_ahead and store_delay need double_buffer=True: the next step's loads "
                                "and the previous step's stores use the other half of each buffer")

    @property
    def nbuf(self) -> int:
        return 2 if self.double_buffer else 1


def check_plan(s: Schedule, hw: HardwareConfig, regions: tuple[tuple[str, Region, str], ...]) -> None:
    """ScheduleError unless every region fits its memory and no two of one memory overlap."""
    limits = {"scratchpad": hw.sp_rows, "accumulator": hw.acc_rows}
    for name, region, mem in regions:
        if region.rows > region.step and region.buffers > 1:
            raise ScheduleError(f"{s.describe()} does not fit: {name} needs {region.rows} {mem} rows per buffer, "
                                f"more than the {region.step} between split buffers; use split_buffers=False")
        if region.end > limits[mem]:
            raise ScheduleError(
                f"{s.describe()} does not fit: {name} needs {region.buffers}x{region.rows} {mem} rows from row "
                f"{region.start}, past the {limits[mem]} the {mem} has")
    for n, (name, region, mem) in enumerate(regions):
        for other, oregion, omem in regions[n + 1:]:
            if mem == omem and region.overlaps(oregion):
                raise ScheduleError(f"{s.describe()} does not fit: {name} (rows {region.start}..{region.end - 1}) "
                                    f"and {other} (rows {oregion.start}..{oregion.end - 1}) overlap; "
                                    f"choose other banks")


class PlanArrays(NamedTuple):
    """What a kind's ``memory_plan`` decides over arrays of schedules (``plan_arrays``): the rows of one
    buffer of each region (a, b in the scratchpad, c in the accumulator), each region's first bank,
    whether b packs right after a, and whether the checks besides placement (dataflow, tile extents) pass."""

    rows: tuple[np.ndarray, np.ndarray, np.ndarray]
    banks: tuple[np.ndarray, np.ndarray, np.ndarray]
    ok: np.ndarray


def regions_fit(hw: HardwareConfig, plan: PlanArrays, nbuf: np.ndarray, split: np.ndarray) -> np.ndarray:
    """:func:`place` and :func:`check_plan` over arrays (broadcast together): which plans fit, with the
    banks in range. The tuner's space asks this of every size and placement at once (its tests hold it
    equal to ``memory_plan`` asked of each point)."""
    (ra, rb, rc), (ba, bb, bc) = plan.rows, plan.banks
    packed = ba == bb
    ok = plan.ok & (ba >= 0) & (ba < hw.sp_banks) & (bb >= 0) & (bb < hw.sp_banks) & (bc >= 0) & (bc < hw.acc_banks)
    multi = nbuf > 1
    sp_stride = np.where(split & multi & (hw.sp_banks > 1), (hw.sp_banks // 2) * hw.sp_bank_rows, 0)
    acc_stride = np.where(split & multi & (hw.acc_banks > 1), (hw.acc_banks // 2) * hw.acc_bank_rows, 0)
    a_start = ba * hw.sp_bank_rows
    b_start = np.where(packed, a_start + np.where(sp_stride != 0, ra, ra * nbuf), bb * hw.sp_bank_rows)
    regions = [(a_start, ra, sp_stride, hw.sp_rows), (b_start, rb, sp_stride, hw.sp_rows),
               (bc * hw.acc_bank_rows, rc, acc_stride, hw.acc_rows)]
    for start, rows, stride, limit in regions:
        step = np.where(stride != 0, stride, rows)
        ok = ok & ~((rows > step) & multi) & (start + (nbuf - 1) * step + rows <= limit)
    (sa, ra_, st_a, _), (sb, rb_, st_b, _) = regions[0], regions[1]
    step_a, step_b = np.where(st_a != 0, st_a, ra_), np.where(st_b != 0, st_b, rb_)
    for i in range(2):
        for j in range(2):
            lo, o_lo = sa + i * step_a, sb + j * step_b
            both = (i < nbuf) & (j < nbuf)
            ok = ok & ~(both & (lo <= o_lo + rb_ - 1) & (o_lo <= lo + ra_ - 1))
    return ok


def grow_tiles(tiles: dict[str, int], limits: dict[str, int], fits: Callable[[dict[str, int]], bool],
               order: Sequence[str], what: str) -> dict[str, int]:
    """Gemmini's sizing loop: shrink the largest tile until ``fits``, then grow the tiles in ``order``
    round-robin, one block at a time, while they fit and stay within ``limits``."""
    tiles = dict(tiles)
    while not fits(tiles):  # small memories: shrink the largest tile first
        largest = max(tiles, key=lambda n: tiles[n])
        if tiles[largest] == 1:
            raise ScheduleError(f"even 1-block tiles of {what} do not fit")
        tiles[largest] -= 1
    grown = True
    while grown:
        grown = False
        for name in order:
            trial = dict(tiles, **{name: tiles[name] + 1})
            if trial[name] <= limits[name] and fits(trial):
                tiles, grown = trial, True
    return tiles


def read_schedule_file(spec: str | Path) -> Any:
    """The JSON in the schedule file ``spec``."""
    path = Path(spec)
    if not path.is_file():
        raise ScheduleError(f"schedule {str(spec)!r} is neither 'default', 'gemmini', 'best', nor a JSON file")
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ScheduleError(f"schedule file {str(path)!r} is not valid JSON: {exc}") from None


def load_schedule(spec: "Schedule | Mapping[str, Any] | str | Path", cls: type[Schedule]) -> Schedule:
    """A Schedule, a dict of knobs, or a JSON file of knobs, as a ``cls``."""
    if isinstance(spec, Schedule):
        if not isinstance(spec, cls):
            raise ScheduleError(f"schedule is a {type(spec).__name__}, but a {cls.OP} needs a {cls.__name__}")
        return spec
    if isinstance(spec, (str, Path)):
        spec = read_schedule_file(spec)
    if not isinstance(spec, Mapping):
        raise ScheduleError(f"schedule must be a Schedule, a dict or a path, got {type(spec).__name__}")
    return cls.from_dict(spec)
