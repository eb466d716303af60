"""cocotb test of one PE: the multiply-accumulate, weight-stationary (onto the sum from above, every
tick of its clock) and output-stationary (Gemmini's double-buffered sums: onto the sum prop_i names
while a shift moves the other one down, its old value out through sh_o), with sign-extended int8
operands, each mode on its own clock as the mesh gates them, and every register held through the
cycles its clock does not tick (and, output-stationary, without en_i)."""
from __future__ import annotations

import random

import cocotb
from cocotb.triggers import ReadOnly, Timer


def s(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def word(v: int) -> int:
    """A value as the PE's 32-bit ports carry it (int8 operands arrive sign-extended)."""
    return v & 0xFFFFFFFF


async def tick(dut, os: bool) -> None:
    """One cycle: the edge of the mode's clock (the mesh's gated to that mode's cycles), a nanosecond
    after the inputs were written."""
    clk = dut.clk_os_i if os else dut.clk_ws_i
    await Timer(1, "ns")
    clk.value = 1
    await Timer(5, "ns")
    clk.value = 0
    await Timer(5, "ns")


@cocotb.test()
async def pe_mac_ws_and_os(dut) -> None:
    rng = random.Random(3)
    dut.clk_ws_i.value, dut.clk_os_i.value = 0, 0
    sums = [0, 0]
    dut.psum_i.value, dut.sh_i.value, dut.a_i.value, dut.w_i.value, dut.b_i.value = 0, 0, 0, 0, 0
    await Timer(5, "ns")
    for prop in (0, 1):   # OS shifts with zeros in: both sums start at 0
        dut.en_i.value, dut.shift_i.value, dut.prop_i.value = 1, 1, prop
        await tick(dut, os=True)
    psum = sh = None
    for _ in range(400):
        os, en, shift, prop = rng.random() < 0.5, rng.random() < 0.7, rng.random() < 0.3, rng.random() < 0.5
        a, w, b = (rng.randint(-128, 127) for _ in range(3))
        psum_in, sh_in = rng.randint(-2**31, 2**31 - 1), rng.randint(-2**31, 2**31 - 1)
        dut.en_i.value, dut.shift_i.value, dut.prop_i.value = int(en), int(shift), int(prop)
        dut.a_i.value, dut.w_i.value, dut.b_i.value = word(a), word(w), word(b)
        dut.psum_i.value, dut.sh_i.value = word(psum_in), word(sh_in)
        if not os:
            psum = s(psum_in + a * w, 32)
        elif en:
            old = sums[not prop]
            sums[prop] = s(sums[prop] + a * b, 32)
            if shift:
                sums[not prop], sh = sh_in, old
        await tick(dut, os)
        await ReadOnly()
        if psum is not None:
            assert s(int(dut.psum_o.value), 32) == psum   # held through the OS cycles
        if sh is not None:
            assert s(int(dut.sh_o.value), 32) == sh       # held through the WS cycles and rows without a shift
        await Timer(1, "ns")
