"""Programs that drive the normalization unit the way gemmini.h does: ``sp_tiled_norm`` (int32 rows moved into the
accumulator, then per group of stat ids each pass's mvouts) and ``tiled_matmul`` through LOOP_WS with LAYERNORM or
SOFTMAX. Shared by the functional and the RTL tests."""
from __future__ import annotations

import numpy as np

from isa import ConfigEx, ConfigLd, ConfigNorm, ConfigSt, Fence, HardwareConfig, Mvin, Mvout, Program, layout
from isa.instructions import acc_addr
from isa.norm import PASSES as STAT_PASSES, Act, IExpConsts, NormCmd

PASSES = {**STAT_PASSES, Act.IGELU: ((NormCmd.RESET, NormCmd.RESET),)}   # I-GELU: the output alone


def config_words(act: Act, scale: float, stride: int, consts: IExpConsts) -> list:
    """config_st (its two activation bits), then gemmini.h's config_norm words for the constants."""
    words = [ConfigSt(dram_stride=stride, activation=int(act) & 3, acc_scale=scale)]
    if act == Act.IGELU:
        words.append(ConfigNorm(qb=consts.qb, qc=consts.qc))
    if act == Act.SOFTMAX:
        words += [ConfigNorm(q_const=consts.qln2, q_const_type=0, act_msb=1, qb=consts.qb, qc=consts.qc),
                  ConfigNorm(q_const=consts.qln2_inv, q_const_type=1, act_msb=1, qb=consts.qb, qc=consts.qc)]
    return words


def tiled_norm_program(hw: HardwareConfig, rows: int, cols: int, act: Act, scale: float = 1.0,
                       consts: IExpConsts = IExpConsts(), stat_ids: int | None = None) -> Program:
    """gemmini.h's sp_tiled_norm over an int32 ``rows`` x ``cols`` input X into int8 Y (one tile: the
    accumulator must hold it), ``stat_ids`` rows at a time (NORM_STAT_IDS; the unit's, by default)."""
    dim, stat_ids = hw.dim, stat_ids or hw.norm_stats
    bufs = layout([("X", "input", "int32", (rows, cols)), ("Y", "output", "int8", (rows, cols))])
    x, y = bufs["X"].addr, bufs["Y"].addr
    blocks = -(-cols // dim)
    a_blocks, c_blocks = min(blocks, max(1, hw.max_block_len // 4)), min(blocks, hw.max_block_len)
    words = [ConfigEx(), ConfigLd(dram_stride=cols * 4, block_stride=dim), *config_words(act, scale, cols, consts)]
    for i in range(0, rows, dim):
        n = min(dim, rows - i)
        base = i * blocks    # the accumulator rows of this row block: its column blocks dim rows apart
        for j in range(0, cols, a_blocks * dim):
            words.append(Mvin(x + (i * cols + j) * 4, acc_addr(base + j), n, min(a_blocks * dim, cols - j)))
        for first in range(0, n, stat_ids):
            for running, final in PASSES[act]:
                for sid in range(min(stat_ids, n - first)):
                    words.append(ConfigNorm(stat_id=sid, set_stats_id_only=1))
                    r = first + sid
                    for jj in range(0, cols, c_blocks * dim):
                        cmd = final if jj + c_blocks * dim >= cols else running
                        words.append(Mvout(y + (i + r) * cols + jj, acc_addr(base + jj + r, norm=cmd), 1,
                                           min(c_blocks * dim, cols - jj)))
    words.append(Fence())
    return Program(hw, words, bufs)


def random_rows(rows: int, cols: int, seed: int, spread: int = 2000) -> np.ndarray:
    """int32 rows with ties for the rounding (even/odd sums) and a constant row (zero variance)."""
    x = np.random.default_rng(seed).integers(-spread, spread, (rows, cols)).astype(np.int32)
    x[0] = 7
    return x
