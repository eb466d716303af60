"""The numbers the assembler, the RTL and the harness share: functs, config kinds, counters.

This module is the one source of truth: the SystemVerilog opcode enum and the
C++ opcode names and counter list are generated from it when the RTL is built
(see ``simulators/rtl_codegen.py``); every Python module uses these names.
"""
from __future__ import annotations

from enum import IntEnum


class Funct(IntEnum):
    """Gemmini's RoCC funct of each instruction we implement."""

    CONFIG = 0
    MVIN2 = 1
    MVIN = 2
    MVOUT = 3
    COMPUTE_PRELOADED = 4
    COMPUTE_ACCUMULATED = 5
    PRELOAD = 6
    FLUSH = 7
    MVIN3 = 14
    FENCE = 127   # a pseudo-instruction of the program file (Gemmini's fence is the RISC-V fence)


class ConfigKind(IntEnum):
    """rs1[1:0] of a config instruction."""

    EX = 0
    LD = 1
    ST = 2


# mvin funct of each load state (0, 1, 2): mvin, mvin2, mvin3
MVIN_FUNCTS = (Funct.MVIN, Funct.MVIN2, Funct.MVIN3)

# Performance counters of the accelerator, in the order of the RTL's counter array.
# Every backend that reports counters uses these names.
COUNTERS = ("cycles", "load_busy", "exec_busy", "store_busy", "mesh_busy", "dma_bytes_read",
            "dma_bytes_written", "stall_hazard", "stall_bank_conflict", "stall_queue_full", "stall_dma_wait")
