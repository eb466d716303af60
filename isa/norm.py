"""Gemmini's normalization unit, bit-exact: the integer kernels of I-BERT (Kim et al., ICML 2021) as
Gemmini computes them, and the row statistics its store path keeps per stat id.

Sources: ucb-bar/gemmini 641fefb ``Normalizer.scala`` (the statistics, its divider, ``IntSqrt`` and
reciprocal), ``AccumulatorScale.scala`` (``igelu``, ``iexp`` and the epilogue that applies them),
``StoreController.scala`` (``config_norm``) and ``Configs.scala`` (the float32 scale function). Every
width below is Chisel's: ``a - b`` of two 32-bit SInts is 33 bits, ``withWidthOf(q)`` keeps the low bits of
``q``'s width (wraps). The accumulator values are int32; ``e - mean`` and ``e - max`` are 33-bit.

The store path: an accumulator mvout whose local address carries a NormCmd (bits 28:26) feeds each of its
dim-wide blocks to the stat id config_norm chose. Every block but a row's last carries the running
version of the command (MEAN -> SUM, INV_STDDEV -> VARIANCE, INV_SUM_EXP -> SUM_EXP), as Gemmini's
StoreController sends them. Only RESET (0, a plain mvout) writes to DRAM: the epilogue of its activation
(LAYERNORM 2, IGELU 3, SOFTMAX 4) uses the stat's mean, max, inv_stddev and inv_sum_exp, then clears its
running sum, count and max.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from .instructions import ConfigNorm
from .numerics import INT8_MAX, INT8_MIN

INT32_MIN = -(1 << 31)


class NormCmd(IntEnum):
    """Gemmini's NormCmd: bits 28:26 of an accumulator mvout's local address."""

    RESET = 0
    SUM = 1
    MEAN = 2
    VARIANCE = 3
    INV_STDDEV = 4
    MAX = 5
    SUM_EXP = 6
    INV_SUM_EXP = 7


# NormCmd.non_reset_version: what a row's blocks before its last carry
RUNNING = {NormCmd.MEAN: NormCmd.SUM, NormCmd.INV_STDDEV: NormCmd.VARIANCE, NormCmd.INV_SUM_EXP: NormCmd.SUM_EXP}


class Act(IntEnum):
    """The store path's activation (3 bits: config_st's two, config_norm's act_msb): gemmini.h's values."""

    NONE = 0
    RELU = 1
    LAYERNORM = 2
    IGELU = 3
    SOFTMAX = 4


NORM_ACTS = (Act.LAYERNORM, Act.IGELU, Act.SOFTMAX)

# A row's passes through the unit under LAYERNORM or SOFTMAX (gemmini.h's norm_cmds, LoopMatmulStC's ln_norm_cmds
# and sm_norm_cmds): per pass, the command of the row's mvouts before its last and of its last; the last pass is
# the output (RESET).
PASSES = {
    Act.LAYERNORM: ((NormCmd.SUM, NormCmd.MEAN), (NormCmd.VARIANCE, NormCmd.INV_STDDEV),
                    (NormCmd.RESET, NormCmd.RESET)),
    Act.SOFTMAX: ((NormCmd.MAX, NormCmd.MAX), (NormCmd.SUM_EXP, NormCmd.INV_SUM_EXP), (NormCmd.RESET, NormCmd.RESET)),
}


def wrap(x: np.ndarray | int, bits: int) -> np.ndarray:
    """``x`` (int64, exact or modulo 2^64) as a ``bits``-bit two's complement value: Chisel's withWidthOf."""
    half = 1 << (bits - 1)
    return ((np.asarray(x, dtype=np.int64) + half) & ((1 << bits) - 1)) - half


@dataclass(frozen=True)
class IExpConsts:
    """config_norm's constants: I-GELU's qb and qc (also I-exp's polynomial), I-exp's q_ln2 and q_ln2_inv."""

    qb: int = 0
    qc: int = 0
    qln2: int = 0
    qln2_inv: int = 0


def igelu(q: np.ndarray, qb: int, qc: int) -> np.ndarray:
    """AccumulatorScale.igelu over int32 ``q``: I-BERT's i-GELU, q * (sign(q) * poly(min(|q|, -qb)) + qc),
    each mac and product wrapped to 32 bits as Gemmini's ``withWidthOf(q)``."""
    q = np.asarray(q, dtype=np.int64)
    sign = np.where(q < 0, -1, 1)
    limit = -np.int64(qb)
    clipped = np.minimum(np.abs(q), limit)
    t = clipped + qb
    poly = wrap(t * t + qc, 32)
    erf = wrap(sign * poly, 32)
    return wrap(q * (erf + qc), 32)


def iexp(q: np.ndarray, c: IExpConsts) -> np.ndarray:
    """AccumulatorScale.iexp over 33-bit ``q`` (e - max, never positive in use): I-BERT's i-exp.
    z = (-q * q_ln2_inv) >> 16 (33 bits); p = q + z * q_ln2; (c + (p + qb)^2) >> z, z saturated to 32
    when any of its bits 5..15 is set; the polynomial a logical (unsigned 33-bit) shift."""
    q = np.asarray(q, dtype=np.int64)
    z = wrap((-q * np.int64(c.qln2_inv)) >> 16, 33)   # bits 16..48 of the product: right modulo 2^64
    z_bits = z & ((1 << 33) - 1)
    shift = np.where((z_bits >> 5) & 0x7FF, 32, z_bits)
    qp = wrap(z * np.int64(c.qln2) + q, 33)
    t = qp + c.qb
    poly = wrap(t * t + c.qc, 33) & ((1 << 33) - 1)
    return wrap(np.where(shift >= 33, 0, poly >> np.minimum(shift, 32)), 33)


def trunc_div(num: int, den: int) -> int:
    """Normalizer's divider: int -> float (exact), divide and back, both toward zero, so C's ``num / den``.
    A zero count gives what hardfloat's RecFNToIN gives for the infinity or NaN: INT32_MAX, or INT32_MIN
    for a negative sum."""
    if den == 0:
        return INT32_MIN if num < 0 else -INT32_MIN - 1
    q = abs(num) // den
    return -q if num < 0 else q


def int_sqrt(x: int) -> int:
    """Normalizer's IntSqrt of the variance as an unsigned 32-bit value: floor(sqrt), and 1 for 0."""
    return math.isqrt(x & 0xFFFFFFFF) or 1


def f32(x: float | int) -> np.float32:
    return np.float32(x)


def f32_div(num: float, den: int) -> np.float32:
    """hardfloat's float32 division (round to nearest even) of ``num`` by int ``den`` converted to float32."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.float32(num) / np.float32(den)


def scale_to_int8(x: np.ndarray, scale: np.float32) -> np.ndarray:
    """Configs.scala's scale function then clippedToWidthOf(int8): float32(x) * scale rounded once to float32,
    to the nearest even integer, saturated; a NaN (0 * inf) is RecFNToIN's invalid result, the largest."""
    with np.errstate(invalid="ignore", over="ignore"):
        y = np.asarray(x, dtype=np.int64).astype(np.float32) * np.float32(scale)
        y = np.rint(y)
    y = np.where(np.isnan(y), INT8_MAX, y)
    return np.clip(y, INT8_MIN, INT8_MAX).astype(np.int8)


@dataclass
class NormStat:
    """One stat id's registers (Normalizer.Stats). mean and inv_stddev have no reset in Gemmini; here 0."""

    sum: int = 0
    count: int = 0
    running_max: int = INT32_MIN
    max: int = INT32_MIN
    mean: int = 0
    inv_stddev: np.float32 = np.float32(0)
    inv_sum_exp: np.float32 = np.float32(0)

    def clear_running(self) -> None:
        self.sum, self.count, self.running_max = 0, 0, INT32_MIN

    def feed(self, cmd: NormCmd, data: np.ndarray, consts: IExpConsts, scale: float) -> None:
        """One block of ``data`` (int32, its valid columns) under a statistics command (not RESET)."""
        d = np.asarray(data, dtype=np.int64)
        self.count = (self.count + d.size) & 0xFFFF
        if cmd == NormCmd.MAX:
            self.running_max = self.max = max(self.running_max, int(d.max()))
            return
        if cmd in (NormCmd.SUM, NormCmd.MEAN):
            terms = d
        elif cmd in (NormCmd.VARIANCE, NormCmd.INV_STDDEV):
            terms = wrap((d - self.mean) * (d - self.mean), 32)
        else:
            terms = wrap(iexp(d - self.max, consts), 32)
        self.sum = int(wrap(self.sum + int(wrap(int(terms.sum()), 32)), 32))
        if cmd == NormCmd.MEAN:
            self.mean = trunc_div(self.sum, self.count)
            self.clear_running()
        elif cmd == NormCmd.INV_STDDEV:
            variance = trunc_div(self.sum, self.count)
            self.clear_running()
            self.inv_stddev = f32_div(1.0, int_sqrt(variance)) * f32(scale)
        elif cmd == NormCmd.INV_SUM_EXP:
            with np.errstate(invalid="ignore", over="ignore"):   # inf * 0 is NaN, as hardfloat's multiply gives
                self.inv_sum_exp = f32_div(127.0, self.sum) * f32(scale)

    def output(self, acc: np.ndarray, act: int, consts: IExpConsts, scale: float) -> np.ndarray:
        """A RESET block's int8 values under a normalizing activation (LAYERNORM, IGELU or SOFTMAX)."""
        e = np.asarray(acc, dtype=np.int64)
        if act == Act.LAYERNORM:
            return scale_to_int8(e - self.mean, self.inv_stddev)
        if act == Act.SOFTMAX:
            return scale_to_int8(iexp(e - self.max, consts), self.inv_sum_exp)
        return scale_to_int8(igelu(e, consts.qb, consts.qc), f32(scale))


# ---- whole rows: the ops' references (one row at a time through the unit, as gemmini.h's loops do) -------
def layernorm_rows(acc: np.ndarray, scale: float) -> np.ndarray:
    """Each row of int32 ``acc`` through SUM/MEAN, VARIANCE/INV_STDDEV and RESET under LAYERNORM."""
    return _rows(acc, Act.LAYERNORM, IExpConsts(), scale)


def softmax_rows(acc: np.ndarray, consts: IExpConsts, scale: float) -> np.ndarray:
    """Each row of int32 ``acc`` through MAX, SUM_EXP/INV_SUM_EXP and RESET under SOFTMAX."""
    return _rows(acc, Act.SOFTMAX, consts, scale)


def igelu_rows(acc: np.ndarray, consts: IExpConsts, scale: float) -> np.ndarray:
    """int32 ``acc`` stored under IGELU (no statistics)."""
    return NormStat().output(acc, Act.IGELU, consts, scale)


def _rows(acc: np.ndarray, act: Act, consts: IExpConsts, scale: float) -> np.ndarray:
    """Each row whole (one block) through ``act``'s statistics passes, then its output."""
    acc = np.asarray(acc, dtype=np.int32)
    out = np.empty(acc.shape, dtype=np.int8)
    for r, row in enumerate(acc):
        stat = NormStat()
        for _, final in PASSES[act][:-1]:
            stat.feed(final, row, consts, scale)
        out[r] = stat.output(row, act, consts, scale)
    return out


def softmax_consts(input_scale: float) -> IExpConsts:
    """gemmini.h's constants for SOFTMAX at ``bert_scale`` = the input's scale S, computed as its C does (float
    where it declares float, double where a literal is double): I-BERT's fit exp(x) ~ a (x + b)^2 + c on
    (-ln 2, 0], a 0.3585, b 1.353, c 0.344 (tiled_matmul_outer, 180c468)."""
    a, b, c, s = np.float32(0.3585), np.float32(1.353), np.float32(0.344), np.float32(input_scale)
    qln2 = int(0.693147 / float(s))
    if qln2 < 1:
        raise ValueError(f"input_scale={input_scale} is above ln 2: the softmax's q_ln2 would be 0")
    return IExpConsts(qb=int(b / s), qc=int(c / (a * s * s)), qln2=qln2, qln2_inv=65536 // qln2)


def softmax_input_shift(cols: int, input_scale: float, most: int = 8) -> int:
    """The largest k up to ``most`` for which rows of ``cols`` values scaled by 2^k, I-exp's constants at
    ``input_scale / 2^k``, cannot sum their exponentials past int32 (each is at most iexp(0)): the shift that
    gives I-exp the finest q_ln2 an int8 input allows."""
    for k in range(most, 0, -1):
        if cols * int(iexp(np.zeros(1, np.int64), softmax_consts(input_scale / (1 << k)))[0]) < 1 << 31:
            return k
    return 0


def layernorm_input_shift(cols: int, most: int = 8) -> int:
    """The largest k up to ``most`` for which rows of ``cols`` int8 values scaled by 2^k cannot sum their squared
    deviations from the (truncated) mean past int32: by Popoviciu's inequality a row's squared deviations from
    its mean sum to at most cols * (255 * 2^k / 2)^2, and from a mean off by under 1, cols more. The shift that
    gives the truncated mean and the integer square root of the variance the most bits an int8 input allows
    (at 768 columns, 3)."""
    for k in range(most, 0, -1):
        if cols * (((255 << k) ** 2) // 4 + 1) < 1 << 31:
            return k
    return 0


def _s_erf(s: np.float32) -> np.float32:
    """I-BERT's scale of its erf at input scale S, -0.2888 * S^2 / 2, as tiled_matmul_outer computes it."""
    return np.float32(-0.2888 * float((s * s) / np.float32(2)))


def igelu_step(input_scale: float) -> float:
    """The real value of one step of I-GELU's integer output at input scale S: S * S_erf / 2 (S_erf negative, so
    a store scale to int8 outputs of real step s_y is igelu_step(S) / s_y, a negative number)."""
    s = np.float32(input_scale)
    return float(s) * float(_s_erf(s)) / 2


def igelu_consts(input_scale: float) -> IExpConsts:
    """gemmini.h's constants for IGELU at ``bert_scale`` = S (tiled_matmul_outer): I-BERT's i-GELU, erf(x)
    fitted by sign(x) (-0.2888 (min(|x|, 1.769) - 1.769)^2 + 1) at x / sqrt 2."""
    s = np.float32(input_scale)
    qb = int(-1.769 / float(s / np.float32(1.41421356237)))
    return IExpConsts(qb=qb, qc=int(1.0 / float(_s_erf(s))))


def igelu_input_shift(input_scale: float, most: int = 8) -> int:
    """The largest k up to ``most`` for which every int8 value times 2^k goes through I-GELU at ``input_scale /
    2^k`` without a product past int32 (checked over all 256 values): the finest erf an int8 input allows."""
    q = np.arange(-128, 128, dtype=np.int64)
    for k in range(most, -1, -1):
        c = igelu_consts(input_scale / (1 << k))
        qk = q << k
        t = np.minimum(np.abs(qk), -c.qb) + c.qb
        erf = np.where(qk < 0, -1, 1) * (t * t + c.qc)
        if c.qc and max(np.abs(t * t + c.qc).max(), np.abs(qk * (erf + c.qc)).max()) < 1 << 31:
            return k
    raise ValueError(f"input_scale={input_scale}: I-GELU of int8 values at it overflows int32")


ROW_FUNCTIONS = ("layernorm", "softmax", "igelu")


def row_input_shift(function: str, cols: int, input_scale: float) -> int:
    """k: int8 rows of ``function`` enter the accumulator times 2^k (the load's scale, exact)."""
    if function == "layernorm":
        return layernorm_input_shift(cols)
    if function == "softmax":
        return softmax_input_shift(cols, input_scale)
    return igelu_input_shift(input_scale)


def row_consts(function: str, input_scale: float) -> IExpConsts:
    """config_norm's constants of ``function`` at the accumulator's step ``input_scale``."""
    if function == "softmax":
        return softmax_consts(input_scale)
    return igelu_consts(input_scale) if function == "igelu" else IExpConsts()


def row_store_scale(function: str, scale: float, input_scale: float) -> float:
    """config_st's acc_scale: ``scale`` as it is, or for I-GELU (whose integer output step is igelu_step, negative)
    the output of gelu(x) * scale."""
    return float(np.float32(igelu_step(input_scale)) * np.float32(scale)) if function == "igelu" else scale


def row_function(function: str, x: np.ndarray, scale: float, input_scale: float) -> np.ndarray:
    """The normalization unit's ``function`` over each row of ``x`` (int32 accumulator rows, or int8 moved in
    times 2^row_input_shift), int8 out: the row ops' single reference."""
    k = row_input_shift(function, x.shape[-1], input_scale) if x.dtype == np.int8 else 0
    rows, s = x.astype(np.int32) << k, input_scale / (1 << k)
    if function == "layernorm":
        return layernorm_rows(rows, scale)
    if function == "softmax":
        return softmax_rows(rows, softmax_consts(s), scale)
    return igelu_rows(rows, igelu_consts(s), row_store_scale(function, scale, s))


class NormUnit:
    """The store path's normalization state (Normalizer's stats, StoreController's norm registers): the stat
    ids, config_norm's constants, the activation's high bit and the stat id the next mvouts use."""

    def __init__(self, stats: int) -> None:
        self.stats = [NormStat() for _ in range(stats)]
        self.consts = IExpConsts()
        self.act_msb = 0
        self.stat_id = 0

    def config(self, ins: ConfigNorm) -> None:
        """A config_norm word (StoreController's DoConfigNorm)."""
        self.stat_id = ins.stat_id
        if not ins.set_stats_id_only:
            c = self.consts
            self.consts = IExpConsts(ins.qb, ins.qc, ins.q_const if ins.q_const_type == 0 else c.qln2,
                                     ins.q_const if ins.q_const_type == 1 else c.qln2_inv)
            self.act_msb = ins.act_msb

    def plain_store(self) -> None:
        """An accumulator mvout with no norm command and no normalizing activation: its blocks pass the unit
        as RESETs, which clear the current stat's running sum, count and max."""
        if self.stats:
            self.stats[self.stat_id].clear_running()

    def store(self, blocks: list[np.ndarray], cmd: int, act: int, scale: float) -> np.ndarray | None:
        """An accumulator mvout's dim-wide ``blocks`` (each rows x its columns, int32) through the unit: row by
        row, each block with its command (the row's last ``cmd``, the others its running version). Returns the
        int8 rows a RESET mvout writes (None for a statistics pass, which writes nothing). Only a store with a
        norm command or under a normalizing activation comes here, so a RESET block is under the latter."""
        stat, last = self.stats[self.stat_id], len(blocks) - 1
        out = []
        for r in range(blocks[0].shape[0]):
            pieces = []
            for b, block in enumerate(blocks):
                c = NormCmd(cmd) if b == last else RUNNING.get(NormCmd(cmd), NormCmd(cmd))
                if c != NormCmd.RESET:
                    stat.feed(c, block[r], self.consts, scale)
                    continue
                pieces.append(stat.output(block[r], act, self.consts, scale))
                stat.clear_running()
            out.append(pieces)
        return None if cmd else np.block(out)
