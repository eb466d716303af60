"""The functional engine of the C runtime (``rtl/cosim/engine_functional.cpp`` embeds Python and
calls this): the toolkit's functional model, fed one RoCC word at a time, with the C program's own
memory as its DRAM.

Every word is checked first (``CosimWords``, the runtime's check on either engine), and every DMA
row is checked by the runtime (the address, its length, read or write), so that
memory that is not the program's is an error naming the address, never a crash.
"""
from __future__ import annotations

import ctypes
import tomllib

import numpy as np

from isa import HardwareConfig, Instruction
from isa.checker import WordChecker

from .functional import FunctionalModel

# the runtime's systolic_cosim_copy(addr, len, buf, write): NULL when copied, else why not
_Copy = ctypes.CFUNCTYPE(ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_int)


class MemoryRefused(ValueError):
    """A DMA transfer to or from memory that is not the program's."""


class _ProcessModel(FunctionalModel):
    """The functional model whose DRAM is the process's memory, copied row by row by the runtime, which
    checks each row as it moves."""

    def __init__(self, hw: HardwareConfig, copy: int) -> None:
        super().__init__(hw, None)
        self._copy = _Copy(copy)

    def _move(self, addr: int, row: np.ndarray, write: bool) -> None:
        why = self._copy(addr, row.size, row.ctypes.data, int(write))
        if why:
            raise MemoryRefused(why.decode())

    def _dram_rows(self, addr: int, rows: int, stride: int, nbytes: int) -> np.ndarray:
        out = np.empty((rows, nbytes), np.uint8)
        for r in range(rows):
            self._move(addr + r * stride, out[r], False)
        return out

    def _dram_write(self, addr: int, stride: int, data: np.ndarray) -> None:
        raw = np.ascontiguousarray(data).view(np.uint8).reshape(data.shape[0], -1)
        for i, row in enumerate(raw):
            self._move(addr + i * stride, row, True)


class CosimWords:
    """The runtime's check of every word a C program issues, on either engine (``rtl/cosim/word_check.h``
    calls ``check`` before the engine sees the word): the toolkit's checker, word by word."""

    def __init__(self, hw_toml: str) -> None:
        self.hw = HardwareConfig.from_dict(tomllib.loads(hw_toml)["hardware"])
        self._checker = WordChecker(self.hw)
        self.checked: list[Instruction] = []   # the primitives of the word last checked

    def check(self, funct: int, rs1: int, rs2: int) -> None:
        """Raise :class:`isa.checker.ProgramError` (naming the word) unless the word may run."""
        self.checked = self._checker.feed(funct, rs1, rs2)


class CosimModel:
    """The accelerator of one C program: ``issue`` runs the word ``words`` last checked (its loops unrolled)."""

    def __init__(self, words: CosimWords, copy: int) -> None:
        self._words = words
        self._model = _ProcessModel(words.hw, copy)

    def issue(self) -> None:
        for primitive in self._words.checked:
            self._model.step(primitive)
