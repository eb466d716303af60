"""cocotb test of a memory bank: one access a cycle, fixed priority, held requests, masked writes,
and on accumulator banks (ACCUM) writes that add to the row, wrapping at the lane width."""
from __future__ import annotations

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge, Timer

from unit_bench import lanes_word


@cocotb.test()
async def bank_under_conflicting_requests(dut) -> None:
    dim, nreq, rows = int(dut.DIM.value), int(dut.NREQ.value), int(dut.ROWS.value)
    lane_w, accum = int(dut.LANE_W.value), bool(int(dut.ACCUM.value))
    aw = max(1, (rows - 1).bit_length())
    lane_mask = (1 << lane_w) - 1
    cocotb.start_soon(Clock(dut.clk_i, 10, unit="ns").start())
    rng = random.Random(7)
    model = [[0] * dim for _ in range(rows)]
    # each requester has a queue of (write, accumulate, row, data, mask); a request is held until granted
    ops = [[(rng.random() < 0.5, rng.random() < 0.5, rng.randrange(rows),
             [rng.randrange(1 << lane_w) for _ in range(dim)], [rng.random() < 0.7 for _ in range(dim)])
            for _ in range(40)] for _ in range(nreq)]
    reads = conflicts = adds = 0
    dut.req_i.value = 0
    await RisingEdge(dut.clk_i)
    for _ in range(2000):
        req = we = acc = addr = wdata = wmask = 0
        for i in range(nreq):
            if ops[i]:
                w, a_on, a, data, mask = ops[i][0]
                req |= 1 << i
                we |= int(w) << i
                acc |= int(a_on) << i
                addr |= a << (i * aw)
                wdata |= lanes_word(data, lane_w) << (i * lane_w * dim)
                wmask |= lanes_word(mask, 1) << (i * dim)
        if not req:
            break
        dut.req_i.value, dut.we_i.value, dut.acc_i.value, dut.addr_i.value = req, we, acc, addr
        dut.wdata_i.value, dut.wmask_i.value = wdata, wmask
        await Timer(1, "ns")
        gnt = int(dut.gnt_o.value)
        winner = (req & -req).bit_length() - 1          # lowest index wins
        assert gnt == 1 << winner, f"req {req:b} granted {gnt:b}"
        if req & ~gnt:
            conflicts += 1
        await RisingEdge(dut.clk_i)
        await ReadOnly()
        w, a_on, a, data, mask = ops[winner].pop(0)
        if w:
            add = accum and a_on     # acc_i adds only on accumulator banks
            adds += add
            model[a] = [((d + o) & lane_mask if add else d) if m else o for d, m, o in zip(data, mask, model[a])]
        else:   # the granted read's row is in rdata_o after the edge
            word = int(dut.rdata_o.value)
            got = [(word >> (lane_w * j)) & lane_mask for j in range(dim)]
            assert got == model[a], f"read row {a}: {got}, expected {model[a]}"
            reads += 1
        await Timer(1, "ns")
    assert not any(ops)
    assert conflicts > 50 and reads > 20
    assert adds > 20 if accum else adds == 0
