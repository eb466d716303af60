""":func:`isa.loop_unroll.issued_groups` of a program of LOOP_CONV_WS given as arrays of its loops' fields.

A library conv issues one LOOP_CONV_WS a tile, a few thousand of them, of a few dozen shapes. Rendering each
tile's seven words and parsing them back, to find which loops are alike, took most of a loop candidate's
features. Here the loops come as columns (a field of the seven words each, a value a loop), so the loops
alike are found with numpy, and only each group's first loop is made into words and unrolled, as
issued_groups makes it. The result is the rendered program's groups, array for array
(tests/test_loop_groups.py).
"""
from __future__ import annotations

import itertools
from typing import Mapping, Sequence

import numpy as np

from .config import HardwareConfig
from .encoding import encode_all
from .instructions import ConfigSt, Instruction
from .loop_shared import unrolled_words
from .loop_unroll import Groups, _groups, tile_rows
from .loop_unroll_conv import conv_phases
from .loop_words import LAYOUTS, LOOP_CONV_WORDS, LoopWord

_FIELDS = {cls: tuple(f.name for f in LAYOUTS[cls.FUNCT]) for cls in LOOP_CONV_WORDS}
_MASKS = {f.name: f.mask for cls in LOOP_CONV_WORDS for f in LAYOUTS[cls.FUNCT]}
_BASES = ("bias_addr", "input_addr", "weights_addr", None, "output_addr")   # conv_phases' phases' (None: execute)


def conv_groups(head: Sequence[Instruction], fields: Mapping[str, object], tail: Sequence[Instruction],
                hw: HardwareConfig, regions: Sequence[int] = ()) -> Groups:
    """``issued_groups(head + the loops + tail, hw, regions)``, where the loops are a LOOP_CONV_WS (its seven
    words) per value of ``fields``' arrays (every field of the seven words by name: an array, a value a loop,
    or one value for all of them) and ``head`` and ``tail`` hold no loop word. ISAError or LoopError as the
    words or their unrolling would raise."""
    if any(isinstance(ins, LoopWord) for ins in (*head, *tail)):
        raise ValueError("conv_groups: the head and tail are plain words; the loops are the fields'")
    n = max((len(v) for v in fields.values() if np.ndim(v)), default=1)
    cols = {name: np.broadcast_to(np.asarray(fields[name], dtype=np.int64), n) for name in _MASKS}
    _check_ranges(cols)
    st = next((ins for ins in reversed(head) if isinstance(ins, ConfigSt)), ConfigSt())
    a_start, b_end = tile_rows(cols["a_spad_id"], cols["b_spad_id"], np.arange(n) % 2, hw.sp_rows // 2)
    stores = cols["output_addr"] != 0
    acc_start = (np.cumsum(stores) - stores) % 2 * (hw.acc_rows // 2)
    bases = np.stack([cols[b] if b else np.zeros(n, np.int64) for b in _BASES], axis=1)
    group, firsts = _alike(cols, bases, (a_start, b_end, acc_start), regions)
    parts = [encode_all(head)] if head else []
    firsts_fields = np.stack([cols[name][firsts] for name in _MASKS], axis=1).tolist()
    for at, values in zip(firsts.tolist(), firsts_fields):
        words = _words(values)
        loop = words.pop(LOOP_CONV_WORDS[-1])
        parts.append(unrolled_words(*conv_phases(words, loop, hw, int(a_start[at]), int(b_end[at]),
                                                 int(acc_start[at]), st)))
    order = [*([0] if head else []), *(group + len(parts) - len(firsts)).tolist()]
    plains = [0] if head else []
    if tail:
        plains.append(len(order))
        order.append(len(parts))
        parts.append(encode_all(tail))
    ends = len(head) + len(LOOP_CONV_WORDS) * np.arange(1, n + 1)
    upto = len(head) + len(LOOP_CONV_WORDS) * n + len(tail) if tail else 0
    return _groups(parts, order, plains, ends, upto, bases)


_INTERNED: dict[tuple, LoopWord] = {}   # (class, fields) -> the word
_SPANS = [(cls, i, i + len(names)) for i, (cls, names) in
          zip(itertools.accumulate((len(n) for n in _FIELDS.values()), initial=0), _FIELDS.items())]


def _words(values: list[int]) -> dict[type, LoopWord]:
    """The seven words of a loop of ``values`` (every field, in :data:`_MASKS`' order), each one object for
    alike words of any program, as a program's alike lines parse to one: conv_phases keeps shapes by
    their words' identities, so a later candidate's alike loop is not derived again."""
    words = {}
    for cls, lo, hi in _SPANS:
        key = (cls, *values[lo:hi])
        word = _INTERNED.get(key)
        if word is None:
            if len(_INTERNED) >= 65_536:
                _INTERNED.clear()
            word = _INTERNED[key] = cls(*values[lo:hi])
        words[cls] = word
    return words


def _check_ranges(cols: Mapping[str, np.ndarray]) -> None:
    """The loop words' own range checks (LoopWord's), of the first loop whose field is out of range."""
    bad = [np.flatnonzero((c < 0) | (c > _MASKS[name])) for name, c in cols.items()]
    first = min((int(b[0]) for b in bad if len(b)), default=None)
    if first is not None:
        for cls, names in _FIELDS.items():
            cls(**{name: int(cols[name][first]) for name in names})   # raises the word's ISAError


def _alike(cols: Mapping[str, np.ndarray], bases: np.ndarray, rows: tuple[np.ndarray, ...],
           regions: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Each loop's group (numbered as they first appear) and each group's first loop. Loops are alike, as in
    issued_groups, if every field but the DRAM bases is the same, and where the unroller placed them, which
    phases they skip, and the region of ``regions`` each base falls in (the config_ld words before them are
    the head's, the same for all)."""
    varying = [c for name, c in cols.items() if name not in _BASES and c.strides[0]]
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
