"""Static check of a program against its hardware, before any backend's run counts (the RTL backend
simulates while it checks, and kills a refused program unread).

It is the one authority the backends agree with: whatever it accepts, the
functional model and the RTL run to the same bits. It checks the buffer table
(names, DRAM range, no overlaps), then follows the config state (load/store
strides, block strides, A/C strides, the pending preload) without moving data,
so every address a run would touch is known to be in range. Backends run the
program without checks of their own; a failure names the buffer, or the
instruction's index and its assembly text.

A loop (LOOP_WS, LOOP_CONV_WS) is checked through its expansion (isa.loop_unroll):
every primitive as above, its DRAM ranges inside buffers, and the rows its loads
write apart from each other and from the loop before it, so that Gemmini's
overlapped issue order and the unroller's sequential one give the same bits.
A loop is checked once per shape of loop and state it starts in: a later loop of the
shape differs in its DRAM addresses only, which are moved and looked up in the buffer
table (isa.loop_checks). A loop's execute phase (most of its primitives) reads no DRAM
and no state but the array's, so it is checked once per shape and array state.

Last, in a program that passes all of the above: no two instructions that nothing
orders (a fence, or local rows they share) touch the same DRAM bytes when one of them
writes (isa.dram_hazards).
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import Callable, Hashable, Sequence

import numpy as np

from .assembly import DramNames, format_instruction
from .instructions import (
    ACC_BIT, ACCUM_BIT, FULL_BIT, GARBAGE, NORM_MASK, ROW_MASK, ComputeAccumulated, ComputePreloaded, ConfigEx,
    ConfigLd, DATAFLOWS, ConfigNorm, ConfigSt, ConfigStScales, Fence, Flush, Instruction, ISAError, Mvin, Mvout,
    Preload, norm_cmd,
)
from .norm import NORM_ACTS, Act, NormCmd
from .buffers import MAX_DRAM_BYTES, BufferTableError, check_buffer_table
from .config import HardwareConfig
from .dram_hazards import DramAccesses
from .encoding import decode
from .execute_check import PAIR_FUNCTS, checked_pairs
from .loop_checks import CheckedLoop, all_inside, buffer_bounds, keepable, kept, moved
from .loop_shared import Phase, phase_primitives, shape_key, unrolled_parts
from .loop_unroll import Unroller
from .loop_words import LoopConvWs, LoopError, LoopWord, LoopWs
from .program import Program
from .spans import Span, first_overlap, span, union

_LOADS = ("state-0 (A, input)", "state-1 (B, weight)", "state-2 (D, bias)")   # who loads what in a loop
_NO_LD = ConfigLd()   # a state no config_ld has set (a mvin there fails; its rows are still its spans)
_KEPT = 256   # loops and execute phases a checker keeps checked: a program has a few shapes of loop
Parts = list[Sequence[Instruction]]   # an instruction's primitives, phase by phase (isa.loop_shared)


@dataclass(frozen=True)
class _Loop:
    index: int
    ins: LoopWord
    spans: list[Span]   # the local rows its primitives touch (isa.spans.union)


@dataclass(frozen=True)
class _Executed:
    """An execute phase checked from one array state: the state after it and the rows it touches."""
    prims: Sequence[Instruction]   # held, so that no other phase takes its id while it is kept
    after: tuple                   # _Checker.array_state() after it
    spans: list[Span]              # (isa.spans.union)


class ProgramError(ISAError):
    """An instruction that cannot run on this hardware."""

    def __init__(self, index: int, text: str, reason: str) -> None:
        super().__init__(f"instruction {index} `{text}`: {reason}")
        self.index, self.text, self.reason = index, text, reason


def check(prog: Program) -> None:
    """Raise :class:`BufferTableError` for a bad buffer table, else :class:`ProgramError` at the first
    instruction that cannot run, or, in a program whose instructions all can, at the later one of its
    first DRAM hazard."""
    check_buffers(prog)
    checker = _Checker(prog)
    checker.run()
    if hazard := checker.accesses.first_hazard():
        index = hazard.later[0]
        raise ProgramError(index, format_instruction(prog.instructions[index], checker.dram_names),
                           hazard.reason(prog, checker.dram_names))


def check_buffers(prog: Program) -> None:
    """Every buffer filed under its own name, inside the DRAM address space, none overlapping."""
    check_buffer_table(prog.buffers)


DECODED_WORDS = 1 << 16   # distinct words a WordChecker keeps decoded


class WordChecker:
    """The checker of a stream of words, each checked as it comes, before any engine runs it: a C
    program's words under ``systolic cc`` (``rtl/cosim``), on either engine. It checks what
    :func:`check` checks of each instruction (its fields, its rows, the config state, a loop's
    expansion), but not DRAM: the program's memory is the process's, which the runtime checks at
    each access; nor DRAM hazards, whose order the program's own fences set."""

    def __init__(self, hw: HardwareConfig) -> None:
        self._checker = _Checker(Program(hw, [], {}))
        self._checker.dram = False
        self._decoded: dict[tuple[int, int, int], Instruction] = {}   # a program repeats its words
        self.words = 0   # words checked so far: the next one's index

    def feed(self, funct: int, rs1: int, rs2: int) -> list[Instruction]:
        """The primitives word (funct, rs1, rs2) runs, or :class:`ProgramError` naming the word by its
        index (from 0), its assembly text (or its three fields, when it decodes to no instruction) and why."""
        index, word = self.words, (funct, rs1, rs2)
        ins = self._decoded.get(word)
        if ins is None:
            try:
                ins = decode(*word)
            except ISAError as exc:
                raise ProgramError(index, f"funct={funct} rs1={rs1:#x} rs2={rs2:#x}", str(exc)) from None
            if len(self._decoded) >= DECODED_WORDS:
                self._decoded.clear()
            self._decoded[word] = ins
        parts = self._checker.step(index, ins)
        self.words += 1
        return [prim for part in parts for prim in part]


class _Checker:
    def __init__(self, prog: Program) -> None:
        self.prog, self.hw = prog, prog.hw
        self.dram_names = DramNames(prog.buffers)
        self.buffer_spans = sorted((b.addr, b.end) for b in prog.buffers.values())
        self.buffer_bounds = buffer_bounds(self.buffer_spans)   # the same, as isa.loop_checks looks them up
        self.ld: dict[int, ConfigLd] = {}
        self.st: ConfigSt | None = None
        self.act_msb = 0            # config_norm's high bit of the store activation (a config_st clears it)
        self.ex: ConfigEx | None = None
        self.preloaded: Preload | None = None   # a preload waits for its compute
        self.weights = False        # the array holds weights
        self.held = False           # the array holds output-stationary results (or the zeros after them)
        self.in_loop = False        # checking a loop's expansion: its DRAM ranges must lie inside buffers
        self.dram_size = prog.dram_size   # a program's buffers, and so its DRAM, stay as they are while checked
        self.rows = {False: self.hw.sp_rows, True: self.hw.acc_rows}   # each memory's rows (derived: kept once)
        self.accesses = DramAccesses(self.dram_size)
        self.at = (0, -1)           # the instruction being checked: (index, position in its loop's expansion)
        self.unroller = Unroller(self.hw)
        self.previous: _Loop | None = None   # the last loop, while only loop words follow it
        self.executed: dict[tuple, _Executed] = {}   # by (id of an execute phase, array state)
        self.loops: dict[tuple, CheckedLoop] = {}     # by (shape of loop, state): isa.loop_checks
        self.overlaps: dict[tuple, tuple] = {}        # by the ids of a loop's loads and its predecessor's spans
        self.dram = True            # check DRAM ranges against the program's DRAM (a WordChecker's is the process's)
        self.dispatch = {Mvin: self.mvin, Mvout: self.mvout, Preload: self.preload,
                         ComputePreloaded: self.compute, ComputeAccumulated: self.compute,
                         ConfigEx: self.config_ex, ConfigLd: self.config_ld, ConfigSt: self.config_st,
                         ConfigStScales: self.config_st_scales, ConfigNorm: self.config_norm, Flush: _nothing,
                         Fence: self.fence}

    def run(self) -> None:
        for index, ins in enumerate(self.prog.instructions):
            self.step(index, ins, parts=False)

    def step(self, index: int, ins: Instruction, parts: bool = True) -> Parts | None:
        """Check instruction ``index`` under the state the ones before it left; the primitives it runs (where
        ``parts``: a loop kept checked is not unrolled otherwise)."""
        self.at = (index, -1)
        try:
            loop = self.unroller.shape_of(ins)
        except LoopError as exc:
            raise self._error(index, ins, str(exc)) from None
        if loop is None:
            if reason := self.dispatch[type(ins)](ins):
                raise self._error(index, ins, reason)
            self.previous = None   # Gemmini's unrollers pass it on only once every loop before it is issued
            return [(ins,)]
        built = self._unrolled(index, ins, loop) if parts else None
        if isinstance(ins, (LoopWs, LoopConvWs)):
            # LoopConv and LoopMatmul each run two loops of their own kind at once, never of the other
            previous = self.previous
            overlapping = previous if previous and type(previous.ins) is type(ins) else None
            self.previous = self._loop(index, ins, loop, built, overlapping)
        return built

    def _unrolled(self, index: int, ins: Instruction, loop: tuple[Hashable, list[Phase]], words: bool = False
                  ) -> Parts:
        try:
            return unrolled_parts(*loop, words=words)
        except LoopError as exc:
            raise self._error(index, ins, str(exc)) from None

    def _error(self, index: int, ins: Instruction, reason: str) -> ProgramError:
        return ProgramError(index, format_instruction(ins, self.dram_names), reason)

    def state(self) -> Hashable:
        """All a loop's primitives read of the state, or change: the config words' and the array's."""
        return tuple(sorted(self.ld.items())), self.st, self.act_msb, *self.array_state()

    def _restore(self, state: tuple) -> None:
        ld, self.st, self.act_msb, self.ex, self.preloaded, self.held, self.weights = state
        self.ld = dict(ld)

    def _loop(self, index: int, ins: LoopWord, loop: tuple[Hashable, list[Phase]], parts: Parts | None,
              previous: _Loop | None) -> _Loop:
        """Check a loop (:meth:`_expansion`) where no loop of its shape from this state was, else move what
        that one was found to do to this loop's bases (isa.loop_checks); and that none of its loads writes a
        row the loop before it (still running in the other slot) touches."""
        bases = [phase.base for phase in loop[1]]
        key = (shape_key(*loop), self.state())
        checked = self.loops.get(key)
        if checked is not None:
            accesses = moved(checked, index, bases)
            if all_inside(accesses, self.dram_size, self.buffer_bounds):
                self.accesses.record_all(accesses)
                self._restore(checked.after)
            else:   # check it primitive by primitive: the error names the first primitive outside
                checked = None
        if checked is None:
            parts, start = parts or self._unrolled(index, ins, loop, words=True), len(self.accesses)
            loads, spans = self._expansion(index, ins, loop, parts)
            checked = kept(tuple(map(len, parts)), bases, self.accesses.since(start), loads, spans, self.state())
            if keepable(bases):
                if len(self.loops) >= _KEPT:
                    self.loops.clear()
                self.loops[key] = checked
        if previous and (row := self._overlap(checked.loads, previous.spans)):
            raise self._error(index, ins, f"its loads write {row}, which the loop at instruction {previous.index} "
                                          "may still use (Gemmini runs two loops at once)")
        return _Loop(index, ins, checked.spans)

    def _overlap(self, loads: list[Span], spans: list[Span]) -> str | None:
        """first_overlap of a loop's loads with the rows of the loop before it, once per pair of shapes (a
        program alternates a few of them; the entry holds both lists, so no id in its key outlives them)."""
        key = (id(loads), id(spans))
        found = self.overlaps.get(key)
        if found is None:
            if len(self.overlaps) >= _KEPT:
                self.overlaps.clear()
            found = self.overlaps[key] = (loads, spans, first_overlap(loads, spans))
        return found[2]

    def _expansion(self, index: int, ins: LoopWord, loop: tuple[Hashable, list[Phase]], parts: Parts
                   ) -> tuple[list[Span], list[Span]]:
        """Check a loop's primitives (its execute phase's given as instructions or words), and that Gemmini's
        overlapped order gives what the sequential one does: its loaders (one per load state, each in order)
        write rows apart (but resadd's B onto A). The rows its loads write, in order, and those all its
        primitives touch (isa.spans.union)."""
        loads: dict[int, list[Span]] = {0: [], 1: [], 2: []}
        touched: list[Span] = []
        self.in_loop, sub = True, 0
        for n, (phase, part) in enumerate(zip(loop[1], parts)):
            if phase.base is None:
                touched += self._execute_phase(index, ins, sub, part,
                                               lambda n=n, phase=phase: phase_primitives(loop[0], n, phase))
            else:
                self._primitives(index, ins, sub, part, loads, touched)
            sub += len(part)
        self.in_loop = False
        for first, second in ((0, 1), (0, 2), (1, 2)):
            if getattr(ins, "is_resadd", 0) and (first, second) == (0, 1):
                continue
            if row := first_overlap(loads[first], union(loads[second])):
                raise self._error(index, ins, f"its {_LOADS[first]} and {_LOADS[second]} loads both write {row}")
        loads_all = [s for spans in loads.values() for s in spans]
        return loads_all, union(loads_all + touched)

    def _primitives(self, index: int, ins: LoopWord, sub: int, prims: Sequence[Instruction],
                    loads: dict[int, list[Span]], touched: list[Span]) -> None:
        """Check the primitives of loop ``index`` from position ``sub`` of its expansion, one by one; the rows
        each load writes go to ``loads``, the rows the others touch to ``touched``."""
        for sub, prim in enumerate(prims, sub):
            self.at = (index, sub)
            spans = self._spans(prim)
            if reason := self.dispatch[type(prim)](prim):
                raise self._error(index, ins, f"expanded {format_instruction(prim, self.dram_names)}: {reason}")
            (loads[prim.state] if isinstance(prim, Mvin) else touched).extend(spans)

    def array_state(self) -> Hashable:
        """All an execute phase's primitives (preloads, computes, config_ex) read of the state, or change."""
        return self.ex, self.preloaded, self.held, self.weights

    def _execute_phase(self, index: int, ins: LoopWord, sub: int, prims: Sequence[Instruction] | np.ndarray,
                       build: Callable[[], Sequence[Instruction]]) -> list[Span]:
        """Check a loop's execute phase as :meth:`_primitives` does, once per phase and state it starts in
        (the same phase from the same state passes the same way); the rows it touches (isa.spans.union). Its words
        (``prims`` an array) are checked at once (:meth:`_pairs`); where they do not pass, its primitives
        (``build()``) one by one, so that the error names the first that fails."""
        key = (id(prims), self.array_state())
        kept = self.executed.get(key)
        if kept is None:
            before, as_words = self.array_state(), isinstance(prims, np.ndarray)
            spans = self._pairs(prims) if as_words else None
            if spans is None:
                self.ex, self.preloaded, self.held, self.weights = before
                touched: list[Span] = []
                self._primitives(index, ins, sub, build() if as_words else prims, {}, touched)
                spans = union(touched)
            if len(self.executed) >= _KEPT:
                self.executed.clear()
            kept = self.executed[key] = _Executed(prims, self.array_state(), spans)
        self.ex, self.preloaded, self.held, self.weights = kept.after
        return kept.spans

    def _pairs(self, words: np.ndarray) -> list[Span] | None:
        """The rows an execute phase's words touch (isa.spans.union), its config_ex words checked one by one and its
        preloads and computes at once (isa.execute_check), the state moved past them; None where that check
        cannot vouch for them."""
        pairs = np.isin(words[:, 0], PAIR_FUNCTS)
        head = int(np.argmax(pairs)) if pairs.any() else len(words)
        for word in words[:head].tolist():
            config = decode(*word)
            if not isinstance(config, ConfigEx) or self.config_ex(config):
                return None
        checked = checked_pairs(words[head:], self.hw, *self.array_state())
        if checked is None:
            return None
        self.ex, self.preloaded, self.held, self.weights = checked.after
        return checked.spans

    # ---- helpers: each returns an error string or None ---------------------
    def _dim(self, what: str, n: int, limit: int | None = None) -> str | None:
        limit = limit or self.hw.dim
        if not 1 <= n <= limit:
            return f"{what}={n} must be between 1 and {limit}"
        return None

    def _rows(self, addr: int, what: str, first: int, count: int, stride: int, write: bool) -> str | None:
        """Rows first, first+stride, ... (count of them) of the memory ``addr`` names."""
        if addr == GARBAGE:
            return None
        acc = bool(addr & ACC_BIT)
        if not acc and addr & (ACCUM_BIT | FULL_BIT | NORM_MASK):
            return f"{what}: accumulate/full/norm flags ({addr:#x}) only apply to accumulator addresses"
        if addr & NORM_MASK and (write or what != "local"):
            return f"{what}: a norm command (bits 28:26, {addr:#x}) applies to an accumulator mvout only"
        if acc and write and addr & FULL_BIT:
            return f"{what}: the .full flag applies to reads only"
        # a read ignores .accum, as Gemmini's does (gemmini.h's tiled_matmul mvouts C with it set)
        limit = self.rows[acc]
        last = (addr & ROW_MASK) + first + (count - 1) * stride
        if last >= limit:
            return (f"{what}: row {last} is past the {'accumulator' if acc else 'scratchpad'} "
                    f"({limit} rows)")
        return None

    def _dram(self, addr: int, rows: int, stride: int, row_bytes: int, write: bool, local: int) -> str | None:
        if not self.dram:
            return None
        end = addr + (rows - 1) * stride + row_bytes
        if end > self.dram_size:
            return f"DRAM bytes {addr}..{end - 1} run past the end of DRAM ({self.dram_size} bytes)"
        if self.in_loop:   # a loop's addresses come from its bounds and strides: a slip lands outside its buffer
            k = bisect_right(self.buffer_spans, (addr, MAX_DRAM_BYTES)) - 1
            if k < 0 or end > self.buffer_spans[k][1]:
                return f"DRAM bytes {addr}..{end - 1} are not inside one buffer"
        # one row's stride is moot (and may not fit 64 signed bits)
        self.accesses.record(*self.at, addr, rows, stride if rows > 1 else 0, row_bytes, write, local)
        return None

    def _spans(self, ins: Instruction) -> list[Span]:
        """The local rows ``ins`` reads or writes, under the config state it is about to run with."""
        dim = self.hw.dim
        if isinstance(ins, Mvin):
            cfg = self.ld.get(ins.state, _NO_LD)
            spans = [span(ins.local, b * cfg.block_stride, ins.rows, 1) for b in range(-(-ins.cols // dim))]
            repeats, half = cfg.pixel_repeats - 1, self.rows[False] // 2   # repeats land in rows below, in the half
            return [(acc, max(lo - repeats, half if lo >= half else 0) if repeats else lo, hi)
                    for acc, lo, hi in spans]
        if isinstance(ins, Mvout) and self.st is not None and self.st.pooling:
            return [span(ins.local, 0, self.st.orows * self.st.ocols, 1)]
        if isinstance(ins, Mvout):
            return [span(ins.local, b * dim, ins.rows, 1) for b in range(-(-ins.cols // dim))]
        if isinstance(ins, Preload):
            return [span(ins.b, 0, ins.b_rows, 1)]
        if isinstance(ins, ComputePreloaded) and self.ex and self.preloaded:
            c = self.preloaded
            return [span(ins.a, 0, ins.a_rows, self.ex.a_stride), span(ins.d, 0, ins.d_rows, 1),
                    span(c.c, 0, c.c_rows, self.ex.c_stride)]
        return []

    # ---- instructions ----------------------------------------------------------
    def config_ex(self, ins: ConfigEx) -> str | None:
        ins = ins.applied_to(self.ex or ConfigEx())
        dataflow = DATAFLOWS[ins.dataflow]
        if not self.hw.has_dataflow(dataflow):
            return f"dataflow={dataflow}: this hardware has only dataflows={self.hw.dataflows}"
        if reason := transpose_error(dataflow, ins.a_transpose, ins.b_transpose):
            return reason
        if ins.a_stride < 1 or ins.c_stride < 1:
            return "a_stride and c_stride must be at least 1 (rows of A and C are distinct)"
        self.ex = ins
        return None

    def fence(self, _: Fence) -> None:
        self.accesses.fence()

    def config_ld(self, ins: ConfigLd) -> str | None:
        self.ld[ins.state] = ins
        return None

    def config_st(self, ins: ConfigSt) -> str | None:
        if ins.requantizes and not self.hw.store_requant:
            return (f"out_offset={ins.out_offset}, out_uint8={ins.out_uint8}: hardware {self.hw.name} has no store-unit "
                    "requantization (HardwareConfig.store_requant, an extension Gemmini lacks)")
        if ins.col_scales and not self.hw.store_col_scales:
            return _NO_COL_SCALES.format(self.hw.name)
        if ins.pooling and (reason := _pool_reason(ins)):
            return reason
        self.st, self.act_msb = ins, 0
        return None

    def config_norm(self, ins: ConfigNorm) -> str | None:
        if not self.hw.norm_stats:
            return _NO_NORM.format(self.hw.name)
        if ins.stat_id >= self.hw.norm_stats:
            return f"stat_id={ins.stat_id} is past the normalization unit's {self.hw.norm_stats} stat ids (norm_stats)"
        if not ins.set_stats_id_only:
            self.act_msb = ins.act_msb
        return None

    def _norm_reason(self, ins: Mvout, st: ConfigSt) -> str | None:
        """Why the store unit cannot normalize this mvout (None when it needs not, or can): a normalizing
        activation or a norm command takes int8 rows of the accumulator, one config scale, no pooling."""
        act, cmd = st.activation | self.act_msb << 2, norm_cmd(ins.local)
        if act not in NORM_ACTS and not cmd:
            return None
        what = f"norm command {NormCmd(cmd).name}" if cmd else f"activation {Act(act).name}"
        if not self.hw.norm_stats:
            return f"{what}: " + _NO_NORM.format(self.hw.name)
        if cmd and not ins.local & ACC_BIT:
            return f"{what} reads accumulator rows, not the scratchpad"
        if cmd and ins.local & FULL_BIT:
            return f"{what} stores int8 rows, not .full ones"
        extension = "pooling" if st.pooling else "out_offset/out_uint8" if st.requantizes else \
            "col_scales" if st.col_scales else None
        return f"{what} with config_st's {extension}: the normalization unit takes neither" if extension else None

    def config_st_scales(self, ins: ConfigStScales) -> str | None:
        if not self.hw.store_col_scales:
            return _NO_COL_SCALES.format(self.hw.name)
        if ins.col >= self.hw.dim:
            return f"col={ins.col} is past the scale vector's {self.hw.dim} entries (one per column, dim)"
        return None

    def mvin(self, ins: Mvin) -> str | None:
        cfg = self.ld.get(ins.state)
        if cfg is None:
            return f"no config_ld for state {ins.state} before this {ins.op}"
        if reason := (self._dim("rows", ins.rows) or self._dim("cols", ins.cols, self.hw.max_mvin_cols)):
            return reason
        if ins.local == GARBAGE:
            return None
        acc = bool(ins.local & ACC_BIT)
        if cfg.pixel_repeats > 1 and (acc or ins.cols > self.hw.dim):
            return (f"pixel_repeats={cfg.pixel_repeats} of state {ins.state} applies to scratchpad mvins of at most "
                    f"{self.hw.dim} columns")
        blocks = -(-ins.cols // self.hw.dim)
        if blocks > 1 and cfg.block_stride < ins.rows:
            return f"block_stride={cfg.block_stride} of state {ins.state} would overlap blocks of {ins.rows} rows"
        for b in range(blocks):
            if reason := self._rows(ins.local, "local", b * cfg.block_stride, ins.rows, 1, write=True):
                return reason
        itemsize = 4 if acc and not cfg.shrink else 1
        if ins.dram == 0:   # Gemmini writes zeros, reading nothing
            return None
        return self._dram(ins.dram, ins.rows, cfg.dram_stride, ins.cols * itemsize, False, ins.local)

    def mvout(self, ins: Mvout) -> str | None:
        if self.st is None:
            return "no config_st before this mvout"
        if reason := self._norm_reason(ins, self.st):
            return reason
        if self.st.pooling:
            return self._pooled_mvout(ins, self.st)
        full = bool(ins.local & ACC_BIT and ins.local & FULL_BIT)
        if reason := (self._dim("rows", ins.rows) or self._dim("cols", ins.cols,
                                                               None if full else self.hw.max_mvin_cols)):
            return reason + (" (int32 rows are stored one block at a time)" if full else "")
        if ins.local == GARBAGE:
            return "mvout from the garbage address"
        for b in range(-(-ins.cols // self.hw.dim)):   # block b: the dim rows after block b - 1's
            if reason := self._rows(ins.local, "local", b * self.hw.dim, ins.rows, 1, write=False):
                return reason
        if norm_cmd(ins.local):   # a statistics pass: it writes no DRAM
            return None
        return self._dram(ins.dram, ins.rows, self.st.dram_stride, ins.cols * (4 if full else 1), True,
                          ins.local)

    def _pooled_mvout(self, ins: Mvout, st: ConfigSt) -> str | None:
        """A pooling mvout reads config_st's orows x ocols image from its address (its rows field is unused, as
        in Gemmini) and writes porows runs of pocols pixels, pool_out_dim pixels apart."""
        if reason := self._dim("rows", ins.rows) or self._dim("cols", ins.cols):
            return reason + " (a pooling mvout stores one block of at most dim channels)"
        if ins.local == GARBAGE or ins.local & FULL_BIT:
            return "a pooling mvout reads int8 rows: not the garbage address, not .full"
        if reason := self._rows(ins.local, "local", 0, st.orows * st.ocols, 1, write=False):
            return reason + " (config_st's pooled image)"
        for porow in range(st.porows):
            dram = ins.dram + porow * st.pool_out_dim * st.dram_stride
            if reason := self._dram(dram, st.pocols, st.dram_stride, ins.cols, True, ins.local):
                return reason
        return None

    def preload(self, ins: Preload) -> str | None:
        if self.preloaded is not None:
            return "preload while an earlier preload still waits for its compute"
        for what in ("b_rows", "b_cols", "c_rows", "c_cols"):
            if reason := self._dim(what, getattr(ins, what)):
                return reason
        if ins.b != GARBAGE and ins.b & ACC_BIT:
            return "b: weights come from the scratchpad, not the accumulator"
        # C's first row and flags now; all its rows at the compute, with the c_stride in force then
        if reason := (self._rows(ins.b, "b", 0, ins.b_rows, 1, write=False)
                      or self._rows(ins.c, "c", 0, 1, 1, write=True)):
            return reason
        self.preloaded = ins
        return None

    def compute(self, ins: ComputePreloaded) -> str | None:
        if self.ex is None:
            return "no config_ex before this compute"
        if self.preloaded is None:
            return "compute without a preload before it (the preload names C)"
        os = self.ex.dataflow == 0
        if isinstance(ins, ComputeAccumulated) and not (self.held if os else self.weights):
            return (f"compute_accumulated with no {'results' if os else 'weights'} in the array "
                    "(use compute_preloaded first)")
        for what in ("a_rows", "a_cols", "d_rows", "d_cols"):
            if reason := self._dim(what, getattr(ins, what)):
                return reason
        for what in ("a", "d"):
            if getattr(ins, what) != GARBAGE and getattr(ins, what) & ACC_BIT:
                return f"{what}: operands come from the scratchpad, not the accumulator"
        c = self.preloaded
        if reason := (self._rows(ins.a, "a", 0, ins.a_rows, self.ex.a_stride, write=False)
                      or self._rows(ins.d, "d", 0, ins.d_rows, 1, write=False)
                      or self._rows(c.c, "c (of the preload)", 0, c.c_rows, self.ex.c_stride, write=True)):
            return reason
        self.preloaded = None
        self.held = os and (self.held or isinstance(ins, ComputePreloaded))   # a WS row overwrites the results
        self.weights = self.weights or not os
        return None


_NO_NORM = "hardware {} has no normalization unit (HardwareConfig.norm_stats = 0)"
_NO_COL_SCALES = ("hardware {} has no store-unit column scales (HardwareConfig.store_col_scales, an extension "
                  "Gemmini lacks)")


def _pool_reason(st: ConfigSt) -> str | None:
    """Why config_st's pooling fields describe no pooling the store unit can do (None when they do)."""
    for name in ("pool_size", "porows", "pocols", "orows", "ocols"):
        if getattr(st, name) < 1:
            return f"pooling config_st {name}={getattr(st, name)} must be at least 1 when pool_stride > 0"
    # a window of padding alone is legal: it pools to 0, as Gemmini's (its padding reads zeros)
    if st.pool_out_dim < st.pocols:
        return f"pooling config_st pool_out_dim={st.pool_out_dim} is less than pocols={st.pocols}"
    return None


def transpose_error(dataflow: str, a_transpose: int, b_transpose: int) -> str | None:
    """Gemmini's one transposer takes one operand: A when it is transposed (WS) or not (OS), the weights
    or B when b_transpose is set. None when the combination is legal, else why not."""
    if dataflow == "ws" and a_transpose and b_transpose:
        return ("a_transpose=1 with b_transpose=1: in the weight-stationary dataflow both A and the weights "
                "would need the one transposer (Gemmini refuses it too; use dataflow=os)")
    if dataflow == "os" and b_transpose and not a_transpose:
        return ("b_transpose=1 with a_transpose=0: in the output-stationary dataflow A already takes the one "
                "transposer (Gemmini refuses it too; use dataflow=ws)")
    return None


def _nothing(_: Instruction) -> None:
    return None
