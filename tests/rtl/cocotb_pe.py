"""cocotb test of one PE: the multiply-accumulate into its partial sum, weight-stationary (onto the
sum from above) and output-stationary (onto its own, or a shift taking the sum from above), with
sign-extended int8 operands, and the sum held through the cycles without en_i."""
from __future__ import annotations

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge, Timer


def s(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def word(v: int) -> int:
    """A value as the PE's 32-bit ports carry it (int8 operands arrive sign-extended)."""
    return v & 0xFFFFFFFF


@cocotb.test()
async def pe_mac_ws_and_os(dut) -> None:
    cocotb.start_soon(Clock(dut.clk_i, 10, unit="ns").start())
    rng = random.Random(3)
    dut.en_i.value, dut.os_i.value, dut.shift_i.value = 1, 1, 1   # an OS shift: the sum takes psum_i
    dut.psum_i.value, dut.a_i.value, dut.w_i.value, dut.b_i.value = 0, 0, 0, 0
    await RisingEdge(dut.clk_i)
    await Timer(1, "ns")
    psum = 0
    for _ in range(400):
        os, en, shift = rng.random() < 0.5, rng.random() < 0.7, rng.random() < 0.2
        a, w, b = (rng.randint(-128, 127) for _ in range(3))
        psum_in = rng.randint(-2**31, 2**31 - 1)
        dut.os_i.value, dut.en_i.value, dut.shift_i.value = int(os), int(en), int(shift)
        dut.a_i.value, dut.w_i.value, dut.b_i.value, dut.psum_i.value = word(a), word(w), word(b), word(psum_in)
        if en:
            if not os:
                psum = s(psum_in + a * w, 32)
            elif shift:
                psum = psum_in
            else:
                psum = s(psum + a * b, 32)
        await RisingEdge(dut.clk_i)
        await ReadOnly()
        assert s(int(dut.psum_o.value), 32) == psum   # held through the cycles without en_i
        await Timer(1, "ns")
