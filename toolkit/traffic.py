"""The traffic a program's DMA makes on the SoC: its requests, the L2's misses and write-backs, and the
cycles the buses and the DMA's requests in flight need for them.

The requests are what the RTL's DMA issues (one per DRAM row: rtl/load_unit.sv, rtl/store_unit.sv):
an mvin's rows ``config_ld`` stride apart (stride 0, a broadcast: one row; DRAM address 0, the zero
writer: none), each ``cols`` bytes (4 a column into the accumulator unless shrunk); an mvout's rows
``config_st`` stride apart, ``cols`` bytes (4 a column with ``.full``), a pooling one's pooled pixels.
The L2 is the harness's (rtl/harness/soc_memory.h, after sifive's InclusiveCache): ``l2_kib`` in 64 B
blocks, ``l2_ways`` a set, a random victim on every miss (Directory.scala:115-120); a read miss and a
partial put's miss fill the block from DRAM, a put of a whole aligned block allocates without reading
(MSHR.scala:284-285); a dirty victim goes back to DRAM. A dirty block still in the L2 when the program
ends is not written back.

Random replacement makes a block's survival a matter of how many blocks were installed in its set
since its last access: each install picks one of ``l2_ways`` ways, so it survives ``n`` installs with
probability (1 - 1/ways)^n, n the misses in its set between the two accesses (the set is the block's
index modulo the sets: a stride of a few blocks crowds a fraction of them). Each access's miss
probability is that of its block not surviving since its previous access (1 for a first access); the
misses between are those probabilities summed, so they are solved in time order, a chunk of accesses
at a time. A line is dirty after a write until it misses; a miss of a dirty line was its write-back.
All of it is numpy over the accesses in program order (the unrollers overlap loops, which moves an
access by far fewer blocks than the L2 holds).

The requests may be given in parts that each start cold: no access hits a block that another part
touched. toolkit.family walks each group of alike loops once (isa.loop_unroll.issued_groups) so: a
loop's own reuse (a tile's rows read for each of its column blocks, 16-byte stores filling a 64-byte
block each) is its group's. Each part is costed twice, cold and warm (its first touch of each block
hits); :func:`reused` then gives each loop's operand the chance that its blocks are still in the L2
from the last loop on the same region, the same survival over the misses in between.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isa import ACC_BIT, FULL_BIT, HardwareConfig
from isa.encoding import split_operand
from isa.loop_words import CONFIG_LD, CONFIG_ST
from isa.opcodes import MVIN_FUNCTS, ConfigKind, Funct
from toolkit.floor import L2_BLOCK_BYTES as BLOCK   # a fill's DRAM transfer too (soc_memory.h: SocMemory::BLOCK)
from toolkit.tally import field

DMA_BUFFERS = 2       # Gemmini's TLBuffers each way between its DMA and the system bus (soc_memory.h)
SWEEPS = 3            # passes over each chunk's accesses (as many as the L2 has blocks), solved in time order:
# the misses of a chunk shift the rest's; from 3 to 5 the fills of ResNet-50's 1x1 convs move by under 0.2%
RESOURCES = 7                    # Traffic's columns of cycles; then misses, fills and write-backs
MISSES, FILLS, WRITE_BACKS = 7, 8, 9
_LD = {f.name: f for f in CONFIG_LD}
_ST = {f.name: f for f in CONFIG_ST}


@dataclass(frozen=True)
class Requests:
    """The DMA's requests in program order: DRAM address, bytes, whether each is a write, and the index of
    the word that made it."""

    addr: np.ndarray
    length: np.ndarray
    write: np.ndarray
    word: np.ndarray


@dataclass(frozen=True)
class Traffic:
    """What each request costs the memory, a row each: its cycles of the system bus's A and D channels, the
    memory bus's A and D, the L2's MSHRs, and the DMA's reads and writes in flight (its latency over those
    in flight) (the first :data:`RESOURCES` columns); then its expected misses in the L2, the blocks DRAM
    reads for it (fills) and writes (write-backs). ``cold`` where each part starts with an empty L2,
    ``warm`` where its first touch of each block hits (a neighbour left it there). ``sets``: how many sets
    the misses spread over, as a block sees them: 1 / sum p^2, p each set's share of the misses (a stride
    of a power of two crowds a few sets, which the blocks there share with most of the misses)."""

    cold: np.ndarray
    warm: np.ndarray
    sets: float


def _latest(mask: np.ndarray, values: np.ndarray) -> np.ndarray:
    """At each word, ``values`` of the last word at or before it where ``mask`` holds (0 before any)."""
    at = np.maximum.accumulate(np.where(mask, np.arange(len(mask)), -1))
    return np.where(at >= 0, values[np.maximum(at, 0)], 0)


def requests(words: np.ndarray) -> Requests:
    """The DMA requests of encoded words (see the module's docstring)."""
    funct = words[:, 0].astype(np.int64)
    kept = np.flatnonzero((funct == Funct.CONFIG) | (funct == Funct.MVOUT) | np.isin(funct, MVIN_FUNCTS))
    funct, rs1, rs2 = funct[kept], words[kept, 1], words[kept, 2]
    local, cols, rows = (x.astype(np.int64) for x in split_operand(rs2))
    kind = field(rs1, _LD, "kind")
    ld, st = (funct == Funct.CONFIG) & (kind == ConfigKind.LD), (funct == Funct.CONFIG) & (kind == ConfigKind.ST)
    stride = _latest(st, field(rs2, _ST, "dram_stride"))
    row_bytes = cols * np.where((local & ACC_BIT != 0) & (local & FULL_BIT != 0), 4, 1)
    moves = funct == Funct.MVOUT
    pooled = moves & (_latest(st, field(rs1, _ST, "pool_stride")) != 0)
    state = field(rs1, _LD, "state")
    for s, f in enumerate(MVIN_FUNCTS):
        mine = funct == f
        shrink = _latest(ld & (state == s), field(rs1, _LD, "shrink"))
        stride = np.where(mine, _latest(ld & (state == s), field(rs2, _LD, "dram_stride")), stride)
        row_bytes = np.where(mine, cols * np.where((local & ACC_BIT != 0) & (shrink == 0), 4, 1), row_bytes)
        moves |= mine & (rs1 != 0)
    # a pooling mvout writes its porows x pocols maxima, pixel (porow, pocol) at porow * pool_out_dim + pocol
    pool = {name: _latest(st, field(rs1, _ST, name)) for name in ("porows", "pocols", "pool_out_dim")} \
        if pooled.any() else {}
    rows = np.where(pooled, pool["porows"] * pool["pocols"], rows) if pool else rows
    at = np.flatnonzero(moves)
    n = np.where(stride[at] == 0, 1, rows[at])
    word = np.repeat(at, n)
    row = np.arange(len(word)) - np.repeat(np.cumsum(n) - n, n)
    if pool:
        per, wide = np.maximum(pool["pocols"][word], 1), pool["pool_out_dim"][word]
        row = np.where(pooled[word], row // per * wide + row % per, row)
    addr = rs1[word].astype(np.int64) + row * stride[word]
    return Requests(addr, row_bytes[word], funct[word] == Funct.MVOUT, kept[word])


def _blocks(r: Requests) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each request's blocks in order: the block, its bytes of the request, the request's index, whether
    it is a write."""
    first, last = r.addr // BLOCK, (r.addr + r.length - 1) // BLOCK
    n = last - first + 1
    req = np.repeat(np.arange(len(n)), n)
    block = first[req] + np.arange(len(req)) - np.repeat(np.cumsum(n) - n, n)
    lo, hi = np.maximum(r.addr[req], block * BLOCK), np.minimum((r.addr + r.length)[req], (block + 1) * BLOCK)
    return block, hi - lo, req, r.write[req]


def _misses(block: np.ndarray, part: np.ndarray, hw: HardwareConfig
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each access's miss probability, the order that sorts the accesses by part and block (stable), each
    access's previous one of its block in its part (-1: none), and the misses in its set after it."""
    order = np.lexsort((block, part))
    sb, sp = block[order], part[order]
    prev = np.full(len(block), -1)
    same = np.flatnonzero((sb[1:] == sb[:-1]) & (sp[1:] == sp[:-1])) + 1
    prev[order[same]] = order[same - 1]
    sets = hw.l2_kib * 1024 // BLOCK // hw.l2_ways
    where, keep = block % sets, 1.0 - 1.0 / hw.l2_ways   # a line's chance to survive a miss in its set
    miss, upto, done = np.ones(len(block)), np.zeros(len(block)), np.zeros(sets)
    span = sets * hw.l2_ways
    key = np.arange(len(block)) // span * sets + where
    by_set = np.argsort(key, kind="stable")   # each chunk's accesses by set
    firsts = np.flatnonzero(np.diff(key[by_set], prepend=-1))   # each set's first of its chunk there
    bounds = np.searchsorted(firsts, np.arange(0, len(block) + span, span))
    for c, lo in enumerate(range(0, len(block), span)):   # in time order: an access's misses depend on those before it
        s, p, mine_by = where[lo:lo + span], prev[lo:lo + span], by_set[lo:lo + span] - lo
        first = firsts[bounds[c]:bounds[c + 1]] - lo
        runs = np.diff(first, append=len(s))
        inside, seen = np.maximum(p - lo, 0), p >= 0
        m = miss[lo:lo + span]
        for _ in range(SWEEPS):
            mine = done[s] + _set_cumsum(m, mine_by, first, runs)   # the misses in its set up to each, itself included
            between = mine - m - np.where(p >= lo, mine[inside], upto[p])
            m = np.where(seen, 1.0 - keep ** between, 1.0)
        miss[lo:lo + span] = m
        upto[lo:lo + span] = done[s] + _set_cumsum(m, mine_by, first, runs)
        done += np.bincount(s, weights=m, minlength=sets)
    return miss, order, prev, done[where] - upto


def _set_cumsum(m: np.ndarray, by_set: np.ndarray, first: np.ndarray, runs: np.ndarray) -> np.ndarray:
    """The running sum of ``m`` over the accesses of each set (``by_set`` sorts them by set, ``first``
    indexes each set's first there and ``runs`` counts its accesses), each one's own included, in the
    accesses' order."""
    sorted_m = m[by_set]
    run = np.cumsum(sorted_m)
    run -= np.repeat(run[first] - sorted_m[first], runs)
    out = np.empty_like(run)
    out[by_set] = run
    return out


def _write_backs(miss: np.ndarray, order: np.ndarray, prev: np.ndarray, write: np.ndarray, after: np.ndarray,
                 keep: float) -> np.ndarray:
    """Each access's expected write-backs: of its line, dirty after the access before it (written since it
    last missed), where it misses; or of its own, where it is its block's last and the ``after`` misses in
    its set evict it before the program ends."""
    sw, sm = write[order], miss[order]
    k = np.arange(len(order))
    start = np.maximum.accumulate(np.where(prev[order] < 0, k, 0))   # each sorted access's chain start
    last_write = np.maximum.accumulate(np.where(sw, k, -1))
    stays = np.cumsum(np.log(np.maximum(1.0 - sm, 1e-300)))   # log of surviving every access since
    dirty = np.where(last_write >= start, np.exp(stays - stays[np.maximum(last_write, 0)]), 0.0)
    last = np.diff(start, append=-1) != 0
    before = np.zeros(len(order))
    before[1:] = (dirty * ~last)[:-1]
    out = np.zeros(len(order))
    out[order] = before * sm + np.where(last, dirty * (1.0 - keep ** after[order]), 0.0)
    return out


def traffic(r: Requests, hw: HardwareConfig, part: np.ndarray | None = None, count: np.ndarray | None = None,
            row: np.ndarray | None = None) -> Traffic:
    """The memory's cost of the requests ``r`` on ``hw``'s SoC (``l2_kib`` > 0); ``part``, each request's
    part (nondecreasing; default one part), each part starting cold; ``count``, how many times each request
    stands (default once; only :attr:`Traffic.sets` weighs it); ``row``, the row of the result each request
    adds into (default its own)."""
    block, nbytes, req, write = _blocks(r)
    miss, order, prev, after = _misses(block, np.zeros(len(req), np.int64) if part is None else part[req], hw)
    back = _write_backs(miss, order, prev, write, after, 1.0 - 1.0 / hw.l2_ways)
    row = np.arange(len(r.addr)) if row is None else row
    cold, warm = _costs(r, row, nbytes, req, miss, prev < 0, back, hw)
    sets = hw.l2_kib * 1024 // BLOCK // hw.l2_ways
    share = np.bincount(block % sets, miss * (1 if count is None else count[req]), minlength=sets)
    return Traffic(cold, warm, float(share.sum() ** 2 / max((share ** 2).sum(), 1e-300)))


def _costs(r: Requests, row: np.ndarray, nbytes: np.ndarray, req: np.ndarray, miss: np.ndarray, first: np.ndarray,
           back: np.ndarray, hw: HardwareConfig) -> tuple[np.ndarray, np.ndarray]:
    """:class:`Traffic`'s columns of the requests adding into each row (``row``), from their blocks' misses
    and write-backs: cold, and warm (a block's ``first`` access in its part hits). Each block's columns but
    the latencies are linear in its misses, so warm is cold less its first accesses' misses' costs."""
    rows = int(row.max(initial=-1)) + 1
    write, at = r.write[req], row[req]
    whole = write & (nbytes == BLOCK)   # a put that allocates without a fill
    beat, dram_beats = hw.dma_beat_bytes, BLOCK // hw.mem_beat_bytes
    dirty_victim = back.sum() / max(miss.sum(), 1.0)   # the chance a miss's victim is dirty
    # a miss holds an MSHR from the tags to the data back in the L2: with a fill or a dirty victim, DRAM's trip
    trip = 1 + hw.dram_latency + dram_beats
    held = (2 * hw.l2_hit_cycles + np.where(whole, dirty_victim, 1.0) * trip) / hw.l2_mshrs
    fills = np.bincount(at, miss * ~whole, minlength=rows)
    backs = np.bincount(at, back, minlength=rows)
    out = np.empty((2, rows, RESOURCES + 3))
    # the system bus's A (a Get's beat, a Put's data) and D (read data, a put's acknowledgement), the memory
    # bus's A and D channels, the MSHRs; then the misses, fills and write-backs
    out[:, :, 0] = np.bincount(row, np.where(r.write, -(-r.length // beat), 1), minlength=rows)
    out[:, :, 1] = np.bincount(at, np.where(write, 1, -(-nbytes // beat)), minlength=rows)
    out[0, :, 2:5] = np.column_stack([fills + backs * dram_beats, fills * dram_beats + backs,
                                      np.bincount(at, miss * held, minlength=rows)])
    out[0, :, 7:] = np.column_stack([np.bincount(at, miss, minlength=rows), fills, backs])
    cold = (first & ~whole).astype(float), first * held, first.astype(float)
    saved = [np.bincount(at, x, minlength=rows) for x in cold]   # the first accesses' misses' fills, MSHRs, misses
    out[1, :, 2:5] = out[0, :, 2:5] - np.column_stack([saved[0], saved[0] * dram_beats, saved[1]])
    out[1, :, 7:] = out[0, :, 7:] - np.column_stack([saved[2], saved[0], np.zeros(rows)])
    for m, o in zip((miss, miss * ~first), out):
        # a request's latency: the buffers both ways, its beats and a beat the other way on the system bus,
        # the L2's tags, and where it misses the L2 again after DRAM's trip if it fills; its slowest block's
        latency = 2 * DMA_BUFFERS + 1 + -(-nbytes // beat) + hw.l2_hit_cycles * (1 + m) + m * ~whole * trip
        firsts = np.flatnonzero(np.diff(req, prepend=-1))   # every request has a block
        slowest = np.maximum.reduceat(latency, firsts) / hw.dma_inflight if len(req) else np.zeros(len(r.addr))
        o[:, 5] = np.bincount(row, np.where(r.write, 0.0, slowest), minlength=rows)   # the reads' in flight
        o[:, 6] = np.bincount(row, np.where(r.write, slowest, 0.0), minlength=rows)   # the writes'
    return out[0], out[1]


def reused(keys: np.ndarray, cold: np.ndarray, warm: np.ndarray, sets: float, hw: HardwareConfig) -> np.ndarray:
    """The chance that each of a sequence of accesses to regions (``keys``, in time order; -1: none) finds
    its region's blocks still in the L2 from the last access to it: (1 - 1/ways) to the misses between
    spread over ``sets`` (:attr:`Traffic.sets`). ``cold`` and ``warm`` are each access's misses when it finds none or all of them;
    the misses between depend on those chances, so they are solved in SWEEPS passes."""
    n = len(keys)
    order = np.argsort(keys, kind="stable")
    prev = np.full(n, -1)
    same = np.flatnonzero((keys[order][1:] == keys[order][:-1]) & (keys[order][1:] >= 0)) + 1
    prev[order[same]] = order[same - 1]
    keep, seen = 1.0 - 1.0 / hw.l2_ways, prev >= 0
    chance = np.zeros(n)
    for _ in range(SWEEPS):
        done = np.cumsum(cold - chance * (cold - warm))   # the misses up to each access, its own included
        between = done - (cold - chance * (cold - warm)) - done[np.maximum(prev, 0)]
        chance = np.where(seen, keep ** (between / sets), 0.0)
    return chance
