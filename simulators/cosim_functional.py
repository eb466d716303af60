"""The functional engine of the C runtime (``rtl/cosim/engine_functional.cpp`` embeds Python and
calls this): the toolkit's functional model, fed one RoCC word at a time, with the C program's own
memory as its DRAM.

Every DMA row is checked first by the runtime (the address, its length, read or write), so that
memory that is not the program's is an error naming the address, never a crash.
"""
from __future__ import annotations

import ctypes
import tomllib

import numpy as np

from isa import HardwareConfig
from isa.encoding import decode
from isa.loop_unroll import Unroller

from .functional import FunctionalModel

# the runtime's systolic_cosim_refusal(addr, len, write): why not, or NULL
_Refusal = ctypes.CFUNCTYPE(ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int)


class MemoryRefused(ValueError):
    """A DMA transfer to or from memory that is not the program's."""


class _ProcessModel(FunctionalModel):
    """The functional model whose DRAM is the process's memory, checked row by row."""

    def __init__(self, hw: HardwareConfig, refusal: int) -> None:
        super().__init__(hw, None)
        self._refusal = _Refusal(refusal)

    def _bytes(self, addr: int, nbytes: int, write: bool) -> np.ndarray:
        why = self._refusal(addr, nbytes, int(write))
        if why:
            raise MemoryRefused(why.decode())
        return np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(addr))

    def _dram_rows(self, addr: int, rows: int, stride: int, nbytes: int) -> np.ndarray:
        return np.stack([self._bytes(addr + r * stride, nbytes, False) for r in range(rows)])

    def _dram_write(self, addr: int, stride: int, data: np.ndarray) -> None:
        raw = np.ascontiguousarray(data).view(np.uint8).reshape(data.shape[0], -1)
        for i, row in enumerate(raw):
            self._bytes(addr + i * stride, row.size, True)[:] = row


class CosimModel:
    """The accelerator of one C program: ``issue`` runs each word as it comes (loops unrolled)."""

    def __init__(self, hw_toml: str, refusal: int) -> None:
        hw = HardwareConfig.from_dict(tomllib.loads(hw_toml)["hardware"])
        self._model = _ProcessModel(hw, refusal)
        self._unroller = Unroller(hw)

    def issue(self, funct: int, rs1: int, rs2: int) -> None:
        ins = decode(funct, rs1, rs2)
        expanded = self._unroller.feed(ins)
        for primitive in [ins] if expanded is None else expanded:
            self._model.step(primitive)
