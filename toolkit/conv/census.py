"""The conv instruction census (see toolkit/census.py): the tile walk's steps grouped into classes of alike
steps (over a grid of alike tiles, a batch's walks at once: grouping.py), and the words conv2d_ws.s.j2 or
depthwise_ws.s.j2 (with conv_ws_steps.s.j2 and pad_copy.s.j2) emits for one step of each class.

Steps are alike when their tiles have the same extents, read the same input rows and columns (padding
included: an axis tile's class is its length and which of its input slots are padding), and use the same
kernel taps with a like channel tile (only the last, ragged one differs) at a like place in the reduction
(its first step overwrites the accumulators): then their words differ only in DRAM addresses within one
buffer (which the features read only for the buffer) and in which half of each double buffer they use,
which shifts local addresses. So each class's words are built once at local base 0 and shifted per buffer.

The features read only the census's sums (toolkit/tally.py), so :func:`conv_tallies` never joins the words:
a class's sums are taken once (its words found for all of a candidate's new classes at once, the computes'
sums in closed form: closed.py), and a candidate's are its classes' times their counts.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from isa import GARBAGE, Buffer, HardwareConfig
from isa.opcodes import Funct

from ..collector import collector_paused
from ..census import Census, Words, acc, frame, join, operand
from ..lowering import op_buffers
from ..tally import Accesses, Tally, tally, word_sums
from .cells import Cells, WalkGrid, cells, walk_grid
from .class_table import ClassTable
from .closed import computes_sums, input_loads, stores, weight_loads
from .geometry import padded_width
from .grouping import Group, PartSteps, group
from .ops import Conv2d, DepthwiseConv2d
from .packed import pad_copy
from .schedule import ConvPlan, ConvSchedule, DepthwiseSchedule
from .specs import Specs, step_specs, walk_row
from .tiles import StepComputes, _ConvWalk, _Output, tile_ranges

_SP, _IN, _W, _ACC = 0, 1, 2, 3   # what shifts a word's local address: nothing, the input, weight, acc base
_MAX_PIECES = 65536   # classes kept (a batch's new ones may pass it: then all go before the next)
# (context, part, class) -> its spec, words and sums; room for a batch's new classes past _MAX_PIECES too (pages
# untouched cost nothing; growing copies every array, 80 ms at ResNet-50's 3x3 conv)
_TABLE = ClassTable(step_specs, len(Specs._fields), 2 * _MAX_PIECES)
_CONTEXTS: dict[tuple, int] = {}      # context -> a small id (hashing a context's dataclasses costs)
_MAX_WALKS = 1024
_WALKS: dict[tuple, list] = {}        # a walk's knobs -> its classes (_walks_parts), across candidates
_TALLIES: dict[tuple, tuple] = {}     # a schedule's knobs but its order's -> its sums and buffers (conv_tallies)


def forget_classes() -> None:
    """Drop every cached class (a benchmark's cold start, or a full table)."""
    _TABLE.clear()
    _CONTEXTS.clear()
    _WALKS.clear()
    _TALLIES.clear()


class _Piece:
    """Words at local base 0, each with what shifts its rs1 and rs2 local addresses: ``fill`` adds them from
    ``spec`` (what the walk gives the class's first step) when first asked for (a candidate's features
    read only the tally, which computes classes get in closed form: _computes_tallies)."""

    def __init__(self, spec: Any, fill: Callable[["_Piece", Any], None]) -> None:
        self.spec, self.fill = spec, fill

    def add(self, funct: int | np.ndarray, rs1: np.ndarray, rs2: np.ndarray, shift1: np.ndarray | int,
            shift2: np.ndarray | int, stride: int = 0) -> None:
        rs1, rs2, shift1, shift2 = np.broadcast_arrays(np.asarray(rs1, np.uint64), np.asarray(rs2, np.uint64),
                                                       np.asarray(shift1), np.asarray(shift2))
        if rs1.size:
            self.words.add(funct, rs1, rs2, stride)
            self.shift.append((shift1.ravel(), shift2.ravel()))

    @functools.cached_property
    def _built(self) -> tuple[Census, np.ndarray]:
        """The words (count 1) and, per word, what shifts its rs1 and rs2: joined once, when the piece is
        complete (its first census), then shared by every census of it. Most pieces are only tallied (in
        closed form), so their words' lists are made here."""
        self.words = Words()
        self.shift: list[tuple[np.ndarray, np.ndarray]] = []
        self.fill(self, self.spec)
        c = self.words.census(1)
        if not self.shift:
            return c, np.zeros((len(c.count), 2), dtype=np.int64)   # _SP: base 0, no shift
        return c, np.stack([np.concatenate([s[which] for s in self.shift]) for which in (0, 1)], axis=1)

    @staticmethod
    def census(pieces: list["_Piece"], counts: np.ndarray, bases: np.ndarray) -> Census:
        """The words of ``pieces`` one after another, each piece's ``counts`` times, with each local address
        shifted by its row of ``bases`` (columns _SP, _IN, _W, _ACC)."""
        built = [p._built for p in pieces]
        c = join([b[0] for b in built])
        lens = np.array([len(b[0].count) for b in built], dtype=np.int64)
        shift = np.concatenate([b[1] for b in built]) if built else np.zeros((0, 2), np.int64)
        words = c.words.copy()
        words[:, 1:] += bases.astype(np.uint64)[np.repeat(np.arange(len(pieces)), lens)[:, None], shift]
        return c._replace(words=words, count=np.repeat(np.asarray(counts, dtype=np.int64), lens))


# new classes' tallies: each one's sums (each word once), and the scratchpad rows their words write and read
# (rows class_table.ACCESS, an array each; each class's writes then its reads), class i's from at[i] to at[i + 1]
_Tallies = tuple[np.ndarray, tuple[np.ndarray, ...], np.ndarray]


def _access(a: Accesses, shift: np.ndarray, read: int) -> tuple[np.ndarray, ...]:
    return a.addr, a.off, a.amount, shift, np.full(len(a.addr), read)


# new classes' words, each with what shifts its rs1 and rs2 local addresses, class i's words before ends[i]
_NewWords = tuple[Census, np.ndarray, np.ndarray]


def _piece_words(pieces: list[_Piece]) -> _NewWords:
    """The words of ``pieces``, one after another."""
    built = [p._built for p in pieces]
    return (join([b[0] for b in built]), np.concatenate([b[1] for b in built]),
            np.cumsum([len(b[0].count) for b in built]))


def _class_words(words: Callable[[Specs], tuple[Census, np.ndarray]], specs: Specs, shift: int) -> _NewWords:
    """The words of classes, found for every class at once (closed.py: ``words`` of their ``specs``, with each
    word's class), each word's rs2 local address moved by ``shift``."""
    c, cls = words(specs)
    shifts = np.stack([np.full(len(cls), _SP), np.full(len(cls), shift)], axis=1)
    return c, shifts, np.searchsorted(cls, np.arange(1, len(specs.nb) + 1))


def _words_tallies(got: list[_NewWords], hw: HardwareConfig, buffers: dict[str, Buffer]) -> _Tallies:
    """The tallies of several passes' new classes from their words, decoded at once (a pass's words are a few,
    and decoding costs per call), the passes' classes one after another."""
    words, shifts, ends = zip(*got)
    start = np.cumsum([0, *(len(c.count) for c in words[:-1])])
    return _cut_tallies(join(list(words)), np.concatenate(shifts), np.concatenate([e + s for e, s in zip(ends, start)]),
                        hw, buffers)


def _cut_tallies(c: Census, shift: np.ndarray, ends: np.ndarray, hw: HardwareConfig,
                 buffers: dict[str, Buffer]) -> _Tallies:
    """Decode the words ``c`` (what shifts each one's rs1 and rs2: ``shift``) of classes, one after
    another (class i's end before ``ends[i]``), and cut the sums and accesses per class (a class's
    accesses lie together, in word order)."""
    ws = word_sums(c, hw, buffers)
    starts = np.concatenate([[0], ends[:-1]])
    some = ends > starts   # a class without words sums to 0; the others' words lie between their starts
    sums = np.zeros((len(ends), ws.sums.shape[1]), np.int64)
    sums[some] = np.add.reduceat(ws.sums, starts[some], axis=0)
    access = zip(_access(ws.writes, shift[ws.writes.word, 1], 0), _access(ws.reads, shift[ws.reads.word, 0], 1))
    owner = np.searchsorted(ends, np.concatenate([ws.writes.word, ws.reads.word]), side="right")
    order = np.argsort(owner, kind="stable")   # each class's writes, then its reads
    return (sums, tuple(np.concatenate(row)[order] for row in access),
            np.searchsorted(owner[order], np.arange(len(ends) + 1)))


def _loads(piece: _Piece, loads: list, funct: int, dram: int, local: Callable, shift: int, stride: int) -> None:
    """mvins (or mvouts) of ``loads`` (tiles.Load) from buffer address ``dram``."""
    if loads:
        d, l, rows, cols = (np.array(x, dtype=np.int64) for x in zip(*loads))
        piece.add(funct, dram + d, operand(local(l), rows, cols), _SP, shift, stride)


def _computes(piece: _Piece, fills: list, c: StepComputes, dataflow: str) -> None:
    """conv_ws_steps.s.j2's computes: garbage computes that zero accumulator rows, then, weight-stationary,
    per weight block a preload (its weights on the first compute) and a compute per run of pixels;
    output-stationary, a preload of the run's accumulator rows and a compute of the run with the block's weights."""
    os_ = dataflow == "os"
    if fills:
        local, rows, cols = (np.array(x, dtype=np.int64) for x in zip(*fills))
        piece.add(Funct.PRELOAD, operand(GARBAGE, rows if os_ else 1, cols if os_ else 1),
                  operand(acc(local), rows, cols), _SP, _ACC)
        piece.add(Funct.COMPUTE_PRELOADED, operand(GARBAGE, rows, 1), operand(GARBAGE, 1 if os_ else rows, cols),
                  _SP, _SP)
    if not len(c.a):
        return
    c_word = operand(acc(c.c, c.accumulate), c.rows, c.b_cols)
    if os_:
        piece.add(Funct.PRELOAD, operand(GARBAGE, c.rows, c.b_cols), c_word, _SP, _ACC)
        piece.add(Funct.COMPUTE_PRELOADED, operand(c.a, c.rows, c.b_rows), operand(c.b, c.b_rows, c.b_cols), _IN, _W)
        return
    piece.add(Funct.PRELOAD, operand(np.where(c.first, c.b, GARBAGE), c.b_rows, c.b_cols), c_word,
              np.where(c.first, _W, _SP), _ACC)
    piece.add(np.where(c.first, Funct.COMPUTE_PRELOADED, Funct.COMPUTE_ACCUMULATED), operand(c.a, c.rows, c.b_rows),
              operand(GARBAGE, c.rows, c.b_cols), _IN, _SP)


def _computes_tallies(specs: Specs, walk: _ConvWalk, os_: bool) -> _Tallies:
    """The tallies of computes classes' words in closed form, every class at once (closed.py)."""
    c = computes_sums(specs, walk, os_)
    return c.sums, _access(c.reads, np.where(c.weights, _W, _IN), 1), c.at


def _diagonals(piece: _Piece, diagonals: list, dram: int) -> None:
    """depthwise_ws.s.j2's weight blocks (tiles.Diagonal): a garbage compute zeroes the block, then row i
    takes i + 1 weights and, but row 0, a garbage compute zeroes its first i columns."""
    for g in diagonals:
        i = np.arange(g.size)
        piece.add(Funct.PRELOAD, operand(GARBAGE, 1, 1), operand(g.local, g.size, g.size), _SP, _W)
        piece.add(Funct.COMPUTE_PRELOADED, operand(GARBAGE, g.size, 1), operand(GARBAGE, g.size, g.size), _SP, _SP)
        piece.add(Funct.MVIN2, dram + g.dram, operand(g.local + i, 1, i + 1), _SP, _W)
        piece.add(Funct.PRELOAD, operand(GARBAGE, 1, 1), operand(g.local + i[1:], 1, i[1:]), _SP, _W)
        piece.add(Funct.COMPUTE_PRELOADED, operand(GARBAGE, 1, 1), operand(GARBAGE, 1, i[1:]), _SP, _SP)


def _copy_census(op: Conv2d, hw: HardwareConfig, buffers: dict[str, Buffer]) -> Census:
    """pad_copy.s.j2: its config_ld and config_st, a mvin per chunk, an mvout per block, a fence."""
    copy, w = pad_copy(op, hw), Words()
    chunks = copy.chunks
    w.add(Funct.MVIN, buffers["input"].addr + np.array([m.src for m in chunks]),
          operand(np.array([m.local for m in chunks]), np.array([m.rows for m in chunks]),
                  np.array([m.cols for m in chunks])), copy.block_stride)
    stores = [(o.dram, o.local, m.rows, o.cols) for m in chunks for o in m.stores]
    dram, local, rows, cols = (np.array(x, dtype=np.int64) for x in zip(*stores))
    w.add(Funct.MVOUT, buffers["padded"].addr + dram, operand(local, rows, cols))
    return join([frame(1, config_ex=0), w.census(1)])


def conv_census(op: Conv2d | DepthwiseConv2d, s: ConvSchedule | DepthwiseSchedule, hw: HardwareConfig
                ) -> tuple[Census, dict[str, Buffer]]:
    """The census of ``lower_conv(op, s, hw)``'s stream, and its buffers."""
    if len(_TABLE) >= _MAX_PIECES:
        forget_classes()
    (groups, walk, buffers), = _class_groups(op, [s], hw)
    pieces = [([_TABLE.piece(i) for i in ids.tolist()], counts, _bases(bufs, _regions(walk.plan)))
              for _, ids, counts, bufs in groups]
    return join([_fixed(op, hw, "padded" in buffers), *(_Piece.census(*p) for p in pieces)]), buffers


def conv_tallies(op: Conv2d | DepthwiseConv2d, schedules: list[ConvSchedule | DepthwiseSchedule],
                 hw: HardwareConfig) -> list[tuple[Tally, dict[str, Buffer]]]:
    """The sums (toolkit.tally) of :func:`conv_census` of each of ``schedules``, without joining their
    classes' words: each class's sums, and its rows per bank under its buffers' bases, times its count (all
    whole numbers: exact). Many candidates at once: the new classes of a part get their sums in one
    closed-form pass per what it keeps apart (:func:`_pass_key`), whatever their tiles, and every candidate's
    sums and rows per bank come out of one pass over all their classes. Each candidate's sums are kept (as
    its words: whatever its pipeline knobs)."""
    keys = [_tally_key(op, hw, s) for s in schedules]
    known = {key: _TALLIES.get(key) for key in keys}
    new = {key: s for key, s in zip(keys, schedules) if known[key] is None}   # one of each
    if new:
        if len(_TABLE) >= _MAX_PIECES:
            forget_classes()
        with collector_paused():
            known.update(zip(new, _new_tallies(op, list(new.values()), hw)))
        if len(_TALLIES) + len(new) > _MAX_WALKS:
            _TALLIES.clear()
        _TALLIES.update((key, known[key]) for key in new)
    return [known[key] for key in keys]


# where a step's loads and stores go among its computes: the order of the words, which the sums do not read
_ORDER_KNOBS = frozenset({"load_ahead", "store_delay", "spread"})


def _tally_key(op: Conv2d | DepthwiseConv2d, hw: HardwareConfig, s: ConvSchedule | DepthwiseSchedule) -> tuple:
    """What a schedule's sums depend on: all its knobs but the order's (memory_plan reads none of those
    either: it fits as the schedules of its key do)."""
    return (op, hw, type(s), *(v for name, v in vars(s).items() if name not in _ORDER_KNOBS))


def _new_tallies(op: Conv2d | DepthwiseConv2d, schedules: list[ConvSchedule | DepthwiseSchedule],
                 hw: HardwareConfig) -> list[tuple[Tally, dict[str, Buffer]]]:
    """:func:`conv_tallies` of ``schedules``, none of them kept."""
    built = _class_groups(op, schedules, hw)
    passes: dict[tuple, tuple] = {}   # part, what its pass keeps apart -> a walk, its buffers, its classes
    for groups, walk, buffers in built:
        for part, ids, _, _ in groups:
            passes.setdefault((part, *_pass_key(part, walk)), (walk, buffers, []))[2].append(ids)
    words: dict[int, tuple[dict[str, Buffer], list, list]] = {}   # per buffers: new classes, their words
    for (part, *_), (walk, buffers, ids) in passes.items():
        new = _TABLE.unknown(np.concatenate(ids))
        if not len(new):
            continue
        _, first = np.unique(new, return_index=True)   # a class is of one pass: its context holds what it keeps apart
        new = new[np.sort(first)]   # each once, in the order the candidates have them
        if part == "computes":
            _TABLE.record(new, *_computes_tallies(Specs(*_TABLE.specs(new).T), walk, walk.s.dataflow == "os"))
        else:
            got = words.setdefault(id(buffers), (buffers, [], []))
            got[1].append(new)
            got[2].append(_new_words(part, walk, buffers, new))
    for buffers, new, got in words.values():
        _TABLE.record(np.concatenate(new), *_words_tallies(got, hw, buffers))
    return _sum_classes(op, hw, built)


def _pass_key(part: str, walk: _ConvWalk) -> tuple:
    """What one closed-form pass over new classes of ``part`` keeps apart: the geometry (the buffers) and the
    computes' dataflow. A pass lays its classes' pixels flat, each class its own (closed.py), so it takes
    classes of any tile size at once."""
    return walk.s.packs_taps, walk.s.dataflow if part == "computes" else None


def _new_words(part: str, walk: _ConvWalk, buffers: dict[str, Buffer], new: np.ndarray) -> _NewWords:
    """The words of the new classes ``new`` of ``part`` but the computes (of candidates sharing ``walk``'s
    :func:`_pass_key`): every class at once from their specs, but the bias and a depthwise conv's weights, from
    their pieces. ``walk`` stands for every class's op, hardware and geometry."""
    op, s = walk.op, walk.s
    full = op.out_dtype == "int32"
    if part == "input":
        src = buffers[s.geometry(op).source].addr
        return _class_words(lambda sp: input_loads(sp, walk, src), Specs(*_TABLE.specs(new).T), _IN)
    if part == "weights" and not isinstance(op, DepthwiseConv2d):
        return _class_words(lambda sp: weight_loads(sp, walk, buffers["weight"].addr), Specs(*_TABLE.specs(new).T),
                            _W)
    if part == "stores":
        return _class_words(lambda sp: stores(sp, walk, buffers["output"].addr, 4 if full else 1, full),
                            Specs(*_TABLE.specs(new).T), _ACC)
    return _piece_words([_TABLE.piece(i) for i in new.tolist()])


def _sum_classes(op: Conv2d | DepthwiseConv2d, hw: HardwareConfig, built: list
                 ) -> list[tuple[Tally, dict[str, Buffer]]]:
    """Each candidate's sums: its classes' times their counts, plus the words outside the walk; every
    candidate's classes in one array, cut per candidate (whole numbers: exact in any order)."""
    ids, counts, bufs = (np.concatenate([g[i] for groups, _, _ in built for g in groups]) for i in (1, 2, 3))
    per = [sum(len(g[1]) for g in groups) for groups, _, _ in built]   # each candidate's classes
    sums = np.add.reduceat(counts[:, None] * _TABLE.sums[ids], np.cumsum([0, *per[:-1]]), axis=0)
    bases = _bases(bufs, np.repeat(np.stack([_regions(walk.plan) for _, walk, _ in built]), per, axis=0))
    written, read = _TABLE.bank_rows(ids, counts, bases, np.repeat(np.arange(len(built)), per), hw)
    out = []
    for n, (_, _, buffers) in enumerate(built):
        fixed = _fixed_tally(op, hw, "padded" in buffers)
        out.append((Tally(fixed.sums + sums[n], fixed.written + written[n], fixed.read + read[n]), buffers))
    return out


@functools.lru_cache(maxsize=256)
def _buffers(op: Conv2d | DepthwiseConv2d, padded: bool) -> dict[str, Buffer]:
    """The program's buffers (with the padded copy's), kept per op: every candidate's tally holds them (read only)."""
    return op_buffers(op, (("padded", "int8", (op.batch, op.in_h, padded_width(op), op.in_c)),) if padded else ())


@functools.lru_cache(maxsize=256)
def _fixed(op: Conv2d | DepthwiseConv2d, hw: HardwareConfig, padded: bool) -> Census:
    """The words outside the tile walk: the frame's configs and fence, and a packed conv's padding copy."""
    head = frame(3 if op.bias else 2)
    return join([head, _copy_census(op, hw, _buffers(op, True))]) if padded else head


@functools.lru_cache(maxsize=256)
def _fixed_tally(op: Conv2d | DepthwiseConv2d, hw: HardwareConfig, padded: bool) -> Tally:
    return tally(_fixed(op, hw, padded), hw, _buffers(op, padded))


def _class_groups(op: Conv2d | DepthwiseConv2d, schedules: list[ConvSchedule | DepthwiseSchedule], hw: HardwareConfig
                  ) -> list[tuple[list[Group], _ConvWalk, dict[str, Buffer]]]:
    """Each schedule's tile walk's classes of steps, per part (:func:`_walks_parts`, the new walks' grouped at
    once: grouping.group), its walk (its memory plan) and the buffers. The classes and their buffers depend on
    the tiles, geometry, mvin width, dataflow, loop order and buffering, not on the placement or pipeline knobs:
    kept per walk, their bases are the schedule's own plan's (:func:`_bases`)."""
    walks = [_ConvWalk(op, s, hw) for s in schedules]   # their memory plans: ScheduleError where one does not fit
    buffers = [_buffers(op, walk.geo.source == "padded") for walk in walks]
    keys = [(op, hw, walk.t, s.packs_taps, s.mvin_blocks, s.dataflow, s.loop_order, s.nbuf)
            for walk, s in zip(walks, schedules)]
    walked = {key: _WALKS.get(key) for key in keys}
    todo = {key: (walk, bufs) for key, walk, bufs in zip(keys, walks, buffers) if walked[key] is None}
    if todo:
        new_walks, new_buffers = (list(x) for x in zip(*todo.values()))
        new = dict(zip(todo, _walks_parts(new_walks, hw, new_buffers)))
        grouped = iter(group([part for parts in new.values() for part in parts], _TABLE))
        walked.update((key, [next(grouped) for _ in parts]) for key, parts in new.items())
        if len(_WALKS) + len(new) > _MAX_WALKS:
            _WALKS.clear()
        _WALKS.update((key, walked[key]) for key in new)
    return [(walked[key], walk, bufs) for key, walk, bufs in zip(keys, walks, buffers)]


def _regions(plan: ConvPlan) -> np.ndarray:
    """The start, buffers and rows from one buffer to the next (rows) of the input, weight and accumulator
    regions (columns) of ``plan``."""
    return np.array([[r.start, r.buffers, r.step] for r in (plan.a, plan.b, plan.c)], np.int64).T


def _bases(bufs: np.ndarray, regions: np.ndarray) -> np.ndarray:
    """Each class's bases (columns _SP, _IN, _W, _ACC: 0, then Region.base of its input, weight and accumulator
    buffer ``bufs``) under ``regions`` (:func:`_regions`: one plan's, or a row of them per class)."""
    out = np.zeros((len(bufs), 4), np.int64)
    out[:, 1:] = regions[..., 0, :] + (bufs % regions[..., 1, :]) * regions[..., 2, :]
    return out


def _walks_parts(walks: list[_ConvWalk], hw: HardwareConfig, buffers: list[dict[str, Buffer]]
                 ) -> list[list[PartSteps]]:
    """Each of one op's walks' steps, per part, to group into classes (grouping.group: its classes, their rows of
    the class table, counts and input, weight and accumulator buffers): every walk's cells at once (cells.py),
    each part's keyed and cut per walk."""
    grids = [walk_grid(walk) for walk in walks]
    c = cells(grids)
    dw = walks[0].dw
    # a step's words depend on its channel tile only through whether it is the last (a ragged one), and
    # on the reduction's first step (it overwrites the accumulators); the other channel tiles are alike
    pixels = _code(c.last[0], c.hcls, c.wcls, c.taps, c.last_c)   # what the input and computes classes share
    outputs = _code(*c.last, (True, 2))   # the bias's and the stores' (of the reduction's first and last steps)
    keys = {"input": (_code((pixels, None), c.last[3]) if dw else pixels, c.new_in),
            "weights": (_code(c.last[3], c.taps) if dw else _code(c.last[3], c.taps, c.last_c), c.new_w),
            "bias": (outputs, c.r == 0),
            "computes": (_code((pixels, None), c.first_r, c.last[3]), None),
            "stores": (outputs, c.r == np.array([g.shape[4] - 1 for g in grids])[c.walk])}
    steps = {part: _walk_steps(c, *keys[part], len(walks)) for part in _contexts(walks[0], hw)}   # the op's parts
    return [[PartSteps(part, (_CONTEXTS.setdefault(context, len(_CONTEXTS)), part), *(x[n] for x in steps[part]),
                       grid.nbuf, functools.partial(pieces.piece, part), row, grid.inner, grid.shape)
             for part, context in _contexts(walk, hw).items()]
            for n, (walk, grid, row, pieces) in enumerate(zip(walks, grids, map(walk_row, walks),
                                                              map(_WalkPieces, walks, grids, buffers)))]


def _walk_steps(c: Cells, key: np.ndarray, active: np.ndarray | None, walks: int) -> tuple[list[np.ndarray], ...]:
    """The ``active`` cells (None: all) of a part, alike in ``key`` (:func:`_code`: the same within a context for
    any walk): their codes (with their buffers), steps and first steps, cut per walk."""
    at: Any = np.flatnonzero(active) if active is not None else np.s_[:]
    code = key[at] * c.nbuf[at] ** 3 + c.buf_key[at]
    cut = np.searchsorted(c.walk[at], np.arange(walks + 1)).tolist()
    return tuple([x[lo:hi] for lo, hi in zip(cut, cut[1:])] for x in (code, c.count[at], c.first[at]))


def _contexts(walk: _ConvWalk, hw: HardwareConfig) -> dict[str, tuple]:
    """The context each part of the walk numbers its classes in. A class's words at base 0 depend on the op, the
    hardware, per part the tiles it reads (the input all but the output channels', the weights all but the
    pixels', the bias and stores the output tile's), the mvin width (the loads) and the dataflow (the computes);
    not on the placement, loop order or pipeline knobs: candidates that differ only there share them."""
    op, s, t = walk.op, walk.s, walk.t
    outputs, geometry = t._replace(kh=0, kw=0, c=0), (op, hw, s.packs_taps)
    out = {"input": (*geometry, t._replace(k=0), s.mvin_blocks),
           "weights": (*geometry, t._replace(b=0, oh=0, ow=0), s.mvin_blocks),
           "bias": (*geometry, outputs, s.mvin_blocks),
           "computes": (*geometry, t, s.dataflow), "stores": (*geometry, outputs)}
    if not op.bias:
        del out["bias"]
    return out


class _WalkPieces:
    """What makes the pieces of a walk's classes (their words at base 0, built only when a census asks for them)
    from each one's first step, part by part. One object a walk rather than closures: a batch's walks live on in
    the class table, and every object the garbage collector tracks lengthens its full passes."""

    def __init__(self, walk: _ConvWalk, grid: WalkGrid, buffers: dict[str, Buffer]) -> None:
        self.walk, self.grid, self.buffers = walk, grid, buffers
        self.tiles: dict[int, tuple] = {}   # the parts' classes often start at one step

    def tile(self, n: int) -> tuple:
        """Step ``n``'s output tile and the walk's step there."""
        if n not in self.tiles:
            walk, grid = self.walk, self.grid
            *tiles, r = (n // k % size for k, size in zip(grid.inner, grid.shape))
            out = _Output(*(tile_ranges(*e)[x] for e, x in zip(grid.extents, tiles)), 0)
            self.tiles[n] = out, walk.step(out, r, walk.reduction(out.kbs if walk.dw else range(1)))
        return self.tiles[n]

    def piece(self, part: str, n: int) -> _Piece:
        """The piece of ``part``'s class whose first step is ``n``."""
        if part == "weights" and self.walk.dw:
            return _Piece(self.walk._diagonals(self.tile(n)[1], 0), self._diagonals)
        if part == "bias":
            return _Piece(self.walk._bias_loads(self.tile(n)[0]), self._bias)
        return _Piece((self.walk, *self.tile(n)), getattr(self, f"_{part}"))

    def _input(self, p: _Piece, spec: tuple) -> None:
        walk = self.walk
        _loads(p, walk._input_loads(*spec[1:], 0), Funct.MVIN, self.buffers[walk.geo.source].addr, lambda x: x, _IN,
               walk.plan.in_plane)

    def _weights(self, p: _Piece, spec: tuple) -> None:
        _loads(p, self.walk._weight_loads(spec[2], spec[1].kbs, 0), Funct.MVIN2, self.buffers["weight"].addr,
               lambda x: x, _W, self.walk.plan.w_plane)

    def _diagonals(self, p: _Piece, diagonals: list) -> None:
        _diagonals(p, diagonals, self.buffers["weight"].addr)

    def _bias(self, p: _Piece, loads: list) -> None:
        _loads(p, loads, Funct.MVIN3, self.buffers["bias"].addr, acc, _ACC, self.walk.plan.acc_plane)

    def _computes(self, p: _Piece, spec: tuple) -> None:
        _computes(p, *self.walk.computes(*spec[1:], 0, 0), self.walk.s.dataflow)

    def _stores(self, p: _Piece, spec: tuple) -> None:
        full = self.walk.op.out_dtype == "int32"
        _store(p, self.walk._stores(spec[1]), self.buffers["output"].addr, 4 if full else 1, full)


def _code(*digits: tuple[np.ndarray, int | None]) -> np.ndarray:
    """Steps' key: their ``digits`` (values below their radix; the first's radix unused), a mixed-radix number
    whose radices hold for every walk of a context, so that a key names one class in it."""
    code = np.asarray(digits[0][0], np.int64)
    for x, radix in digits[1:]:
        code = code * radix + x
    return code


def _store(piece: _Piece, stores: list, dram: int, out_bytes: int, full: bool) -> None:
    """conv_ws_steps.s.j2's mvouts of a finished tile."""
    d, local, rows, cols = (np.array(x, dtype=np.int64) for x in zip(*stores))
    piece.add(Funct.MVOUT, dram + d * out_bytes, operand(acc(local, full=full), rows, cols), _SP, _ACC)
