"""Search spaces: every knob of an op's Schedule class, its domain, and which points fit.

A space is generic over the dataclass fields of the op's Schedule class; each
op kind's row in :data:`toolkit.kinds.KINDS` gives the domain of every knob and the
knobs that ``memory_plan`` depends on ("fit knobs"). Validity is decided once,
over the product of the fit knobs only, by ``Schedule.memory_plan`` itself; the
other knobs multiply freely. A point is then an index in ``range(len(space))``
or, equivalently, a genome: one value index per knob.
"""
from __future__ import annotations

import copy
import itertools
import math
from dataclasses import fields, replace
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from isa import HardwareConfig
from toolkit.family import loop_cycles
from toolkit.kinds import KINDS, LoopFamily, default_schedule, family_call, family_class, loop_families, loop_groups
from toolkit.library import LibrarySchedule, check_library
from toolkit.knobs import Domains
from toolkit.ops import Op
from toolkit.schedule import Schedule, ScheduleError

from .fitting import FitRows, fit_codes, knob_values, sized_rows


# fit knobs that place regions, not size them: at their first values (bank 0, packed) they take the least room.
# They only move regions, so whether a placement fits depends on the sizing knobs only through the regions'
# rows and buffer counts (tests/test_tuner.py holds this against every point checked on its own).
PLACEMENT_KNOBS = frozenset({"split_buffers", "a_bank", "b_bank", "c_bank", "in_bank", "w_bank", "acc_bank"})

# A loop space on a host that pays for every word leaves out the points whose loop words alone cost it more
# than this many times the estimate of the space's default (gemmini.h's own tiles, toolkit.family). Such a
# point runs at least that long, so it beats the default only where the default runs that many times its
# estimate: on ResNet-50's 23 conv layers the default ran at 1.00-2.00x it, and the best points a tune found
# spent 0.01-0.17 of it on words (docs/concepts/soc.md). What is left out (3-12% of those spaces) is tiles of a
# few pixels, up to 100k loops, whose featurizing (each loop word rendered and walked) was most of a sample's.
HOST_BOUND_MARGIN = 4


def _passes(check: Callable[[], Any]) -> bool:
    """Whether ``check()`` runs without a ScheduleError."""
    try:
        check()
    except ScheduleError:
        return False
    return True


def fits(schedule: Schedule, op: Op, hw: HardwareConfig) -> Any:
    """The memory plan of ``schedule``; ScheduleError unless it fits (conv plans depend on the op's stride).
    A schedule of gemmini.h's loops without a plan of its own (a conv's) is held to gemmini.h's assertions."""
    if isinstance(schedule, LibrarySchedule) and not hasattr(schedule, "memory_plan"):
        check_library(op, schedule, hw)
        return None
    return schedule.memory_plan(hw, op)


def _shapes(plan: Any) -> tuple[tuple[int, int], ...]:
    """What a placement's fit depends on: the rows and buffer count of each region of ``plan`` (none for a
    schedule of gemmini.h's loops held to its assertions, which has no plan)."""
    if plan is None:
        return ()
    return tuple((r.rows, r.buffers) for r in (plan.a, plan.b, plan.c))


class Space:
    """The valid schedules of ``op`` on ``hw``; index ``i`` -> :class:`Schedule`."""

    def __init__(self, op: Op, hw: HardwareConfig, *, tile_policy: str = "balanced",
                 domains: Domains | None = None, fix: Mapping[str, Any] | None = None,
                 family: str = "flat") -> None:
        """``fix`` holds knobs at one value each (e.g. ``{"dataflow": "ws"}``): the space is the
        points with those values, and its default the heuristic's schedule with them. ``family``:
        the toolkit's flat streams ("flat"), or Gemmini's loops ("loops": gemmini.h's call with
        every tile and the host's walk a knob; its default is gemmini.h's own choice; "pointwise": a
        pointwise conv's tiled_matmul_nn_auto, likewise)."""
        if op.KIND not in KINDS:
            raise ValueError(f"no Schedule class registered for op kind {op.KIND!r}")
        self.op, self.hw, self.tile_policy = op, hw, tile_policy
        kind = KINDS[op.KIND]
        self.family, self.cls = family, family_class(op, family)
        loops = loop_families(op).get(family) if family != "flat" else None
        knobs = (dict(domains) if domains is not None else loops.domains(op, hw, tile_policy) if loops
                 else kind.knob_domains(op, hw, tile_policy))
        self.names: list[str] = [f.name for f in fields(self.cls)]
        missing = [n for n in self.names if n not in knobs]
        if missing:
            raise ValueError(f"{op.KIND} space has no domain for knob(s) {missing}")
        self.fixed = _check_fix(fix, knobs, op)
        knobs.update({name: [value] for name, value in self.fixed.items()})
        try:  # the library default is always a point of the space, so tuning never loses to it
            self.default: Schedule | None = _fixed_default(op, hw, self.cls, self.fixed, family)
            for name in self.names if isinstance(self.default, self.cls) else ():
                value = getattr(self.default, name)   # (a library schedule's dict names its call too)
                if value not in knobs[name]:
                    knobs[name] = sorted([*knobs[name], value], key=_order_key)
        except (ScheduleError, KeyError):
            self.default = None
        self.domains: dict[str, list] = {n: list(knobs[n]) for n in self.names}
        fit_knobs = loops.fit_knobs if loops else kind.fit_knobs
        fit = fit_knobs if fit_knobs is not None else frozenset(self.names)
        self.fit = [n for n in self.names if n in fit]
        self.free = [n for n in self.names if n not in fit]
        self._fit_pos = [self.names.index(n) for n in self.fit]
        self._sizing_cols = ([i for i, n in enumerate(self.fit) if n not in PLACEMENT_KNOBS]
                             if fit_knobs is not None else [])
        self._free_pos = [self.names.index(n) for n in self.free]
        self._free_radix = [len(self.domains[n]) for n in self.free]
        self._free_size = math.prod(self._free_radix)
        self.raw_size = math.prod(len(v) for v in self.domains.values())
        self._own_domains = domains is None
        self._vectorized = domains is None and hasattr(self.cls, "plan_arrays") and kind.fit_knobs is not None
        self._fit_rows, self.host_bound = self._drop_host_bound(self._enumerate_fit(), loops)
        self.size = len(self._fit_rows) * self._free_size
        if self.size == 0:
            raise ScheduleError(f"no schedule of {op.key} fits {hw.name}")

    # ---- construction --------------------------------------------------------------
    def _enumerate_fit(self) -> FitRows:
        """Every fitting combination of the fit knobs, in two stages: the placement knobs (banks,
        split buffers) only multiply the sizes that fit at their first values, bank 0 and packed,
        which take the least room: a size that does not fit there fits nowhere. A placement only
        moves regions, so its candidate is the size's schedule with the placement knobs set, and
        which placements fit is asked of ``memory_plan`` once per shape of the size's regions."""
        base = {n: self.domains[n][0] for n in self.free}
        placement = [n for n in self.fit if n in PLACEMENT_KNOBS]
        sizes = [n for n in self.fit if n not in PLACEMENT_KNOBS]
        radix, order = [len(self.domains[n]) for n in self.fit], [self.fit.index(n) for n in sizes + placement]
        if self._vectorized:   # the kind's own domains: every value is one its class accepts
            return FitRows(fit_codes(self.cls, self.op, self.hw, self.domains, self.fit, placement, base,
                                     lambda knobs: _passes(lambda: self.cls(**knobs))), radix, order)
        if self._own_domains and hasattr(self.cls, "fit_arrays") and not placement:   # Gemmini's loops of a conv
            return FitRows.of_rows(sized_rows(self.cls, self.op, self.hw, self.domains, self.fit), radix, order)
        places = [(p, {n: self.domains[n][v] for n, v in zip(placement, p)})
                  for p in itertools.product(*(range(len(self.domains[n])) for n in placement))]
        allowed: list[bool | None] = [None] * len(places)
        placed: dict[tuple, np.ndarray] = {}   # region shapes -> the placements (value indices) that fit them
        valid = []
        for size in itertools.product(*(range(len(self.domains[n])) for n in sizes)):
            knobs = dict(base, **places[0][1], **{n: self.domains[n][v] for n, v in zip(sizes, size)})
            try:
                schedule = self.cls(**knobs)
                shapes = _shapes(fits(schedule, self.op, self.hw))   # memory_plan: the one authority on fitting
            except ScheduleError:
                continue
            if shapes not in placed:
                ok = []
                for p, (place, values) in enumerate(places):
                    if allowed[p] is None:
                        allowed[p] = _passes(lambda: self.cls(**{**knobs, **values}))
                    if allowed[p] and _passes(lambda: fits(_placed(schedule, values), self.op, self.hw)):
                        ok.append(place)
                placed[shapes] = np.array(ok, dtype=np.int32).reshape(len(ok), len(placement))
            rows = placed[shapes]
            valid.append(np.hstack([np.broadcast_to(np.array(size, np.int32), (len(rows), len(sizes))), rows]))
        columns = [(sizes + placement).index(n) for n in self.fit]
        rows = np.concatenate(valid)[:, columns] if valid else np.zeros((0, len(self.fit)), np.int32)
        return FitRows.of_rows(rows, radix, order)

    def _drop_host_bound(self, rows: FitRows, loops: LoopFamily | None) -> tuple[FitRows, int]:
        """``rows`` less the fit rows whose loop words cost the host over :data:`HOST_BOUND_MARGIN` times the
        default's estimate, and how many points those were (none off the SoC, or in a family without a count)."""
        if loops is None or loops.host_words is None or not self.hw.host_cmd_cycles \
                or not isinstance(self.default, self.cls):
            return rows, 0
        indices = rows.rows()
        words = loops.host_words(self.op, knob_values(self.domains, self.fit, indices))
        mine = loops.host_words(self.op, {n: np.array([getattr(self.default, n)]) for n in self.fit})
        bound = max(HOST_BOUND_MARGIN * loop_cycles(self.op, loop_groups(self.op, self.default, self.hw)[0], self.hw,
                                                      self.default.CONV_LOOPS),
                    float(mine[0] * self.hw.host_cmd_cycles))   # the default is always a point
        keep = words * self.hw.host_cmd_cycles <= bound
        if keep.all():
            return rows, 0
        radix = [len(self.domains[n]) for n in self.fit]
        return FitRows.of_rows(indices[keep], radix, rows.order), int((~keep).sum()) * self._free_size

    @property
    def valid_fit(self) -> np.ndarray:
        """Every fitting combination of the fit knobs, one row of value indices (in :attr:`fit`'s order)
        each, int32; built on first use (a large conv has millions)."""
        return self._fit_rows.rows()

    # ---- indexing ----------------------------------------------------------------------
    def __len__(self) -> int:
        return self.size

    def genome(self, index: int) -> tuple[int, ...]:
        """Value index per knob of point ``index``."""
        if not 0 <= index < self.size:
            raise IndexError(f"point {index} outside a space of {self.size}")
        fit_i, rest = divmod(int(index), self._free_size)
        g = [0] * len(self.names)
        for pos, v in zip(self._fit_pos, self._fit_rows.row(fit_i)):
            g[pos] = v
        for pos, radix in zip(reversed(self._free_pos), reversed(self._free_radix)):
            rest, g[pos] = divmod(rest, radix)
        return tuple(g)

    def shape(self, index: int) -> tuple[int, ...]:
        """The value indices of point ``index``'s sizing knobs (its fit knobs but the placement ones: tiles,
        buffering, dataflow): points of one shape differ only in placement, order and pipeline knobs.
        () for every point of a kind that names no fit knobs (resadd, maxpool)."""
        row = self._fit_rows.row(int(index) // self._free_size)
        return tuple(row[c] for c in self._sizing_cols)

    def index(self, genome: Sequence[int]) -> int | None:
        """Point index of ``genome``, or None when it does not fit."""
        fit_i = self._fit_rows.get([genome[p] for p in self._fit_pos])
        if fit_i is None:
            return None
        rest = 0
        for pos, radix in zip(self._free_pos, self._free_radix):
            rest = rest * radix + genome[pos]
        return fit_i * self._free_size + rest

    def knobs(self, index: int) -> dict[str, Any]:
        return {n: self.domains[n][v] for n, v in zip(self.names, self.genome(index))}

    def __getitem__(self, index: int) -> Schedule:
        return self.cls(**self.knobs(index))

    def __iter__(self) -> Iterator[Schedule]:
        return (self[i] for i in range(self.size))

    def index_of(self, schedule: Schedule | dict) -> int | None:
        """Index of a schedule (or knob dict), None when it is not a point of this space."""
        knobs = schedule.to_dict() if isinstance(schedule, Schedule) else dict(schedule)
        try:
            genome = [self.domains[n].index(knobs[n]) for n in self.names]
        except (KeyError, ValueError):
            return None
        return self.index(genome)

    def seed_schedules(self) -> list[Schedule]:
        """The schedules a search tries first: the default."""
        return [self.default] if self.default is not None else []

    def pieces(self, points: Sequence[int]) -> list[tuple["Space", list[int], list[int]]]:
        """``points`` by family (one here): (this space, the points, their positions), as
        :meth:`tuner.union.UnionSpace.pieces` splits a space of both families."""
        return [(self, list(points), list(range(len(points))))] if len(points) else []

    def restrict(self, name: str, value: Any) -> "Space":
        """The points with knob ``name`` at ``value``, indexed as ``Space(..., fix={name: value})`` would
        index them (the knob's domain is ``[value]``), without enumerating the fit knobs again: the fitting
        rows are this space's rows with that value, in the same order."""
        if name not in self.names:
            raise ValueError(f"restrict: {name!r} is not a knob of {self.cls.__name__} (it has {self.names})")
        if value not in self.domains[name]:
            raise ValueError(f"restrict: {name}={value!r} is not in its domain {self.domains[name]}")
        half = copy.copy(self)
        v = self.domains[name].index(value)
        half.domains = {**self.domains, name: [value]}
        half.fixed = {**self.fixed, name: value}
        if name in self.fit:
            half._fit_rows = self._fit_rows.restrict(self.fit.index(name), v)
        else:
            half._free_radix = [1 if n == name else r for n, r in zip(self.free, self._free_radix)]
            half._free_size = math.prod(half._free_radix)
        half.raw_size = math.prod(len(d) for d in half.domains.values())
        half.host_bound = 0   # counted over the whole space only
        half.size = len(half._fit_rows) * half._free_size
        if half.default is not None and half.index_of(half.default) is None:
            half.default = None
        if half.size == 0:
            raise ScheduleError(f"no schedule of {self.op.key} with {name}={value!r} fits {self.hw.name}")
        return half

    # ---- moves ---------------------------------------------------------------------------
    def sample(self, rng: np.random.Generator, n: int, exclude: set[int] | frozenset[int] = frozenset()) -> list[int]:
        """Up to ``n`` distinct points drawn uniformly, none in ``exclude``."""
        return sample_points(self.size, rng, n, exclude)

    def neighbor(self, index: int, rng: np.random.Generator, tries: int = 20) -> int:
        """A valid point one knob away: a step to an adjacent value, or sometimes a jump."""
        g = list(self.genome(index))
        movable = [p for p, n in enumerate(self.names) if len(self.domains[n]) > 1]
        for _ in range(tries):
            pos = movable[int(rng.integers(len(movable)))]
            size = len(self.domains[self.names[pos]])
            if rng.random() < 0.7:
                v = g[pos] + (1 if rng.random() < 0.5 else -1)
            else:
                v = int(rng.integers(size))
            if v == g[pos] or not 0 <= v < size:
                continue
            trial = g.copy()
            trial[pos] = v
            j = self.index(trial)
            if j is not None:
                return j
        return index

    def nearest(self, knobs: dict[str, Any]) -> int:
        """The valid point closest to ``knobs`` (which may come from another workload's space).

        Numeric knobs compare in log2, others by equality; used to adapt schedules
        of similar workloads to this one.
        """
        target = [_knob_coord(knobs.get(n), self.domains[n]) for n in self.names]

        def coords(name: str) -> np.ndarray:
            return np.array([_knob_coord(v, self.domains[name]) for v in self.domains[name]])

        g = [0] * len(self.names)
        if self.fit:
            dist = sum(np.abs(coords(n)[self._fit_rows.column(k)] - target[p])
                       for k, (n, p) in enumerate(zip(self.fit, self._fit_pos)))
            for pos, v in zip(self._fit_pos, self._fit_rows.row(int(np.argmin(dist)))):
                g[pos] = v
        for pos in self._free_pos:
            g[pos] = int(np.argmin(np.abs(coords(self.names[pos]) - target[pos])))
        index = self.index(g)
        assert index is not None
        return index

    # ---- description ---------------------------------------------------------------------
    def summary(self) -> str:
        lines = [f"search space of {self.op.key} on {self.hw.name} (hw {self.hw.config_hash()}), "
                 f"{self.cls.__name__}, tile policy {self.tile_policy}:"]
        width = max(len(n) for n in self.names)
        for n in self.names:
            tag = "fit " if n in self.fit else "free"
            lines.append(f"  {n:<{width}}  {tag}  {len(self.domains[n]):>3} values  {_short(self.domains[n])}")
        lines.append(f"  {self.raw_size:,} knob combinations, {self.size:,} fit "
                     f"({100 * self.size / self.raw_size:.1f}%); invalid points are never measured")
        if self.host_bound:
            lines.append(f"  {self.host_bound:,} more fit but are left out: their loop words alone cost the host over "
                         f"{HOST_BOUND_MARGIN}x the default's estimate")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Space({self.op.key}, {self.hw.name}, {self.size} points)"


def sample_points(size: int, rng: np.random.Generator, n: int, exclude: set[int] | frozenset[int]) -> list[int]:
    """Up to ``n`` distinct indices of ``range(size)`` drawn uniformly, none in ``exclude``."""
    left = size - len(exclude)
    if n >= left:
        return [int(i) for i in rng.permutation(size) if int(i) not in exclude][:n]
    out: list[int] = []
    seen = set(exclude)
    while len(out) < n:
        i = int(rng.integers(size))
        if i not in seen:
            seen.add(i)
            out.append(i)
    return out


def _placed(schedule: Schedule, values: Mapping[str, Any]) -> Schedule:
    """``schedule`` with the placement knobs ``values`` (checked by the class once, in ``allowed``)."""
    candidate = copy.copy(schedule)
    for n, v in values.items():
        object.__setattr__(candidate, n, v)   # frozen: set once, before anyone sees it
    return candidate


def _check_fix(fix: Mapping[str, Any] | None, knobs: Domains, op: Op) -> dict[str, Any]:
    """``fix`` as a dict, each name a knob of ``op``'s schedule and each value one of its domain."""
    if fix is None:
        return {}
    if not isinstance(fix, Mapping):
        raise ValueError(f"fix must map knob names to values, got {type(fix).__name__}")
    for name, value in fix.items():
        if name not in knobs:
            raise ValueError(f"fix: {name!r} is not a knob of {op.KIND} schedules (they have {sorted(knobs)})")
        if value not in knobs[name]:
            raise ValueError(f"fix: {name}={value!r} is not in its domain {list(knobs[name])} for {op.key}")
    return dict(fix)


def _fixed_default(op: Op, hw: HardwareConfig, cls: type[Schedule], fixed: dict[str, Any],
                   family: str = "flat") -> Schedule:
    """The heuristic's schedule with the ``fixed`` knobs (of the "loops" family, gemmini.h's own choice);
    ScheduleError where that does not fit (a default of another class is left as it is: it is no point
    of the space)."""
    default = family_call(op, hw, family) if family != "flat" else default_schedule(op, hw)
    if fixed and isinstance(default, cls):
        default = replace(default, **fixed)
        fits(default, op, hw)
    return default


def _order_key(value: Any) -> tuple:
    return (0, value) if isinstance(value, (int, float)) else (1, str(value))


def _knob_coord(value: Any, domain: list) -> float:
    """A coordinate for distances: log2 of positive numbers, else the index in the domain."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return float(domain.index(value)) if value in domain else -1.0
    return math.log2(max(value, 1e-9) + 1)


def _short(values: list) -> str:
    text = ", ".join(str(v) for v in values)
    return text if len(text) <= 60 else text[:57] + "..."
