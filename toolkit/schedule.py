"""Schedules: the knobs of one op's lowering, their validity, and the library default.

A schedule is a frozen dataclass of knobs. ``memory_plan`` places its buffers in the
scratchpad and accumulator, and is the single place that decides whether a
schedule fits: the lowering and the tuner's space both ask it.
"""
from __future__ import annotations

import json
from dataclasses import MISSING, asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, ClassVar, Mapping

from isa import HardwareConfig


class ScheduleError(ValueError):
    """A schedule that is malformed or does not fit the hardware."""


LOOP_ORDERS = ("ijk", "jik")
BIAS_STRATEGIES = ("before", "after")


@dataclass(frozen=True)
class Region:
    start: int
    rows: int          # rows of one buffer
    buffers: int       # 1, or 2 when double-buffered

    @property
    def end(self) -> int:
        return self.start + self.rows * self.buffers

    def base(self, index: int) -> int:
        return self.start + (index % self.buffers) * self.rows


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
        return asdict(self)

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


def check_int(name: str, value: Any, lo: int, hi: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < lo or (hi is not None and value > hi):
        bound = f"between {lo} and {hi}" if hi is not None else f">= {lo}"
        raise ScheduleError(f"{name}={value!r} must be an integer {bound}")


@dataclass(frozen=True)
class MatmulSchedule(Schedule):
    """Weight-stationary tiled matmul. Tile sizes count ``dim``-wide blocks.

    loop_order: outer loops over tiles, k innermost ("ijk" or "jik").
    mvin_blocks: dim-wide blocks per mvin of A, B and bias (1..max_block_len).
    bias_strategy: "before" loads the bias into the accumulator ahead of the
    computes; "after" adds it with an accumulating mvin before the store.
    a_bank / b_bank / c_bank: the bank where each region starts; B packs right
    after A when both name one bank.
    """

    tile_i: int
    tile_j: int
    tile_k: int
    loop_order: str = "ijk"
    double_buffer: bool = True
    mvin_blocks: int = 1
    bias_strategy: str = "before"
    a_bank: int = 0
    b_bank: int = 0
    c_bank: int = 0

    OP: ClassVar[str] = "matmul"

    def __post_init__(self) -> None:
        for name in ("tile_i", "tile_j", "tile_k", "mvin_blocks"):
            check_int(name, getattr(self, name), 1)
        for name in ("a_bank", "b_bank", "c_bank"):
            check_int(name, getattr(self, name), 0)
        if self.loop_order not in LOOP_ORDERS:
            raise ScheduleError(f"loop_order={self.loop_order!r} is not one of {LOOP_ORDERS}")
        if self.bias_strategy not in BIAS_STRATEGIES:
            raise ScheduleError(f"bias_strategy={self.bias_strategy!r} is not one of {BIAS_STRATEGIES}")
        if not isinstance(self.double_buffer, bool):
            raise ScheduleError(f"double_buffer={self.double_buffer!r} must be true or false")

    def memory_plan(self, hw: HardwareConfig, op: Any = None) -> MemoryPlan:
        """Place A, B (scratchpad) and C (accumulator); ScheduleError if they do not fit.
        ``op`` is unused: matmul regions depend on the tiles alone (conv's depend on the stride)."""
        check_int("mvin_blocks", self.mvin_blocks, 1, hw.max_block_len)
        check_int("a_bank", self.a_bank, 0, hw.sp_banks - 1)
        check_int("b_bank", self.b_bank, 0, hw.sp_banks - 1)
        check_int("c_bank", self.c_bank, 0, hw.acc_banks - 1)
        nbuf = 2 if self.double_buffer else 1
        d = hw.dim
        a = Region(self.a_bank * hw.sp_bank_rows, self.tile_i * self.tile_k * d, nbuf)
        b_start = a.end if self.b_bank == self.a_bank else self.b_bank * hw.sp_bank_rows
        b = Region(b_start, self.tile_k * self.tile_j * d, nbuf)
        c = Region(self.c_bank * hw.acc_bank_rows, self.tile_i * self.tile_j * d, nbuf)
        for name, region, limit, mem in (("A", a, hw.sp_rows, "scratchpad"), ("B", b, hw.sp_rows, "scratchpad"),
                                          ("C", c, hw.acc_rows, "accumulator")):
            if region.end > limit:
                raise ScheduleError(
                    f"{self.describe()} does not fit: {name} needs {nbuf}x{region.rows} {mem} rows from row "
                    f"{region.start}, past the {limit} the {mem} has")
        if a.start < b.end and b.start < a.end:
            raise ScheduleError(f"{self.describe()} does not fit: A (rows {a.start}..{a.end - 1}) and B "
                                f"(rows {b.start}..{b.end - 1}) overlap; choose other banks")
        return MemoryPlan(a, b, c)

    def describe(self) -> str:
        return (f"tiles {self.tile_i}x{self.tile_j}x{self.tile_k}, "
                f"{'double' if self.double_buffer else 'single'}-buffered")


def default_matmul_schedule(M: int, N: int, K: int, hw: HardwareConfig, *, double_buffer: bool = True,
                            ) -> MatmulSchedule:
    """Gemmini's tiled_matmul_auto: grow tile_j, tile_i, tile_k round-robin while they fit."""
    d = hw.dim
    I, J, KB = -(-M // d), -(-N // d), -(-K // d)
    nbuf = 2 if double_buffer else 1
    sp_budget, acc_budget = hw.sp_rows // nbuf, hw.acc_rows // nbuf
    tiles = {"i": min(I, 5), "j": min(J, 5), "k": min(KB, 51)}
    limits = {"i": I, "j": J, "k": KB}

    def fits(t: dict[str, int]) -> bool:
        return ((t["i"] * t["k"] + t["k"] * t["j"]) * d <= sp_budget and t["i"] * t["j"] * d <= acc_budget)

    while not fits(tiles):  # small memories: shrink the largest tile first
        largest = max(tiles, key=lambda n: tiles[n])
        if tiles[largest] == 1:
            raise ScheduleError(f"even 1x1x1-block tiles do not fit {hw.name}")
        tiles[largest] -= 1
    grown = True
    while grown:
        grown = False
        for name in ("j", "i", "k"):
            trial = dict(tiles, **{name: tiles[name] + 1})
            if trial[name] <= limits[name] and fits(trial):
                tiles, grown = trial, True
    a_rows = nbuf * tiles["i"] * tiles["k"] * d
    b_bank = -(-a_rows // hw.sp_bank_rows)
    b_rows = nbuf * tiles["k"] * tiles["j"] * d
    if b_bank >= hw.sp_banks or b_bank * hw.sp_bank_rows + b_rows > hw.sp_rows:
        b_bank = 0  # pack B right after A
    return MatmulSchedule(tiles["i"], tiles["j"], tiles["k"], double_buffer=double_buffer,
                          mvin_blocks=hw.max_block_len, b_bank=b_bank)


def load_schedule(spec: "Schedule | Mapping[str, Any] | str | Path", cls: type[Schedule]) -> Schedule:
    """A Schedule, a dict of knobs, or a JSON file of knobs, as a ``cls``."""
    if isinstance(spec, Schedule):
        if not isinstance(spec, cls):
            raise ScheduleError(f"schedule is a {type(spec).__name__}, but a {cls.OP} needs a {cls.__name__}")
        return spec
    if isinstance(spec, (str, Path)):
        path = Path(spec)
        if not path.is_file():
            raise ScheduleError(f"schedule {str(spec)!r} is neither 'default', 'best', nor a JSON file")
        try:
            spec = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise ScheduleError(f"schedule file {str(path)!r} is not valid JSON: {exc}") from None
    if not isinstance(spec, Mapping):
        raise ScheduleError(f"schedule must be a Schedule, a dict or a path, got {type(spec).__name__}")
    return cls.from_dict(spec)

