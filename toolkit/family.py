"""Which family a default takes on a hardware point: the toolkit's flat stream or Gemmini's loops.

A flat stream issues a word per mvin, preload, compute and mvout; Gemmini's loops (LOOP_WS,
LOOP_CONV_WS) issue a few words per tile and the accelerator's unrollers issue the rest. With a host
that pays for every word (``host_cmd_cycles``, the SoC) a flat stream of a dense layer is bound by
the host: on the gemmini preset a 512^3 matmul's 68k words take 26 cycles each, 1.78M cycles, where
its loops run in 0.54M. Each family's estimate is the largest of what bounds it:

- flat: the kind's closed-form estimate of the accelerator (toolkit.estimate), and its words at the
  host's cost (counted from the census, or rendered);
- loops: a pipeline over the loops (:func:`_pipeline`, after rtl/loop_conv.sv and rtl/loop_matmul.sv:
  two loop slots, each loop's loads, computes and stores in order behind the previous loop's, the host
  issuing each loop's words a loop ahead), each loop's phases timed by what bounds them: its words at
  the host's cost; its execute words entering dispatch, one a cycle (rtl/dispatch.sv), and its array
  time (each weight block's rows, :func:`toolkit.estimate.tap_cycles`: a block starts at a preload that
  names weights; the preloads of garbage B after it only move the accumulator address, and their
  computes stream through the same weights), and the cycles its loads take from it where they come while it
  runs (LOOP_WS): a scratchpad bank grants the load unit before the execute unit (:func:`_bank_clashes`);
  its loads' and its stores' memory time: on the SoC what
  its DMA requests take of the buses, the L2's MSHRs and the requests in flight (toolkit.traffic: the
  blocks the L2 fills and writes back, not only the compulsory bytes), else one port's beats. Alike
  loops (isa.loop_unroll.issued_groups) are timed once, each loop's memory from its group's with the
  L2 cold and warm (:func:`loop_memory`). The whole is never below any resource's total over the
  program, nor the memory's floor (toolkit.floor).

Both are estimates that rank, never measurements (benchmarks/bench_utilization.py measures).
"""
from __future__ import annotations

import numpy as np

from isa import ACC_BIT, GARBAGE, HardwareConfig, Program
from isa.encoding import split_operand
from isa.loop_unroll import MOVES, Groups, issued_groups
from isa.loop_words import LOOP_CONV_WORDS
from isa.opcodes import MVIN_FUNCTS, Funct

from .estimate import WEIGHT_BUFFERS, tap_cycles
from .floor import memory_cycles
from .ops import Op
from .traffic import BLOCK, MISSES, RESOURCES, requests, reused, traffic

MOVES_SORTED = np.sort(np.array(MOVES, dtype=np.int64))
MOVE_INDEX = np.argsort(np.array(MOVES, dtype=np.int64))   # a move's funct, sorted, -> its index in MOVES


def loop_cycles(op: Op, groups: Groups, hw: HardwareConfig, conv_loops: bool) -> float:
    """The estimate of a program of Gemmini's loops (see the module's docstring) from what their unrollers
    issue, alike loops' words once (isa.loop_unroll.issued_groups); ``conv_loops``: whether they are
    LOOP_CONV_WS (toolkit.library.LibrarySchedule.CONV_LOOPS), else LOOP_WS."""
    words, parts, part = groups.words, len(groups.starts), groups.part
    funct = words[:, 0].astype(np.int64)
    loads, stores, memory = loop_memory(groups, hw)
    executes = np.bincount(part[(funct == Funct.PRELOAD) | _is_compute(funct)], minlength=parts)
    execute = np.maximum(_array(words, funct, part, parts, hw), executes)   # dispatch: a word a cycle
    clashes = _bank_clashes(words, funct, part, parts, hw) / np.maximum(execute, 1)
    execute = np.bincount(groups.step, execute[groups.order], minlength=len(groups.hosts))   # each step's
    clashes = np.bincount(groups.step, clashes[groups.order], minlength=len(groups.hosts))
    loop = _pipeline(groups.hosts * hw.host_cmd_cycles, loads, execute, stores, whole_loads=conv_loops,
                     clashes=clashes)
    return float(max(loop, int(groups.count.sum()), *memory[:RESOURCES], *memory_cycles(op, hw)))


def _is_compute(funct: np.ndarray) -> np.ndarray:
    return (funct == Funct.COMPUTE_PRELOADED) | (funct == Funct.COMPUTE_ACCUMULATED)


def _array(words: np.ndarray, funct: np.ndarray, part: np.ndarray, parts: int, hw: HardwareConfig) -> np.ndarray:
    """Each part's array cycles: each compute streams its rows through the weights of the last preload that
    named some (a preload of garbage B moves only the accumulator address)."""
    weights, _, a_rows = (x.astype(np.int64) for x in split_operand(words[:, 1]))
    computes = np.flatnonzero(_is_compute(funct))
    if not len(computes):
        return np.zeros(parts)
    block = np.cumsum((funct == Funct.PRELOAD) & (weights != GARBAGE))[computes]
    first = np.unique(block, return_index=True)[1]
    streamed = np.add.reduceat(a_rows[computes], first)
    last = a_rows[computes][np.r_[first[1:], len(computes)] - 1]
    # a block's cycles are whole WEIGHT_BUFFERS-ths: summed as integers, so that any grouping gives the same
    thirds = np.rint(tap_cycles(streamed, last, hw.dim) * WEIGHT_BUFFERS).astype(np.int64)
    return np.bincount(part[computes[first]], thirds, minlength=parts) / WEIGHT_BUFFERS


def _bank_clashes(words: np.ndarray, funct: np.ndarray, part: np.ndarray, parts: int, hw: HardwareConfig
                  ) -> np.ndarray:
    """Each part's sum over the scratchpad's banks of the rows its mvins write there times the rows its preloads
    and computes read there: over the part's execute cycles, the cycles its loads would take from its execute
    if all of them came while it runs. A bank is single-ported and grants the load unit before the execute
    unit's reads (rtl/local_mem.sv, rtl/accel_top.sv: SP_LD before SP_EX_RD), so a row written into the bank
    that the execute reads that cycle stalls it a cycle; the execute reads a bank in a share of its cycles
    that its rows there give."""
    addr, cols, rows = (x.astype(np.int64) for x in split_operand(words[:, 2]))
    writes = np.isin(funct, MVIN_FUNCTS) & (addr & ACC_BIT == 0) & (words[:, 1] != 0)
    src, _, n = (x.astype(np.int64) for x in split_operand(words[:, 1]))
    reads = ((funct == Funct.PRELOAD) | _is_compute(funct)) & (src != GARBAGE) & (src & ACC_BIT == 0)
    written = _rows_per_bank(part[writes], addr[writes], rows[writes] * -(-cols[writes] // hw.dim), parts, hw)
    return (written * _rows_per_bank(part[reads], src[reads], n[reads], parts, hw)).sum(axis=1)


def _rows_per_bank(part: np.ndarray, addr: np.ndarray, rows: np.ndarray, parts: int, hw: HardwareConfig
                   ) -> np.ndarray:
    """Each part's rows in each scratchpad bank (banks of contiguous rows: rtl/local_mem.sv), a move's rows
    counted in the bank of its first."""
    out = np.zeros((parts, hw.sp_banks))
    np.add.at(out, (part, np.minimum(addr // (hw.sp_rows // hw.sp_banks), hw.sp_banks - 1)), rows)
    return out


def loop_memory(groups: Groups, hw: HardwareConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each step's cycles of loads and of stores (the largest of what they take of each resource), and the
    program's sums of toolkit.traffic's columns: on the SoC each group's traffic with its L2 starting cold
    or warm, each loop's operand taking the two in the measure that toolkit.traffic.reused gives its blocks
    (an operand's first block names its region), else one port moving each request's
    beat-aligned span (rtl/harness/dram.h)."""
    r = requests(groups.words)
    at = groups.part[r.word]
    operand = np.searchsorted(MOVES_SORTED, groups.words[r.word, 0].astype(np.int64))
    row = at * len(MOVES) + MOVE_INDEX[operand]   # a row per part and operand
    if hw.l2_kib:
        t = traffic(r, hw, at, groups.count[r.word], row)
        cold, warm = (np.vstack([c, np.zeros((len(groups.starts) * len(MOVES) - len(c), c.shape[1]))])
                      for c in (t.cold, t.warm))
    else:
        beat = hw.dma_beat_bytes
        spans = (r.addr + r.length + beat - 1) // beat - r.addr // beat
        cold = warm = np.bincount(row, spans, minlength=len(groups.starts) * len(MOVES))[:, None]
    n, columns = len(groups.order), cold.shape[1]
    cold, gain = cold.reshape(-1, len(MOVES), columns), (cold - warm).reshape(-1, len(MOVES), columns)
    if hw.l2_kib:
        bases = groups.bases.astype(np.int64)
        keys = np.where(bases != 0, bases // BLOCK * len(MOVES) + np.arange(len(MOVES)), -1).ravel()
        each = groups.order[:, None] * len(MOVES) + np.arange(len(MOVES))   # each loop's operands in order
        chance = reused(keys, cold.reshape(-1, columns)[each.ravel(), MISSES],
                        warm[each.ravel(), MISSES], t.sets, hw).reshape(n, len(MOVES))
    else:
        chance = np.zeros((n, len(MOVES)))
    cycles = min(columns, RESOURCES)
    # each loop's loads and stores: its group's cold cycles less what the L2's blocks of its neighbours save
    ld = cold[:, :-1, :cycles].sum(axis=1)[groups.order] - np.einsum(
        "nj,njc->nc", chance[:, :-1], gain[groups.order, :-1, :cycles])
    st = cold[groups.order, -1, :cycles] - chance[:, -1:] * gain[groups.order, -1, :cycles]
    sums = np.bincount(groups.order, minlength=len(cold)) @ cold.sum(axis=1) - np.einsum(
        "nj,njc->c", chance, gain[groups.order])
    steps = len(groups.hosts)
    return (np.bincount(groups.step, ld.max(axis=1), minlength=steps),
            np.bincount(groups.step, st.max(axis=1), minlength=steps), sums)


def _pipeline(host: np.ndarray, loads: np.ndarray, execute: np.ndarray, stores: np.ndarray, whole_loads: bool,
              clashes: np.ndarray | None = None) -> float:
    """When the last loop retires: the host issues each loop's words (it runs a loop ahead of the unrollers:
    the RoCC queues hold one loop's words); a loop starts in one of two slots once the loop two before it
    has retired; its loads follow the loads before them, and wait until the loop before has started to
    execute; it executes after the loop before, once its loads are sent (LOOP_CONV_WS, ``whole_loads``)
    or alongside them (LOOP_WS: each compute waits for its own); it stores alongside its computes, after
    the loop before has stored, and retires with its last store (rtl/loop_conv.sv, rtl/loop_matmul.sv)."""
    issued = loaded = began = executed = configured = retired = before = 0.0   # before: the loop two back retired
    clashes = np.zeros(len(host)) if clashes is None else clashes
    for h, ld, ex, st, clash in zip(host.tolist(), loads.tolist(), execute.tolist(), stores.tolist(), clashes.tolist()):
        issued = (issued if issued > configured else configured) + h
        start = configured = issued if issued > before else before
        loaded = max(start, loaded, began) + ld
        began = loaded if whole_loads else start
        began = began if began > executed else executed
        # the share of its loads that come while it executes takes that share of its clashes from its execute
        executed = began + ex + (clash * min(ld, loaded - began) / ld if ld and loaded > began else 0.0)
        executed = executed if executed > loaded else loaded
        stored = (began if began > retired else retired) + st
        before, retired = retired, (executed if executed > stored else stored)
    return retired


def program_groups(prog: Program) -> Groups:
    """isa.loop_unroll.issued_groups of a rendered program of loops, alike by the buffers they touch."""
    return issued_groups(prog.instructions, prog.hw, sorted(b.addr for b in prog.buffers.values()))


def program_loop_cycles(op: Op, prog: Program) -> float:
    """:func:`loop_cycles` of a rendered program of loops, LOOP_CONV_WS's where it holds their words."""
    conv_loops = any(isinstance(i, LOOP_CONV_WORDS) for i in prog.instructions)
    return loop_cycles(op, program_groups(prog), prog.hw, conv_loops)


def flat_cycles(words: int, accelerator: float | None, hw: HardwareConfig) -> float:
    """The estimate of a flat stream of ``words``: the accelerator's (the kind's closed form, None where it
    has none) or its words at the host's cost, whichever is more."""
    return max(accelerator or 0.0, words * hw.host_cmd_cycles)
