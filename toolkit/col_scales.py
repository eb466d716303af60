"""Per-output-channel scales through the store unit's column-scale extension (``HardwareConfig.store_col_scales``).

A kind's lowering renders a col-scaled op as any other, its config_st with ``col_scales=1`` and scale 1.0; this
pass then gives each accumulator mvout of the output the scales of its columns. The unit's vector holds one
column block (dim scales), so an mvout wider than dim becomes dim-wide ones, and before one whose first column
is not the block loaded last come dim / 2 config_st_scales words (two float32 scales a word). Mvouts of the
column block already loaded load nothing.
"""
from __future__ import annotations

import numpy as np

from isa import FULL_BIT, ConfigStScales, HardwareConfig, Instruction, LoopWord, Mvout, Program, is_acc

from .ops import EpilogueOp
from .schedule import ScheduleError


def scale_words(scales: tuple[float, ...], first: int, dim: int) -> list[ConfigStScales]:
    """The words that load the scales of columns first .. first + dim - 1 (1.0 past the last column)."""
    block = np.ones(dim + 1, dtype=np.float32)
    got = scales[first:first + dim]
    block[:len(got)] = got
    return [ConfigStScales(col, float(block[col]), float(block[col + 1])) for col in range(0, dim, 2)]


def load_column_scales(prog: Program, op: EpilogueOp, hw: HardwareConfig) -> Program:
    """``prog`` with each output mvout dim wide at most and the scale vector loaded before it where it changes."""
    (name,) = op.output_specs()
    out = prog.buffers[name]
    row_bytes = out.shape[-1]   # an 8-bit output: a byte a column
    loaded: int | None = None
    instructions: list[Instruction] = []
    for ins in prog.instructions:
        if isinstance(ins, LoopWord):
            raise ScheduleError(f"scale: per-channel scales need the toolkit's own schedules; {ins.op} stores "
                                "several column blocks in hardware, and the store unit's scale vector holds one")
        if not (isinstance(ins, Mvout) and is_acc(ins.local) and not ins.local & FULL_BIT):
            instructions.append(ins)
            continue
        if not out.addr <= ins.dram < out.end:
            raise ScheduleError(f"a col-scaled {op.KIND} stores an accumulator row outside its output {name!r}")
        col0 = (ins.dram - out.addr) % row_bytes
        for c in range(0, ins.cols, hw.dim):
            if col0 + c != loaded:
                instructions += scale_words(op.scale, col0 + c, hw.dim)
                loaded = col0 + c
            instructions.append(Mvout(ins.dram + c, ins.local + c, ins.rows, min(hw.dim, ins.cols - c)))
    return Program(prog.hw, instructions, prog.buffers, prog.meta)
