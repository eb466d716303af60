"""Cycle accounting a user can read: each unit's cycle stack and what bounds a run.

The RTL charges every cycle of each unit to exactly one category of
``isa.opcodes.STACK`` (the order there is the precedence and says what each one
means). From the counters of one run this module gives the stacks and the bound:
the largest of

* compute:   the execute unit's busy cycles;
* DMA read / DMA write: the cycles the one DMA port needs for the bytes moved
  (bytes / ``dma_beat_bytes``, reads and writes together; named by the larger);
* banks:     the bank-conflict cycles of the unit that loses most;
* dispatch:  the execute unit's queue_full cycles (starved by the in-order front end);
* host:      on the SoC, the host's cycles spent issuing commands (each costs ``host_cmd_cycles``);
* DRAM:      on the SoC, the cycles DRAM's busier channel needs for the bytes it moved.

On the SoC the host and the memory have cycle stacks of their own (``soc_stacks``).
"""
from __future__ import annotations

from dataclasses import dataclass

from isa import HardwareConfig
from isa.opcodes import SOC_STACKS, STACK, STACK_UNITS, stack_counter

from .report import Column, format_table

UNIT_NAMES = {"load": "load", "exec": "execute", "store": "store"}
BOUNDS = ("compute", "DMA read", "DMA write", "banks", "dispatch", "host", "DRAM")


def cycle_stacks(counters: dict[str, int]) -> dict[str, dict[str, int]]:
    """unit -> category -> cycles, in STACK_UNITS and STACK order; raises if the counters have none."""
    missing = [stack_counter(u, c) for u in STACK_UNITS for c in STACK if stack_counter(u, c) not in counters]
    if missing:
        raise ValueError(f"counters have no cycle stacks (missing {', '.join(missing[:3])}, ...): "
                         "a backend without them (functional, cpu, gpu) cannot be profiled")
    return {u: {c: int(counters[stack_counter(u, c)]) for c in STACK} for u in STACK_UNITS}


@dataclass(frozen=True)
class Bound:
    name: str                 # one of BOUNDS
    reason: str               # one line
    scores: dict[str, float]  # each candidate's share of the cycles


def bound(counters: dict[str, int], hw: HardwareConfig) -> Bound:
    """What limits the run whose counters these are (see the module note)."""
    cycles = max(1, int(counters["cycles"]))
    stacks = cycle_stacks(counters)
    read = counters["dma_bytes_read"] / hw.dma_beat_bytes / cycles
    write = counters["dma_bytes_written"] / hw.dma_beat_bytes / cycles
    bank_unit = max(STACK_UNITS, key=lambda u: stacks[u]["bank"])
    scores = {"compute": stacks["exec"]["busy"] / cycles,
              "DMA": read + write,
              "banks": stacks[bank_unit]["bank"] / cycles,
              "dispatch": stacks["exec"]["queue_full"] / cycles}
    if hw.soc:
        scores["host"] = counters.get("host_issue", 0) / cycles
        scores["DRAM"] = max(counters.get("dram_bytes_read", 0), counters.get("dram_bytes_written", 0)) \
            / hw.mem_beat_bytes / cycles
    name = max(scores, key=scores.get)
    exec_busy, port = scores["compute"], scores["DMA"]
    if name == "DMA":
        name = "DMA read" if read >= write else "DMA write"
        reason = (f"the DMA port needs {port:.0%} of the cycles for the bytes moved ({read:.0%} reads, "
                  f"{write:.0%} writes); the execute unit is busy {exec_busy:.0%}")
    elif name == "compute":
        reason = f"the execute unit is busy {exec_busy:.0%} of the cycles; the DMA port needs {port:.0%}"
    elif name == "banks":
        reason = (f"the {UNIT_NAMES[bank_unit]} unit loses {scores['banks']:.0%} of the cycles to scratchpad "
                  f"or accumulator bank conflicts; the execute unit is busy {exec_busy:.0%}")
    elif name == "dispatch":
        reason = (f"the execute unit starves {scores['dispatch']:.0%} of the cycles while in-order dispatch "
                  f"waits behind a full queue; it is busy {exec_busy:.0%}")
    elif name == "host":
        reason = (f"the host spends {scores['host']:.0%} of the cycles issuing commands ({hw.host_cmd_cycles} "
                  f"cycles each); the execute unit is busy {exec_busy:.0%}")
    else:
        reason = (f"DRAM's busier channel moves bytes {scores['DRAM']:.0%} of the cycles; the execute unit is "
                  f"busy {exec_busy:.0%}")
    return Bound(name, reason, {"compute": exec_busy, "DMA read": read, "DMA write": write,
                                **{k: v for k, v in scores.items() if k not in ("compute", "DMA")}})


def soc_stacks(counters: dict[str, int]) -> dict[str, dict[str, int]]:
    """The host's and the memory's cycle stacks (``isa.opcodes.SOC_STACKS``: each sums to the cycles on the
    SoC); empty on the accelerator alone, where both are all zero."""
    stacks = {u: {c: int(counters.get(f"{u}_{c}", 0)) for c in cats} for u, cats in SOC_STACKS.items()}
    return stacks if any(sum(s.values()) for s in stacks.values()) else {}


def format_soc_stacks(stacks: dict[str, dict[str, int]], cycles: int) -> str:
    """One line per stack: each category's cycles and share of the total."""
    names = {"host": "host", "mem": "memory"}
    return "\n".join(f"{names[u]:>7}: " + "  ".join(f"{c} {n} ({n / max(1, cycles):.1%})" for c, n in cats.items())
                     for u, cats in stacks.items())


def format_stacks(stacks: dict[str, dict[str, int]], cycles: int) -> str:
    """A table: one row per unit, each category as cycles and share of the total."""
    def share(n: int) -> str:
        return f"{n} ({n / max(1, cycles):.1%})"
    columns = [Column("unit", "unit", left=True, get=lambda row: UNIT_NAMES[row[0]]),
               *(Column(c, c, share, get=lambda row, c=c: row[1][c]) for c in STACK)]
    return format_table(columns, list(stacks.items()))
