"""DRAM buffers: the named arrays a program reads and writes, and their placement."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping

import numpy as np

from .instructions import ISAError

ROLES = ("input", "output", "scratch")
DTYPES = ("int8", "int32", "uint8")   # their codes in a program file: the index
DRAM_ALIGN = 64
# The DRAM address space of a program. The functional model and the harness each hold
# DRAM as one dense array, so this is what a run may allocate (the harness accepts 2^36).
MAX_DRAM_BYTES = 1 << 32
# The first buffer starts here, not at 0: a DRAM address of 0 in a loop word (LOOP_WS,
# LOOP_CONV_WS) means "skip this phase", as in Gemmini, so no buffer may live there.
DRAM_BASE = DRAM_ALIGN


@dataclass(frozen=True)
class Buffer:
    """A named array in DRAM, row-major at ``addr``."""

    name: str
    role: str
    dtype: str
    shape: tuple[int, ...]
    addr: int

    def __post_init__(self) -> None:
        if not self.name or not self.name.replace("_", "a").isalnum() or self.name[0].isdigit():
            raise ISAError(f"buffer name {self.name!r} must be an identifier")
        if self.role not in ROLES:
            raise ISAError(f"buffer {self.name}: role {self.role!r} not one of {ROLES}")
        if self.dtype not in DTYPES:
            raise ISAError(f"buffer {self.name}: dtype {self.dtype!r} not one of {DTYPES}")
        if not self.shape or any(not isinstance(s, int) or s < 1 for s in self.shape):
            raise ISAError(f"buffer {self.name}: shape {self.shape!r} must be positive integers")
        if not isinstance(self.addr, int) or isinstance(self.addr, bool) or self.addr < 0:
            raise ISAError(f"buffer {self.name}: address {self.addr!r} must be a non-negative integer")

    @property
    def itemsize(self) -> int:
        return np.dtype(self.dtype).itemsize

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.itemsize

    @property
    def end(self) -> int:
        return self.addr + self.nbytes


def layout(specs: Iterable[tuple[str, str, str, tuple[int, ...]]], align: int = DRAM_ALIGN) -> dict[str, Buffer]:
    """Place (name, role, dtype, shape) buffers one after another, ``align``-byte aligned."""
    buffers: dict[str, Buffer] = {}
    addr = DRAM_BASE
    for name, role, dtype, shape in specs:
        buf = Buffer(name, role, dtype, tuple(int(s) for s in shape), addr)
        buffers[name] = buf
        addr = -(-buf.end // align) * align
    return buffers


class BufferTableError(ISAError):
    """A buffer table that no backend can lay out in DRAM."""


def check_buffer_table(buffers: Mapping[str, Buffer]) -> None:
    """Every buffer filed under its own name, inside the DRAM address space, none overlapping."""
    for key, buf in buffers.items():
        if key != buf.name:
            raise BufferTableError(f"buffer {buf.name!r} is filed under the name {key!r}")
        if buf.end > MAX_DRAM_BYTES:
            raise BufferTableError(f"buffer {buf.name!r} at {buf.addr:#x} ({buf.nbytes} bytes) ends past the "
                                   f"{MAX_DRAM_BYTES:#x}-byte DRAM address space")
    spans = sorted(buffers.values(), key=lambda b: b.addr)
    for first, second in zip(spans, spans[1:]):
        if second.addr < first.end:
            raise BufferTableError(f"buffers {first.name!r} ({first.addr:#x}..{first.end - 1:#x}) and "
                                   f"{second.name!r} ({second.addr:#x}..{second.end - 1:#x}) overlap")
