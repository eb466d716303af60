"""STAND-IN cycle source: an analytical timing model of the instruction stream. It is NOT the RTL.

It exists only so that tests and benchmarks can enumerate whole search spaces,
which is too slow on the Verilator model. Every number it produces is labelled
backend "stand-in"; never report it as measured hardware cycles.

The model follows the decoupled access-execute machine of ARCHITECTURE.md, one
instruction at a time in program order:

* dispatch is in order; an instruction waits while its queue (ld/ex/st) holds
  ``depth`` unfinished instructions;
* each unit issues in order, once the instruction has no hazard (RAW, WAR, WAW
  on ``dim``-row blocks of the scratchpad or accumulator) with an older one;
* one DMA port shared by loads and stores moves ``dma_beat_bytes`` a cycle after
  ``dram_latency`` cycles; requests of successive mvins overlap their latency;
* preload loads ``b_rows`` weight rows (a row a cycle) into a free weight buffer
  while the compute before it streams (the execute unit's W stage: from when that
  compute starts), so new weights cost the array nothing behind a compute that
  streams as long; compute streams ``a_rows`` rows and its results reach the
  accumulator ``2*dim`` cycles later; output-stationary
  (config_ex), a compute streams its K steps, and a compute_preloaded adds ``dim``:
  the RTL's PEs double-buffer their sums, so D shifts in during the steps before
  it, but a chain's results leave only in the next chain's shift rows, which holds
  its compute (and what waits on it) longer (fitted: it puts OS over WS within 20%
  of where the RTL does, tests/test_dataflow.py);
* a DMA write and an execute read of the same scratchpad bank at the same time
  conflict: the later of the two (in program order) waits for the overlap;
* a loop (LOOP_WS, LOOP_CONV_WS) is timed as its unrolled primitives in
  isa.loop_unroll's sequential order (Gemmini's unrollers overlap its phases);
* on the SoC, the host (rtl/harness/host.h) pushes a word ``host_cmd_cycles`` after
  the one before (a fence one cycle after), once the ``rocc_queue`` words before it
  have dispatched (no replay penalty), and it reaches dispatch ``rocc_latency`` later;
  after a fence the host waits for everything before it. A loop's words are the host's;
  the primitives its unroller issues are not. The SoC's memory (the L2, DRAM) is not
  modelled.

Outputs come from the functional model, so a stand-in run is still checked
bit-exact.
"""
from __future__ import annotations

import math
import time
from collections import deque
from typing import Mapping

import numpy as np

from isa import (ACC_BIT, ACCUM_BIT, FULL_BIT, GARBAGE, ROW_MASK, ConfigEx, ConfigLd, HardwareConfig, Program,
                 decode, encode_all)
from isa.encoding import split_operand
from isa.loop_unroll import issued
from isa.opcodes import MVIN_FUNCTS, STACK, STACK_UNITS, Funct, stack_counter
from . import functional
from .base import RunResult

BACKEND = "stand-in"
LABEL = "stand-in analytical timing model (not RTL)"
_BANK_HISTORY = 64  # intervals kept per bank: enough to span what runs concurrently
_DMA_WRITE, _EXEC_READ = 0, 1   # the two kinds of bank access that can conflict


class _Banks:
    """Recent busy intervals per scratchpad bank, for DMA writes and execute reads."""

    def __init__(self, banks: int) -> None:
        self.kinds = ([deque(maxlen=_BANK_HISTORY) for _ in range(banks)],
                      [deque(maxlen=_BANK_HISTORY) for _ in range(banks)])

    def claim(self, kind: int, bank: int, start: int, end: int, density: float) -> int:
        """Record [start, end) for ``kind`` (_DMA_WRITE or _EXEC_READ); return the conflict stall."""
        overlap = 0
        for s, e in self.kinds[1 - kind][bank]:
            if s < end and start < e:
                overlap += min(e, end) - max(s, start)
        stall = math.ceil(overlap * density)   # math, not numpy: the same integer, far cheaper per call
        self.kinds[kind][bank].append((start, end + stall))
        return stall


def _stack(cycles: int, stalls: dict[str, int]) -> dict[str, int]:
    """A best-effort cycle stack of one unit: its stalls and busy time charged in STACK's order
    (the precedence), each clipped to what is left, the rest idle, so that it sums to ``cycles``.
    queue_full stays 0: this model does not track which queue dispatch waits behind."""
    left, stack = cycles, {}
    for category in STACK[:-1]:
        stack[category] = min(max(stalls.get(category, 0), 0), left)
        left -= stack[category]
    stack[STACK[-1]] = left
    return stack


# A scoreboard (last write done, last read done) per dim-row block of a memory, and one access to it:
# the memory's scoreboard and the blocks touched.
_Board = tuple[list[int], list[int]]
_Access = tuple[_Board, range]


def _ready(reads: list[_Access], writes: list[_Access]) -> int:
    """When the accesses have no hazard: reads wait for writes (RAW), writes for both (WAW, WAR).
    Slices, not a loop over the blocks, for speed: a block past the end still raises, here or in _retire."""
    t = 0
    for (written, _), blocks in reads:
        t = max(t, *written[blocks.start:blocks.stop])
    for (written, read), blocks in writes:
        t = max(t, *written[blocks.start:blocks.stop], *read[blocks.start:blocks.stop])
    return t


def _retire(reads: list[_Access], writes: list[_Access], done: int) -> None:
    """Mark the accesses of an instruction that completes at ``done`` on their scoreboards."""
    for (_, read), blocks in reads:
        for b in blocks:
            if read[b] < done:
                read[b] = done
    for (written, _), blocks in writes:
        for b in blocks:
            written[b] = done


class _Unit:
    """One unit's (load, execute or store) timing: its queue of completion times, when it can issue
    next, and the time it spent, for its busy counter and its cycle stack."""

    __slots__ = ("queue", "free", "busy", "covered", "end", "bank", "dma", "hazard")

    def __init__(self, depth: int) -> None:
        self.queue: deque[int] = deque(maxlen=depth)
        self.free = self.busy = self.covered = self.end = 0
        self.bank = self.dma = self.hazard = 0   # stall cycles, by cause

    def record(self, free: int, start: int, done: int, stall: int) -> None:
        """Account an instruction that could issue at ``free``, issued at ``start`` and completed at ``done``."""
        self.hazard += start - free
        self.bank += stall
        self.busy += done - start
        self.covered += max(0, done - max(start, self.end))   # the union of its busy intervals
        self.end = max(self.end, done)
        self.queue.append(done)

    def stack(self, cycles: int) -> dict[str, int]:
        """This unit's cycle stack over a run of ``cycles``."""
        # busy first loses the stall time its intervals include, as the RTL's stack charges it there
        held = self.covered - self.bank - self.dma
        return _stack(cycles, {"bank": self.bank, "dma": self.dma, "hazard": self.hazard, "busy": held})


class _Timeline:
    """The machine's state while the words pass one by one: the units, the scoreboards, the banks
    and the DMA port. ``step`` times one word; ``counters`` reports the run."""

    def __init__(self, hw: HardwareConfig) -> None:
        self.dim, self.beat, self.latency = hw.dim, hw.dma_beat_bytes, hw.dram_latency
        self.bank_rows = hw.sp_bank_rows
        self.density = min(1.0, self.beat / self.dim)  # scratchpad rows the DMA writes per cycle
        self.sp: _Board = ([0] * (hw.sp_rows // hw.dim + 1), [0] * (hw.sp_rows // hw.dim + 1))
        self.acc: _Board = ([0] * (hw.acc_rows // hw.dim + 1), [0] * (hw.acc_rows // hw.dim + 1))
        self.load, self.execute, self.store = _Unit(hw.ld_queue), _Unit(hw.ex_queue), _Unit(hw.st_queue)
        self.banks = _Banks(hw.sp_banks)
        self.ld_cfg = {state: (0, 0) for state in range(len(MVIN_FUNCTS))}   # -> (block_stride, shrink)
        self.pending_c = GARBAGE   # the C address of the last preload: where the next compute writes
        self.w_free = 0            # when the W stage may load weights: the last compute's start
        self.ex = ConfigEx()       # the config_ex in force: its dataflow and A's transpose time a compute
        self.dispatch = self.dma_free = self.end_all = 0
        self.host_cost, self.host_latency = hw.host_cmd_cycles, hw.rocc_latency
        self.host_push = -1                                  # when the host pushed the last word
        self.host_queue: deque[int] = deque(maxlen=hw.rocc_queue)   # the last words' dispatch times
        self.dma_bytes_read = self.dma_bytes_written = self.mesh_busy = self.queue_full = 0
        # funct -> its timing; any other funct is a compute (the unrolled stream has no loop words)
        self.handlers = {Funct.CONFIG: self._config, Funct.FENCE: self._fence, Funct.FLUSH: self._fence,
                         Funct.MVOUT: self._mvout, Funct.PRELOAD: self._preload,
                         **{funct: self._mvin for funct in MVIN_FUNCTS}}

    def run(self, words: list[list[int]], host: list[int]) -> None:
        """Time (funct, rs1, rs2) words in program order; ``host[i]``: the host's words that go out
        before word i reaches dispatch (1 for a word of the program's own; for a loop's first
        primitive, the loop's words; 0 for its other primitives)."""
        handlers, compute = self.handlers, self._compute
        for (funct, rs1, rs2), pushed in zip(words, host, strict=True):
            for i in range(pushed if self.host_cost else 0):
                self._host_issue(funct == Funct.FENCE and i == pushed - 1)
            handlers.get(funct, compute)(funct, rs1, rs2)
            if self.host_cost:
                self.host_queue.append(self.dispatch)
                if funct == Funct.FENCE:
                    self.host_push = max(self.host_push, self.end_all - 1)

    def _host_issue(self, fence: bool) -> None:
        """The word reaches dispatch no earlier than the host can push it through the RoCC queues."""
        queue = self.host_queue
        room = queue[0] if len(queue) == queue.maxlen else 0
        self.host_push = max(self.host_push + (1 if fence else self.host_cost), room)
        self.dispatch = max(self.dispatch, self.host_push + self.host_latency)

    def _blocks(self, addr: int, rows: int) -> range:
        row = addr & ROW_MASK
        return range(row // self.dim, (row + max(rows, 1) - 1) // self.dim + 1)

    def _config(self, funct: int, rs1: int, rs2: int) -> None:
        ins = decode(funct, rs1, rs2)   # configs are few: the ISA's own decoder reads their fields
        if isinstance(ins, ConfigLd):
            self.ld_cfg[ins.state] = (ins.block_stride, ins.shrink)
        elif isinstance(ins, ConfigEx):
            self.ex = ins.applied_to(self.ex)

    def _fence(self, funct: int, rs1: int, rs2: int) -> None:
        """Nothing dispatches until everything before has completed."""
        self.dispatch = max(self.dispatch, self.end_all)

    def _enter(self, unit: _Unit) -> None:
        """In-order dispatch: wait while ``unit``'s queue is full of unfinished instructions."""
        queue = unit.queue
        if len(queue) == queue.maxlen and queue[0] > self.dispatch:
            self.queue_full += queue[0] - self.dispatch
            self.dispatch = queue[0]

    def _start(self, unit: _Unit, reads: list[_Access], writes: list[_Access]) -> tuple[int, int]:
        """When ``unit`` could issue the instruction (in order), and when it does (after its hazards)."""
        free = max(self.dispatch, unit.free)
        return free, max(free, _ready(reads, writes))

    def _finish(self, unit: _Unit, free: int, start: int, done: int, stall: int,
                reads: list[_Access], writes: list[_Access]) -> None:
        """Account the issued instruction to its unit and its accesses to the scoreboards."""
        unit.record(free, start, done, stall)
        _retire(reads, writes, done)
        self.end_all = max(self.end_all, done)

    def _claim_banks(self, kind: int, banks: set[int], start: int, end: int) -> int:
        """The bank-conflict stall of an access to ``banks`` over [start, end): the worst bank's."""
        stall = 0
        for bank in banks:
            stall = max(stall, self.banks.claim(kind, bank, start, end, self.density))
        return stall

    def _mvin(self, funct: int, dram: int, operand: int) -> None:
        """A load: its data comes through the shared port, a column block of ``dim`` per
        ``block_stride`` rows."""
        self._enter(self.load)
        local, cols, rows = split_operand(operand)
        if local == GARBAGE:
            return
        stride, shrink = self.ld_cfg[MVIN_FUNCTS.index(funct)]
        to_acc = bool(local & ACC_BIT)
        row_bytes = cols * (4 if to_acc and not shrink else 1)
        board = self.acc if to_acc else self.sp
        dests = [(local & ROW_MASK) + b * stride for b in range(-(-cols // self.dim))]
        writes = [(board, self._blocks(row, rows)) for row in dests]
        reads = writes if to_acc and local & ACCUM_BIT else []   # accumulating: it reads what it adds to
        free, start = self._start(self.load, reads, writes)
        zeros = dram == 0   # DRAM address 0: Gemmini's zero writer fills the rows, the DMA port stays free
        first = start if zeros else max(start + self.latency, self.dma_free)
        if not zeros:
            self.load.dma += first - (start + self.latency)
        dma_end = first + rows * -(-row_bytes // self.beat)
        stall = 0 if to_acc else self._claim_banks(_DMA_WRITE, {row // self.bank_rows for row in dests}, first, dma_end)
        if not zeros:
            self.dma_free = dma_end + stall
            self.dma_bytes_read += rows * row_bytes
        self.load.free = start + rows   # one DRAM request per row
        self._finish(self.load, free, start, dma_end + stall + 1, stall, reads, writes)

    def _mvout(self, funct: int, dram: int, operand: int) -> None:
        """A store: read the rows, then write them through the shared port; done when acknowledged."""
        self._enter(self.store)
        local, cols, rows = split_operand(operand)
        to_acc = bool(local & ACC_BIT)
        row_bytes = cols * (4 if to_acc and local & FULL_BIT else 1)
        board = self.acc if to_acc else self.sp
        column_blocks = range(-(-cols // self.dim))   # a wide mvout reads block b from rows local + b * dim
        reads = [(board, self._blocks((local & ROW_MASK) + b * self.dim, rows)) for b in column_blocks]
        free, start = self._start(self.store, reads, [])
        first = max(start + rows, self.dma_free)   # read the rows, then the port
        self.store.dma += first - (start + rows)
        self.dma_free = first + rows * -(-row_bytes // self.beat)
        self.dma_bytes_written += rows * row_bytes
        self.store.free = start + rows
        self._finish(self.store, free, start, self.dma_free + self.latency, 0, reads, [])

    def _preload(self, funct: int, b_operand: int, c_operand: int) -> None:
        """A preload loads B's weight rows, row by row, into a free weight buffer while the compute
        before it streams (one cycle of the array without B), and names where the next compute's
        results go."""
        self._enter(self.execute)
        self.pending_c = split_operand(c_operand)[0]
        b, _, b_rows = split_operand(b_operand)
        if b == GARBAGE:
            self._issue_execute([], b_rows, 1, 0, [], [])
            return
        reads = [(self.sp, self._blocks(b, b_rows))]
        free = max(self.dispatch, self.w_free)
        start = max(free, _ready(reads, []))
        stall = self._claim_banks(_EXEC_READ, {(b & ROW_MASK) // self.bank_rows}, start, start + b_rows)
        loaded = start + b_rows + stall
        self.execute.free = max(self.execute.free, loaded)   # the compute streams once its weights are in
        self._finish(self.execute, free, start, loaded, stall, reads, [])

    def _compute(self, funct: int, a_operand: int, d_operand: int) -> None:
        """A compute streams A's rows; its results reach the preloaded C ``2*dim`` cycles later.
        Output-stationary it streams K steps (A's columns), and a compute_preloaded ``dim`` more."""
        self._enter(self.execute)
        a, a_cols, a_rows = split_operand(a_operand)
        d = split_operand(d_operand)[0]
        streamed = a_rows
        if not self.ex.dataflow:   # K steps; a chain's start costs dim (see the module's docstring)
            shift = self.dim if funct == Funct.COMPUTE_PRELOADED else 0
            streamed = (a_rows if self.ex.a_transpose else a_cols) + shift
        self.mesh_busy += streamed
        c, reads, writes = self.pending_c, [], []
        if c != GARBAGE:   # the results go to the preloaded address (accumulating: read it too)
            board = self.acc if c & ACC_BIT else self.sp
            writes.append((board, self._blocks(c, a_rows)))
            if c & ACC_BIT and c & ACCUM_BIT:
                reads.append(writes[0])
        sp_reads = [x for x in (a, d) if x != GARBAGE]
        self.w_free = self._issue_execute(sp_reads, a_rows, max(streamed, 1), 2 * self.dim, reads, writes)

    def _issue_execute(self, sp_reads: list[int], rows: int, occupancy: int, latency: int,
                       reads: list[_Access], writes: list[_Access]) -> int:
        """Issue a preload or compute that reads ``rows`` rows at each of ``sp_reads`` and holds the
        array ``occupancy`` cycles (more if a scratchpad bank it reads is being written)."""
        reads += [(self.sp, self._blocks(addr, rows)) for addr in sp_reads]
        free, start = self._start(self.execute, reads, writes)
        stall = self._claim_banks(_EXEC_READ, {(addr & ROW_MASK) // self.bank_rows for addr in sp_reads},
                                  start, start + occupancy)
        self.execute.free = start + occupancy + stall
        self._finish(self.execute, free, start, self.execute.free + latency, stall, reads, writes)
        return start

    def counters(self, instructions: int) -> tuple[int, dict[str, int]]:
        """The run's cycles and counters, the RTL's schema (COUNTERS) plus ``instructions``."""
        units = (self.load, self.execute, self.store)
        cycles = max(self.end_all, self.dispatch)
        c = dict(dma_bytes_read=self.dma_bytes_read, dma_bytes_written=self.dma_bytes_written,
                 mesh_busy=self.mesh_busy, stall_hazard=sum(u.hazard for u in units),
                 stall_bank_conflict=sum(u.bank for u in units), stall_queue_full=self.queue_full,
                 stall_dma_wait=sum(u.dma for u in units), cycles=cycles, load_busy=self.load.busy,
                 exec_busy=self.execute.busy, store_busy=self.store.busy, instructions=instructions)
        for unit, name in zip(units, STACK_UNITS):
            c.update({stack_counter(name, category): n for category, n in unit.stack(cycles).items()})
        return cycles, c


def estimate(prog: Program) -> tuple[int, dict[str, int]]:
    """Stand-in cycles and counters of ``prog`` (see the module note: not RTL)."""
    # loops as their unrollers issue them, and before each primitive the host's words
    prims, host = zip(*issued(prog.instructions, prog.hw)) if prog.instructions else ((), ())
    words = encode_all(list(prims)).tolist()
    timeline = _Timeline(prog.hw)
    timeline.run(words, host)
    return timeline.counters(len(words))


def run(program: Program, inputs: Mapping[str, np.ndarray]) -> RunResult:
    """Functional outputs with stand-in cycles (backend "stand-in", not RTL)."""
    start = time.perf_counter()
    result = functional.run(program, inputs)
    cycles, counters = estimate(program)
    counters = {**result.counters, **counters, "cycle_source": LABEL}
    return RunResult(result.outputs, cycles, counters, BACKEND, time.perf_counter() - start)
