"""What the unit benches share: packed structs, the issue port, the DMA tag, bit fields, the clock.

Verilator gives cocotb a packed struct port as one bit vector, its first field the most
significant; ``pack`` and ``unpack`` convert it from and to its fields, a list of
(name, width) in declaration order."""
from __future__ import annotations

from collections.abc import Iterable

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, Timer

from isa import Instruction, encode

Fields = list[tuple[str, int]]

INSN: Fields = [("funct", 7), ("rs1", 64), ("rs2", 64)]              # insn_t
DMA_TAG: Fields = [("slot", 15), ("last", 1), ("row", 16)]            # dma_tag_t
DMA_REQ: Fields = [("addr", 64), ("len", 16), ("tag", 32)]            # dma_req_t
UNIT_STACK: Fields = [("bank", 1), ("dma", 1), ("busy", 1)]           # unit_stack_t


def clog2(n: int) -> int:
    return (n - 1).bit_length()


def issue_fields(n: int) -> Fields:
    """issue_types#(N)::issue_t: the slot among n, then the instruction."""
    return [("slot", clog2(n)), ("insn", sum(w for _, w in INSN))]


def mem_req_fields(dim: int, rows: int, lane_w: int) -> Fields:
    """mem_types#(DIM, ROWS, LANE_W)::req_t: a local-memory request."""
    return [("req", 1), ("we", 1), ("accum", 1), ("row", clog2(rows)), ("wmask", dim),
            ("wdata", dim * lane_w)]


def pack(fields: Fields, **values: int) -> int:
    """The packed struct with these field values (fields not given are 0)."""
    word = 0
    for name, width in fields:
        value = values.pop(name, 0)
        assert 0 <= value < 1 << width, f"{name} = {value} does not fit in {width} bits"
        word = word << width | value
    assert not values, f"no such fields: {sorted(values)}"
    return word


def unpack(fields: Fields, word: int) -> dict[str, int]:
    """The field values of a packed struct."""
    out = {}
    for name, width in reversed(fields):
        out[name] = bits(word, 0, width)
        word >>= width
    return out


def insn_word(ins: Instruction | tuple[int, int, int]) -> int:
    """The packed insn_t of an instruction, or of raw (funct, rs1, rs2) (a word no instruction class spells)."""
    funct, rs1, rs2 = ins if isinstance(ins, tuple) else encode(ins)
    return pack(INSN, funct=funct, rs1=rs1, rs2=rs2)


def bits(value: int, lo: int, width: int) -> int:
    return (value >> lo) & ((1 << width) - 1)


def lanes_word(values: Iterable[int], width: int) -> int:
    """A row of lanes of ``width`` bits, lane 0 the least significant (two's complement); lanes() undoes it."""
    mask = (1 << width) - 1
    return sum((int(v) & mask) << (i * width) for i, v in enumerate(values))


def lanes(word: int, n: int, width: int) -> list[int]:
    """The n signed lanes of ``width`` bits of a row."""
    out = [bits(word, i * width, width) for i in range(n)]
    return [v - (1 << width) if v >> (width - 1) else v for v in out]


async def reset(dut, *idle: str) -> None:
    """Start the clock and hold reset for one cycle with the named inputs low."""
    cocotb.start_soon(Clock(dut.clk_i, 10, unit="ns").start())
    dut.rst_ni.value = 0
    for name in idle:
        getattr(dut, name).value = 0
    await RisingEdge(dut.clk_i)
    await Timer(1, "ns")
    dut.rst_ni.value = 1


async def settle() -> None:
    """Let the combinational outputs of this cycle settle after the inputs changed."""
    await Timer(1, "ns")


async def next_cycle(dut) -> None:
    await RisingEdge(dut.clk_i)
    await Timer(1, "ns")
