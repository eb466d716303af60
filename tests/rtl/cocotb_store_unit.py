"""cocotb test of the store unit: config_st and mvouts of scratchpad and accumulator rows.

The local memories answer a granted read the next cycle (grants withheld at random);
a DRAM model takes the writes when it is ready (also at random) and acknowledges
each after a latency. The DRAM bytes are compared with the epilogue of numerics:
raw int8 rows, scaled and saturated accumulator rows with ReLU, full int32 rows; and with
config_st's pooling fields, the max of each window (padding never wins)."""
from __future__ import annotations

import random
from collections import deque

import cocotb
import numpy as np

from isa import ConfigSt, Mvout, acc_addr
from isa.numerics import acc_to_int8, acc_to_int32
from unit_bench import (DMA_REQ, DMA_TAG, UNIT_STACK, insn_word, issue_fields, lanes_word, mem_req_fields,
                        next_cycle, pack, reset, settle, unpack)

LATENCY = 4


@cocotb.test()
async def mvouts_write_the_epilogue(dut) -> None:
    dim, sp_rows, acc_rows = int(dut.DIM.value), int(dut.SP_ROWS.value), int(dut.ACC_ROWS.value)
    rng = random.Random(5)
    np_rng = np.random.default_rng(5)
    sp = np_rng.integers(-128, 128, (sp_rows, dim)).astype(np.int8)
    acc = np_rng.integers(-3000, 3000, (acc_rows, dim)).astype(np.int32)
    program = [
        ConfigSt(dram_stride=32, activation=1, acc_scale=0.25),
        Mvout(0, 2, 3, dim),                                # scratchpad rows as they are
        Mvout(256, acc_addr(0), 4, dim),                    # scaled, saturated, ReLU
        Mvout(512, acc_addr(4, full=True), 2, dim - 1),     # int32 rows, ReLU
        ConfigSt(dram_stride=16, activation=0, acc_scale=1.0),
        Mvout(768, acc_addr(8), 3, dim - 1),                # saturated, no ReLU
        Mvout(832, 20, 3, 2 * dim - 1),                     # block mvouts: block b from rows
        Mvout(896, acc_addr(2), 2, 2 * dim),                #   b * dim further on
    ]
    want = np.zeros(1024, np.uint8)
    cfg = (0, False, 1.0)
    for ins in program:
        if isinstance(ins, ConfigSt):
            cfg = (ins.dram_stride, bool(ins.activation), ins.acc_scale)
            continue
        stride, relu, scale = cfg
        row0 = ins.local & 0x1FFFFFFF
        for r in range(ins.rows):
            mem = acc if ins.local & (1 << 31) else sp
            data = np.concatenate([mem[row0 + b * dim + r, :min(dim, ins.cols - c0)]
                                   for b, c0 in enumerate(range(0, ins.cols, dim))])
            if ins.local & (1 << 29):
                data = acc_to_int32(data, relu)
            elif ins.local & (1 << 31):
                data = acc_to_int8(data, scale, relu)
            raw = np.frombuffer(data.tobytes(), np.uint8)
            want[ins.dram + r * stride: ins.dram + r * stride + raw.size] = raw

    got = await run_store(dut, program, sp, acc, rng, want.size)
    np.testing.assert_array_equal(got, want)


async def run_store(dut, program: list, sp: np.ndarray, acc: np.ndarray, rng: random.Random, size: int) -> np.ndarray:
    """Issue ``program`` to the unit (the memories and the DMA at random pace) and return the DRAM it wrote;
    every instruction completes, an mvout with the acknowledgement of its last row."""
    dim = int(dut.DIM.value)
    issue = issue_fields(int(dut.N.value))
    sp_req, acc_req = mem_req_fields(dim, sp.shape[0], 8), mem_req_fields(dim, acc.shape[0], 32)
    await reset(dut, "iss_valid_i")
    got = np.zeros(size, np.uint8)
    acks: deque = deque()                 # (cycle ready, tag)
    in_flight: dict[int, int] = {}        # slot -> program index
    done = []
    sp_data = acc_data = 0
    pc = cycle = 0
    while (pc < len(program) or in_flight) and cycle < 5000:
        free = [s for s in range(4) if s not in in_flight]
        offer = pc < len(program) and bool(free)
        dut.iss_valid_i.value = int(offer)
        if offer:
            dut.iss_i.value = pack(issue, slot=free[0], insn=insn_word(program[pc]))
        dut.sp_gnt_i.value = int(rng.random() < 0.7)
        dut.acc_gnt_i.value = int(rng.random() < 0.7)
        dut.sp_rdata_i.value = sp_data
        dut.acc_rdata_i.value = acc_data
        dut.wr_req_ready_i.value = int(rng.random() < 0.6)
        ack = acks[0][1] if acks and acks[0][0] <= cycle else None
        dut.wr_ack_valid_i.value = int(ack is not None)
        dut.wr_ack_tag_i.value = ack or 0
        await settle()
        if offer and int(dut.iss_ready_o.value):
            in_flight[free[0]] = pc
            pc += 1
        # a granted read's row is there the next cycle
        sp_rd, acc_rd = unpack(sp_req, int(dut.sp_o.value)), unpack(acc_req, int(dut.acc_o.value))
        if sp_rd["req"] and int(dut.sp_gnt_i.value):
            sp_data = lanes_word(sp[sp_rd["row"]], 8)
        if acc_rd["req"] and int(dut.acc_gnt_i.value):
            acc_data = lanes_word(acc[acc_rd["row"]], 32)
        if int(dut.wr_req_valid_o.value) and int(dut.wr_req_ready_i.value):
            req = unpack(DMA_REQ, int(dut.wr_req_o.value))
            addr, length = req["addr"], req["len"]
            data = int(dut.wr_req_data_o.value).to_bytes(4 * dim, "little")
            got[addr:addr + length] = np.frombuffer(data[:length], np.uint8)
            acks.append((cycle + LATENCY, req["tag"]))
        if ack is not None:
            acks.popleft()
        done_bits = int(dut.done_o.value)
        for slot in list(in_flight):
            if done_bits >> slot & 1:
                done.append(in_flight.pop(slot))
                # an mvout is done with the acknowledgement of its last row, not before
                tag = unpack(DMA_TAG, ack) if ack is not None else None
                assert isinstance(program[done[-1]], ConfigSt) or (
                    tag is not None and tag["last"] and tag["slot"] == slot)
        await next_cycle(dut)
        cycle += 1
    assert sorted(done) == list(range(len(program))), f"completed {sorted(done)}"
    assert unpack(UNIT_STACK, int(dut.stack_o.value))["busy"] == 0 and int(dut.outstanding_o.value) == 0
    return got


@cocotb.test()
async def pooling_mvouts_write_each_window_s_max(dut) -> None:
    """Windows over an image of scratchpad or accumulator rows (after scale and ReLU): padding above and to the
    left, windows past the image's end, overlapping windows and a stride past the window."""
    dim, sp_rows, acc_rows = int(dut.DIM.value), int(dut.SP_ROWS.value), int(dut.ACC_ROWS.value)
    rng, np_rng = random.Random(7), np.random.default_rng(7)
    sp = np_rng.integers(-128, 128, (sp_rows, dim)).astype(np.int8)
    acc = np_rng.integers(-3000, 3000, (acc_rows, dim)).astype(np.int32)
    pools = [   # (config_st, the image's first row)
        (ConfigSt(dim, 0, 1.0, pool_stride=2, pool_size=3, pool_out_dim=3, porows=3, pocols=3, orows=5, ocols=5,
                  upad=1, lpad=1), 3),
        (ConfigSt(dim, 1, 0.125, pool_stride=1, pool_size=2, pool_out_dim=4, porows=2, pocols=3, orows=3, ocols=3,
                  upad=0, lpad=1), acc_addr(1)),
        (ConfigSt(dim, 0, 1.0, pool_stride=3, pool_size=2, pool_out_dim=2, porows=2, pocols=2, orows=5, ocols=4), 30),
    ]
    program, want = [], np.zeros(1024, np.uint8)
    for n, (cfg, local) in enumerate(pools):
        mvout = Mvout(256 * n, local, 1, dim - n)
        program += [cfg, mvout]
        mem = acc if local & (1 << 31) else sp
        rows = mem[(local & 0xFFFF) + np.arange(cfg.orows * cfg.ocols), :mvout.cols]
        if local & (1 << 31):
            rows = acc_to_int8(rows, cfg.acc_scale, bool(cfg.activation))
        image = rows.reshape(cfg.orows, cfg.ocols, -1).astype(np.int16)
        for porow in range(cfg.porows):
            for pocol in range(cfg.pocols):
                r0, c0 = porow * cfg.pool_stride - cfg.upad, pocol * cfg.pool_stride - cfg.lpad
                window = image[max(r0, 0):r0 + cfg.pool_size, max(c0, 0):c0 + cfg.pool_size]
                at = mvout.dram + (porow * cfg.pool_out_dim + pocol) * cfg.dram_stride
                want[at:at + mvout.cols] = window.max(axis=(0, 1)).astype(np.int8).view(np.uint8)
    got = await run_store(dut, program, sp, acc, rng, want.size)
    np.testing.assert_array_equal(got, want)
