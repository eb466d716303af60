"""Schedules: the knobs of one op's lowering, their validity, and the library default.

A schedule is a frozen dataclass of knobs. ``memory_plan`` places its buffers in the
scratchpad and accumulator, and is the single place that decides whether a
schedule fits: the lowering and the tuner's space both ask it.
"""
from __future__ import annotations

import functools
import json
from dataclasses import MISSING, dataclass, fields, replace
from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping, Sequence

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


@dataclass(frozen=True)
class MatmulSchedule(Pipelined):
    """Weight-stationary tiled matmul. Tile sizes count ``dim``-wide blocks.

    loop_order: outer loops over tiles, k innermost ("ijk" or "jik").
    mvin_blocks: dim-wide blocks per mvin of A, B and bias (1..max_block_len).
    bias_strategy: "before" loads the bias into the accumulator ahead of the
    computes; "after" adds it with an accumulating mvin before the store.
    a_bank / b_bank / c_bank: the bank where each region starts; B packs right
    after A when both name one bank. The double buffering and software-pipeline
    knobs are :class:`Pipelined`'s.
    """

    tile_i: int
    tile_j: int
    tile_k: int
    loop_order: str = "ijk"
    mvin_blocks: int = 1
    bias_strategy: str = "before"
    a_bank: int = 0
    b_bank: int = 0
    c_bank: int = 0

    OP: ClassVar[str] = "matmul"

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("tile_i", "tile_j", "tile_k", "mvin_blocks"):
            check_int(name, getattr(self, name), 1)
        for name in ("a_bank", "b_bank", "c_bank"):
            check_int(name, getattr(self, name), 0)
        if self.loop_order not in LOOP_ORDERS:
            raise ScheduleError(f"loop_order={self.loop_order!r} is not one of {LOOP_ORDERS}")
        if self.bias_strategy not in BIAS_STRATEGIES:
            raise ScheduleError(f"bias_strategy={self.bias_strategy!r} is not one of {BIAS_STRATEGIES}")

    def memory_plan(self, hw: HardwareConfig, op: Any = None) -> MemoryPlan:
        """Place A, B (scratchpad) and C (accumulator); ScheduleError if they do not fit.
        ``op`` is unused: matmul regions depend on the tiles alone (conv's depend on the stride)."""
        check_int("mvin_blocks", self.mvin_blocks, 1, hw.max_block_len)
        check_int("a_bank", self.a_bank, 0, hw.sp_banks - 1)
        check_int("b_bank", self.b_bank, 0, hw.sp_banks - 1)
        check_int("c_bank", self.c_bank, 0, hw.acc_banks - 1)
        d, split = hw.dim, self.split_buffers
        a = place(self.a_bank, self.tile_i * self.tile_k * d, self.nbuf, hw.sp_bank_rows, hw.sp_banks, split)
        b = place(self.b_bank, self.tile_k * self.tile_j * d, self.nbuf, hw.sp_bank_rows, hw.sp_banks, split,
                  after=a if self.b_bank == self.a_bank else None)
        c = place(self.c_bank, self.tile_i * self.tile_j * d, self.nbuf, hw.acc_bank_rows, hw.acc_banks, split)
        check_plan(self, hw, (("A", a, "scratchpad"), ("B", b, "scratchpad"), ("C", c, "accumulator")))
        return MemoryPlan(a, b, c)

    def describe(self) -> str:
        return (f"tiles {self.tile_i}x{self.tile_j}x{self.tile_k}, "
                f"{'double' if self.double_buffer else 'single'}-buffered")


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


def matmul_blocks(M: int, N: int, K: int, hw: HardwareConfig) -> dict[str, int]:
    d = hw.dim
    return {"i": -(-M // d), "j": -(-N // d), "k": -(-K // d)}


def gemmini_matmul_schedule(M: int, N: int, K: int, hw: HardwareConfig, *, double_buffer: bool = True,
                            ) -> MatmulSchedule:
    """schedule="gemmini-flat": tiled_matmul_auto's sizing as first ported (from 5x5x51, the gemmini
    preset's start, on any hardware) in our own flat load-compute-store order: grow tile_j, tile_i,
    tile_k round-robin while A and B fit half the scratchpad and C half the accumulator."""
    d, limits = hw.dim, matmul_blocks(M, N, K, hw)
    nbuf = 2 if double_buffer else 1
    sp_budget, acc_budget = hw.sp_rows // nbuf, hw.acc_rows // nbuf

    def fits(t: dict[str, int]) -> bool:
        return ((t["i"] * t["k"] + t["k"] * t["j"]) * d <= sp_budget and t["i"] * t["j"] * d <= acc_budget)

    start = {"i": min(limits["i"], 5), "j": min(limits["j"], 5), "k": min(limits["k"], 51)}
    tiles = grow_tiles(start, limits, fits, ("j", "i", "k"), f"a {M}x{N}x{K} matmul on {hw.name}")
    a_rows = nbuf * tiles["i"] * tiles["k"] * d
    b_bank = -(-a_rows // hw.sp_bank_rows)
    b_rows = nbuf * tiles["k"] * tiles["j"] * d
    if b_bank >= hw.sp_banks or b_bank * hw.sp_bank_rows + b_rows > hw.sp_rows:
        b_bank = 0  # pack B right after A
    return MatmulSchedule(tiles["i"], tiles["j"], tiles["k"], double_buffer=double_buffer,
                          mvin_blocks=hw.max_block_len, b_bank=b_bank)


DMA_EFFICIENCY = 0.75


def pipelined_matmul_cycles(blocks: dict[str, int], t: dict[str, int], hw: HardwareConfig, out_bytes: int) -> float:
    """A rough cycle estimate of a pipelined tiling in loop order ijk, used only to pick the default's tiles.

    Steps overlap their DMA with their computes, so each costs the larger of the two; A stays
    resident across j when one k tile covers K, B when it is the only tile; the first step's loads
    and the last step's stores are not hidden; every step pays a short drain. The DMA moves a beat
    on about DMA_EFFICIENCY of its cycles (latency between requests; measured on the RTL)."""
    d, beat = hw.dim, hw.dma_beat_bytes * DMA_EFFICIENCY
    n = {x: -(-blocks[x] // t[x]) for x in "ijk"}
    M, N, K = (blocks[x] * d for x in "ijk")
    steps = n["i"] * n["j"] * n["k"]
    a_bytes = M * K * (1 if n["k"] == 1 else n["j"])
    b_bytes = K * N * (1 if n["k"] == 1 and n["j"] == 1 else n["i"])
    dma = (a_bytes + b_bytes + M * N * out_bytes) / beat
    compute = blocks["i"] * blocks["j"] * blocks["k"] * d
    first = (t["i"] * t["k"] + t["k"] * t["j"]) * d * d / beat
    last = t["i"] * t["j"] * d * d * out_bytes / beat
    return steps * max(compute / steps, dma / steps) + first + last + 2 * d * steps


@functools.lru_cache(maxsize=1024)
def default_matmul_schedule(M: int, N: int, K: int, hw: HardwareConfig, out_bytes: int = 1) -> MatmulSchedule:
    """The toolkit's heuristic: Gemmini's tile sizing, under a software pipeline, or a resident B or A.

    The next step's loads and the previous step's stores are interleaved with each
    step's computes, and the halves of every double buffer sit in different banks
    (A and B in banks of their own where the scratchpad has enough), so that DMA writes
    and the array's reads meet in no bank. Candidates: Gemmini's round-robin growth under
    that placement, and the tiles that keep all of B (or all of A) resident, loaded once;
    :func:`pipelined_matmul_cycles` picks among them."""
    blocks = matmul_blocks(M, N, K, hw)
    pipelined = dict(load_ahead=1, store_delay=1, split_buffers=True, mvin_blocks=hw.max_block_len)
    placements = [dict(b_bank=1), dict(b_bank=0)] if hw.sp_banks >= 4 else [dict(b_bank=0)]
    start = {"i": min(blocks["i"], 5), "j": min(blocks["j"], 5), "k": min(blocks["k"], 51)}
    what = f"a {M}x{N}x{K} matmul on {hw.name}"
    for placement in placements:
        def fits(t: dict[str, int]) -> bool:
            try:
                MatmulSchedule(t["i"], t["j"], t["k"], **pipelined, **placement).memory_plan(hw)
            except ScheduleError:
                return False
            return True
        candidates = []
        for grow, fixed in (("jik", {}), ("i", {"j": blocks["j"], "k": blocks["k"]}),
                            ("j", {"i": blocks["i"], "k": blocks["k"]})):
            first = {**{x: 1 for x in "ijk"}, **fixed} if fixed else start
            if fits(first) or not fixed:
                try:
                    candidates.append(grow_tiles(first, blocks, fits, grow, what))
                except ScheduleError:
                    pass
        if candidates:
            t = min(candidates, key=lambda t: pipelined_matmul_cycles(blocks, t, hw, out_bytes))
            return MatmulSchedule(t["i"], t["j"], t["k"], **pipelined, **placement)
    return gemmini_matmul_schedule(M, N, K, hw)


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
