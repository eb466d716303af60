"""Reference unroller of Gemmini's CISC loops: LOOP_WS (and LOOP_CONV_WS, in loop_unroll_conv).

It turns each loop, with the config words sent since the previous loop, into the
primitive instructions LoopMatmul (ucb-bar/gemmini 641fefb) issues, with the same
addresses, sizes and flags. Gemmini's load, execute and store sequencers overlap;
this emits one valid sequential order per loop: D loads, A loads, B loads, then the
preload/compute pairs (k outer, then j, then i), then the C stores. The static checker
(isa.checker) makes sure the order does not matter.

State kept across loops, as in LoopMatmul: loop n runs in slot n % 2 (its A tile at
the bottom of scratchpad half n % 2, its B tile ending at the top of it), and the
accumulator half of D and C toggles after each loop whose C address is not zero.

One departure: LdB at 641fefb compares ``max_row_iterator === max_row_iterator-1`` (never
true), so B's last row block always loads ``dim`` rows, reading past B. We pad it as LdA
and gemmini.h's own sp_tiled_matmul_ws do: the same results, no read outside the buffer.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any, Hashable, Iterable, Iterator, Sequence

import numpy as np

from .config import HardwareConfig
from .instructions import ACCUM_BIT, GARBAGE, ConfigLd, ConfigNorm, ConfigSt, Instruction, Mvin, Mvout, acc_addr
from .norm import PASSES, Act
from .encoding import FRESH, KEPT, encode_all, encode_pairs, pair_instructions, pair_rows
from .loop_shared import Phase, Placed, cached_by_identity, shape_key, shape_number, unrolled, unrolled_words
from .loop_unroll_conv import conv_phases
from .opcodes import MVIN_FUNCTS, Funct
from .loop_words import (
    LOOP_CONV_WORDS, LOOP_WS_WORDS, LoopConvWs, LoopConvWsConfig5, LoopError, LoopWord, LoopWs,
    LoopWsConfigAddrsAB, LoopWsConfigAddrsDC, LoopWsConfigBounds, LoopWsConfigStridesAB, LoopWsConfigStridesDC,
    dram_at,
)

# LoopMatmulStC's normalizing stores walk LAYERNORM's and SOFTMAX's passes (isa.norm.PASSES); the activation
# itself is the store unit's (config_st, config_norm), as are IGELU and RELU.
LOOP_NORM_STAT_IDS = 2   # LoopMatmul's NORM_STAT_IDS (641fefb): rows normalized at once, stat ids 0 and 1


def blocks_at(col: int, max_col: int, max_blocks: int) -> int:
    """Blocks one move covers from block ``col``: ``max_blocks``, or what is left of ``max_col``."""
    return max_blocks if col + max_blocks <= max_col else max_col - col


@dataclass(frozen=True)
class WsLoop:
    """One LOOP_WS: its words and where the unroller placed its tiles (local rows)."""

    bounds: LoopWsConfigBounds
    ab: LoopWsConfigAddrsAB
    dc: LoopWsConfigAddrsDC
    strides_ab: LoopWsConfigStridesAB
    strides_dc: LoopWsConfigStridesDC
    loop: LoopWs
    dim: int
    max_block_len: int
    a_start: int        # scratchpad row of A (accumulator row when resadd)
    b_end: int          # scratchpad row past B's tile (B's accumulator start when resadd)
    acc_start: int      # accumulator row of D and C (resadd: its slot's half)

    @property
    def b_start(self) -> int:
        b = self.bounds
        return self.b_end if self.loop.is_resadd else self.b_end - b.k * b.j * self.dim


def _padded(index: Any, count: int, last: int, pad: int, dim: int) -> Any:
    """Rows/cols of ``count`` blocks from block ``index`` (an int, or an array of them): less ``pad`` when they
    reach the ``last`` block."""
    return count * dim - pad * (index + count >= last)


def _load(t: WsLoop, state: int, dram: int, stride: int, itemsize: int, local_start: int, rows: tuple[int, int],
          cols: tuple[int, int], to_acc: bool, accumulate: bool, block_len: int,
          rows_inner: bool = True) -> list[Instruction]:
    """LoopMatmul's LdA/LdB/LdD walk over a tile of (count, pad) ``rows`` x ``cols`` blocks: one mvin per
    block row and run of up to ``block_len`` blocks; rows inner (LdA, LdD) or column runs inner (LdB)."""
    d, (max_row, row_pad), (max_col, col_pad) = t.dim, rows, cols
    max_blocks = min(max_col, block_len)
    runs, block_rows = range(0, max_col, max_blocks), range(max_row)
    order = ([(r, c) for c in runs for r in block_rows] if rows_inner else
             [(r, c) for r in block_rows for c in runs])
    out: list[Instruction] = []
    for row, col in order:
        local = local_start + (row * max_col + col) * d
        out.append(Mvin(dram_at(dram, (row * stride + col) * d * itemsize),
                        acc_addr(local, accumulate=accumulate) if to_acc else local,
                        _padded(row, 1, max_row, row_pad, d),
                        _padded(col, blocks_at(col, max_col, max_blocks), max_col, col_pad, d), state))
    return out


def _ld_d(t: WsLoop) -> list[Instruction]:
    b, low_d = t.bounds, t.loop.low_d
    block_len = t.max_block_len if low_d else max(1, t.max_block_len // 4)   # int32 rows: a quarter per move
    return _load(t, 2, t.dc.d, t.strides_dc.d_stride, 1 if low_d else 4, t.acc_start, (b.i, b.pad_i),
                 (b.j, b.pad_j), True, False, block_len)


def _ld_a(t: WsLoop) -> list[Instruction]:
    """A's tile, I x K blocks (resadd: I x J); transposed, K x I as it is stored (i runs innermost)."""
    b, resadd, tr = t.bounds, t.loop.is_resadd, bool(t.loop.a_transpose)
    inner = (b.j, b.pad_j) if resadd else (b.k, b.pad_k)   # resadd: A is I x J, into the accumulator
    rows, cols = (inner, (b.i, b.pad_i)) if tr else ((b.i, b.pad_i), inner)
    return _load(t, 0, t.ab.a, t.strides_ab.a_stride, 1, t.a_start, rows, cols, resadd, False,
                 t.max_block_len, rows_inner=not tr)


def _ld_b(t: WsLoop) -> list[Instruction]:
    """B's tile, K x J blocks (resadd: I x J); transposed, J x K as it is stored (j runs innermost)."""
    b, resadd, tr = t.bounds, t.loop.is_resadd, bool(t.loop.b_transpose)
    outer = (b.i, b.pad_i) if resadd else (b.k, b.pad_k)   # resadd: B is I x J, added onto A
    rows, cols = ((b.j, b.pad_j), outer) if tr else (outer, (b.j, b.pad_j))
    return _load(t, 1, t.ab.b, t.strides_ab.b_stride, 1, t.b_start, rows, cols, resadd, resadd,
                 t.max_block_len, rows_inner=tr)


def _execute(t: WsLoop) -> list[Instruction]:
    return pair_instructions(_execute_rows(t))


def _execute_words(t: WsLoop) -> np.ndarray:
    """:func:`_execute`, encoded (isa.encoding.encode_all) from its rows' arrays."""
    return encode_pairs(_execute_rows(t))


def _execute_rows(t: WsLoop) -> np.ndarray:
    """Preload/compute pairs, i innermost: the weights of (k, j) are preloaded at i = 0 and kept after, a row of
    kind and six fields each (isa.encoding.PAIR_KINDS), every (k, j, i) at once.
    A transposed operand's block is where its loader put it, and its rows/cols are the stored ones
    (config_ex's transpose bits read it so); LoopMatmul's words give the untransposed sizes."""
    b, d = t.bounds, t.dim
    accumulate, ta, tb = bool(t.loop.ex_accumulate), bool(t.loop.a_transpose), bool(t.loop.b_transpose)
    k, j, i = (x.ravel() for x in np.meshgrid(np.arange(b.k), np.arange(b.j), np.arange(b.i), indexing="ij"))
    k_size, j_size = _padded(k, 1, b.k, b.pad_k, d), _padded(j, 1, b.j, b.pad_j, d)
    i_size = _padded(i, 1, b.i, b.pad_i, d)
    b_block = (j * b.k + k, j_size, k_size) if tb else (k * b.j + j, k_size, j_size)
    a_block = (k * b.i + i, k_size, i_size) if ta else (i * b.k + k, i_size, k_size)
    weights = np.where(i == 0, t.b_start + b_block[0] * d, GARBAGE)
    c = acc_addr(t.acc_start + (i * b.j + j) * d) | np.where(accumulate | (k != 0), ACCUM_BIT, 0)
    return pair_rows((len(k),), (weights, *b_block[1:], c, i_size, j_size),
                     (np.where(i == 0, FRESH, KEPT), t.a_start + a_block[0] * d, *a_block[1:], GARBAGE, d, d))


def _st_c(t: WsLoop) -> list[Instruction]:
    b, d, full = t.bounds, t.dim, bool(t.loop.full_c)
    max_blocks = 1 if full else min(b.j, t.max_block_len)
    if t.loop.act in PASSES:
        return _st_c_normalized(t, max_blocks)
    out = []
    for col in range(0, b.j, max_blocks):
        blocks = blocks_at(col, b.j, max_blocks)
        for row in range(b.i):
            local = acc_addr(t.acc_start + (row * b.j + col) * d, full=full)
            out.append(Mvout(dram_at(t.dc.c, (row * t.strides_dc.c_stride + col) * d * (4 if full else 1)), local,
                             _padded(row, 1, b.i, b.pad_i, d), _padded(col, blocks, b.j, b.pad_j, d)))
    return out


def _st_c_normalized(t: WsLoop, max_blocks: int) -> list[Instruction]:
    """LoopMatmulStC's ln_config/ln_st walk: for each row block i, rows LOOP_NORM_STAT_IDS at a time, each pass,
    each stat id (a config_norm choosing it), the row's mvouts of one row each, left to right."""
    b, d, passes, out = t.bounds, t.dim, PASSES[Act(t.loop.act)], []
    for i in range(b.i):
        rows = _padded(i, 1, b.i, b.pad_i, d)
        for first in range(0, rows, LOOP_NORM_STAT_IDS):
            for running, final in passes:
                for stat_id in range(min(LOOP_NORM_STAT_IDS, rows - first)):
                    out.append(ConfigNorm(stat_id=stat_id, set_stats_id_only=1))
                    r = first + stat_id
                    for col in range(0, b.j, max_blocks):
                        cmd = final if col + max_blocks >= b.j else running
                        local = acc_addr(t.acc_start + (i * b.j + col) * d + r, norm=cmd)
                        dram = dram_at(t.dc.c, ((i * t.strides_dc.c_stride + col) * d + r * t.strides_dc.c_stride))
                        out.append(Mvout(dram, local, 1, _padded(col, blocks_at(col, b.j, max_blocks), b.j, b.pad_j, d)))
    return out


# a loop's words but its addresses, and its placement -> those objects and its shape
_ws_shapes: dict[Hashable, tuple[tuple, Hashable]] = {}


def ws_phases(t: WsLoop) -> tuple[Hashable, list[Phase]]:
    """The shape and the phases of one LOOP_WS (isa.loop_shared), in a valid sequential order; a zero DRAM
    address skips its phase."""
    shape = cached_by_identity(_ws_shapes, (t.bounds, t.strides_ab, t.strides_dc, t.loop),
                               (t.dim, t.max_block_len, t.a_start, t.b_end, t.acc_start), lambda: _ws_shape(t))
    return shape, [Phase(t.dc.d, lambda: _ld_d(t)), Phase(t.ab.a, lambda: _ld_a(t)), Phase(t.ab.b, lambda: _ld_b(t)),
                   Phase(0 if t.loop.is_resadd else None, lambda: _execute(t), lambda: _execute_words(t)),
                   Phase(t.dc.c, lambda: _st_c(t))]


def _ws_shape(t: WsLoop) -> Hashable:
    """A loop's shape: :class:`~.loop_shared.Placed` (a resadd's whole: its A and B share the accumulator's half
    with C, so its addresses do not move by region)."""
    fields = ("ws", t.bounds, t.strides_ab, t.strides_dc, t.loop, t.dim, t.max_block_len)
    if t.loop.is_resadd:
        return (*fields, t.a_start, t.b_end, t.acc_start)
    return Placed(shape_number(fields), (t.a_start, t.b_start, t.acc_start))


def check_ws(words: dict[type, LoopWord], loop: LoopWs, dim: int) -> None:
    b = words[LoopWsConfigBounds]
    for name in ("i", "j") if loop.is_resadd else ("i", "j", "k"):   # resadd has no K (gemmini.h writes 0)
        if getattr(b, name) < 1:
            raise LoopError(f"loop_ws_bounds.{name}={getattr(b, name)} must be at least 1")
    for name in ("pad_i", "pad_j", "pad_k"):
        if getattr(b, name) >= dim:
            raise LoopError(f"loop_ws_bounds.{name}={getattr(b, name)} must be below dim ({dim})")
    for name in ("a_spad_id", "b_spad_id"):
        if getattr(loop, name) > 2:
            raise LoopError(f"loop_ws.{name}={getattr(loop, name)} must be 0 (the loop's slot), 1 or 2 "
                            "(a scratchpad half)")
    if loop.act in PASSES and loop.full_c:
        raise LoopError(f"loop_ws.act={loop.act} ({Act(loop.act).name}) normalizes int8 rows: not with full_c "
                        "(Gemmini's LoopMatmulStC assumes the same)")
    if loop.act > 4:
        raise LoopError(f"loop_ws.act={loop.act} names no activation")
    if loop.a_transpose and loop.b_transpose:
        raise LoopError("loop_ws.a_transpose=1 with b_transpose=1: the weight-stationary loop has one "
                        "transposer (LoopMatmul asserts against it; gemmini.h refuses it too)")


def _check_fit(b: LoopWsConfigBounds, loop: LoopWs, hw: HardwareConfig, a_start: int, b_end: int,
               acc_start: int) -> None:
    """Each tile inside its memory (which also bounds the expansion of a malformed loop)."""
    d = hw.dim
    tiles = [("C", b.i, b.j, acc_start, hw.acc_rows, "accumulator")]
    if not loop.is_resadd:
        tiles.append(("A", b.i, b.k, a_start, hw.sp_rows, "scratchpad"))
        if b.k * b.j * d > b_end:
            raise LoopError(f"loop_ws: B's tile ({b.k}x{b.j} blocks of {d} rows) does not fit below scratchpad "
                            f"row {b_end}")
    for name, rows, cols, start, limit, memory in tiles:
        if start + rows * cols * d > limit:
            raise LoopError(f"loop_ws: {name}'s tile ({rows}x{cols} blocks of {d} rows from row {start}) runs past "
                            f"the {memory} ({limit} rows)")


def tile_rows(a_spad_id: Any, b_spad_id: Any, slot: Any, sp_half: int) -> tuple[Any, Any]:
    """A's first scratchpad row and the row past B's tile, of a loop in ``slot`` (ints, or arrays of loops):
    under a nonzero scratchpad id, that id's half (id 1 the first); else the slot's."""
    a = (a_spad_id + (a_spad_id == 0) * (slot + 1) - 1) * sp_half
    return a, (b_spad_id + (b_spad_id == 0) * (slot + 1)) * sp_half


def ws_rows(is_resadd: Any, slot: Any, a_start: Any, b_end: Any, acc_start: Any, hw: HardwareConfig
            ) -> tuple[Any, Any, Any]:
    """A LOOP_WS's (A's first row, the row past B's tile, C's first accumulator row), ints or arrays of loops:
    a resadd's A, B and C share the slot's accumulator half."""
    half = slot * (hw.acc_rows // 2)
    return tuple(x + is_resadd * (half - x) for x in (a_start, b_end, acc_start))


def ws_loop(words: dict[type, LoopWord], loop: LoopWs, hw: HardwareConfig, a_start: int, b_end: int,
            acc_start: int) -> WsLoop:
    """The LOOP_WS of ``words`` (its config words) and ``loop`` placed at those rows; LoopError unless its
    tiles fit."""
    b = words[LoopWsConfigBounds]
    _check_fit(b, loop, hw, a_start, b_end, acc_start)
    return WsLoop(b, words[LoopWsConfigAddrsAB], words[LoopWsConfigAddrsDC], words[LoopWsConfigStridesAB],
                  words[LoopWsConfigStridesDC], loop, hw.dim, hw.max_block_len, a_start, b_end, acc_start)


class Unroller:
    """Follows the loop words of a program: config words are kept, each loop becomes its primitives."""

    def __init__(self, hw: HardwareConfig) -> None:
        self.hw = hw
        self.words: dict[type, LoopWord] = {}   # config words sent since the last loop of their kind
        self.loops = {LoopWs: 0, LoopConvWs: 0}      # loops seen per unroller: loop n runs in slot n % 2
        self.acc_half = {LoopWs: 0, LoopConvWs: 0}   # each unroller's accumulator half for D and C
        self.st = ConfigSt()                         # the program's last config_st (a pooling loop keeps its scale)

    def feed(self, ins: Instruction) -> list[Instruction] | None:
        """None for an instruction that is no loop word, [] for a config word, a loop's primitives;
        :class:`LoopError` for a loop that cannot run."""
        loop = self.shape_of(ins)
        return None if loop is None else unrolled(*loop)

    def feed_words(self, ins: Instruction) -> np.ndarray | None:
        """:meth:`feed`, encoded (isa.encoding.encode_all), from each shape of loop encoded once."""
        loop = self.shape_of(ins)
        return None if loop is None else unrolled_words(*loop)

    def shape_of(self, ins: Instruction) -> tuple[Hashable, list[Phase]] | None:
        """None for an instruction that is no loop word, no phases for a config word, a loop's shape and
        phases (isa.loop_shared); :class:`LoopError` for a loop that cannot run."""
        if isinstance(ins, ConfigSt):   # a pooling LOOP_CONV_WS keeps its scale and requantization
            self.st = ins
        if not isinstance(ins, LoopWord):
            return None
        if isinstance(ins, LoopWs):
            return ws_phases(self._place_ws(ins))
        if isinstance(ins, LoopConvWs):
            return self._conv(ins)
        self.words[type(ins)] = ins
        return None, []

    def _take(self, kinds: tuple[type[LoopWord], ...], loop: LoopWord) -> dict[type, LoopWord]:
        """The config words of ``loop``: each must have been sent since the previous loop of its kind
        (Gemmini keeps them per loop slot; gemmini.h sends them all before every loop)."""
        missing = [k.OP for k in kinds[:-1] if k not in self.words]
        if missing:
            raise LoopError(f"no {', '.join(missing)} since the previous {loop.OP}")
        return {k: self.words.pop(k) for k in kinds[:-1]}

    def _place(self, loop: LoopWs | LoopConvWs, stores: bool) -> tuple[int, int, int, int]:
        """(slot, A's first scratchpad row, the row past B's tile, D/C's first accumulator row) of the next
        loop of ``loop``'s kind; the accumulator half toggles after it if it ``stores``."""
        kind = type(loop)
        slot = self.loops[kind] % 2
        a_start, b_end = tile_rows(loop.a_spad_id, loop.b_spad_id, slot, self.hw.sp_rows // 2)
        acc_start = self.acc_half[kind] * (self.hw.acc_rows // 2)
        self.loops[kind] += 1
        self.acc_half[kind] ^= bool(stores)
        return slot, a_start, b_end, acc_start

    def _place_ws(self, loop: LoopWs) -> WsLoop:
        words = self._take(LOOP_WS_WORDS, loop)
        check_ws(words, loop, self.hw.dim)
        slot, a_start, b_end, acc_start = self._place(loop, words[LoopWsConfigAddrsDC].c != 0)
        return ws_loop(words, loop, self.hw, *ws_rows(loop.is_resadd, slot, a_start, b_end, acc_start, self.hw))

    def _conv(self, loop: LoopConvWs) -> tuple[Hashable, list[Phase]]:
        words = self._take(LOOP_CONV_WORDS, loop)
        _, a_start, b_end, acc_start = self._place(loop, words[LoopConvWsConfig5].output_addr != 0)
        return conv_phases(words, loop, self.hw, a_start, b_end, acc_start, self.st)


def primitives(instructions: Iterable[Instruction], hw: HardwareConfig) -> Iterator[Instruction]:
    """``instructions`` with each loop replaced by its primitives and the loop config words dropped:
    what the accelerator's units see, in a valid sequential order. Check the program first."""
    return (prim for prim, _ in issued(instructions, hw))


def issued(instructions: Iterable[Instruction], hw: HardwareConfig) -> Iterator[tuple[Instruction, int]]:
    """:func:`primitives`, each with how many of ``instructions`` the host has issued since the primitive
    before it: 1 for an instruction of its own, a loop's words for the loop's first primitive (its
    configs and the loop word), 0 for the loop's other primitives."""
    unroller, pending = Unroller(hw), 0
    for ins in instructions:
        pending += 1
        expanded = unroller.feed(ins)
        for prim in [ins] if expanded is None else expanded:
            yield prim, pending
            pending = 0


def issued_words(instructions: Iterable[Instruction], hw: HardwareConfig) -> tuple[np.ndarray, int]:
    """:func:`issued`, encoded: the primitives' words (isa.encoding.encode_all), and the words the host
    issued up to the last of them (the sum of :func:`issued`'s counts)."""
    unroller, parts, plain, host = Unroller(hw), [], [], 0
    for n, ins in enumerate(instructions, 1):
        words = unroller.feed_words(ins)
        if words is None:
            plain.append(ins)
            host = n
        elif len(words):
            parts += [encode_all(plain), words] if plain else [words]
            plain, host = [], n
    parts += [encode_all(plain)] if plain else []
    return (np.concatenate(parts) if parts else np.zeros((0, 3), dtype=np.uint64)), host


@dataclass(frozen=True)
class Groups:
    """What the unrollers issue with alike loops' words once (:func:`issued_groups`). The words hold parts: a
    group's (its first loop's words) or a run of plain words; ``count`` says how many times each word
    stands. ``order`` lists the parts as the program comes to them (a group at each of its loops) and
    ``step`` each one's step: a loop with the plain words before it (the plain words after the last loop,
    a step of their own); ``hosts`` the words the host issued for each step (the last step's up to its
    last plain word), so that their sum is :func:`issued_words`'. ``bases`` holds each of ``order``'s DRAM
    bases of the phases whose moves are :data:`MOVES` (0: none, and a run of plain words')."""

    words: np.ndarray
    count: np.ndarray
    starts: np.ndarray
    order: np.ndarray
    step: np.ndarray
    hosts: np.ndarray
    bases: np.ndarray

    @property
    def host_words(self) -> int:
        return int(self.hosts.sum())

    @property
    def part(self) -> np.ndarray:
        """Each word's part."""
        return np.repeat(np.arange(len(self.starts)), np.diff(self.starts, append=len(self.words)))


MOVES = (*MVIN_FUNCTS, Funct.MVOUT)   # the A/input, B/weights and D/bias loads (load states 0-2), C/output's stores
_PHASE_OF = (1, 2, 0, 4)   # their phases in ws_phases' and conv_phases' order (D/bias, A/input, B/weights, -, C/output)


def issued_groups(instructions: Iterable[Instruction], hw: HardwareConfig, regions: Sequence[int] = ()) -> Groups:
    """:func:`issued_words` with the words of alike loops once (:class:`Groups`). Loops are alike if they share
    a shape (isa.loop_shared), the region of ``regions`` (sorted DRAM addresses) that each phase's base falls
    in, and the config_ld words the host sent before them; a group's words are its first loop's, where it
    first appears. A sum over the words weighed by their counts is then the sum over :func:`issued_words`'s
    wherever it sees a move's DRAM address only through its region, and a mvin's load state only through
    its loop's own config_ld or the host's (tests/test_loop_groups.py)."""
    unroller, parts, order, plains, ends, bases, plain = Unroller(hw), [], [], [], [], [], []
    lds = upto = 0   # config_ld words so far; the host's words up to the last plain word
    first: dict[Hashable, int] = {}   # a group -> its part
    for n, ins in enumerate(instructions, 1):
        loop = unroller.shape_of(ins)
        if loop is None:
            plain.append(ins)
            upto, lds = n, lds + isinstance(ins, ConfigLd)
            continue
        key, phases = loop
        if not phases:   # a config word
            continue
        if plain:
            plains.append(len(order))
            order.append(len(parts))
            parts.append(encode_all(plain))
            plain = []
        base = [p.base or 0 for p in phases]
        bases.append(base)
        group = (shape_key(key, phases), tuple(bisect.bisect_right(regions, b) for b in base if b), lds)
        at = first.get(group)
        if at is None:
            at = first[group] = len(parts)
            parts.append(unrolled_words(key, phases))
        order.append(at)
        ends.append(n)
    if plain:
        plains.append(len(order))
        order.append(len(parts))
        parts.append(encode_all(plain))
    return groups_of(parts, order, plains, ends, upto if plain else 0, bases)


def groups_of(parts: list[np.ndarray], order: Sequence[int], plains: list[int], ends: Sequence[int], tail: int,
              bases: Sequence[Sequence[int]]) -> Groups:
    """:class:`Groups` of ``parts`` in ``order``, ``plains`` the places there of runs of plain words, ``ends``
    each loop's word (counting from 1), ``tail`` the host's words up to the last plain word after the last
    loop (0: none), ``bases`` each loop's phases' bases."""
    loop = np.ones(len(order), dtype=bool)
    loop[plains] = False
    step = np.cumsum(loop) - loop   # a loop's own; a run of plain words', the loop after it
    hosts = np.diff(np.concatenate([np.asarray(ends, dtype=np.int64), np.array([tail] if tail else [], np.int64)]),
                    prepend=0)
    at = np.zeros((len(order), len(MOVES)), dtype=np.uint64)
    if len(bases):
        at[loop] = np.array(bases, dtype=np.uint64)[:, _PHASE_OF]
    sizes = np.array([len(x) for x in parts], dtype=np.int64)
    counts = np.bincount(np.array(order, dtype=np.int64), minlength=len(parts))
    return Groups(np.concatenate(parts) if parts else np.zeros((0, 3), dtype=np.uint64), np.repeat(counts, sizes),
                  np.cumsum(sizes) - sizes, np.array(order, dtype=np.int64), step, hosts, at)
