"""A space's fitting rows over arrays: every combination of the fit knobs that ``memory_plan`` accepts,
decided for all of them at once (the kind's ``plan_arrays`` and :func:`toolkit.schedule.regions_fit`), in
the order and with the values :meth:`tuner.space.Space._enumerate_fit` gives point by point; and the
lookup of a row's position by its values.

tests/test_tuner.py holds the rows equal to ``memory_plan`` asked of every combination on its own.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from isa import HardwareConfig
from toolkit.ops import Op
from toolkit.schedule import Schedule, ScheduleError, regions_fit


CHUNK = 1 << 20   # sizes decided at once: bounds the memory of a large grid (tile_policy "all")


def _grid(lens: Sequence[int], at: np.ndarray) -> np.ndarray:
    """The value indices (one column per knob of domain lengths ``lens``) of the combinations at positions
    ``at`` of their itertools.product order."""
    return np.stack(np.unravel_index(at, lens), axis=1).astype(np.int32) if len(lens) else np.zeros((len(at), 0),
                                                                                                   np.int32)


def knob_values(domains: Mapping[str, list], names: Sequence[str], grid: np.ndarray) -> dict[str, np.ndarray]:
    """Each of ``names``' values at the value indices of ``grid`` (a column a knob)."""
    return {n: np.asarray(domains[n])[grid[:, i]] for i, n in enumerate(names)}


def _fit(cls: type[Schedule], op: Op, hw: HardwareConfig, knobs: Mapping[str, Any]) -> tuple[np.ndarray, Any]:
    """Which of the knobs' plans fit, and the plans (the kind's ``plan_arrays``)."""
    plan = cls.plan_arrays(hw, op, knobs)   # type: ignore[attr-defined]
    return regions_fit(hw, plan, np.where(knobs["double_buffer"], 2, 1), np.asarray(knobs["split_buffers"])), plan


def _fitting_sizes(cls: type[Schedule], op: Op, hw: HardwareConfig, domains: Mapping[str, list], sizes: list[str],
                   knobs: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """The positions (product order) of the sizes that fit with ``knobs`` (the rest), and the shape of each:
    its regions' rows and its buffer count; a chunk of sizes at a time."""
    lens = [len(domains[n]) for n in sizes]
    total = math.prod(lens)
    found, shapes = [], []
    for lo in range(0, total, CHUNK):
        at = np.arange(lo, min(total, lo + CHUNK))
        size_knobs = knob_values(domains, sizes, _grid(lens, at))
        fits, plan = _fit(cls, op, hw, {**knobs, **size_knobs})
        keep = np.flatnonzero(fits)
        nbuf = np.where({**knobs, **size_knobs}["double_buffer"], 2, 1)
        found.append(at[keep])
        shapes.append(np.stack([np.broadcast_to(r, at.shape)[keep] for r in (*plan.rows, nbuf)], axis=1))
    return np.concatenate(found), np.concatenate(shapes)


def fit_codes(cls: type[Schedule], op: Op, hw: HardwareConfig, domains: Mapping[str, list], fit: Sequence[str],
              placement: Sequence[str], base: Mapping[str, Any], constructs: Callable[[dict[str, Any]], bool]
              ) -> np.ndarray:
    """The codes (:class:`FitRows`) of the fitting rows (value indices of ``fit``), as the point-by-point
    enumeration gives them: the sizes (fit knobs but ``placement``) in product order, each followed by the
    placements that fit it in product order. A size fits at the placements' first values; a placement
    fits a size when the plan fits and the schedule class accepts it (``constructs``, asked once per
    placement of the first fitting size). ``base``: the other knobs' values."""
    sizes, placement = [n for n in fit if n not in placement], list(placement)
    size_lens = [len(domains[n]) for n in sizes]
    place_grid = _grid([len(domains[n]) for n in placement], np.arange(math.prod(len(domains[n]) for n in placement)))
    fitting, shapes = _fitting_sizes(cls, op, hw, domains, sizes, {**base, **{n: domains[n][0] for n in placement}})
    if not len(fitting):
        return np.zeros(0, np.int64)
    _, reps, which = np.unique(_combined(shapes), return_index=True, return_inverse=True)
    # each distinct shape against every placement: a representative size of it, the placements broadcast
    rep = {n: v[:, None] for n, v in knob_values(domains, sizes, _grid(size_lens, fitting[reps])).items()}
    placed = {n: v[None, :] for n, v in knob_values(domains, placement, place_grid).items()}
    ok = _fit(cls, op, hw, {**base, **rep, **placed})[0]
    first = _grid(size_lens, fitting[:1])[0]
    knobs = {**base, **{n: domains[n][int(v)] for n, v in zip(sizes, first)}}
    ok = ok & np.array([constructs({**knobs, **{n: domains[n][int(v)] for n, v in zip(placement, p)}})
                        for p in place_grid], dtype=bool)[None, :]
    return _rows(len(place_grid), fitting, ok, which.ravel())


def sized_rows(cls: type[Schedule], op: Op, hw: HardwareConfig, domains: Mapping[str, list], fit: Sequence[str]
               ) -> np.ndarray:
    """The fitting rows (value indices of ``fit``, in product order) of a class whose fit knobs all size (none
    places a region), decided by its ``fit_arrays`` over every combination, a chunk at a time."""
    lens = [len(domains[n]) for n in fit]
    total = math.prod(lens)
    rows = [np.zeros((0, len(fit)), np.int32)]
    for lo in range(0, total, CHUNK):
        grid = _grid(lens, np.arange(lo, min(total, lo + CHUNK)))
        rows.append(grid[cls.fit_arrays(hw, op, knob_values(domains, fit, grid))])   # type: ignore[attr-defined]
    return np.concatenate(rows)


def _combined(columns: np.ndarray) -> np.ndarray:
    """One int64 per row that is equal exactly where the rows (of non-negative ints) are."""
    code = np.zeros(len(columns), dtype=np.int64)
    for c in range(columns.shape[1]):
        values, inverse = np.unique(columns[:, c], return_inverse=True)
        code = code * len(values) + inverse.ravel()
    return code


def _rows(places_n: int, fitting: np.ndarray, ok: np.ndarray, which: np.ndarray) -> np.ndarray:
    """The codes of the fitting sizes each repeated over the placements that fit its shape (``ok[which]``):
    a row's size's and placement's positions in their product orders, mixed-radix (so increasing)."""
    per_shape = ok.sum(axis=1)
    places = np.flatnonzero(ok) % ok.shape[1]   # each shape's fitting placements, one shape after another
    counts = per_shape[which]
    starts = np.cumsum(counts) - counts
    out_place = places[np.arange(int(counts.sum())) + np.repeat(np.cumsum(per_shape)[which] - counts - starts, counts)]
    return np.repeat(fitting.astype(np.int64) * places_n, counts) + out_place


class FitRows:
    """A space's fitting rows (value indices of its fit knobs), held as one mixed-radix code each over
    the columns in ``order`` (the enumeration's: sizes, then placements, so the codes increase), and
    decoded to rows where asked: a large space's rows (millions) are built only for a caller that reads
    them all (:attr:`tuner.space.Space.valid_fit`)."""

    def __init__(self, codes: np.ndarray, radix: Sequence[int], order: Sequence[int],
                 rows: np.ndarray | None = None) -> None:
        self.order = list(order)
        self.radix = [max(1, int(radix[c])) for c in self.order]
        if math.prod(self.radix) >= 2 ** 62:
            raise ScheduleError("a space's fit knobs have too many combinations to index")
        self.codes, self._rows = codes, rows
        self.sorter = None if np.all(codes[1:] > codes[:-1]) else np.argsort(codes, kind="stable")
        self.weights = [math.prod(self.radix[i + 1:]) for i in range(len(self.radix))]

    @classmethod
    def of_rows(cls, rows: np.ndarray, radix: Sequence[int], order: Sequence[int]) -> "FitRows":
        fit = cls(np.zeros(0, np.int64), radix, order)
        return cls(fit.code(rows), radix, order, rows)

    def __len__(self) -> int:
        return len(self.codes)

    def code(self, rows: np.ndarray) -> np.ndarray:
        code = np.zeros(len(rows), dtype=np.int64)
        for c, r in zip(self.order, self.radix):
            code = code * r + np.asarray(rows)[:, c].astype(np.int64)
        return code

    def column(self, c: int, at: Any = slice(None)) -> np.ndarray:
        """Column ``c`` of the rows ``at``."""
        k = self.order.index(c)
        return ((self.codes[at] // self.weights[k]) % self.radix[k]).astype(np.int32)

    def row(self, i: int) -> list[int]:
        code, out = int(self.codes[i]), [0] * len(self.order)
        for c, w, r in zip(self.order, self.weights, self.radix):
            out[c] = code // w % r
        return out

    def rows(self) -> np.ndarray:
        """Every row, (len, columns) int32 (built once)."""
        if self._rows is None:
            rows = np.empty((len(self), len(self.order)), dtype=np.int32)
            for c in self.order:
                rows[:, c] = self.column(c)
            self._rows = rows
        return self._rows

    def get(self, row: Sequence[int]) -> int | None:
        """The position of ``row``, or None when no fitting row has these values."""
        if len(row) != len(self.radix) or any(not 0 <= row[c] < r for c, r in zip(self.order, self.radix)):
            return None
        code = self.code(np.asarray([row], dtype=np.int64))[0]
        codes = self.codes if self.sorter is None else self.codes[self.sorter]
        at = int(np.searchsorted(codes, code))
        if at >= len(codes) or codes[at] != code:
            return None
        return at if self.sorter is None else int(self.sorter[at])

    def restrict(self, c: int, v: int) -> "FitRows":
        """The rows with column ``c`` at ``v``, in order, that column then 0 of a domain of one."""
        keep = self.column(c) == v
        k = self.order.index(c)
        w = self.weights[k]
        codes = self.codes[keep]
        codes = codes // (w * self.radix[k]) * w + codes % w
        radix = [0] * len(self.order)
        for col, r in zip(self.order, self.radix):
            radix[col] = 1 if col == c else r
        rows = None
        if self._rows is not None:
            rows = self._rows[keep].copy()
            rows[:, c] = 0
        return FitRows(codes, radix, self.order, rows)
