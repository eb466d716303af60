"""Area of one hardware config in transistors: the logic from a Yosys synthesis, the SRAMs from a model.

The scratchpad and accumulator are SRAM macros, not logic, so they are counted from a model:

    transistors = bits x TRANSISTORS_PER_BIT x (1 + PERIPHERY_OVERHEAD)

* ``TRANSISTORS_PER_BIT = 6``: the six-transistor SRAM cell (Weste & Harris, *CMOS VLSI Design*,
  4th ed., section 12.2).
* ``PERIPHERY_OVERHEAD = 0.4``: decoders, sense amplifiers, precharge and write drivers as a share of
  the cell array. An assumption: an array efficiency (cells over macro) of about 70 %, within the
  50-80 % range CACTI 6.0 reports for caches of these sizes (Muralimanohar, Balasubramonian and
  Jouppi, HP Labs HPL-2009-85). The banks' own logic (their arbiter and, in the accumulator, the
  read-modify-write adders of ``rtl/ram_bank.sv``) is taken to be inside this overhead.
"""
from __future__ import annotations

from isa import HardwareConfig

from .synthesis import Synthesis, synthesize

__all__ = ["area", "sram_transistors"]   # the public names (docs/reference/networks.md)

TRANSISTORS_PER_BIT = 6
PERIPHERY_OVERHEAD = 0.4
PARTS = ("mesh", "scratchpad", "accumulator", "control")


def sram_transistors(kib: int) -> int:
    """Transistors of an SRAM of ``kib`` KiB under the model above."""
    return round(kib * 1024 * 8 * TRANSISTORS_PER_BIT * (1 + PERIPHERY_OVERHEAD))


def area(hw: HardwareConfig, synthesis: Synthesis | None = None) -> dict[str, int | str]:
    """``{"transistors": total, "mesh", "scratchpad", "accumulator", "control", "l2": each part,
    "logic_depth": the deepest gate chain, "deepest_module": where it lies}``; the logic from
    :func:`networks.synthesis.synthesize` (cached per config) unless ``synthesis`` is given."""
    syn = synthesis if synthesis is not None else synthesize(hw)
    parts = {"mesh": syn.mesh_transistors, "scratchpad": sram_transistors(hw.sp_kib),
             "accumulator": sram_transistors(hw.acc_kib), "control": syn.control_transistors,
             "l2": sram_transistors(hw.l2_kib)}   # the SoC's L2 data array (0 on the accelerator alone)
    return {"transistors": sum(parts.values()), **parts, "logic_depth": syn.logic_depth,
            "deepest_module": syn.deepest_module}
