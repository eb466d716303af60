"""A loop's checks kept per shape of loop and checker state, and moved to each loop of the shape.

Everything the checker finds of a loop (isa.checker) depends on the loop's shape (isa.loop_shared: its
bounds, flags and where the unroller placed its tiles) and the config and array state it starts in, but
its DRAM accesses: those of a phase move with the phase's base, the one thing that differs between loops
of a shape (isa.loop_shared's contract, which tests/test_loop_shared.py holds). So the checker checks the
first loop of each shape and state primitive by primitive, and keeps here what it found, the accesses
relative to their phase's base; a later loop of the shape needs only its accesses moved to its own bases
and each looked up in DRAM and the buffer table, vectorized. Where one is outside, the checker checks that
loop primitive by primitive again, which names the first bad primitive as before.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .loop_shared import WRAPS

_SUB, _ADDR, _ROWS, _STRIDE, _BYTES = 1, 2, 3, 4, 5


@dataclass(frozen=True)
class CheckedLoop:
    """What a loop of one shape, from one state, was found to do: each phase's primitive count, its DRAM
    accesses (FIELDS columns, each address less its phase's base), the local rows its loads write in
    program order, the rows all its primitives touch (isa.spans.union), and the state after it."""

    sizes: tuple[int, ...]
    accesses: np.ndarray
    phase: np.ndarray     # each access's phase
    loads: list           # isa.spans.Span
    spans: list
    after: tuple


def keepable(bases: Sequence[int | None]) -> bool:
    """Whether a loop of these phase bases can be kept: a base past WRAPS may wrap its addresses onto DRAM
    address 0 (isa.loop_shared), which no longer moves with it."""
    return all(base is None or base < WRAPS for base in bases)


def kept(sizes: tuple[int, ...], bases: Sequence[int | None], accesses: np.ndarray, loads: list, spans: list,
         after: tuple) -> CheckedLoop:
    """A CheckedLoop from a loop's accesses as recorded (absolute, ``sizes`` its phases' primitive counts)."""
    phase = np.searchsorted(np.cumsum(sizes), accesses[:, _SUB], side="right")
    relative = accesses.copy()
    relative[:, _ADDR] -= _bases_of(bases, phase)
    return CheckedLoop(sizes, relative, phase, loads, spans, after)


def moved(loop: CheckedLoop, index: int, bases: Sequence[int | None]) -> np.ndarray:
    """``loop``'s accesses as loop ``index`` of phase ``bases`` makes them."""
    accesses = loop.accesses.copy()
    accesses[:, 0] = index
    accesses[:, _ADDR] += _bases_of(bases, loop.phase)
    return accesses


def _bases_of(bases: Sequence[int | None], phase: np.ndarray) -> np.ndarray:
    """The base of each access's phase (``phase``), 0 for a phase without one."""
    return np.array([base or 0 for base in bases], dtype=np.int64)[phase]


def buffer_bounds(buffers: Sequence[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """The first and end bytes of sorted (first, end) ``buffers``, as :func:`all_inside` takes them."""
    bounds = np.array(buffers, dtype=np.int64).reshape(-1, 2)
    return bounds[:, 0].copy(), bounds[:, 1].copy()


def all_inside(accesses: np.ndarray, dram_size: int, buffers: tuple[np.ndarray, np.ndarray]) -> bool:
    """Whether every access lies in DRAM and inside one buffer (``buffers``: :func:`buffer_bounds`), as
    isa.checker's ``_dram`` asks of each primitive of a loop."""
    if not len(accesses):
        return True
    addr = accesses[:, _ADDR]
    end = addr + (accesses[:, _ROWS] - 1) * accesses[:, _STRIDE] + accesses[:, _BYTES]
    starts, ends = buffers
    k = np.searchsorted(starts, addr, side="right") - 1
    return bool((addr >= 0).all() and (end <= dram_size).all() and (k >= 0).all()
                and (end <= ends[np.maximum(k, 0)]).all())
