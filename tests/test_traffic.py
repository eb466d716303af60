"""The SoC's DRAM traffic model (toolkit.traffic) and the loop family's estimate around it.

The L2 model is held against a Monte-Carlo run of the harness's own policy (rtl/harness/soc_memory.h:
sets of ``l2_ways``, a random victim on each miss, a fill for a read's or a partial put's miss, a
write-back for a dirty victim, none at the end), on a small L2 so that it is quick.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import toolkit as tk
from isa import ACC_BIT, FULL_BIT, GARBAGE, HardwareConfig, encode_all
from isa.instructions import ComputeAccumulated, ComputePreloaded, ConfigLd, ConfigSt, Mvin, Mvout, Preload
from toolkit.estimate import tap_cycles
from isa.loop_unroll import MOVES, Groups
from toolkit.family import _pipeline, loop_cycles
from toolkit.traffic import BLOCK, FILLS, MISSES, WRITE_BACKS, Requests, requests, reused, traffic

SOC = HardwareConfig.preset("gemmini")
SMALL = dataclasses.replace(SOC, l2_kib=16)   # 32 sets of 8 ways


def fills_and_backs(r: Requests, hw: HardwareConfig) -> tuple[float, float]:
    t = traffic(r, hw)
    return t.cold[:, FILLS].sum(), t.cold[:, WRITE_BACKS].sum()


def simulated(r: Requests, hw: HardwareConfig, seeds: int = 20) -> tuple[float, float]:
    """Mean (fills, write-backs) of the harness's L2 policy over ``seeds`` random victim streams."""
    sets = hw.l2_kib * 1024 // BLOCK // hw.l2_ways
    totals = np.zeros(2)
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        tags, dirty = np.full((sets, hw.l2_ways), -1), np.zeros((sets, hw.l2_ways), bool)
        for addr, length, write in zip(r.addr, r.length, r.write):
            for b in range(addr // BLOCK, (addr + length - 1) // BLOCK + 1):
                s, way = b % sets, np.flatnonzero(tags[b % sets] == b)
                if len(way):
                    dirty[s, way[0]] |= write
                    continue
                full = write and addr <= b * BLOCK and addr + length >= (b + 1) * BLOCK
                totals[0] += not full
                v = rng.integers(hw.l2_ways)
                totals[1] += tags[s, v] >= 0 and dirty[s, v]
                tags[s, v], dirty[s, v] = b, write
    return totals[0] / seeds, totals[1] / seeds


def made(addr: np.ndarray, length: np.ndarray, write: np.ndarray) -> Requests:
    """Requests of those addresses, lengths and directions, each its own word."""
    return Requests(addr, length, write, np.arange(len(addr)))


def reads(blocks: np.ndarray) -> Requests:
    return made(blocks * BLOCK, np.full(len(blocks), BLOCK), np.zeros(len(blocks), bool))


@pytest.mark.parametrize("footprint", [128, 256, 512])   # half, all and twice the L2's 256 blocks
def test_a_footprint_read_twice_misses_as_random_replacement_does(footprint: int) -> None:
    r = reads(np.tile(np.arange(footprint), 2))
    got, (fills, backs) = fills_and_backs(r, SMALL), simulated(r, SMALL)
    assert got[0] == pytest.approx(fills, rel=0.08) and got[1] == backs == 0


def test_narrow_writes_fill_their_blocks_and_whole_blocks_do_not() -> None:
    # 16-byte rows a column block at a time (an mvout per 16 columns, as the loops store 16 channels),
    # over 4x the L2, then read back: every block filled once per partial write that misses
    rows = 1024
    addr = (np.arange(4)[:, None] * 16 + np.arange(rows)[None, :] * BLOCK).ravel()
    narrow = made(np.r_[addr, np.arange(rows) * BLOCK], np.r_[np.full(4 * rows, 16), np.full(rows, BLOCK)],
                      np.r_[np.ones(4 * rows, bool), np.zeros(rows, bool)])
    got, (fills, backs) = fills_and_backs(narrow, SMALL), simulated(narrow, SMALL, seeds=5)
    assert got[0] == pytest.approx(fills, rel=0.08) and got[1] == pytest.approx(backs, rel=0.08)
    whole = made(np.arange(rows) * BLOCK, np.full(rows, BLOCK), np.ones(rows, bool))
    got = fills_and_backs(whole, SMALL)
    assert got[0] == 0 and got[1] == pytest.approx(simulated(whole, SMALL, seeds=5)[1], rel=0.08)


@pytest.mark.parametrize("between", [64, 256, 768])   # a quarter of the L2's blocks, all of them, thrice
def test_a_region_found_again_as_random_replacement_keeps_it(between: int) -> None:
    # a loop reads a 32-block tile, others read ``between`` blocks, a loop reads the tile again: the chance
    # toolkit.traffic.reused gives it, against the hits the harness's policy finds
    tile, others = np.arange(32), 1000 + np.arange(between)
    r = reads(np.r_[tile, others, tile])
    part = np.repeat([0, 1, 2], [32, between, 32])
    t = traffic(r, SMALL, part)
    keys, rows = np.array([0, 1, 0]), [np.arange(32), 32 + np.arange(between), 32 + between + np.arange(32)]
    cold, warm = (np.array([x[i, MISSES].sum() for i in rows]) for x in (t.cold, t.warm))
    chance = reused(keys, cold, warm, t.sets, SMALL)
    hits = 32 - (simulated(r, SMALL, seeds=50)[0] - 32 - between)
    assert chance[2] * 32 == pytest.approx(hits, abs=2.0) and chance[0] == chance[1] == 0


def test_requests_are_the_dmas_rows() -> None:
    words = encode_all([
        ConfigLd(dram_stride=256, state=0), ConfigLd(dram_stride=0, state=2), ConfigSt(dram_stride=1024),
        Mvin(4096, 0, rows=3, cols=16),                       # three rows 256 bytes apart
        Mvin(8192, ACC_BIT, rows=16, cols=16, state=2),       # a bias row broadcast: read once, int32
        Mvin(0, 64, rows=16, cols=16),                        # the zero writer: no request
        Mvout(65536, ACC_BIT, rows=2, cols=16),               # int8 rows
        Mvout(131072, ACC_BIT | FULL_BIT, rows=1, cols=16),   # an int32 row
        # 2x2 maxima of a 4x4 image into rows of 3 pixels: pixels 0, 1, 3 and 4
        ConfigSt(dram_stride=16, pool_stride=2, pool_size=2, pool_out_dim=3, porows=2, pocols=2, orows=4, ocols=4),
        Mvout(262144, ACC_BIT, rows=16, cols=16),
    ])
    r = requests(words)
    assert r.addr.tolist() == [4096, 4352, 4608, 8192, 65536, 66560, 131072, 262144, 262160, 262192, 262208]
    assert r.length.tolist() == [16, 16, 16, 64, 16, 16, 64, 16, 16, 16, 16]
    assert r.write.tolist() == [False] * 4 + [True] * 7
    assert r.word.tolist() == [3, 3, 3, 4, 6, 6, 7, 9, 9, 9, 9]


def test_a_weight_block_starts_only_at_a_preload_that_names_weights() -> None:
    # one block of weights, then fifteen preloads of garbage B that move only the accumulator address:
    # one block streaming 16 x 16 rows, as the RTL's execute unit keeps the weights (not 16 blocks)
    words = encode_all([Preload(0, 16, 16, ACC_BIT, 16, 16), ComputePreloaded(64, 16, 16, GARBAGE, 16, 16)]
                       + [w for i in range(1, 16) for w in (Preload(GARBAGE, 16, 16, ACC_BIT + 16 * i, 16, 16),
                                                            ComputeAccumulated(64 + i, 16, 16, GARBAGE, 16, 16))])
    alone = HardwareConfig.preset("gemmini-alone")
    one = np.zeros(1, np.int64)
    groups = Groups(words, np.ones(len(words), np.int64), one, one, one, one, np.zeros((1, len(MOVES)), np.uint64))
    assert loop_cycles(tk.matmul(16, 16, 16), groups, alone, conv_loops=False) == tap_cycles(256, 16, alone.dim) == 256


def test_the_loops_pipeline_overlaps_a_loops_loads_and_stores_with_its_neighbours_computes() -> None:
    four = np.full(4, 10.0), np.full(4, 100.0), np.full(4, 10.0)
    # execute-bound: the first loop's loads, then the computes back to back (the last stores alongside)
    assert _pipeline(np.zeros(4), *four, whole_loads=True) == 10 + 4 * 100
    assert _pipeline(np.zeros(4), *four, whole_loads=False) == 4 * 100
    # host-bound: each loop's words, then the last loop's load and compute
    assert _pipeline(np.full(4, 100.0), np.ones(4), np.ones(4), np.ones(4), whole_loads=True) == 4 * 100 + 2
    # store-bound: a loop stores alongside its computes, after the loop before has stored
    assert _pipeline(np.zeros(3), np.ones(3), np.ones(3), np.full(3, 50.0), whole_loads=True) == 1 + 3 * 50
