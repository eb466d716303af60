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
* preload shifts ``b_rows`` weight rows in; compute streams ``a_rows`` rows and
  its results reach the accumulator ``2*dim`` cycles later;
* a DMA write and an execute read of the same scratchpad bank at the same time
  conflict: the later of the two (in program order) waits for the overlap;
* a loop (LOOP_WS, LOOP_CONV_WS) is timed as its unrolled primitives in
  isa.loop_unroll's sequential order (Gemmini's unrollers overlap its phases).

Outputs come from the functional model, so a stand-in run is still checked
bit-exact.
"""
from __future__ import annotations

import time
from collections import deque
from typing import Mapping

import numpy as np

from isa import ACC_BIT, ACCUM_BIT, FULL_BIT, GARBAGE, ROW_MASK, Program, encode_all
from isa.encoding import split_operand
from isa.loop_unroll import primitives
from isa.loop_words import CONFIG_LD
from isa.opcodes import MVIN_FUNCTS, STACK, STACK_UNITS, ConfigKind, Funct, stack_counter
from . import functional
from .base import RunResult

BACKEND = "stand-in"
LABEL = "stand-in analytical timing model (not RTL)"
_BANK_HISTORY = 64  # intervals kept per bank: enough to span what runs concurrently


class _Banks:
    """Recent busy intervals per scratchpad bank, for DMA writes and execute reads."""

    def __init__(self, banks: int) -> None:
        self.kinds = ([deque(maxlen=_BANK_HISTORY) for _ in range(banks)],
                      [deque(maxlen=_BANK_HISTORY) for _ in range(banks)])

    def claim(self, kind: int, bank: int, start: int, end: int, density: float) -> int:
        """Record [start, end) for ``kind`` (0 DMA write, 1 execute read); return the conflict stall."""
        overlap = 0
        for s, e in self.kinds[1 - kind][bank]:
            if s < end and start < e:
                overlap += min(e, end) - max(s, start)
        stall = int(np.ceil(overlap * density)) if overlap else 0
        self.kinds[kind][bank].append((start, end + stall))
        return stall


_LD = {f.name: f for f in CONFIG_LD}


def _ld_field(rs1: int, name: str) -> int:
    return (rs1 >> _LD[name].lo) & _LD[name].mask


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


def estimate(prog: Program) -> tuple[int, dict[str, int]]:
    """Stand-in cycles and counters of ``prog`` (see the module note: not RTL)."""
    hw = prog.hw
    d, beat, lat = hw.dim, hw.dma_beat_bytes, hw.dram_latency
    bank_rows = hw.sp_bank_rows
    density = min(1.0, beat / d)  # scratchpad rows the DMA writes per cycle
    words = encode_all(primitives(prog.instructions, hw)).tolist()   # loops as their unrollers issue them
    # hazard scoreboard per dim-row block: when the last write / read completes
    sp_w = [0] * (hw.sp_rows // d + 1)
    sp_r = [0] * (hw.sp_rows // d + 1)
    acc_w = [0] * (hw.acc_rows // d + 1)
    acc_r = [0] * (hw.acc_rows // d + 1)
    queues = {0: deque(maxlen=hw.ld_queue), 1: deque(maxlen=hw.ex_queue), 2: deque(maxlen=hw.st_queue)}
    unit_free = [0, 0, 0]
    busy = [0, 0, 0]
    covered = [0, 0, 0]     # per unit: cycles covered by the union of its busy intervals, and its end
    unit_end = [0, 0, 0]
    stalls = [{"bank": 0, "dma": 0, "hazard": 0} for _ in range(3)]
    banks = _Banks(hw.sp_banks)
    ld_cfg = {0: (0, 0), 1: (0, 0), 2: (0, 0)}  # state -> (block_stride, shrink)
    dma_free = dispatch = end_all = 0
    c = dict(dma_bytes_read=0, dma_bytes_written=0, mesh_busy=0, stall_hazard=0, stall_bank_conflict=0,
             stall_queue_full=0, stall_dma_wait=0)
    pending_c = GARBAGE

    def blocks(addr: int, rows: int) -> range:
        row = addr & ROW_MASK
        return range(row // d, (row + max(rows, 1) - 1) // d + 1)

    def ready(reads: list, writes: list) -> int:
        t = 0
        for table, blk in reads:
            t = max(t, max(table[0][b] for b in blk))
        for table, blk in writes:
            t = max(t, max(table[0][b] for b in blk), max(table[1][b] for b in blk))
        return t

    def retire(reads: list, writes: list, done: int) -> None:
        for table, blk in reads:
            for b in blk:
                if table[1][b] < done:
                    table[1][b] = done
        for table, blk in writes:
            for b in blk:
                table[0][b] = done

    sp, acc = (sp_w, sp_r), (acc_w, acc_r)
    for funct, rs1, rs2 in words:
        if funct == Funct.CONFIG:
            if rs1 & 3 == ConfigKind.LD:
                ld_cfg[_ld_field(rs1, "state")] = (_ld_field(rs1, "block_stride"), _ld_field(rs1, "shrink"))
            continue
        if funct in (Funct.FENCE, Funct.FLUSH):
            dispatch = max(dispatch, end_all)
            continue
        unit = 0 if funct in MVIN_FUNCTS else 2 if funct == Funct.MVOUT else 1
        q = queues[unit]
        if len(q) == q.maxlen and q[0] > dispatch:
            c["stall_queue_full"] += q[0] - dispatch
            dispatch = q[0]
        reads: list = []
        writes: list = []
        stall = 0
        if unit == 0:  # mvin
            local, cols, rows = split_operand(rs2)
            if local == GARBAGE:
                continue
            stride, shrink = ld_cfg[MVIN_FUNCTS.index(funct)]
            to_acc = bool(local & ACC_BIT)
            row_bytes = cols * (4 if to_acc and not shrink else 1)
            table = acc if to_acc else sp
            dests = [(local & ROW_MASK) + b * stride for b in range(-(-cols // d))]
            for row in dests:
                writes.append((table, blocks(row, rows)))
                if to_acc and local & ACCUM_BIT:
                    reads.append((table, blocks(row, rows)))
            free = max(dispatch, unit_free[0])
            start = max(free, ready(reads, writes))
            zeros = rs1 == 0   # DRAM address 0: Gemmini's zero writer fills the rows, the DMA port stays free
            first = start if zeros else max(start + lat, dma_free)
            if not zeros:
                c["stall_dma_wait"] += first - (start + lat)
                stalls[0]["dma"] += first - (start + lat)
            dma_end = first + rows * -(-row_bytes // beat)
            if not to_acc:
                for bank in {row // bank_rows for row in dests}:
                    stall = max(stall, banks.claim(0, bank, first, dma_end, density))
            done = dma_end + stall + 1
            if not zeros:
                dma_free = dma_end + stall
                c["dma_bytes_read"] += rows * row_bytes
            unit_free[0] = start + rows  # one DRAM request per row
        elif unit == 2:  # mvout
            local, cols, rows = split_operand(rs2)
            to_acc = bool(local & ACC_BIT)
            row_bytes = cols * (4 if to_acc and local & FULL_BIT else 1)
            for b in range(-(-cols // d)):   # a wide mvout reads block b from rows local + b * dim
                reads.append((acc if to_acc else sp, blocks((local & ROW_MASK) + b * d, rows)))
            free = max(dispatch, unit_free[2])
            start = max(free, ready(reads, writes))
            first = max(start + rows, dma_free)  # read the rows, then the port
            c["stall_dma_wait"] += first - (start + rows)
            stalls[2]["dma"] += first - (start + rows)
            dma_free = first + rows * -(-row_bytes // beat)
            done = dma_free + lat  # write acknowledged
            unit_free[2] = start + rows
            c["dma_bytes_written"] += rows * row_bytes
        else:  # preload / compute
            a_addr, _, a_rows = split_operand(rs1)
            sp_reads = []
            if funct == Funct.PRELOAD:
                pending_c = split_operand(rs2)[0]
                occupancy = a_rows if a_addr != GARBAGE else 1  # rs1 is B: weights shift in row by row
                if a_addr != GARBAGE:
                    sp_reads.append(a_addr)
                latency = 0
            else:
                d_addr = split_operand(rs2)[0]
                sp_reads += [x for x in (a_addr, d_addr) if x != GARBAGE]
                occupancy = max(a_rows, 1)
                latency = 2 * d
                c["mesh_busy"] += a_rows
                if pending_c != GARBAGE:
                    table = acc if pending_c & ACC_BIT else sp
                    writes.append((table, blocks(pending_c, a_rows)))
                    if pending_c & ACC_BIT and pending_c & ACCUM_BIT:
                        reads.append((table, blocks(pending_c, a_rows)))
            for addr in sp_reads:
                reads.append((sp, blocks(addr, a_rows)))
            free = max(dispatch, unit_free[1])
            start = max(free, ready(reads, writes))
            for bank in {(addr & ROW_MASK) // bank_rows for addr in sp_reads}:
                stall = max(stall, banks.claim(1, bank, start, start + occupancy, density))
            unit_free[1] = start + occupancy + stall
            done = unit_free[1] + latency
        hazard = start - free
        c["stall_hazard"] += hazard
        c["stall_bank_conflict"] += stall
        busy[unit] += done - start
        covered[unit] += max(0, done - max(start, unit_end[unit]))
        unit_end[unit] = max(unit_end[unit], done)
        stalls[unit]["hazard"] += hazard
        stalls[unit]["bank"] += stall
        retire(reads, writes, done)
        q.append(done)
        end_all = max(end_all, done)
    cycles = max(end_all, dispatch)
    c.update(cycles=cycles, load_busy=busy[0], exec_busy=busy[1], store_busy=busy[2], instructions=len(words))
    for unit, name in enumerate(STACK_UNITS):
        # busy first loses the stall time its intervals include, as the RTL's stack charges it there
        held = covered[unit] - stalls[unit]["bank"] - stalls[unit]["dma"]
        stack = _stack(cycles, {**stalls[unit], "busy": held})
        c.update({stack_counter(name, category): n for category, n in stack.items()})
    return cycles, c


def run(program: Program, inputs: Mapping[str, np.ndarray]) -> RunResult:
    """Functional outputs with stand-in cycles (backend "stand-in", not RTL)."""
    start = time.perf_counter()
    result = functional.run(program, inputs)
    cycles, counters = estimate(program)
    counters = {**result.counters, **counters, "cycle_source": LABEL}
    return RunResult(result.outputs, cycles, counters, BACKEND, time.perf_counter() - start)
