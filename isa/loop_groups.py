""":func:`isa.loop_unroll.issued_groups` of a program of Gemmini's loops given as arrays of their fields.

A library call issues one loop a tile (LOOP_CONV_WS's seven words, LOOP_WS's six), thousands of them, of a
few dozen shapes. Rendering each tile's words and parsing them back, to find which loops are alike, took
most of a loop candidate's features. Here the loops come as columns (a field of their words each, a value a
loop), so the loops alike are found with numpy, and only each group's first loop is made into words and
unrolled, as issued_groups makes it. The result is the rendered program's groups, array for array
(tests/test_loop_groups.py).
"""
from __future__ import annotations

import itertools
from typing import Callable, Hashable, Mapping, NamedTuple, Sequence

import numpy as np

from .config import HardwareConfig
from .encoding import encode_all
from .instructions import ConfigSt, Instruction
from .loop_shared import Phase, unrolled_words
from .loop_unroll import Groups, check_ws, groups_of, tile_rows, ws_loop, ws_phases, ws_rows
from .loop_unroll_conv import conv_phases
from .loop_words import LAYOUTS, LOOP_CONV_WORDS, LOOP_WS_WORDS, LoopWord

Phases = tuple[Hashable, list[Phase]]


def _conv_phases(words: dict, loop: LoopWord, hw: HardwareConfig, rows: tuple[int, int, int], st: ConfigSt
                 ) -> Phases:
    return conv_phases(words, loop, hw, *rows, st)


def _ws_phases(words: dict, loop: LoopWord, hw: HardwareConfig, rows: tuple[int, int, int], st: ConfigSt
               ) -> Phases:
    check_ws(words, loop, hw.dim)
    return ws_phases(ws_loop(words, loop, hw, *rows))


Rows = tuple[np.ndarray, np.ndarray, np.ndarray]


def _conv_rows(cols: Mapping[str, np.ndarray], slot: np.ndarray, rows: Rows, hw: HardwareConfig) -> Rows:
    return rows


def _ws_rows(cols: Mapping[str, np.ndarray], slot: np.ndarray, rows: Rows, hw: HardwareConfig) -> Rows:
    return ws_rows(cols["is_resadd"], slot, *rows, hw)


class LoopKind(NamedTuple):
    """A kind of loop as groups_from_fields takes it: its words (the loop last), each phase's DRAM base field in
    the unroller's order (None: the execute phase), the address whose store toggles the accumulator half, its
    rows once the slots and accumulator halves are placed (the unroller's rule for the kind), and its shape and
    phases once placed (the unroller's); then, from its words' layouts, every field's mask (the words' fields in
    order) and where each word's fields start there."""
    words: tuple[type[LoopWord], ...]
    bases: tuple[str | None, ...]
    stores: str
    rows: Callable[[Mapping[str, np.ndarray], np.ndarray, Rows, HardwareConfig], Rows]
    phases: Callable[[dict, LoopWord, HardwareConfig, tuple[int, int, int], ConfigSt], Phases]
    masks: dict[str, int]
    edges: tuple[int, ...]


def _kind(words: tuple[type[LoopWord], ...], bases: tuple[str | None, ...], stores: str,
          rows: Callable[..., Rows], phases: Callable[..., Phases]) -> LoopKind:
    layouts = [LAYOUTS[cls.FUNCT] for cls in words]
    return LoopKind(words, bases, stores, rows, phases, {f.name: f.mask for layout in layouts for f in layout},
                    tuple(itertools.accumulate(map(len, layouts), initial=0)))


CONV = _kind(LOOP_CONV_WORDS, ("bias_addr", "input_addr", "weights_addr", None, "output_addr"), "output_addr",
             _conv_rows, _conv_phases)
WS = _kind(LOOP_WS_WORDS, ("d", "a", "b", None, "c"), "c", _ws_rows, _ws_phases)


def groups_from_fields(kind: LoopKind, head: Sequence[Instruction], fields: Mapping[str, object],
                       tail: Sequence[Instruction], hw: HardwareConfig, regions: Sequence[int] = ()) -> Groups:
    """``issued_groups(head + the loops + tail, hw, regions)``, where the loops are one of ``kind`` (its words)
    per value of ``fields``' arrays (every field of its words by name: an array, a value a loop, or one value
    for all of them) and ``head`` and ``tail`` hold no loop word. ISAError or LoopError as the words or their
    unrolling would raise."""
    if any(isinstance(ins, LoopWord) for ins in (*head, *tail)):
        raise ValueError("groups_from_fields: the head and tail are plain words; the loops are the fields'")
    masks = kind.masks
    n = max((len(v) for v in fields.values() if np.ndim(v)), default=1)
    cols = {name: np.broadcast_to(np.asarray(fields[name], dtype=np.int64), n) for name in masks}
    _check_ranges(kind, cols)
    st = next((ins for ins in reversed(head) if isinstance(ins, ConfigSt)), ConfigSt())
    rows = _placed(kind, cols, hw)
    bases = np.stack([cols[b] if b else np.zeros(n, np.int64) for b in kind.bases], axis=1)
    group, firsts = _alike(kind, cols, bases, rows, regions)
    parts = [encode_all(head)] if head else []
    firsts_fields = np.stack([cols[name][firsts] for name in masks], axis=1).tolist()
    for at, values in zip(firsts.tolist(), firsts_fields):
        words = _words(kind, values)
        loop = words.pop(kind.words[-1])
        parts.append(unrolled_words(*kind.phases(words, loop, hw, tuple(int(r[at]) for r in rows), st)))
    order = [*([0] if head else []), *(group + len(parts) - len(firsts)).tolist()]
    plains = [0] if head else []
    if tail:
        plains.append(len(order))
        order.append(len(parts))
        parts.append(encode_all(tail))
    ends = len(head) + len(kind.words) * np.arange(1, n + 1)
    upto = len(head) + len(kind.words) * n + len(tail) if tail else 0
    return groups_of(parts, order, plains, ends, upto, bases)


def _placed(kind: LoopKind, cols: Mapping[str, np.ndarray], hw: HardwareConfig) -> Rows:
    """Each loop's (A's first row, the row past B's tile, C's first accumulator row), as the unroller places
    it: the slots in turn, the accumulator half toggled after each loop that stores, then the kind's rule."""
    slot = np.arange(len(cols[kind.stores])) % 2
    a_start, b_end = tile_rows(cols["a_spad_id"], cols["b_spad_id"], slot, hw.sp_rows // 2)
    stores = cols[kind.stores] != 0
    acc_start = (np.cumsum(stores) - stores) % 2 * (hw.acc_rows // 2)
    return kind.rows(cols, slot, (a_start, b_end, acc_start), hw)


_INTERNED: dict[tuple, LoopWord] = {}   # (class, fields) -> the word


def _words(kind: LoopKind, values: list[int]) -> dict[type, LoopWord]:
    """The words of a loop of ``values`` (every field, in ``kind.masks``' order), each one object for alike
    words of any program, as a program's alike lines parse to one: the unrollers keep shapes by their words'
    identities, so a later candidate's alike loop is not derived again."""
    words = {}
    for cls, lo, hi in zip(kind.words, kind.edges, kind.edges[1:]):
        key = (cls, *values[lo:hi])
        word = _INTERNED.get(key)
        if word is None:
            if len(_INTERNED) >= 65_536:
                _INTERNED.clear()
            word = _INTERNED[key] = cls(*values[lo:hi])
        words[cls] = word
    return words


def _check_ranges(kind: LoopKind, cols: Mapping[str, np.ndarray]) -> None:
    """The loop words' own range checks (LoopWord's), of the first loop whose field is out of range."""
    bad = [np.flatnonzero((c < 0) | (c > kind.masks[name])) for name, c in cols.items()]
    first = min((int(b[0]) for b in bad if len(b)), default=None)
    if first is not None:
        _words(kind, [int(c[first]) for c in cols.values()])   # raises the word's ISAError


def _alike(kind: LoopKind, cols: Mapping[str, np.ndarray], bases: np.ndarray, rows: tuple[np.ndarray, ...],
           regions: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Each loop's group (numbered as they first appear) and each group's first loop. Loops are alike, as in
    issued_groups, if every field but the DRAM bases is the same, and where the unroller placed them, which
    phases they skip, and the region of ``regions`` each base falls in (the config_ld words before them are
    the head's, the same for all)."""
    varying = [c for name, c in cols.items() if name not in kind.bases and c.strides[0]]
    regions_at = np.searchsorted(np.asarray(regions, dtype=np.int64), bases, side="right") * (bases != 0)
    _, firsts, inverse = np.unique(_row_codes([*varying, *rows, *(bases != 0).T, *regions_at.T]), return_index=True,
                                   return_inverse=True)
    number = np.empty(len(firsts), dtype=np.int64)
    number[np.argsort(firsts)] = np.arange(len(firsts))
    return number[inverse], np.sort(firsts)


def _row_codes(columns: Sequence[np.ndarray]) -> np.ndarray:
    """A number per row of ``columns`` (integer arrays of one length), equal where the rows are: each column's
    value from its least is a digit of its range's radix (np.unique over the rows as a whole sorted them as
    bytes, a tenth of a candidate)."""
    code, radix = np.zeros(len(columns[0]), dtype=np.int64), 1
    for column in columns:
        low, span = int(column.min()), int(column.max()) - int(column.min()) + 1
        if radix * span >= 1 << 62:   # renumber the rows so far densely
            _, code = np.unique(code, return_inverse=True)
            radix = int(code.max()) + 1
        code, radix = code * span + (column - low), radix * span
    return code
