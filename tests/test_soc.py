"""The SoC around the accelerator (docs/concepts/soc.md), each model pinned by a small program on the
RTL: the host's cost per command, its fence, the RoCC queues' back-pressure; the L2's hit and miss
latency and its write to an absent block; DRAM's bandwidth each way and its in-flight limit; the
cycle stacks and the timeline; and exported C reproducing tk.run's cycles on the SoC. Every run is checked against
the functional model. The SoC's fields are timing only, so all of this runs on one RTL build."""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest

import toolkit as tk
from isa import FULL_BIT, PRESETS, ConfigEx, ConfigLd, ConfigSt, Fence, HardwareConfig, Instruction, Mvin, Mvout
from isa import Program, acc_addr, layout
from isa.opcodes import SOC_STACKS
from simulators import cosim
from simulators.trace import write_chrome_trace

from helpers import assert_like_functional

GEMMINI = PRESETS["gemmini"]
ROWS = 256
BUFS = layout([("X", "input", "int8", (ROWS, 64)), ("O", "output", "int8", (ROWS, 64)),
               ("W", "output", "int32", (ROWS, 16))])
X, O, W = BUFS["X"].addr, BUFS["O"].addr, BUFS["W"].addr
# no host cost, and the cold L2 of the FireSim SoC: each test turns on what it pins
BASE = dataclasses.replace(GEMMINI, host_cmd_cycles=0)


def _run(hw: HardwareConfig, *body: Instruction, stride: int = 64) -> tk.RunResult:
    prog = Program(hw, [ConfigEx(), ConfigLd(dram_stride=stride), ConfigSt(dram_stride=stride), *body], BUFS)
    inputs = {"X": np.random.default_rng(3).integers(-128, 128, (ROWS, 64), dtype=np.int8)}
    res = tk.run(prog, inputs, backend="verilator")
    assert_like_functional(prog, inputs, res)
    return res


def _cycles(hw: HardwareConfig, *body: Instruction, **kw: int) -> int:
    return _run(hw, *body, **kw).cycles


def _rows(cls: type, dram: int, local: int, rows: int, stride: int) -> list[Instruction]:
    """``rows`` rows of 16 bytes as mvins or mvouts of dim rows each, ``stride`` bytes apart in DRAM."""
    return [cls(dram + r * stride, local + r, min(16, rows - r), 16) for r in range(0, rows, 16)]


def test_each_command_costs_the_host_its_cycles() -> None:
    n, cost = 200, 20
    res = _run(dataclasses.replace(BASE, host_cmd_cycles=cost), *[ConfigEx()] * n)
    words = n + 3   # and the three configs of _run
    assert res.counters["host_issue"] == words * cost
    assert words * cost <= res.cycles <= words * cost + 20
    assert _cycles(BASE, *[ConfigEx()] * n) < words + 10   # free issue: about a word a cycle


def test_a_fence_waits_until_the_accelerator_is_idle() -> None:
    hw = dataclasses.replace(BASE, host_cmd_cycles=1)
    body = _rows(Mvin, X, 0, 64, 64)
    fenced = _run(hw, *body, Fence(), ConfigEx())
    assert fenced.counters["host_fence"] > hw.dram_latency
    assert fenced.cycles > _cycles(hw, *body, ConfigEx())


def test_full_queues_stall_the_host() -> None:
    body = [Mvin(X + 64 * i, 16 * (i % 64), 1, 16) for i in range(ROWS)]
    small = _run(dataclasses.replace(BASE, host_cmd_cycles=1, rocc_queue=2), *body)
    assert small.counters["host_queue_full"] > ROWS   # the load queue and two entries fill at once
    assert small.counters["host_issue"] == ROWS + 3


@pytest.mark.parametrize("warm", [False, True])
def test_l2_miss_costs_dram_and_a_hit_costs_the_l2(warm: bool) -> None:
    """One mvin of one row: a miss (cold L2) moves by exactly what DRAM's latency moves; a hit (the
    input warm in the L2) does not, and moves by exactly what the L2's hit latency moves."""
    hw = dataclasses.replace(BASE, l2_warm=warm)
    body = (Mvin(X, 0, 1, 16),)
    res = _run(hw, *body)
    assert (res.counters["l2_read_hits"], res.counters["l2_read_misses"]) == ((1, 0) if warm else (0, 1))
    slower_dram = _cycles(dataclasses.replace(hw, dram_latency=hw.dram_latency + 100), *body)
    slower_l2 = _cycles(dataclasses.replace(hw, l2_hit_cycles=hw.l2_hit_cycles + 10), *body)
    assert slower_dram - res.cycles == (0 if warm else 100)
    assert slower_l2 - res.cycles == (10 if warm else 20)   # a miss crosses the L2 twice: tags, then fill
    if warm:
        assert res.cycles + hw.dram_latency + 64 // hw.mem_beat_bytes <= _cycles(BASE, *body)


def test_a_partial_write_to_an_absent_block_fills_it_and_a_full_one_does_not() -> None:
    partial = _run(BASE, Mvout(O, acc_addr(0), 1, 16))             # 16 bytes of a 64-byte block
    full = _run(BASE, Mvout(W, acc_addr(0) | FULL_BIT, 1, 16))      # 16 int32: the whole block
    for res in (partial, full):
        assert (res.counters["l2_write_hits"], res.counters["l2_write_misses"]) == (0, 1)
    assert partial.counters["dram_bytes_read"] == 64
    assert full.counters["dram_bytes_read"] == 0


def test_a_block_mvout_row_is_one_whole_block_write() -> None:
    """A 1x64 int8 mvout (four blocks at dim 16) reaches the L2 as one 64-byte put, as Gemmini's DMA writer
    joins a row's blocks (len = block * 16 + len, up to dma_maxbytes = 64): one miss that fills nothing,
    where four 16-byte writes were a miss that fills the block from DRAM and three hits."""
    res = _run(BASE, Mvout(O, acc_addr(0), 1, 64))
    assert O % 64 == 0
    assert res.counters["dma_bytes_written"] == 64
    assert (res.counters["l2_write_hits"], res.counters["l2_write_misses"]) == (0, 1)
    assert res.counters["dram_bytes_read"] == 0


@pytest.mark.parametrize("beat", [8, 4])
def test_dram_read_bandwidth(beat: int) -> None:
    """4 KiB read cold: the memory bus's D channel moves it in 4096 / beat cycles, and the run takes at least
    that."""
    res = _run(dataclasses.replace(BASE, mem_beat_bytes=beat), *_rows(Mvin, X, 0, ROWS, 16), stride=16)
    assert res.counters["dram_bytes_read"] == 64 * 64
    assert res.counters["mem_mbus_d"] == 64 * 64 // beat
    assert res.cycles > 64 * 64 // beat


def test_dram_write_bandwidth_through_dirty_evictions() -> None:
    """A 1 KiB L2 (8 sets of 2 ways) takes 64 dirty blocks, whole-block writes that read nothing: all
    but 16 are written back, 64 bytes each over the memory bus's A channel, and the MSHRs that evict
    them wait for DRAM's answer. A bus of one byte a cycle takes 64 cycles a block, which bounds the run."""
    hw = dataclasses.replace(BASE, l2_kib=1, l2_ways=2)
    body = _rows(Mvout, W, acc_addr(0) | FULL_BIT, 64, 64)
    res = _run(hw, *body)
    assert res.counters["dram_bytes_read"] == 0
    assert res.counters["l2_writebacks"] == 64 - 16
    assert res.counters["dram_bytes_written"] == 64 * (64 - 16)
    assert 0 < res.counters["mem_mbus_a"] <= res.counters["dram_bytes_written"] // hw.mem_beat_bytes
    narrow = _run(dataclasses.replace(hw, mem_beat_bytes=1), *body)
    assert narrow.cycles >= (64 - 16 - hw.l2_mshrs) * 64 > 2 * res.cycles


def test_dram_reads_in_flight_are_limited() -> None:
    """64 rows, each in its own block: with one read in flight each waits for the one before."""
    body = _rows(Mvin, X, 0, 64, 64)
    one = dataclasses.replace(BASE, dram_inflight=1)
    serial = _cycles(one, *body)
    assert serial >= 64 * (one.dram_latency + 64 // one.mem_beat_bytes)
    assert _cycles(BASE, *body) < serial / 4


def test_cycle_stacks_sum_to_the_total_on_the_soc_only() -> None:
    op = tk.matmul(64, 48, 80, bias="row", scale=0.02)
    inputs = op.random_inputs(seed=0)
    for hw, on in ((GEMMINI, True), (PRESETS["gemmini-alone"], False)):
        res = tk.run(tk.compile(op, hw), inputs, backend="verilator")
        for unit, cats in SOC_STACKS.items():
            total = sum(res.counters[f"{unit}_{c}"] for c in cats)
            assert total == (res.cycles if on else 0), unit


def test_exported_c_reproduces_tk_run_on_the_soc(tmp_path: Path) -> None:
    hw = dataclasses.replace(PRESETS["tiny"], **{k: getattr(GEMMINI, k) for k in
                                                 ("host_cmd_cycles", "l2_kib", "dram_latency")})
    op = tk.matmul(12, 8, 20, bias="row", scale=0.05)
    prog = tk.compile(op, hw)
    inputs = op.random_inputs(seed=1)
    source = tmp_path / "exported.c"
    source.write_text(prog.to_c(inputs, check=op.reference(inputs)))
    binary = cosim.compile_c([source], tmp_path / "program", hw=hw, engine="verilator", workdir=tmp_path)
    ran = cosim.run_c(binary, capture=True, timeout=600)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    (cycles,) = re.findall(r"^systolic: cycles (\d+)$", ran.stderr, re.M)
    res = tk.run(prog, inputs, backend="verilator")
    assert int(cycles) == res.cycles
    fences = sum(isinstance(ins, Fence) for ins in prog.instructions)
    assert fences and res.counters["host_issue"] == (len(prog.instructions) - fences) * hw.host_cmd_cycles + fences


def test_the_timeline_shows_the_host_and_the_memory(tmp_path: Path) -> None:
    """With the log on the SoC: the host's runs, one issue run a word (and the fence's wait), and the
    memory's; the Chrome trace draws both as tracks of their own."""
    hw = dataclasses.replace(BASE, host_cmd_cycles=3)
    body = [*_rows(Mvin, X, 0, 32, 64), Fence(), *_rows(Mvout, O, acc_addr(0), 16, 64)]
    prog = Program(hw, [ConfigEx(), ConfigLd(dram_stride=64), ConfigSt(dram_stride=64), *body], BUFS)
    inputs = {"X": np.zeros((ROWS, 64), np.int8)}
    res = tk.run(prog, inputs, backend="verilator", log=True)
    host, mem = res.soc_log["host"], res.soc_log["mem"]
    assert sum(state == "issue" for _, state in host) == len(prog.instructions)
    assert [state for _, state in host].count("fence") == 1   # the wait after the program's fence
    assert {"mbus_d", "dram_wait", "l2"} <= {state for _, state in mem}
    assert [start for start, _ in host] == sorted(start for start, _ in host)
    path = tmp_path / "trace.json"
    write_chrome_trace(res.log, path, soc=res.soc_log, cycles=res.cycles)
    events = json.loads(path.read_text())["traceEvents"]
    tracks = {e["args"]["name"]: e["tid"] for e in events if e["name"] == "thread_name"}
    slices = [e for e in events if e["ph"] == "X"]
    assert sum(e["tid"] == tracks["host"] and e["name"] == "issue" for e in slices) == len(prog.instructions)
    assert any(e["tid"] == tracks["memory"] and e["name"] == "mbus_d" for e in slices)
    assert max(e["ts"] + e["dur"] for e in slices if e["tid"] == tracks["memory"]) <= res.cycles + 1
