"""One space over several families of schedules: the toolkit's flat streams and Gemmini's loops.

On a hardware point whose host pays for every word (the SoC), neither family wins every layer: loops
issue few words, flat streams place every tile where the tuner likes. A :class:`UnionSpace` lets one
search weigh them: its points are the flat family's points, then the loop family's (a pointwise conv has two:
tiled_conv_auto's and tiled_matmul_nn_auto's), and its genome is the family's index followed by one value
index per knob of every family. The knobs of the family a
point is not of are no knobs of that point: :meth:`UnionSpace.genome` gives them their first value and
:meth:`UnionSpace.index` reads past them, so a genetic child or an annealing step that changes one
lands on the same point.
"""
from __future__ import annotations

from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from isa import HardwareConfig
from toolkit.kinds import (TUNE_FAMILIES, default_family, default_schedule, loop_families, loop_kinds,
                           schedule_class)
from toolkit.ops import Op
from toolkit.schedule import Schedule

from .space import Space, sample_points


def family_prefix(family: str) -> str:
    """The prefix of ``family``'s knobs in a union's names where it is not the union's first family."""
    return f"{family}."


LOOPS_PREFIX = family_prefix("loops")   # the loop family's knobs in the union's names (the first family's keep theirs)
SWITCH_SHARE = 0.1        # the share of neighbour steps that cross to another family


class UnionSpace:
    """Families of schedules of ``op`` on ``hw`` in one space (by default the flat and the loop family):
    index ``i`` -> :class:`Schedule`. Each family after the first names its knobs ``<family>.<knob>``."""

    def __init__(self, op: Op, hw: HardwareConfig, *, tile_policy: str = "balanced",
                 parts: tuple[Space, ...] | None = None) -> None:
        self.op, self.hw, self.tile_policy = op, hw, tile_policy
        self.parts = parts or (Space(op, hw, tile_policy=tile_policy, family="flat"),
                               Space(op, hw, tile_policy=tile_policy, family="loops"))
        self.family = "both" if self.parts[0].family == "flat" else "+".join(p.family for p in self.parts)
        self.prefixes = _prefixes([part.family for part in self.parts])
        self.names = ["family", *(pre + n for pre, part in zip(self.prefixes, self.parts) for n in part.names)]
        self.domains: dict[str, list] = {"family": [part.family for part in self.parts],
                                         **{pre + n: v for pre, part in zip(self.prefixes, self.parts)
                                            for n, v in part.domains.items()}}
        self.fixed = {pre + n: v for pre, part in zip(self.prefixes, self.parts) for n, v in part.fixed.items()}
        ends = np.cumsum([len(part.names) for part in self.parts]) + 1
        self._spans = list(zip([1, *ends[:-1].tolist()], ends.tolist()))
        self._offsets = np.cumsum([0] + [len(part) for part in self.parts]).tolist()
        self.size = self._offsets[-1]
        self.raw_size = sum(part.raw_size for part in self.parts)
        self._crossings: dict[tuple[int, int], int] = {}   # (point, family) -> that family's point nearest to it
        default = default_schedule(op, hw)
        self.default: Schedule | None = default if self.index_of(default) is not None else None

    # ---- indexing ----------------------------------------------------------------------
    def __len__(self) -> int:
        return self.size

    def locate(self, index: int) -> tuple[int, int]:
        """(family index, the family's own index) of point ``index``."""
        if not 0 <= index < self.size:
            raise IndexError(f"point {index} outside a space of {self.size}")
        family = int(np.searchsorted(self._offsets, index, side="right")) - 1
        return family, int(index) - self._offsets[family]

    def _offset(self, family: int) -> int:
        """The union's index of ``family``'s first point."""
        return self._offsets[family]

    def genome(self, index: int) -> tuple[int, ...]:
        """The family's index, then a value index per knob of every family (the other families' at 0)."""
        family, local = self.locate(index)
        g = [0] * len(self.names)
        g[0] = family
        lo, hi = self._spans[family]
        g[lo:hi] = self.parts[family].genome(local)
        return tuple(g)

    def index(self, genome: Sequence[int]) -> int | None:
        """Point index of ``genome`` (the other families' genes are read past), None when it does not fit."""
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
        """Index of a schedule (or knob dict) of any family, None when it is not a point of this space."""
        family = self._family_of(schedule)
        local = None if family is None else self.parts[family].index_of(schedule)
        return None if local is None else local + self._offset(family)

    def _family_of(self, schedule: Schedule | Mapping[str, Any]) -> int | None:
        """The family whose class ``schedule`` is of (a dict by its ``call``), None if none."""
        cls = schedule_class(self.op, schedule)
        return next((n for n, part in enumerate(self.parts) if part.cls is cls), None)

    def seed_schedules(self) -> list[Schedule]:
        """The schedules a search tries first: the default, and in a union of loop families (no flat one) each
        family's own default, gemmini.h's tiles of its call."""
        loops = [part.default for part in self.parts if part.family != "flat"] if self.family != "both" else []
        return list(dict.fromkeys(s for s in (self.default, *loops) if s is not None))

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
        """The points with knob ``name`` at ``value``: that family's points restricted, the others' all kept
        (a knob of one family says nothing of the other's points)."""
        if name not in self.names or name == "family":
            raise ValueError(f"restrict: {name!r} is not a knob of any family (they have {self.names[1:]})")
        family, knob = _split_name(self.prefixes, name)
        parts = list(self.parts)
        parts[family] = parts[family].restrict(knob, value)
        return UnionSpace(self.op, self.hw, tile_policy=self.tile_policy, parts=tuple(parts))

    # ---- moves ---------------------------------------------------------------------------
    def sample(self, rng: np.random.Generator, n: int, exclude: set[int] | frozenset[int] = frozenset()) -> list[int]:
        """Up to ``n`` distinct points, none in ``exclude``: each draw picks a family evenly, then a point of
        it uniformly. (Uniform over the points would all but never pick a loop schedule: a 256^3 matmul on
        the SoC has 1.5M flat points and 574 of loops.)"""
        families = range(len(self.parts))
        left: list[list[int]] = [[] for _ in families]
        for family, local in map(self.locate, exclude):
            left[family].append(local)
        counts = [0] * len(self.parts)
        for _ in range(n):
            open_ = [f for f in families if len(self.parts[f]) - len(left[f]) - counts[f] > 0]
            if not open_:
                break
            counts[open_[int(rng.integers(len(open_)))] if len(open_) > 1 else open_[0]] += 1
        return [p + self._offset(f) for f in families if counts[f]
                for p in sample_points(len(self.parts[f]), rng, counts[f], frozenset(left[f]))]

    def neighbor(self, index: int, rng: np.random.Generator, tries: int = 20) -> int:
        """A step within the point's family, or now and then (:data:`SWITCH_SHARE`) another family's point
        nearest to it (its knobs matched by name)."""
        family, local = self.locate(index)
        if rng.random() < SWITCH_SHARE:
            other = (family + 1 + int(rng.integers(len(self.parts) - 1))) % len(self.parts)
            if (index, other) not in self._crossings:   # a large conv's flat family: 0.17 s a search of its rows
                nearest = self.parts[other].nearest(self.parts[family].knobs(local))
                self._crossings[index, other] = nearest + self._offset(other)
            return self._crossings[index, other]
        return self.parts[family].neighbor(local, rng, tries) + self._offset(family)

    def nearest(self, knobs: dict[str, Any]) -> int:
        """The valid point closest to ``knobs``, in the family they are of (the first where none)."""
        family = self._family_of(knobs) or 0
        return self.parts[family].nearest(knobs) + self._offset(family)

    # ---- description ---------------------------------------------------------------------
    def summary(self) -> str:
        counts = ", ".join(f"{len(part):,} {_family_words(part)}" for part in self.parts)
        loops = "" if self.parts[0].family == "flat" else "loop "
        families = f"{'both' if len(self.parts) == 2 else len(self.parts)} {loops}families"
        return "\n".join([f"search space of {self.op.key} on {self.hw.name}: {families}, "
                          f"{self.size:,} points ({counts})", *(part.summary() for part in self.parts)])

    def __repr__(self) -> str:
        counts = " + ".join(f"{len(part)} {part.family}" for part in self.parts)
        return f"UnionSpace({self.op.key}, {self.hw.name}, {counts})"


def _family_words(part: Space) -> str:
    return "flat" if part.family == "flat" else f"of Gemmini's loops ({part.cls.CALL})"


def make_space(op: Op, hw: HardwareConfig, family: str, *, tile_policy: str = "balanced",
               fix: Mapping[str, Any] | None = None) -> Space | UnionSpace:
    """The space of ``family``: "flat", "loops", "pointwise", "both" (:class:`UnionSpace` of every family the
    op has; ``fix``'s names as the union names them, another family's knobs with its prefix, e.g.
    :data:`LOOPS_PREFIX`), or "auto": the default's family, and where the default is gemmini.h's loops of an
    op with two loop families (a pointwise conv: tiled_conv_auto's and tiled_matmul_nn_auto's) both of them."""
    if family not in TUNE_FAMILIES:
        raise ValueError(f"family={family!r} is not one of {TUNE_FAMILIES}")
    loops = loop_families(op)
    if family == "auto":
        family = default_family(op, hw)
        if family != "flat" and len(loops) > 1:
            return _union(op, hw, tuple(loops), tile_policy, fix)
    if family != "both":
        return Space(op, hw, tile_policy=tile_policy, fix=fix, family=family)
    if not loops:
        raise ValueError(f"family='both': the tuner has no loop schedules of {op.KIND} yet (it has them of "
                         f"{loop_kinds()})")
    return _union(op, hw, ("flat", *loops), tile_policy, fix)


def _union(op: Op, hw: HardwareConfig, families: tuple[str, ...], tile_policy: str,
           fix: Mapping[str, Any] | None) -> UnionSpace:
    """The :class:`UnionSpace` of ``families``, ``fix`` split among them by the union's prefixes."""
    prefixes = _prefixes(families)
    fixes: list[dict[str, Any]] = [{} for _ in families]
    for name, value in (fix or {}).items():
        family, knob = _split_name(prefixes, name)
        fixes[family][knob] = value
    return UnionSpace(op, hw, tile_policy=tile_policy,
                      parts=tuple(Space(op, hw, tile_policy=tile_policy, fix=f or None, family=name)
                                  for name, f in zip(families, fixes)))


def _prefixes(families: Sequence[str]) -> list[str]:
    """The prefix of each family's knobs in a union's names: none for the first, ``<family>.`` for the rest."""
    return ["", *map(family_prefix, families[1:])]


def _split_name(prefixes: Sequence[str], name: str) -> tuple[int, str]:
    """(the family, the knob's own name) of a union's knob ``name``: the family of the longest prefix it has."""
    family = max(n for n, pre in enumerate(prefixes) if name.startswith(pre))
    return family, name.removeprefix(prefixes[family])
