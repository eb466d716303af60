"""cocotb test of the load unit: config_ld and mvins into the scratchpad and the accumulator.

A small DRAM model answers the read requests in order after a latency; the local
memories are Python lists written on grant (grants withheld at random, so writes
must be held). The rows the unit writes are compared with a direct computation
of what each mvin means (blocks, block stride, shrink, accumulate, scale, zeros from DRAM
address 0, pixel repeats)."""
from __future__ import annotations

import random
from collections import deque

import cocotb
import numpy as np

from isa import ConfigLd, Mvin, acc_addr
from isa.numerics import mvin_scale
from unit_bench import (DMA_REQ, UNIT_STACK, insn_word, issue_fields, lanes, mem_req_fields, next_cycle, pack,
                        reset, settle, unpack)

LATENCY = 5


def wrap32(x: int) -> int:
    return (x + (1 << 31)) % (1 << 32) - (1 << 31)


def expected(dram: np.ndarray, sp: np.ndarray, acc: np.ndarray, cfg: dict, ins: Mvin, dim: int) -> None:
    """Apply one mvin to the reference memories."""
    stride, shrink, bstride, scale, repeats = cfg[ins.state]
    to_acc = bool(ins.local & (1 << 31))
    wide = to_acc and not shrink
    item = 4 if wide else 1
    half = len(sp) // 2
    for r in range(ins.rows):
        raw = dram[ins.dram + r * stride: ins.dram + r * stride + ins.cols * item]
        vals = raw.view(np.int32) if wide else raw.view(np.int8)
        vals = mvin_scale(vals.astype(np.int64), scale, to_int8=not to_acc).astype(np.int64)
        if ins.dram == 0:   # the zero writer
            vals = np.zeros(ins.cols, np.int64)
        for col, v in enumerate(vals):
            row = (ins.local & 0x1FFFFFFF) + r + (col // dim) * bstride
            if not to_acc:
                # pixel repeat t: t * n columns right (n: the block's columns), t rows down,
                # never below the row's scratchpad half
                n = min(dim, ins.cols - col // dim * dim)
                for t in range(repeats):
                    if col % dim + t * n < dim and row - t >= (half if row >= half else 0):
                        sp[row - t][col % dim + t * n] = v
            elif ins.local & (1 << 30):
                acc[row][col % dim] = wrap32(int(acc[row][col % dim]) + int(v))
            else:
                acc[row][col % dim] = v


def mvin_program(dim: int, blocks: int, sp_rows: int) -> list:
    """config_ld and mvins that reach each of the unit's paths once or more."""
    cols = dim * blocks
    return [
        ConfigLd(dram_stride=64, state=0, block_stride=8),                        # mvin: int8 rows
        ConfigLd(dram_stride=64, state=1, block_stride=4),                        # mvin2: int32 rows
        ConfigLd(dram_stride=16, state=2, shrink=1, scale=0.5),                   # mvin3: int8, scaled
        Mvin(64, 0, dim, cols, 0),                                                # two blocks, 8 apart
        Mvin(512, 3, 2, dim - 1, 0),                                              # a masked column
        Mvin(1024, acc_addr(0), dim, cols, 1),                                    # int32 into acc
        Mvin(2048, acc_addr(0, accumulate=True), dim, dim, 2),                    # shrink, scale, add
        Mvin(3000, acc_addr(8, accumulate=True), 3, dim, 2),
        Mvin(0, acc_addr(8), 2, dim, 1),                                          # zeros, in order
        Mvin(0, 2, 2, dim, 0),                                                    # zeros over rows
        ConfigLd(dram_stride=8, state=0, block_stride=8, pixel_repeats=2),        # repeats
        Mvin(200, 40, 3, 2, 0),                                                   # into rows 39..42
        ConfigLd(dram_stride=4, state=0, block_stride=8, pixel_repeats=3),
        Mvin(300, sp_rows // 2, 3, 1, 0),                                         # not below the half
        Mvin(0, 52, 2, 1, 0),                                                     # repeated zeros
        Mvin(400, 57, dim, dim, 0),                                               # full rows: no room
    ]


def expected_memories(program: list, dram: np.ndarray, sp: np.ndarray, acc: np.ndarray, dim: int) -> None:
    """Apply ``program`` to the reference memories."""
    cfg = {}
    for ins in program:
        if isinstance(ins, ConfigLd):
            cfg[ins.state] = (ins.dram_stride, ins.shrink, ins.block_stride, ins.scale, ins.pixel_repeats)
        else:
            expected(dram, sp, acc, cfg, ins, dim)


def record_writes(dut, sp_req, acc_req, dim: int, sp: np.ndarray, acc: np.ndarray) -> None:
    """Write into ``sp`` and ``acc`` what the unit writes this cycle where its request is granted."""
    req = unpack(sp_req, int(dut.sp_o.value))
    if req["req"] and int(dut.sp_gnt_i.value):
        for i, v in enumerate(lanes(req["wdata"], dim, 8)):
            if req["wmask"] >> i & 1:
                sp[req["row"]][i] = v
    req = unpack(acc_req, int(dut.acc_o.value))
    if req["req"] and int(dut.acc_gnt_i.value):
        row = acc[req["row"]]
        for i, v in enumerate(lanes(req["wdata"], dim, 32)):
            if req["wmask"] >> i & 1:
                row[i] = wrap32((int(row[i]) if req["accum"] else 0) + v)


@cocotb.test()
async def mvins_land_where_they_should(dut) -> None:
    dim, blocks = int(dut.DIM.value), int(dut.MAX_BLOCK_LEN.value)
    sp_rows, acc_rows, ldq = int(dut.SP_ROWS.value), int(dut.ACC_ROWS.value), int(dut.LDQ.value)
    issue = issue_fields(int(dut.N.value))
    sp_req, acc_req = mem_req_fields(dim, sp_rows, 8), mem_req_fields(dim, acc_rows, 32)
    rng = random.Random(3)
    dram = np.frombuffer(rng.randbytes(4096), dtype=np.uint8).copy()
    # memories start non-zero, so that the zero writes show
    want_sp, got_sp = np.full((sp_rows, dim), 99, np.int64), np.full((sp_rows, dim), 99, np.int64)
    want_acc, got_acc = np.full((acc_rows, dim), 99, np.int64), np.full((acc_rows, dim), 99, np.int64)
    program = mvin_program(dim, blocks, sp_rows)
    expected_memories(program, dram, want_sp, want_acc, dim)

    await reset(dut, "iss_valid_i")
    dut.rd_req_ready_i.value = 1
    dut.rd_resp_valid_i.value = 0
    pending: deque = deque()              # (cycle ready, tag, addr, len) in request order
    in_flight: dict[int, int] = {}        # slot -> program index
    done = []
    pc = cycle = 0
    while (pc < len(program) or in_flight) and cycle < 3000:
        free = [s for s in range(ldq) if s not in in_flight]
        offer = pc < len(program) and bool(free)
        dut.iss_valid_i.value = int(offer)
        if offer:
            dut.iss_i.value = pack(issue, slot=free[0], insn=insn_word(program[pc]))
        head = pending[0] if pending and pending[0][0] <= cycle else None
        dut.rd_resp_valid_i.value = int(head is not None)
        if head is not None:
            _, tag, addr, length = head
            dut.rd_resp_tag_i.value = tag
            dut.rd_resp_data_i.value = int.from_bytes(dram[addr:addr + length].tobytes(), "little")
        dut.sp_gnt_i.value = int(rng.random() < 0.7)
        dut.acc_gnt_i.value = int(rng.random() < 0.7)
        await settle()
        if offer and int(dut.iss_ready_o.value):
            in_flight[free[0]] = pc
            pc += 1
        if int(dut.rd_req_valid_o.value):
            req = unpack(DMA_REQ, int(dut.rd_req_o.value))
            pending.append((cycle + LATENCY, req["tag"], req["addr"], req["len"]))
        if head is not None and int(dut.rd_resp_ready_o.value):
            pending.popleft()
        record_writes(dut, sp_req, acc_req, dim, got_sp, got_acc)
        done_bits = int(dut.done_o.value)
        for slot in list(in_flight):
            if done_bits >> slot & 1:
                done.append(in_flight.pop(slot))
        await next_cycle(dut)
        cycle += 1
    assert sorted(done) == list(range(len(program))), f"completed {sorted(done)}"
    np.testing.assert_array_equal(got_sp, want_sp)
    np.testing.assert_array_equal(got_acc, want_acc)
    assert unpack(UNIT_STACK, int(dut.stack_o.value))["busy"] == 0 and int(dut.outstanding_o.value) == 0
