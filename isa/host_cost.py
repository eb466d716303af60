"""The host's cycles per command (``HardwareConfig.host_cmd_cycles``), derived from the code that issues it.

The toolkit's programs reach Gemmini as ``Program.to_c`` exports them (templates/program.c.j2):
straight-line code that, per word, loads rs1 and rs2 from a table and issues the custom
instruction. Compiled for RV64 (``riscv64-unknown-elf-gcc -O2``; tests/test_host_cost.py
compiles an export and holds the count below to it) each word is::

    ld    a4, 16*i(a5)      # rs1
    ld    a3, 16*i+8(a5)    # rs2
    .insn r CUSTOM_0, 3, funct, x0, a4, a3

On Rocket, a five-stage in-order core issuing one instruction a cycle, that is 3 cycles, plus
one of load-use interlock: the custom instruction reads a3 in the cycle after the load that
writes it, and a load's data reaches the bypass network only from the memory stage
(rocket-chip RocketCore.scala: a load in execute cannot bypass, ``ex_cannot_bypass``).
Every 2 KiB of table the compiler adds one instruction to move the base register past the
loads' 12-bit offsets: 1/128 of a cycle a word, below the resolution of a whole cycle.

The code and the table stream once through the core's caches: 12 bytes of code (three 4-byte
instructions) and 16 of table a word, one 64-byte line missed every 64 bytes in each cache. Both
L1 caches block on a miss (the frontend waits for its line, the data cache for its refill), and
a program's code and table come from DRAM, so each line costs the SoC's miss path (``miss_cycles``).

Cycles a word = 3 + 1 + 28 / 64 x miss_cycles. A fence is one instruction (``fence``) and no table
entry: one cycle (then it waits until the accelerator is idle).
"""
from __future__ import annotations

import math

INSTRUCTIONS_PER_WORD = 3   # ld, ld, the custom instruction
LOAD_USE_STALLS = 1         # the custom instruction waits a cycle for the second load
CODE_BYTES_PER_WORD = 4 * INSTRUCTIONS_PER_WORD
TABLE_BYTES_PER_WORD = 16   # rs1 and rs2
LINE_BYTES = 64             # Rocket's L1 lines and the L2's blocks


def miss_cycles(*, l2_hit_cycles: int, dram_latency: int, mem_beat_bytes: int) -> int:
    """What an L1 miss to DRAM adds to the core's time, as a blocking Rocket cache pays it: the
    request's beat to the L2, the L2's tags (a miss), DRAM's latency and the line's beats on the
    memory bus (the L2's 16-byte beats to the L1 go out as the 8-byte fill comes in), the L2's
    data path again, and the three cycles from the refill's last beat until the replayed load is
    in writeback (rocket-chip c1dda582 DCache.scala:601, RocketCore.scala:1052-1057)."""
    return 1 + l2_hit_cycles + dram_latency + LINE_BYTES // mem_beat_bytes + l2_hit_cycles + 3


def cmd_cycles(**memory: int) -> int:
    """The host's cycles per word of an exported program, rounded up (see the module note)."""
    streamed = (CODE_BYTES_PER_WORD + TABLE_BYTES_PER_WORD) / LINE_BYTES
    return math.ceil(INSTRUCTIONS_PER_WORD + LOAD_USE_STALLS + streamed * miss_cycles(**memory))

