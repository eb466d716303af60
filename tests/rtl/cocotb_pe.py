"""cocotb test of one PE: MAC into the partial sum, NBUF weight registers, valid gating."""
from __future__ import annotations

import random

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge, Timer

from unit_bench import reset


def s(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


@cocotb.test()
async def pe_mac_and_weight_buffers(dut) -> None:
    await reset(dut, "a_valid_i", "w_we_i")
    rng = random.Random(3)
    weights = [rng.randint(-128, 127) for _ in range(3)]
    for b, w in enumerate(weights):
        dut.w_we_i.value, dut.w_buf_i.value, dut.w_i.value = 1, b, w & 0xFF
        await RisingEdge(dut.clk_i)
        await Timer(1, "ns")
    dut.w_we_i.value = 0
    last = None
    for _ in range(200):
        valid = rng.random() < 0.7
        a, sel, psum = rng.randint(-128, 127), rng.randint(0, 2), rng.randint(-2**30, 2**30)
        dut.a_valid_i.value, dut.a_i.value, dut.sel_i.value = int(valid), a & 0xFF, sel
        dut.psum_i.value = psum & 0xFFFFFFFF
        await RisingEdge(dut.clk_i)
        await ReadOnly()
        assert int(dut.a_valid_o.value) == int(valid)
        if valid:
            last = (a, sel, psum + a * weights[sel])
        if last is not None:
            assert s(int(dut.a_o.value), 8) == last[0]
            assert int(dut.sel_o.value) == last[1]
            assert s(int(dut.psum_o.value), 32) == last[2]   # holds its value through invalid cycles
        await Timer(1, "ns")
