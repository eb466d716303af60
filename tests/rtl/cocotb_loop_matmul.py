"""cocotb test of LoopMatmul alone: its unrolled commands against isa/loop_unroll.py.

The bench feeds checked LOOP_WS programs (tests/loop_programs.py, drawn at random) one word a
cycle, while dispatch's queues have room at random; a command leaves only when its queue has
room. It then checks that
* each sequencer's stream (mvin = A, mvin2 = B, mvin3 = D, preload/compute, mvout) is, in
  order, the reference unroller's, word for word;
* the overlapped order reads what the reference's sequential one reads: every local row a
  command reads (or accumulates onto) was last written by the same command in both orders;
* other commands pass unchanged, in order, each after every loop before it is unrolled.
"""
from __future__ import annotations

import dataclasses
import random

import cocotb
from cocotb.triggers import RisingEdge, Timer

from isa import (ACC_BIT, ACCUM_BIT, GARBAGE, ROW_MASK, ComputePreloaded, ConfigEx, ConfigLd, ConfigNorm, ConfigSt,
                 LoopWs, Mvin, Mvout, PRESETS, Preload, Program, decode, encode)
from isa.checker import check
from isa.loop_unroll import Unroller
from loop_programs import LoopProgram, add_matmul, add_resadd, add_reuse
from unit_bench import INSN, pack, reset, unpack

HW = PRESETS["tiny"]
LD, EX, ST = 0, 1, 2


def stream(ins) -> str:
    """The sequencer (or the pass-through) a command comes from (a config_norm choosing a stat id: the store
    sequencer's, of a LAYERNORM / SOFTMAX loop; these programs have no others)."""
    if isinstance(ins, Mvin):
        return f"mvin{ins.state}"
    if isinstance(ins, (Preload, ComputePreloaded)):   # ComputeAccumulated is a ComputePreloaded
        return "ex"
    return "st" if isinstance(ins, (Mvout, ConfigNorm)) else "other"


def queue(ins) -> int | None:
    """Dispatch's queue of a command (None: it takes no slot)."""
    if isinstance(ins, (Mvin, ConfigLd)):
        return LD
    if isinstance(ins, (Mvout, ConfigSt, ConfigNorm)):
        return ST
    if isinstance(ins, (ComputePreloaded, ConfigEx)):
        return EX
    return None


def reference(prog) -> list[tuple[object, int]]:
    """The reference's sequential order: (command, index of the program word it comes from)."""
    unroller, out = Unroller(prog.hw), []
    for index, ins in enumerate(prog.instructions):
        expanded = unroller.feed(ins)
        out += [(ins, index)] if expanded is None else [(p, index) for p in expanded]
    return out


def accesses(order: list) -> dict[tuple, tuple]:
    """(reader key, row) -> key of the command that last wrote that row before it, walking ``order``
    (commands keyed by (stream, index in stream)) as one sequential program does."""
    dim, last, seen, found = HW.dim, {}, {}, {}
    pending = None
    for ins in order:
        s = stream(ins)
        key = (s, seen.get(s, 0))
        seen[s] = key[1] + 1
        reads, writes = [], []

        def rows(addr, n, first=0):
            if addr == GARBAGE:
                return []
            return [(bool(addr & ACC_BIT), (addr & ROW_MASK) + first + r) for r in range(n)]
        if isinstance(ins, Mvin):
            for b in range(-(-ins.cols // dim)):
                writes += rows(ins.local, ins.rows, b * dim)
            if ins.local & ACC_BIT and ins.local & ACCUM_BIT:
                reads += writes
        elif isinstance(ins, Mvout):
            for b in range(-(-ins.cols // dim)):
                reads += rows(ins.local, ins.rows, b * dim)
        elif isinstance(ins, Preload):
            pending = ins
        elif isinstance(ins, ComputePreloaded):
            reads += rows(ins.a, ins.a_rows)
            if type(ins) is ComputePreloaded:
                reads += rows(pending.b, pending.b_rows)
            writes += rows(pending.c, pending.c_rows)
            if pending.c & ACCUM_BIT:
                reads += rows(pending.c, pending.c_rows)
        for row in reads:
            found[(key, row)] = last.get(row)
        for row in writes:
            last[row] = key
    return found


def random_program(rng: random.Random) -> LoopProgram:
    """A few cases of every kind, sized for the tiny preset's 8-block accumulator halves."""
    lp = LoopProgram(HW)
    d = HW.dim
    for n in range(rng.randint(3, 5)):
        kind = rng.choice(["matmul", "matmul", "tiled", "resadd", "reuse"])
        i, j = rng.choice([(1, 1), (1, 4), (2, 2), (2, 4), (3, 2), (4, 2), (8, 1)])
        m, nn = i * d - rng.randrange(d), j * d - rng.randrange(d)
        k = rng.randint(1, 5 * d)
        seed = rng.randrange(1 << 16)
        if kind == "resadd":
            add_resadd(lp, f"s{n}", m, nn, tile_rows=rng.randint(1, i), seed=seed)
        elif kind == "reuse":
            add_reuse(lp, f"r{n}", m, nn, k, seed=seed)
        else:
            tile = (rng.randint(1, i), rng.randint(1, j), rng.randint(1, 3)) if kind == "tiled" else None
            add_matmul(lp, f"m{n}", m, nn, k, tile=tile, bias=rng.choice([None, "row", "full"]),
                       low_d=rng.random() < 0.3, full_c=rng.random() < 0.3,
                       transpose=rng.choice([None, None, "a", "b"]), seed=seed)
    return lp


def with_norm_acts(prog: Program, rng: random.Random) -> Program:
    """``prog`` with some of its LOOP_WS words' act drawn from LAYERNORM (2), IGELU (3) and SOFTMAX (4) (not on
    .full C): the store sequencer's normalizing walk (config_norm words, one-row mvouts with norm commands)."""
    words = []
    for ins in prog.instructions:
        if isinstance(ins, LoopWs) and not ins.full_c and rng.random() < 0.6:
            ins = dataclasses.replace(ins, act=rng.choice([2, 2, 3, 4, 4]))
        words.append(ins)
    return Program(prog.hw, words, prog.buffers)


class Bench:
    def __init__(self, dut, rng: random.Random, room_p: float) -> None:
        self.dut, self.rng, self.room_p = dut, rng, room_p
        self.out: list = []

    async def run(self, words: list) -> None:
        dut, pc, idle = self.dut, 0, 0
        while idle < 8:
            if pc < len(words):
                f, r1, r2 = encode(words[pc])
                dut.cmd_valid_i.value = 1
                dut.cmd_i.value = pack(INSN, funct=f, rs1=r1, rs2=r2)
            else:
                dut.cmd_valid_i.value = 0
            room = [self.rng.random() < self.room_p for _ in range(3)]
            dut.room_i.value = room[0] | room[1] << 1 | room[2] << 2
            dut.out_ready_i.value = 1
            await Timer(1, "ns")
            ready = 1
            if int(dut.out_valid_o.value):
                w = unpack(INSN, int(dut.out_o.value))
                ins = decode(w["funct"], w["rs1"], w["rs2"])
                q = queue(ins)
                ready = 1 if q is None else int(room[q])
                if int(dut.busy_o.value):
                    assert ready, f"{ins} offered to a full queue"
                if ready:
                    self.out.append(ins)
            dut.out_ready_i.value = ready
            await Timer(1, "ns")
            if pc < len(words) and int(dut.cmd_ready_o.value):
                pc += 1
            busy = int(dut.busy_o.value)
            await RisingEdge(dut.clk_i)
            idle = idle + 1 if pc == len(words) and not busy else 0
            assert len(self.out) < 100_000


def compare(prog, got: list) -> None:
    want = reference(prog)
    streams: dict[str, tuple[list, list]] = {}
    for ins, _ in want:
        streams.setdefault(stream(ins), ([], []))[0].append(ins)
    for ins in got:
        streams.setdefault(stream(ins), ([], []))[1].append(ins)
    for name, (w, g) in streams.items():
        assert len(g) == len(w), f"{name}: {len(g)} commands, the reference has {len(w)}"
        for n, (a, b) in enumerate(zip(g, w)):
            assert a == b, f"{name} command {n}: {a} (the reference: {b})"
    assert accesses(got) == accesses([ins for ins, _ in want]), "a command reads rows in another state"
    # a passed-through command leaves after every command of the loops before it
    origin = {}
    seen: dict[str, int] = {}
    for ins, index in want:
        s = stream(ins)
        origin[(s, seen.get(s, 0))] = index
        seen[s] = seen.get(s, 0) + 1
    seen, latest = {}, -1
    for ins in got:
        s = stream(ins)
        index = origin[(s, seen.get(s, 0))]
        seen[s] = seen.get(s, 0) + 1
        if s == "other":
            assert index > latest, f"{ins} (word {index}) passed before the loop of word {latest} was unrolled"
        latest = max(latest, index)


@cocotb.test()
async def unrolls_as_the_reference(dut) -> None:
    await reset(dut, "cmd_valid_i", "out_ready_i", "room_i")
    rng = random.Random(2024)
    for trial in range(16):
        if trial:   # a fresh unroller (slots and accumulator halves from the start), as the reference
            dut.rst_ni.value = 0
            await RisingEdge(dut.clk_i)
            await Timer(1, "ns")
            dut.rst_ni.value = 1
        lp = random_program(rng)
        prog = lp.build()
        if trial % 2:   # LAYERNORM / SOFTMAX loops on every other program
            prog = with_norm_acts(prog, rng)
        check(prog)
        bench = Bench(dut, rng, room_p=[1.0, 0.6, 0.25][trial % 3])
        await bench.run(prog.instructions)
        compare(prog, bench.out)
        dut._log.info(f"program {trial}: {len(prog.instructions)} words -> {len(bench.out)} commands")
