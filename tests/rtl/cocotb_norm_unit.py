"""cocotb test of norm_unit (run by test_rtl_units.py): its stat registers (mean, inv_stddev, inv_sum_exp,
max) after each final, and its int8 rows under LAYERNORM / IGELU / SOFTMAX, bit for bit against
isa.norm.NormStat, with the cycles each final holds the unit (the header comment's).

The outputs (int8 rows) of a whole program hide most of a reciprocal's rounding behind int8 saturation:
here the float32 registers themselves are compared."""
from __future__ import annotations

import numpy as np

import cocotb

from isa import ConfigNorm, encode
from isa.norm import NORM_ACTS, RUNNING, IExpConsts, NormCmd, NormStat, softmax_consts
from unit_bench import lanes, lanes_word, next_cycle, reset, settle

DIM, STATS = 4, 4
FINAL_CYCLES = {NormCmd.MEAN: 32, NormCmd.INV_STDDEV: 74, NormCmd.INV_SUM_EXP: 26}


def _reg(dut, name: str, stat: int) -> int:
    return (int(getattr(dut, name).value) >> (32 * stat)) & 0xFFFFFFFF


def _f32(bits: int) -> np.float32:
    return np.uint32(bits).view(np.float32)


def _bits(x) -> int:
    return int(np.float32(x).view(np.uint32))


def _i32(x: int) -> int:
    return x - (1 << 32) if x & 0x80000000 else x


class Bench:
    def __init__(self, dut) -> None:
        self.dut = dut
        self.stats = [NormStat() for _ in range(STATS)]
        self.consts = IExpConsts()
        self.sid = 0

    async def config(self, ins: ConfigNorm) -> None:
        _, rs1, rs2 = encode(ins)
        d = self.dut
        d.cfg_valid_i.value, d.cfg_rs1_i.value, d.cfg_rs2_i.value = 1, rs1, rs2
        await next_cycle(d)
        d.cfg_valid_i.value = 0
        self.sid = ins.stat_id
        if not ins.set_stats_id_only:
            c = self.consts
            self.consts = IExpConsts(ins.qb, ins.qc, c.qln2 if ins.q_const_type else ins.q_const,
                                     ins.q_const if ins.q_const_type else c.qln2_inv)

    async def row(self, cmd: NormCmd, row: np.ndarray, scale: float, act: int = 0, plain: bool = True) -> list[int]:
        """One row through the unit, a block a cycle; the cycles a final held it; RESET: its int8 lanes (a
        block of a .full or pooled mvout, not ``plain``, is a RESET that only clears)."""
        d, out, held = self.dut, [], 0
        nblk = -(-len(row) // DIM)
        for b in range(nblk):
            block = row[b * DIM:(b + 1) * DIM]
            c = cmd if b == nblk - 1 else RUNNING.get(cmd, cmd)
            d.blk_valid_i.value, d.blk_cmd_i.value, d.blk_plain_i.value = 1, int(cmd), int(plain)
            d.blk_row_last_i.value, d.blk_last_i.value = int(b == nblk - 1), int(b == nblk - 1)
            d.blk_act_i.value, d.blk_cols_i.value, d.blk_scale_i.value = act, len(block), _bits(scale)
            d.blk_slot_i.value = 5
            d.blk_data_i.value = lanes_word(list(block) + [0x5A5A5A5A] * (DIM - len(block)), 32)
            await settle()
            stat = self.stats[self.sid]
            if cmd == NormCmd.RESET:
                got = lanes(int(d.row_o.value), DIM, 8)[:len(block)]
                if act in NORM_ACTS and plain:
                    want = [int(v) for v in stat.output(block, act, self.consts, scale)]
                    assert got == want, f"act {act} block {list(block)}: {got} != {want}"
                stat.clear_running()   # every RESET block, whatever the activation
                out += got
            else:
                stat.feed(c, block, self.consts, scale)
            assert int(d.hold_o.value) == (c in FINAL_CYCLES)
            await next_cycle(d)
        d.blk_valid_i.value = 0
        await settle()
        while int(d.hold_o.value):
            held += 1
            await next_cycle(d)
        if cmd in FINAL_CYCLES:   # 127 / 0 needs no division
            want = 2 if cmd == NormCmd.INV_SUM_EXP and self.stats[self.sid].sum == 0 else FINAL_CYCLES[cmd]
            assert held == want, f"{cmd.name} held {held} cycles, not {want}"
        self.check(self.sid)
        return out

    def check(self, sid: int) -> None:
        s, d = self.stats[sid], self.dut
        got = {"mean": _i32(_reg(d, "mean_q", sid)), "max": _i32(_reg(d, "max_q", sid)),
               "sum": _i32(_reg(d, "sum_q", sid)), "count": (int(d.count_q.value) >> (16 * sid)) & 0xFFFF,
               "inv_stddev": _reg(d, "istd_q", sid), "inv_sum_exp": _reg(d, "ise_q", sid)}
        want = {"mean": s.mean, "max": s.max, "sum": s.sum, "count": s.count,
                "inv_stddev": _bits(s.inv_stddev), "inv_sum_exp": _bits(s.inv_sum_exp)}
        for k in ("inv_stddev", "inv_sum_exp"):   # any NaN is NaN
            if np.isnan(_f32(got[k])) and np.isnan(_f32(want[k])):
                got[k] = want[k]
        assert got == want, f"stat {sid}: {got} != {want}"


def _rows(rng: np.random.Generator, n: int) -> list[np.ndarray]:
    out = []
    for i in range(n):
        length = int(rng.integers(1, 23))
        kind = i % 5
        if kind == 0:
            row = rng.integers(-2**31, 2**31, length)
        elif kind == 1:
            row = rng.integers(-3000, 3000, length)
        elif kind == 2:
            row = np.full(length, int(rng.integers(-50, 50)))
        elif kind == 3:
            row = rng.integers(-2**20, 2**20, length) * int(rng.choice([1, 7, 1 << 10]))
        else:
            row = rng.integers(-40, 40, length)
        out.append(np.asarray(row, dtype=np.int64).astype(np.int32).astype(np.int64))
    return out


@cocotb.test()
async def layernorm_stats(dut) -> None:
    await reset(dut, "cfg_valid_i", "blk_valid_i")
    bench, rng = Bench(dut), np.random.default_rng(7)
    scales = [1.0, 0.37, 37.0, 1e-3, 3.0e5, -2.5, 0.0]
    for i, row in enumerate(_rows(rng, 150)):
        sid, scale = int(rng.integers(0, STATS)), scales[i % len(scales)]
        await bench.config(ConfigNorm(stat_id=sid, set_stats_id_only=1))
        await bench.row(NormCmd.MEAN, row, scale)
        await bench.row(NormCmd.INV_STDDEV, row, scale)
        await bench.row(NormCmd.RESET, row, scale, act=2)


@cocotb.test()
async def softmax_stats(dut) -> None:
    await reset(dut, "cfg_valid_i", "blk_valid_i")
    bench, rng = Bench(dut), np.random.default_rng(8)
    r32 = lambda: int(rng.integers(-2**31, 2**31))   # noqa: E731
    for i, row in enumerate(_rows(rng, 150)):
        consts = (softmax_consts(float(rng.choice([0.01, 0.02, 0.05, 0.3]))) if i % 3
                  else IExpConsts(r32(), r32(), r32(), r32()) if i % 2 else IExpConsts())
        sid, scale = int(rng.integers(0, STATS)), float(rng.choice([1.0, 0.5, 0.0, 3.0]))
        await bench.config(ConfigNorm(stat_id=sid, act_msb=1, q_const_type=0, q_const=consts.qln2, qb=consts.qb,
                                      qc=consts.qc))
        await bench.config(ConfigNorm(stat_id=sid, act_msb=1, q_const_type=1, q_const=consts.qln2_inv,
                                      qb=consts.qb, qc=consts.qc))
        await bench.row(NormCmd.MAX, row, scale)
        await bench.row(NormCmd.INV_SUM_EXP, row, scale)
        await bench.row(NormCmd.RESET, row, scale, act=4)
        if i % 4 == 0:   # I-GELU on the same constants, by the scale
            await bench.row(NormCmd.RESET, row, scale, act=3)


@cocotb.test()
async def running_commands(dut) -> None:
    """SUM / VARIANCE / SUM_EXP passes over several rows, then a final: the stat accumulates across them."""
    await reset(dut, "cfg_valid_i", "blk_valid_i")
    bench, rng = Bench(dut), np.random.default_rng(9)
    await bench.config(ConfigNorm(stat_id=2, act_msb=1, q_const=90, qb=-60, qc=1000))
    await bench.config(ConfigNorm(stat_id=2, act_msb=1, q_const_type=1, q_const=728, qb=-60, qc=1000))
    for _ in range(20):
        rows = _rows(rng, 3)
        await bench.row(NormCmd.SUM, rows[0], 1.0)
        await bench.row(NormCmd.MEAN, rows[1], 1.0)
        await bench.row(NormCmd.VARIANCE, rows[2], 0.5)
        await bench.row(NormCmd.INV_STDDEV, rows[0], 0.5)
        await bench.row(NormCmd.MAX, rows[1], 1.0)
        await bench.row(NormCmd.SUM_EXP, rows[2], 1.0)
        await bench.row(NormCmd.INV_SUM_EXP, rows[0], 2.0)
        await bench.row(NormCmd.RESET, rows[1], 2.0, act=4)


@cocotb.test()
async def reset_blocks_clear_whatever_the_activation(dut) -> None:
    """A RESET block of a plain mvout under activation 0 or 1, or of a .full or pooled one, clears the current
    stat's running sum, count and max (Gemmini's Normalizer sees every accumulator read with RESET): a SUM, such
    a block, then a MEAN sees only the MEAN's row."""
    await reset(dut, "cfg_valid_i", "blk_valid_i")
    bench, rng = Bench(dut), np.random.default_rng(10)
    for i in range(12):
        rows = _rows(rng, 3)
        await bench.config(ConfigNorm(stat_id=i % STATS, set_stats_id_only=1))
        await bench.row(NormCmd.SUM, rows[0], 1.0)
        await bench.row(NormCmd.MAX, rows[0], 1.0)
        await bench.row(NormCmd.RESET, rows[1], 0.5, act=i % 2, plain=i % 3 != 2)
        for name in ("sum_q", "count_q"):
            assert ((int(getattr(dut, name).value) >> ((32 if name == "sum_q" else 16) * bench.sid))
                    & (0xFFFFFFFF if name == "sum_q" else 0xFFFF)) == 0, f"{name} not cleared"
        assert _reg(dut, "rmax_q", bench.sid) == 0x80000000, "running max not cleared"
        await bench.row(NormCmd.MEAN, rows[2], 1.0)   # its mean (checked in row()) is the third row's alone
