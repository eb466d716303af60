"""Each shape of loop unrolled once: the primitives of a loop that differs from an earlier one in its DRAM
addresses only are that loop's, moved.

A loop unrolls in phases: loads from one DRAM buffer each (its base, a config word's address), the
execute phase (preloads and computes, which read no DRAM), and stores to one buffer. A phase's moves
read or write ``dram_at(base, offset)``, whose offset depends on the loop's shape (its bounds, flags and
where the unroller placed its tiles) and never on the base. A tiled layer issues many loops of a few
shapes (the interior tiles and the ragged edges, each in one of two slots), so:

- :func:`unrolled` (the instructions, for the checker and the functional model) builds each shape's
  execute phase once and hands out the same immutable instructions again;
- :func:`unrolled_words` (the encoded words, for the features and the estimates) encodes each shape once
  and moves the DRAM addresses of its moves to each loop's bases with numpy.

The key of a shape names everything its primitives depend on but the bases. A LOOP_CONV_WS's key, and a
LOOP_WS's but a resadd's, is :class:`Placed`: its words in the other slot are its words in the first with
each scratchpad and accumulator address moved, so :func:`unrolled_words` encodes such a shape once for both.
Either way the words are those of building every loop afresh (tests/test_loop_shared.py).
"""
from __future__ import annotations

import itertools
from typing import Callable, Hashable, NamedTuple, Sequence

import numpy as np

from .encoding import encode_all
from .instructions import GARBAGE, Instruction
from .opcodes import MVIN_FUNCTS, Funct

_MAX_SHAPES = 256   # a program holds a few dozen; the bound keeps a long tuning run's memory flat
_MOVES = np.array([*MVIN_FUNCTS, Funct.MVOUT], dtype=np.uint64)
# dram_at(base, offset) adds a 32-bit offset: from here up a base could wrap onto DRAM address 0, which
# a phase's moves also use for zeros (padding, no bias); such loops are built afresh
WRAPS = (1 << 64) - (1 << 32)


class Phase(NamedTuple):
    """A phase of a loop: ``base`` the DRAM address its moves count from (0: the loop skips the phase;
    None: it always runs and reads no DRAM); ``words``, where given, its primitives encoded without them."""
    base: int | None
    build: Callable[[], list[Instruction]]
    words: Callable[[], np.ndarray] | None = None


class Placed(NamedTuple):
    """The key of a loop whose operands each sit in a region of their own (its A and B tiles in the scratchpad,
    C's in the accumulator): its shape apart from where the unroller placed them, and the first
    row of each region there (A, B, C). Its primitives at another placement are the same but that each local
    address counts from its own region's first row (:data:`_REGIONS`)."""
    shape: Hashable
    rows: tuple[int, int, int]


# by funct, the region (Placed.rows' index) of a word's rs1 and rs2 local address; -1 none (a DRAM address, or
# none): mvin, mvin2 and mvin3 write A, B and C (the bias); a preload reads B into C; a compute reads A
_REGION_OF = {Funct.MVIN: (-1, 0), Funct.MVIN2: (-1, 1), Funct.MVIN3: (-1, 2), Funct.MVOUT: (-1, 2),
              Funct.PRELOAD: (1, 2), Funct.COMPUTE_PRELOADED: (0, -1), Funct.COMPUTE_ACCUMULATED: (0, -1)}
_REGIONS = np.array([_REGION_OF.get(f, (-1, -1)) for f in range(max(Funct) + 1)], dtype=np.int64)


class _Template(NamedTuple):
    words: np.ndarray    # (n, 3) uint64: the first loop of the shape's
    phase: np.ndarray    # each word's phase, whose base its DRAM address counts from (-1: none)
    offset: np.ndarray   # uint64: its DRAM address less that base
    region: np.ndarray   # (n, 2): the region of its rs1 and rs2 local address (-1: none, or garbage)
    rows: np.ndarray     # the regions' first rows it was built at (Placed.rows; none for another key)


_NO_WORDS = np.zeros((0, 3), dtype=np.uint64)   # a config word's, shared: read-only
_NO_WORDS.flags.writeable = False
_execute: dict[Hashable, tuple[Instruction, ...]] = {}
_execute_words: dict[Hashable, np.ndarray] = {}
_templates: dict[Hashable, _Template] = {}


_numbers: dict[tuple, int] = {}
_NEXT = itertools.count()


def shape_number(fields: tuple) -> int:
    """A number for a shape's ``fields``, which a loop's group key hashes in place of them (one number is never
    another shape's; a shape seen again after its number was dropped gets a new one)."""
    return cached(_numbers, fields, lambda: next(_NEXT))


def cached_by_identity(cache: dict, objects: tuple, rest: tuple, build: Callable[[], object]) -> object:
    """:func:`cached` of ``build()`` keyed by the identities of ``objects`` (a loop's words: a program's alike lines
    parse to one object, and hashing their fields took a seventh of a loop candidate's features) and ``rest``.
    Equal objects of another program are a miss, built again alike. The entry holds the objects, so no id in a
    key outlives its object."""
    return cached(cache, (*map(id, objects), *rest), lambda: (objects, build()))[1]


def cached(cache: dict, key: Hashable, build: Callable[[], object]) -> object:
    """``cache[key]``, built on a miss; the oldest key goes past :data:`_MAX_SHAPES`."""
    value = cache.get(key)
    if value is None:
        if len(cache) >= _MAX_SHAPES:
            del cache[next(iter(cache))]   # the oldest shape
        value = cache[key] = build()
    return value


def _phase(key: Hashable, n: int, phase: Phase) -> Sequence[Instruction]:
    """The primitives of ``phase``, the ``n``-th of the loop of shape ``key``: an execute phase's kept per
    ``key`` (it reads no DRAM, so whichever phases a loop of the key skips, it is the same)."""
    if phase.base is None:
        return cached(_execute, (key, n), lambda: tuple(phase.build()))
    return phase.build() if phase.base else ()


def shape_key(key: Hashable, phases: Sequence[Phase]) -> Hashable:
    """``key`` with which phases the loop skips (the rest of a shape is the caller's to name)."""
    return key, tuple(p.base is None or p.base != 0 for p in phases)


def unrolled_parts(key: Hashable, phases: Sequence[Phase], words: bool = False
                   ) -> list[Sequence[Instruction] | np.ndarray]:
    """The primitives of each of ``phases``; an execute phase's (base None) is the same tuple for every loop
    of the shape (while the shape stays cached), so that its checks can be kept by identity. ``words``: an
    execute phase with an encoding of its own comes as its words instead (read-only, the same array for every
    loop of the shape: isa.execute_check checks them at once); its primitives are :func:`phase_primitives`."""
    return [_execute_words_of(key, n, phase) if words and _encodes_itself(phase) else _phase(key, n, phase)
            for n, phase in enumerate(phases)]


def _encodes_itself(phase: Phase) -> bool:
    """Whether ``phase`` is an execute phase with an encoding of its own (its words kept per shape)."""
    return phase.base is None and phase.words is not None


def phase_primitives(key: Hashable, n: int, phase: Phase) -> Sequence[Instruction]:
    """The primitives of ``phase``, the ``n``-th of the loop of shape ``key`` (as :func:`unrolled_parts`)."""
    return _phase(key, n, phase)


def _execute_words_of(key: Hashable, n: int, phase: Phase) -> np.ndarray:
    """The words of execute ``phase``, the ``n``-th of the loop of shape ``key``: encoded once per key."""
    return cached(_execute_words, (key, n), lambda: _read_only(phase.words()))


def unrolled(key: Hashable, phases: Sequence[Phase]) -> list[Instruction]:
    """The primitives of a loop of ``phases``, in order; its execute phase (base None) built once per shape."""
    return [prim for part in unrolled_parts(key, phases) for prim in part]


def _template(key: Hashable, phases: Sequence[Phase]) -> _Template:
    parts = _phases_words(key, phases)
    words = np.concatenate(parts)
    bases = np.array([p.base or 0 for p in phases], dtype=np.uint64)
    owner = np.repeat(np.arange(len(parts)), [len(part) for part in parts])
    moves = np.isin(words[:, 0], _MOVES) & (words[:, 1] != 0) & (bases[owner] != 0)
    region = np.where((words[:, 1:] & np.uint64(0xFFFFFFFF)) == GARBAGE, -1, _REGIONS[words[:, 0].astype(np.int64)])
    offset = np.where(moves, words[:, 1] - bases[owner], 0).astype(np.uint64)
    rows = np.array(key.rows if isinstance(key, Placed) else (), dtype=np.int64)
    return _Template(words, np.where(moves, owner, -1), offset, region, rows)


def _phases_words(key: Hashable, phases: Sequence[Phase]) -> list[np.ndarray]:
    """The words of each of ``phases``, the loop of shape ``key``'s: an execute phase's own encoding where it has
    one (kept per key, as its instructions are: it runs whatever the bases), the others' primitives encoded in
    one call (a call's fixed cost was a tenth of a new shape's)."""
    own = [_encodes_itself(phase) for phase in phases]
    built = [() if o else _phase(key, n, phase) for n, (phase, o) in enumerate(zip(phases, own))]
    encoded = np.split(encode_all([ins for part in built for ins in part]), np.cumsum([len(b) for b in built])[:-1])
    return [_execute_words_of(key, n, phase) if o else words
            for n, (phase, o, words) in enumerate(zip(phases, own, encoded))]


def _read_only(words: np.ndarray) -> np.ndarray:
    words.flags.writeable = False
    return words


def _placed(words: np.ndarray, template: _Template, rows: tuple[int, int, int]) -> np.ndarray:
    """``words`` (a :class:`Placed` shape's, as its template was built) with each local address moved to the
    regions' first ``rows``: by their difference, modulo 2**64 (a valid loop's addresses stay in their low 32
    bits, above the flags of an accumulator address)."""
    delta = (np.array(rows, dtype=np.int64) - template.rows).astype(np.uint64)
    for column in (0, 1):
        region = template.region[:, column]
        at = np.flatnonzero(region >= 0)
        words[at, column + 1] += delta[region[at]]
    return words


def unrolled_words(key: Hashable, phases: Sequence[Phase]) -> np.ndarray:
    """``encode_all(unrolled(key, phases))``, from the shape encoded once."""
    if not phases:
        return _NO_WORDS
    bases = np.array([p.base or 0 for p in phases], dtype=np.uint64)
    if int(bases.max()) >= WRAPS:
        return encode_all(unrolled(key, phases))
    placed = isinstance(key, Placed)
    template = cached(_templates, shape_key(key.shape if placed else key, phases), lambda: _template(key, phases))
    words = template.words.copy()
    moved = template.phase >= 0
    words[moved, 1] = bases[template.phase[moved]] + template.offset[moved]
    return _placed(words, template, key.rows) if placed and key.rows != tuple(template.rows.tolist()) else words
