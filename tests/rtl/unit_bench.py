"""What the load and store unit benches share: the issue port, the DMA tag, bit fields, the clock."""
from __future__ import annotations

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, Timer

from isa import Instruction, encode


def insn_word(ins: Instruction) -> int:
    """The packed insn_t {funct[6:0], rs1[63:0], rs2[63:0]} of an instruction."""
    funct, rs1, rs2 = encode(ins)
    return funct << 128 | rs1 << 64 | rs2


def bits(value: int, lo: int, width: int) -> int:
    return (value >> lo) & ((1 << width) - 1)


def tag_slot(tag: int) -> int:
    """dma_tag_t {slot[14:0], last, row[15:0]}: the slot."""
    return bits(tag, 17, 15)


def tag_last(tag: int) -> bool:
    return bool(bits(tag, 16, 1))


def lanes(word: int, n: int, width: int) -> list[int]:
    """The n signed lanes of ``width`` bits of a row."""
    out = [bits(word, i * width, width) for i in range(n)]
    return [v - (1 << width) if v >> (width - 1) else v for v in out]


async def reset(dut) -> None:
    cocotb.start_soon(Clock(dut.clk_i, 10, unit="ns").start())
    dut.rst_ni.value = 0
    dut.iss_valid_i.value = 0
    await RisingEdge(dut.clk_i)
    await Timer(1, "ns")
    dut.rst_ni.value = 1


async def settle() -> None:
    """Let the combinational outputs of this cycle settle after the inputs changed."""
    await Timer(1, "ns")


async def next_cycle(dut) -> None:
    await RisingEdge(dut.clk_i)
    await Timer(1, "ns")
