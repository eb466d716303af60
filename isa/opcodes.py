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
    LOOP_WS = 8
    LOOP_WS_CONFIG_BOUNDS = 9
    LOOP_WS_CONFIG_ADDRS_AB = 10
    LOOP_WS_CONFIG_ADDRS_DC = 11
    LOOP_WS_CONFIG_STRIDES_AB = 12
    LOOP_WS_CONFIG_STRIDES_DC = 13
    MVIN3 = 14
    LOOP_CONV_WS = 15
    LOOP_CONV_WS_CONFIG_1 = 16
    LOOP_CONV_WS_CONFIG_2 = 17
    LOOP_CONV_WS_CONFIG_3 = 18
    LOOP_CONV_WS_CONFIG_4 = 19
    LOOP_CONV_WS_CONFIG_5 = 20
    LOOP_CONV_WS_CONFIG_6 = 21
    FENCE = 127   # a pseudo-instruction of the program file (Gemmini's fence is the RISC-V fence)


# Gemmini's COUNTER_OP: not an instruction of the accelerator but of its counter controller, which
# the C runtime (rtl/cosim) models over the counters below.
COUNTER_OP = 126


class ConfigKind(IntEnum):
    """rs1[1:0] of a config instruction."""

    EX = 0
    LD = 1
    ST = 2
    NORM = 3   # Gemmini's CONFIG_NORM (gemmini.h's CONFIG_BERT): the normalization unit's config_norm


# mvin funct of each load state (0, 1, 2): mvin, mvin2, mvin3
MVIN_FUNCTS = (Funct.MVIN, Funct.MVIN2, Funct.MVIN3)

# Cycle stacks: every cycle of each unit is charged to exactly one category, the FIRST of
# STACK that applies (this order is the precedence; the RTL picks by it, see accel_top.sv):
#   bank        a local-memory request of the unit lost arbitration for its bank;
#   dma         the unit holds work and nothing of it moves for want of the DMA (the read or
#               write port does not take its request, or it waits for read data or write
#               acknowledgements);
#   busy        the unit holds work (an instruction issued to it and not done);
#   hazard      its queue's next instruction waits for an older one (a dependency);
#   queue_full  nothing waits in its queue, and dispatch is blocked behind a full queue (the
#               unit is starved by the in-order front end);
#   idle        none of these (nothing to do, a fence draining, the program's end).
STACK_UNITS = ("load", "exec", "store")
STACK = ("bank", "dma", "busy", "hazard", "queue_full", "idle")


def stack_counter(unit: str, category: str) -> str:
    """Name of the counter of ``unit``'s cycles charged to ``category``."""
    return f"{unit}_stack_{category}"


# Performance counters of the accelerator, in the order of the RTL's counter array.
# Every backend that reports counters uses these names. Per unit, the stack counters
# (contiguous, in STACK order) sum to "cycles".
COUNTERS = ("cycles", "load_busy", "exec_busy", "store_busy", "mesh_busy", "dma_bytes_read",
            "dma_bytes_written", "stall_hazard", "stall_bank_conflict", "stall_queue_full", "stall_dma_wait",
            *(stack_counter(u, c) for u in STACK_UNITS for c in STACK))

# The SoC's counters (docs/concepts/soc.md), which the harness keeps beside the RTL's: the L2's
# hits and misses by direction, its dirty evictions, DRAM's bytes each way, and two cycle stacks
# that each sum to "cycles" when the SoC is on (zero on the accelerator alone). The host's: issue
# (spending its cycles on a command), queue_full (a command ready, the RoCC queues full), fence (after
# a fence, waiting for the accelerator to go idle), done (every command issued). The memory's: the
# first that applies of mbus_d (the memory bus's D channel moves a beat: DRAM's read data, or a write's
# answer), mbus_a (its A channel does: a read's request, or write data), dram_wait (an L2 miss waits
# for DRAM: its latency, the in-flight limit), l2 (requests outstanding, none waiting on DRAM), idle.
SOC_STACKS = {"host": ("issue", "queue_full", "fence", "done"),
              "mem": ("mbus_d", "mbus_a", "dram_wait", "l2", "idle")}
SOC_COUNTERS = ("l2_read_hits", "l2_read_misses", "l2_write_hits", "l2_write_misses", "l2_writebacks",
                "dram_bytes_read", "dram_bytes_written",
                *(f"{unit}_{c}" for unit, cats in SOC_STACKS.items() for c in cats))

# Gemmini's performance-counter events (gemmini_counter.h's numbering; external counters are
# 44 + their code) that one of our counters measures, for COUNTER_OP in the C runtime.
GEMMINI_COUNTER_EVENTS = {
    8: stack_counter("load", "dma"),      # LOAD_DMA_WAIT_CYCLE
    9: "load_busy",                       # LOAD_ACTIVE_CYCLE
    11: stack_counter("store", "dma"),    # STORE_DMA_WAIT_CYCLE
    12: "store_busy",                     # STORE_ACTIVE_CYCLE
    24: "exec_busy",                      # EXE_ACTIVE_CYCLE
    41: "stall_queue_full",               # RESERVATION_STATION_FULL_CYCLES
    44 + 4: "dma_bytes_read",             # RDMA_BYTES_REC
    44 + 5: "dma_bytes_written",          # WDMA_BYTES_SENT
}
