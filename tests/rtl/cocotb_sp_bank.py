"""cocotb test of a scratchpad bank: one access a cycle, fixed priority, held requests, masked writes."""
from __future__ import annotations

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge, Timer


@cocotb.test()
async def bank_under_conflicting_requests(dut) -> None:
    dim, nreq, rows = int(dut.DIM.value), int(dut.NREQ.value), int(dut.ROWS.value)
    aw = max(1, (rows - 1).bit_length())
    cocotb.start_soon(Clock(dut.clk_i, 10, unit="ns").start())
    rng = random.Random(7)
    model = [[0] * dim for _ in range(rows)]
    # each requester has a queue of operations; a request is held until granted
    ops = [[(rng.random() < 0.5, rng.randrange(rows), [rng.randrange(256) for _ in range(dim)],
             [rng.random() < 0.7 for _ in range(dim)]) for _ in range(40)] for _ in range(nreq)]
    reads = 0
    conflicts = 0
    dut.req_i.value = 0
    dut.acc_i.value = 0
    await RisingEdge(dut.clk_i)
    for _ in range(2000):
        req = we = addr = wdata = wmask = 0
        for i in range(nreq):
            if ops[i]:
                w, a, data, mask = ops[i][0]
                req |= 1 << i
                we |= int(w) << i
                addr |= a << (i * aw)
                wdata |= sum(v << (8 * j) for j, v in enumerate(data)) << (i * 8 * dim)
                wmask |= sum(int(m) << j for j, m in enumerate(mask)) << (i * dim)
        if not req:
            break
        dut.req_i.value, dut.we_i.value, dut.addr_i.value = req, we, addr
        dut.wdata_i.value, dut.wmask_i.value = wdata, wmask
        await Timer(1, "ns")
        gnt = int(dut.gnt_o.value)
        winner = (req & -req).bit_length() - 1          # lowest index wins
        assert gnt == 1 << winner, f"req {req:b} granted {gnt:b}"
        if req & ~gnt:
            conflicts += 1
        await RisingEdge(dut.clk_i)
        await ReadOnly()
        w, a, data, mask = ops[winner].pop(0)
        if w:
            model[a] = [d if m else o for d, m, o in zip(data, mask, model[a])]
        else:   # the granted read's row is in rdata_o after the edge
            word = int(dut.rdata_o.value)
            got = [(word >> (8 * j)) & 0xFF for j in range(dim)]
            assert got == model[a], f"read row {a}: {got}, expected {model[a]}"
            reads += 1
        await Timer(1, "ns")
    assert not any(ops)
    assert conflicts > 50 and reads > 20
