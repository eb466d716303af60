"""One space over both families of schedules: the toolkit's flat streams and Gemmini's loops.

On a hardware point whose host pays for every word (the SoC), neither family wins every layer: loops
issue few words, flat streams place every tile where the tuner likes. A :class:`UnionSpace` lets one
search weigh them: its points are the flat family's points, then the loop family's, and its genome is
the family's index followed by one value index per knob of either family. The knobs of the family a
point is not of are no knobs of that point: :meth:`UnionSpace.genome` gives them their first value and
:meth:`UnionSpace.index` reads past them, so a genetic child or an annealing step that changes one
lands on the same point.
"""
from __future__ import annotations

from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from isa import HardwareConfig
from toolkit.kinds import KINDS, TUNE_FAMILIES, default_family, default_schedule, is_library_spec
from toolkit.ops import Op
from toolkit.schedule import Schedule

from .space import Space, sample_points

LOOPS_PREFIX = "loops."   # the loop family's knobs in the union's names (the flat knobs keep theirs)
SWITCH_SHARE = 0.1        # the share of neighbour steps that cross to the other family


class UnionSpace:
    """The flat and the loop schedules of ``op`` on ``hw``: index ``i`` -> :class:`Schedule`."""

    family = "both"

    def __init__(self, op: Op, hw: HardwareConfig, *, tile_policy: str = "balanced",
                 parts: tuple[Space, Space] | None = None) -> None:
        self.op, self.hw, self.tile_policy = op, hw, tile_policy
        self.parts = parts or (Space(op, hw, tile_policy=tile_policy, family="flat"),
                               Space(op, hw, tile_policy=tile_policy, family="loops"))
        flat, loops = self.parts
        self.names = ["family", *flat.names, *(LOOPS_PREFIX + n for n in loops.names)]
        self.domains: dict[str, list] = {"family": ["flat", "loops"], **flat.domains,
                                         **{LOOPS_PREFIX + n: v for n, v in loops.domains.items()}}
        self.fixed = {**flat.fixed, **{LOOPS_PREFIX + n: v for n, v in loops.fixed.items()}}
        self._spans = ((1, 1 + len(flat.names)), (1 + len(flat.names), len(self.names)))
        self.size = len(flat) + len(loops)
        self.raw_size = flat.raw_size + loops.raw_size
        self._crossings: dict[int, int] = {}   # point -> the other family's point nearest to it
        default = default_schedule(op, hw)
        self.default: Schedule | None = default if self.index_of(default) is not None else None

    # ---- indexing ----------------------------------------------------------------------
    def __len__(self) -> int:
        return self.size

    def locate(self, index: int) -> tuple[int, int]:
        """(family index, the family's own index) of point ``index``."""
        if not 0 <= index < self.size:
            raise IndexError(f"point {index} outside a space of {self.size}")
        first = len(self.parts[0])
        return (0, int(index)) if index < first else (1, int(index) - first)

    def _offset(self, family: int) -> int:
        """The union's index of ``family``'s first point."""
        return 0 if family == 0 else len(self.parts[0])

    def genome(self, index: int) -> tuple[int, ...]:
        """The family's index, then a value index per knob of either family (the other family's at 0)."""
        family, local = self.locate(index)
        g = [0] * len(self.names)
        g[0] = family
        lo, hi = self._spans[family]
        g[lo:hi] = self.parts[family].genome(local)
        return tuple(g)

    def index(self, genome: Sequence[int]) -> int | None:
        """Point index of ``genome`` (the other family's genes are read past), None when it does not fit."""
        family = int(genome[0])
        lo, hi = self._spans[family]
        local = self.parts[family].index(list(genome[lo:hi]))
        return None if local is None else local + self._offset(family)

    def shape(self, index: int) -> tuple[int, ...]:
        """The family's index and the point's shape in its family (:meth:`tuner.space.Space.shape`)."""
        family, local = self.locate(index)
        return (family, *self.parts[family].shape(local))

    def knobs(self, index: int) -> dict[str, Any]:
        """The knobs of point ``index`` as its schedule writes them (a loop schedule's name its call too)."""
        return self[index].to_dict()

    def __getitem__(self, index: int) -> Schedule:
        family, local = self.locate(index)
        return self.parts[family][local]

    def __iter__(self) -> Iterator[Schedule]:
        return (self[i] for i in range(self.size))

    def index_of(self, schedule: Schedule | dict) -> int | None:
        """Index of a schedule (or knob dict) of either family, None when it is not a point of this space."""
        family = self._family_of(schedule)
        local = self.parts[family].index_of(schedule)
        return None if local is None else local + self._offset(family)

    def _family_of(self, schedule: Schedule | Mapping[str, Any]) -> int:
        return int(is_library_spec(schedule))

    def pieces(self, points: Sequence[int]) -> list[tuple[Space, list[int], list[int]]]:
        """``points`` by family: (the family's space, their indices there, their positions in ``points``)."""
        located = [self.locate(p) for p in points]
        out = []
        for family, part in enumerate(self.parts):
            at = [i for i, (f, _) in enumerate(located) if f == family]
            if at:
                out.append((part, [located[i][1] for i in at], at))
        return out

    def restrict(self, name: str, value: Any) -> "UnionSpace":
        """The points with knob ``name`` at ``value``: that family's points restricted, the other's all kept
        (a knob of one family says nothing of the other's points)."""
        if name not in self.names or name == "family":
            raise ValueError(f"restrict: {name!r} is not a knob of either family (they have {self.names[1:]})")
        family = int(name.startswith(LOOPS_PREFIX))
        parts = list(self.parts)
        parts[family] = parts[family].restrict(name.removeprefix(LOOPS_PREFIX) if family else name, value)
        return UnionSpace(self.op, self.hw, tile_policy=self.tile_policy, parts=(parts[0], parts[1]))

    # ---- moves ---------------------------------------------------------------------------
    def sample(self, rng: np.random.Generator, n: int, exclude: set[int] | frozenset[int] = frozenset()) -> list[int]:
        """Up to ``n`` distinct points, none in ``exclude``: each draw picks a family evenly, then a point of
        it uniformly. (Uniform over the points would all but never pick a loop schedule: a 256^3 matmul on
        the SoC has 1.5M flat points and 574 of loops.)"""
        first = len(self.parts[0])
        left = [[p for p in exclude if p < first], [p - first for p in exclude if p >= first]]
        counts = [0, 0]
        for _ in range(n):
            open_ = [f for f in (0, 1) if len(self.parts[f]) - len(left[f]) - counts[f] > 0]
            if not open_:
                break
            counts[open_[int(rng.integers(len(open_)))] if len(open_) > 1 else open_[0]] += 1
        return [p + self._offset(f) for f in (0, 1) if counts[f]
                for p in sample_points(len(self.parts[f]), rng, counts[f], frozenset(left[f]))]

    def neighbor(self, index: int, rng: np.random.Generator, tries: int = 20) -> int:
        """A step within the point's family, or now and then (:data:`SWITCH_SHARE`) the other family's point
        nearest to it (its knobs matched by name)."""
        family, local = self.locate(index)
        if rng.random() < SWITCH_SHARE:
            if index not in self._crossings:   # a large conv's flat family: 0.17 s a search over its fitting rows
                other = 1 - family
                self._crossings[index] = self.parts[other].nearest(self.parts[family].knobs(local)) + self._offset(other)
            return self._crossings[index]
        return self.parts[family].neighbor(local, rng, tries) + self._offset(family)

    def nearest(self, knobs: dict[str, Any]) -> int:
        """The valid point closest to ``knobs``, in the family they are of."""
        family = self._family_of(knobs)
        return self.parts[family].nearest(knobs) + self._offset(family)

    # ---- description ---------------------------------------------------------------------
    def summary(self) -> str:
        flat, loops = self.parts
        return "\n".join([f"search space of {self.op.key} on {self.hw.name}: both families, {self.size:,} points "
                          f"({len(flat):,} flat, {len(loops):,} of Gemmini's loops)", flat.summary(), loops.summary()])

    def __repr__(self) -> str:
        return f"UnionSpace({self.op.key}, {self.hw.name}, {len(self.parts[0])} flat + {len(self.parts[1])} loops)"


def make_space(op: Op, hw: HardwareConfig, family: str, *, tile_policy: str = "balanced",
               fix: Mapping[str, Any] | None = None) -> Space | UnionSpace:
    """The space of ``family``: "flat", "loops", "both" (:class:`UnionSpace`; ``fix``'s names as the union
    names them, the loop knobs with :data:`LOOPS_PREFIX`), or "auto" (:func:`toolkit.kinds.default_family`)."""
    if family not in TUNE_FAMILIES:
        raise ValueError(f"family={family!r} is not one of {TUNE_FAMILIES}")
    if family != "both":
        return Space(op, hw, tile_policy=tile_policy, fix=fix, family=default_family(op, hw) if family == "auto"
                     else family)
    if KINDS[op.KIND].loop_family(op) is None:
        raise ValueError(f"family='both': the tuner has no loop schedules of {op.KIND} yet (it has them of "
                         f"{sorted(k for k, v in KINDS.items() if v.loops is not None)})")
    fix = dict(fix or {})
    loops = {n.removeprefix(LOOPS_PREFIX): v for n, v in fix.items() if n.startswith(LOOPS_PREFIX)}
    flat = {n: v for n, v in fix.items() if not n.startswith(LOOPS_PREFIX)}
    return UnionSpace(op, hw, tile_policy=tile_policy,
                      parts=(Space(op, hw, tile_policy=tile_policy, fix=flat or None, family="flat"),
                             Space(op, hw, tile_policy=tile_policy, fix=loops or None, family="loops")))
