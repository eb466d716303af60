"""Per-output-channel scales through the store unit's column-scale extension (``HardwareConfig.store_col_scales``).

A kind's lowering renders a col-scaled op as any other, its config_st with ``col_scales=1`` and scale 1.0; this
pass then gives each accumulator mvout of the output the scales of its columns. The unit's vector holds one
column block (dim scales), so an mvout wider than dim becomes dim-wide ones, and before one whose first column
is not the block loaded last come dim / 2 config_st_scales words (two float32 scales a word). Mvouts of the
column block already loaded load nothing, and a run of output mvouts with nothing between them is stored column
block by column block (they read local rows and write output elements of their own, so any order of them
stores the same bytes), which loads each block's scales once a run.
"""
from __future__ import annotations

import numpy as np

from isa import FULL_BIT, Buffer, ConfigStScales, HardwareConfig, Instruction, LoopWord, Mvout, Program, is_acc

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
    loaded: list[int | None] = [None]   # the first column of the block the vector holds
    run: list[tuple[int, Mvout]] = []   # output mvouts in a row, dim wide, with their first columns
    instructions: list[Instruction] = []
    for ins in prog.instructions:
        if isinstance(ins, LoopWord):
            raise ScheduleError(f"scale: per-channel scales need the toolkit's own schedules; {ins.op} stores "
                                "several column blocks in hardware, and the store unit's scale vector holds one")
        if isinstance(ins, Mvout) and is_acc(ins.local) and not ins.local & FULL_BIT:
            run += _pieces(ins, out, op, hw)
            continue
        instructions += _store_run(run, op.scale, hw.dim, loaded)
        run = []
        instructions.append(ins)
    instructions += _store_run(run, op.scale, hw.dim, loaded)
    return Program(prog.hw, instructions, prog.buffers, prog.meta)


def _pieces(ins: Mvout, out: Buffer, op: EpilogueOp, hw: HardwareConfig) -> list[tuple[int, Mvout]]:
    """An output mvout as dim-wide ones (block b of a wider one reads the dim rows after block b - 1's), each
    with its first column."""
    if not out.addr <= ins.dram < out.end:
        raise ScheduleError(f"a col-scaled {op.KIND} stores an accumulator row outside its output {out.name!r}")
    col0 = (ins.dram - out.addr) % out.shape[-1]   # an 8-bit output: a byte a column
    return [(col0 + c, Mvout(ins.dram + c, ins.local + c, ins.rows, min(hw.dim, ins.cols - c)))
            for c in range(0, ins.cols, hw.dim)]


def _store_run(run: list[tuple[int, Mvout]], scales: tuple[float, ...], dim: int,
               loaded: list[int | None]) -> list[Instruction]:
    """The run's mvouts by column block (the loaded block first), each block after its scales' words."""
    order = sorted(run, key=lambda piece: (piece[0] != loaded[0], piece[0]))
    words: list[Instruction] = []
    for first, mvout in order:
        if first != loaded[0]:
            words += scale_words(scales, first, dim)
            loaded[0] = first
        words.append(mvout)
    return words
