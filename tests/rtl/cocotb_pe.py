"""cocotb test of one PE: the multiply-accumulate, weight-stationary (onto the sum from above) and
output-stationary (Gemmini's double-buffered sums: onto the sum prop_i names while a shift moves the
other one down, its old value out through psum_o), with sign-extended int8 operands, and every
register held through the cycles without en_i."""
from __future__ import annotations

import random

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge, Timer


def s(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def word(v: int) -> int:
    """A value as the PE's 32-bit ports carry it (int8 operands arrive sign-extended)."""
    return v & 0xFFFFFFFF


async def clocks(dut) -> None:
    """clk_i and the OS sums' clock (the mesh's gated to OS cycles), their edges written together."""
    while True:
        dut.clk_i.value, dut.clk_os_i.value = 0, 0
        await Timer(5, "ns")
        dut.clk_i.value, dut.clk_os_i.value = 1, 1
        await Timer(5, "ns")


@cocotb.test()
async def pe_mac_ws_and_os(dut) -> None:
    cocotb.start_soon(clocks(dut))
    rng = random.Random(3)
    sums = [0, 0]
    dut.psum_i.value, dut.a_i.value, dut.w_i.value, dut.b_i.value = 0, 0, 0, 0
    for prop in (0, 1):   # OS shifts with zeros in: both sums start at 0
        dut.en_i.value, dut.os_i.value, dut.shift_i.value, dut.prop_i.value = 1, 1, 1, prop
        await RisingEdge(dut.clk_i)
        await Timer(1, "ns")
    psum = None
    for _ in range(400):
        os, en, shift, prop = rng.random() < 0.5, rng.random() < 0.7, rng.random() < 0.3, rng.random() < 0.5
        a, w, b = (rng.randint(-128, 127) for _ in range(3))
        psum_in = rng.randint(-2**31, 2**31 - 1)
        dut.os_i.value, dut.en_i.value, dut.shift_i.value, dut.prop_i.value = int(os), int(en), int(shift), int(prop)
        dut.a_i.value, dut.w_i.value, dut.b_i.value, dut.psum_i.value = word(a), word(w), word(b), word(psum_in)
        if en and not os:
            psum = s(psum_in + a * w, 32)
        elif en:
            old = sums[not prop]
            sums[prop] = s(sums[prop] + a * b, 32)
            if shift:
                sums[not prop], psum = psum_in, old
        await RisingEdge(dut.clk_i)
        await ReadOnly()
        if psum is not None:
            assert s(int(dut.psum_o.value), 32) == psum   # held through the cycles without en_i
        await Timer(1, "ns")
