"""cocotb test of the dispatch / reservation station hazard logic."""
from __future__ import annotations

import cocotb
from cocotb.triggers import RisingEdge, Timer

from isa import (ComputePreloaded, ConfigEx, ConfigLd, ConfigSt, Fence, GARBAGE, Mvin, Mvout, Preload, acc_addr,
                 encode)
from unit_bench import bits, issue_fields, reset, unpack

LD, EX, ST = 0, 1, 2


class Bench:
    def __init__(self, dut) -> None:
        self.dut = dut
        self.n = int(dut.LDQ.value) + int(dut.EXQ.value) + int(dut.STQ.value)
        self.issue = issue_fields(self.n)
        self.issued: dict[int, tuple[int, int]] = {}    # seq -> (queue, slot)
        self.done_next = 0
        self.stalls = 0

    async def step(self, ins=None, ready=(1, 1, 1)) -> bool:
        """One cycle: offer ``ins``, units ready as given; returns whether ins was accepted."""
        dut = self.dut
        if ins is not None:
            f, r1, r2 = encode(ins)
            dut.cmd_valid_i.value = 1
            dut.cmd_i.value = f << 128 | r1 << 64 | r2   # the packed insn_t {funct, rs1, rs2}
        else:
            dut.cmd_valid_i.value = 0
        dut.iss_ready_i.value = ready[0] | ready[1] << 1 | ready[2] << 2
        dut.done_i.value = self.done_next
        self.done_next = 0
        await Timer(1, "ns")
        accepted = ins is not None and int(dut.cmd_ready_o.value)
        self.stalls += int(dut.stall_hazard_o.value)
        valid = int(dut.iss_valid_o.value)
        iss = int(dut.iss_o.value)                  # issue_t [2:0], index 0 the least significant
        iss_w = sum(w for _, w in self.issue)
        seqs = int(dut.ev_issue_seq_o.value)
        for q in range(3):
            if valid >> q & 1 and ready[q]:
                slot = unpack(self.issue, bits(iss, q * iss_w, iss_w))["slot"]
                self.issued[(seqs >> (32 * q)) & 0xFFFFFFFF] = (q, slot)
        await RisingEdge(dut.clk_i)
        await Timer(1, "ns")
        return bool(accepted)

    def complete(self, seq: int) -> None:
        self.done_next |= 1 << self.issued[seq][1]


@cocotb.test()
async def hazards_order_the_queues(dut) -> None:
    await reset(dut, "cmd_valid_i", "done_i", "iss_ready_i")
    b = Bench(dut)
    program = [
        ConfigLd(dram_stride=4, state=0),                                  # 0 ld
        Mvin(0, 0, 4, 4),                                                  # 1 ld: writes sp[0..3]
        ConfigEx(),                                                        # 2 ex
        Preload(0, 4, 4, acc_addr(0), 4, 4),                               # 3 (held, merged into 4)
        ComputePreloaded(8, 4, 4, GARBAGE, 4, 4),                          # 4 ex: reads B=sp[0..3] -> RAW on 1
        ConfigSt(dram_stride=4),                                           # 5 st
        Mvout(64, acc_addr(0), 4, 4),                                      # 6 st: reads acc[0..3] -> RAW on 4
        Mvin(16, 100, 4, 4),                                               # 7 ld: independent
        Mvin(32, 8, 4, 4),                                                 # 8 ld: writes sp[8..11] = A of 4 -> WAR
    ]
    for seq, ins in enumerate(program):
        while not await b.step(ins):
            pass
    for _ in range(4):
        await b.step()
    # independent loads ran ahead; the compute waits on the mvin, the mvout on the compute,
    # the second load on the compute's read of A (write-after-read)
    assert 0 in b.issued and 1 in b.issued and 2 in b.issued and 5 in b.issued and 7 in b.issued
    assert 4 not in b.issued and 6 not in b.issued and 8 not in b.issued
    assert b.stalls > 0
    b.complete(0)
    b.complete(7)
    b.complete(1)      # the mvin finishes: the compute may go
    await b.step()
    await b.step()
    assert 4 in b.issued and 6 not in b.issued and 8 not in b.issued
    b.complete(2)
    b.complete(4)      # the compute finishes: the mvout and the last mvin may go
    await b.step()
    await b.step()
    assert 6 in b.issued and 8 in b.issued
    # a fence waits for everything
    assert not await b.step(Fence())
    b.complete(5)
    b.complete(6)
    b.complete(8)
    for _ in range(6):
        await b.step()
    assert int(dut.idle_o.value) == 1
    assert await b.step(Fence())


@cocotb.test()
async def pixel_repeats_widen_an_mvins_rows(dut) -> None:
    """Under config_ld pixel_repeats P, an mvin also writes the P - 1 rows below it (not below its
    scratchpad half): a compute reading them waits for it; one just below the half does not."""
    await reset(dut, "cmd_valid_i", "done_i", "iss_ready_i")
    b = Bench(dut)
    half = int(dut.SP_ROWS.value) // 2
    program = [
        ConfigLd(dram_stride=4, state=0, pixel_repeats=3),                 # 0 ld
        Mvin(64, half + 1, 1, 1),                                          # 1 ld: rows half .. half+1
        ConfigEx(),                                                        # 2 ex
        Preload(GARBAGE, 4, 4, acc_addr(0), 1, 4),                         # 3 (merged into 4)
        ComputePreloaded(half - 1, 1, 4, GARBAGE, 1, 4),                   # 4 ex: below the half: free
        Mvin(64, 10, 2, 1),                                                # 5 ld: rows 8 .. 11
        Preload(GARBAGE, 4, 4, acc_addr(4), 1, 4),                         # 6 (merged into 7)
        ComputePreloaded(8, 1, 4, GARBAGE, 1, 4),                          # 7 ex: reads row 8 -> RAW on 5
    ]
    for ins in program:
        while not await b.step(ins):
            pass
    for _ in range(4):
        await b.step()
    assert 1 in b.issued and 4 in b.issued and 5 in b.issued and 7 not in b.issued
    for seq in (0, 1, 2, 4):
        b.complete(seq)
    await b.step()
    await b.step()
    assert 7 not in b.issued
    b.complete(5)      # the repeated mvin finishes: the compute may go
    await b.step()
    await b.step()
    assert 7 in b.issued
