"""The RTL's normalization unit (rtl/norm_unit.sv, Gemmini's Normalizer in the store path) against
isa/norm.py, bit for bit: hand-written programs of config_norm words and accumulator mvouts carrying
norm commands (LayerNorm, softmax and I-GELU rows as gemmini.h's tiled_norm issues them, several stat
ids interleaved), on the tiny preset (dim 4) and a dim-16 build; the clearing of a stat by every
accumulator mvout; and whole programs of the toolkit (tk.layernorm, tk.softmax, matmul with I-GELU under
its schedules and gemmini.h's) and LOOP_WS LAYERNORM / SOFTMAX (the RTL's LoopMatmul walks the rows as
LoopMatmulStC), against the functional model and the ops' references.

The reference of the hand-written programs is a small interpreter over isa.norm.NormStat
(``run_reference``): the store path's state (the 3-bit activation, the stat id, I-exp's and I-GELU's
constants, the stats) and the accumulator, block by block as the store unit feeds the norm unit; every
program is also run on the functional model, which must agree.
"""
from __future__ import annotations

import dataclasses
from typing import Iterable

import numpy as np
import pytest

import toolkit as tk
from isa import PRESETS, ConfigLd, ConfigSt, Mvin, Mvout, Program, acc_addr, layout
from isa.checker import ProgramError, check
from isa.instructions import ConfigNorm, addr_row as row_of, norm_cmd
from isa.loop_words import LoopWs
from isa.norm import (NORM_ACTS, RUNNING, Act, IExpConsts, NormCmd, NormStat, igelu_consts, igelu_step,
                      layernorm_rows, scale_to_int8, softmax_consts, softmax_rows, igelu_rows)
from test_norm import loop_ws_normalized
from simulators import functional, verilator as V

TINY = PRESETS["tiny"]
# dim 16 with small memories: the gemmini preset's mesh, a quicker build
DIM16 = dataclasses.replace(PRESETS["tiny"], dim=16, sp_kib=16, acc_kib=16, max_block_len=4, name="tiny_dim16")
TINY_NO_NORM = dataclasses.replace(PRESETS["tiny"], norm_stats=0, name="tiny_no_norm")


# ---- the reference ------------------------------------------------------------------------
@dataclasses.dataclass
class _Store:
    hw: object
    act: int = 0
    scale: float = 1.0
    stride: int = 0
    stat_id: int = 0
    qb: int = 0
    qc: int = 0
    qln2: int = 0
    qln2_inv: int = 0

    def __post_init__(self) -> None:
        self.stats = [NormStat() for _ in range(self.hw.norm_stats)]

    @property
    def consts(self) -> IExpConsts:
        return IExpConsts(qb=self.qb, qc=self.qc, qln2=self.qln2, qln2_inv=self.qln2_inv)


def run_reference(prog: Program, inputs: dict) -> dict[str, np.ndarray]:
    """The outputs of a program of config_ld / mvin (int32 into the accumulator, scale 1), config_st,
    config_norm and accumulator mvouts, through isa.norm."""
    hw, d = prog.hw, prog.hw.dim
    dram = prog.dram_image(inputs)
    acc = np.zeros((hw.acc_rows, d), dtype=np.int64)
    st = _Store(hw)
    ld: dict[int, ConfigLd] = {}
    for ins in prog.instructions:
        if isinstance(ins, ConfigLd):
            ld[ins.state] = ins
        elif isinstance(ins, Mvin):
            cfg, row = ld[ins.state], row_of(ins.local)
            for r in range(ins.rows):
                for b in range(-(-ins.cols // d)):
                    n = min(d, ins.cols - b * d)
                    at = ins.dram + r * cfg.dram_stride + b * d * 4
                    acc[row + b * cfg.block_stride + r, :n] = dram[at:at + 4 * n].view(np.int32)
        elif isinstance(ins, ConfigSt):
            st.act, st.scale, st.stride = ins.activation, ins.acc_scale, ins.dram_stride
        elif isinstance(ins, ConfigNorm):
            st.stat_id = ins.stat_id
            if not ins.set_stats_id_only:
                st.act = (st.act & 3) | (ins.act_msb << 2)
                st.qb, st.qc = ins.qb, ins.qc
                if ins.q_const_type:
                    st.qln2_inv = ins.q_const
                else:
                    st.qln2 = ins.q_const
        elif isinstance(ins, Mvout):
            _mvout(ins, st, acc, dram, d)
        else:
            raise AssertionError(f"the reference does not model {ins.op}")
    return prog.read_outputs(dram)


def _mvout(ins: Mvout, st: _Store, acc: np.ndarray, dram: np.ndarray, d: int) -> None:
    cmd, row, stat = NormCmd(norm_cmd(ins.local)), row_of(ins.local), st.stats[st.stat_id]
    nblk = -(-ins.cols // d)
    for r in range(ins.rows):
        for b in range(nblk):
            n = min(d, ins.cols - b * d)
            block = acc[row + b * d + r, :n]
            if cmd != NormCmd.RESET:
                stat.feed(cmd if b == nblk - 1 else RUNNING.get(cmd, cmd), block, st.consts, st.scale)
                continue
            if st.act in NORM_ACTS:
                out = stat.output(block, st.act, st.consts, st.scale)
            else:
                out = scale_to_int8(block, np.float32(st.scale))
                if st.act == Act.RELU:
                    out = np.maximum(out, 0).astype(np.int8)
            stat.clear_running()   # every RESET block, whatever the activation (Gemmini's Normalizer)
            at = ins.dram + r * st.stride + b * d
            dram[at:at + n] = out.view(np.uint8)


# ---- program builders -------------------------------------------------------------------------
class _Builder:
    """A program over an int32 matrix A (R x C) moved into the accumulator in tiles of dim rows and
    chunks of dim * max_block_len columns (one mvin, one mvout of a row each)."""

    def __init__(self, hw, a: np.ndarray, outputs: Iterable[str] = ("O",), extra: Iterable[tuple] = ()) -> None:
        self.hw, self.a = hw, np.asarray(a, dtype=np.int32)
        rows, cols = self.a.shape
        d, self.chunk = hw.dim, hw.dim * hw.max_block_len
        self.nchunks = -(-cols // self.chunk)
        self.bufs = layout([("A", "input", "int32", (rows, cols)), ("J", "output", "int8", (rows, cols)),
                            *((name, "output", "int8", (rows, cols)) for name in outputs), *extra])
        assert -(-rows // d) * self.nchunks * self.chunk <= hw.acc_rows, "the matrix does not fit"
        self.ins = [ConfigLd(dram_stride=cols * 4, state=0, shrink=0, block_stride=d, scale=1.0)]
        for t in range(-(-rows // d)):
            for k in range(self.nchunks):
                n_r, n_c = min(d, rows - t * d), min(self.chunk, cols - k * self.chunk)
                self.ins.append(Mvin(self.bufs["A"].addr + (t * d * cols + k * self.chunk) * 4,
                                     acc_addr(self.base(t * d, k)), n_r, n_c, state=0))

    def base(self, row: int, k: int) -> int:
        """The accumulator row of chunk k of matrix row ``row``'s tile (its block b at + b * dim)."""
        d = self.hw.dim
        return ((row // d) * self.nchunks + k) * self.chunk + row % d

    def mvouts(self, row: int, cmd: int, rows: int = 1, out: str = "J") -> None:
        """The mvouts of ``rows`` matrix rows from ``row`` (in one tile): every chunk but the last carries
        the running command, as gemmini.h's tiled_norm issues them, the last ``cmd``."""
        cols = self.a.shape[1]
        for k in range(self.nchunks):
            c = cmd if k == self.nchunks - 1 else RUNNING.get(NormCmd(cmd), cmd)
            n_c = min(self.chunk, cols - k * self.chunk)
            self.ins.append(Mvout(self.bufs[out].addr + row * cols + k * self.chunk,
                                  acc_addr(self.base(row, k), norm=int(c)), rows, n_c))

    def config_st(self, act: int, scale: float) -> None:
        self.ins.append(ConfigSt(dram_stride=self.a.shape[1], activation=act, acc_scale=scale))

    def program(self) -> tuple[Program, dict]:
        return Program(self.hw, list(self.ins), self.bufs), {"A": self.a}


def layernorm_program(hw, a: np.ndarray, scale: float, group: int | None = None,
                      multi_row: bool = False) -> _Builder:
    """tiled_norm's LayerNorm: for each group of stat ids, all SUM/MEAN mvouts, then VARIANCE/INV_STDDEV,
    then RESET under LAYERNORM; with ``multi_row``, one mvout for a tile's rows on one stat id instead."""
    p = _Builder(hw, a)
    p.config_st(int(Act.LAYERNORM), scale)
    p.ins.append(ConfigNorm(stat_id=0, act_msb=0))
    rows, group = a.shape[0], group or hw.norm_stats
    for g in range(0, rows, group):
        members = range(g, min(rows, g + group))
        for cmd in (NormCmd.MEAN, NormCmd.INV_STDDEV, NormCmd.RESET):
            for i in members:
                p.ins.append(ConfigNorm(stat_id=i - g, set_stats_id_only=1))
                p.mvouts(i, cmd, out="O" if cmd == NormCmd.RESET else "J")
    return p


def softmax_program(hw, a: np.ndarray, consts: IExpConsts, scale: float) -> _Builder:
    """tiled_norm's softmax: MAX, then SUM_EXP/INV_SUM_EXP, then RESET under SOFTMAX (config_st's 0 with
    config_norm's act_msb), stat ids interleaved."""
    p = _Builder(hw, a)
    p.config_st(int(Act.NONE), scale)
    p.ins.append(ConfigNorm(stat_id=0, act_msb=1, q_const_type=0, q_const=consts.qln2, qb=consts.qb, qc=consts.qc))
    p.ins.append(ConfigNorm(stat_id=0, act_msb=1, q_const_type=1, q_const=consts.qln2_inv, qb=consts.qb,
                            qc=consts.qc))
    rows, group = a.shape[0], hw.norm_stats
    for g in range(0, rows, group):
        members = range(g, min(rows, g + group))
        for cmd in (NormCmd.MAX, NormCmd.INV_SUM_EXP, NormCmd.RESET):
            for i in members:
                p.ins.append(ConfigNorm(stat_id=(i - g) % group, set_stats_id_only=1))
                p.mvouts(i, cmd, out="O" if cmd == NormCmd.RESET else "J")
    return p


def run_rtl(p: _Builder) -> tuple[dict, dict, object]:
    """The RTL's outputs, the reference's (which the functional model's equal) and the RTL's result."""
    prog, inputs = p.program()
    res = V.run(prog, inputs, timeout=300, log=True)
    want = run_reference(prog, inputs)
    assert_same(functional.run(prog, inputs).outputs, want)
    return res.outputs, want, res


def assert_same(got: dict, want: dict) -> None:
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)


# ---- the kernels' edge cases in the reference itself ---------------------------------------------
def test_reference_interpreter_matches_isa_norm_rows() -> None:
    """The interpreter of these programs gives isa.norm's row functions (one row a stat, as _rows)."""
    rng = np.random.default_rng(0)
    a = rng.integers(-3000, 3000, (6, 13)).astype(np.int32)
    p = layernorm_program(TINY, a, 0.37)
    prog, inputs = p.program()
    np.testing.assert_array_equal(run_reference(prog, inputs)["O"], layernorm_rows(a, 0.37))
    consts = softmax_consts(0.05)
    p = softmax_program(TINY, a // 20, consts, 0.9)
    prog, inputs = p.program()
    np.testing.assert_array_equal(run_reference(prog, inputs)["O"], softmax_rows(a // 20, consts, 0.9))


# ---- the RTL --------------------------------------------------------------------------------------
def _layernorm_cases(d: int) -> dict[str, tuple[np.ndarray, float]]:
    rng = np.random.default_rng(1)
    # rows whose variance's root is 32: inv_stddev 16 / 32 = 0.5, and every (odd - even mean) * 0.5 a tie
    ties = np.array([[21, -35, 25, -45, -41, -19, 47, -25, -37, 13, 49, -21, 13],
                     [33, 1, 31, -47, 19, -29, -31, -13, -27, -43, 29, -49, 39],
                     [-7, 49, -29, -43, 25, -7, 21, -33, -43, 45, 39, -19, 33]])
    return {
        "random_odd": (rng.integers(-5000, 5000, (7, 3 * d + 1)), 37.0),
        "wide_values": (rng.integers(-2**31, 2**31, (5, 2 * d + 3)), 1.7),   # sums and squares wrap
        "zero_variance": (np.full((3, 2 * d - 1), -77), 3.0),                # IntSqrt(0) is 1
        "negative_sums": (rng.integers(-9000, 100, (6, d + 2)), 45.0),
        "ties": (ties, 16.0),                                                 # x.5 products: half to even
        "one_column": (rng.integers(-100, 100, (5, 1)), 0.5),
    }


@pytest.mark.parametrize("case", list(_layernorm_cases(4)))
def test_layernorm_tiny(tiny_model, case: str) -> None:
    a, scale = _layernorm_cases(4)[case]
    got, want, _ = run_rtl(layernorm_program(TINY, a, scale))
    assert_same(got, want)
    np.testing.assert_array_equal(got["J"], 0)   # statistics mvouts write nothing


def test_layernorm_groups_and_multi_row_mvouts(tiny_model) -> None:
    """Two stat ids of four, and mvouts of whole tiles on one stat (a final per row, the last row's kept)."""
    rng = np.random.default_rng(2)
    a = rng.integers(-4000, 4000, (7, 11)).astype(np.int32)
    got, want, _ = run_rtl(layernorm_program(TINY, a, 0.11, group=2))
    assert_same(got, want)
    p = _Builder(TINY, a)
    p.config_st(int(Act.LAYERNORM), 0.2)
    p.ins.append(ConfigNorm(stat_id=3))
    for cmd in (NormCmd.MEAN, NormCmd.INV_STDDEV, NormCmd.RESET):
        p.mvouts(4, cmd, rows=3, out="O" if cmd == NormCmd.RESET else "J")
    got, want, _ = run_rtl(p)
    assert_same(got, want)


def _softmax_cases() -> dict[str, tuple[np.ndarray, IExpConsts, float]]:
    rng = np.random.default_rng(3)
    r32 = lambda: int(rng.integers(-2**31, 2**31))   # noqa: E731
    return {
        "bert_scale": (rng.integers(-400, 400, (6, 13)), softmax_consts(0.02), 0.5),
        "wide_range": (rng.integers(-20000, 20000, (5, 9)), softmax_consts(0.01), 1.0),
        "random_consts": (rng.integers(-2**31, 2**31, (5, 11)), IExpConsts(r32(), r32(), r32(), r32()), 0.75),
        "zero_sum": (np.full((3, 6), 5), IExpConsts(), 1.0),     # 127 / 0: infinity; 0 * infinity -> 127
        "zero_sum_zero_scale": (np.full((2, 5), -5), IExpConsts(), 0.0),
    }


@pytest.mark.parametrize("case", list(_softmax_cases()))
def test_softmax_tiny(tiny_model, case: str) -> None:
    a, consts, scale = _softmax_cases()[case]
    got, want, _ = run_rtl(softmax_program(TINY, a, consts, scale))
    assert_same(got, want)
    np.testing.assert_array_equal(got["J"], 0)


def test_igelu_and_other_activations_tiny(tiny_model) -> None:
    """IGELU by config_st's scale; then activation 5 (ReLU with act_msb: none), 1 (ReLU) and 0 plain; a
    config_st clears act_msb; a RESET mvout under IGELU clears the running sum (the next SUM starts anew)."""
    rng = np.random.default_rng(4)
    a = rng.integers(-3000, 3000, (6, 13)).astype(np.int32)
    p = _Builder(TINY, a, outputs=("O", "P", "Q", "S"))
    consts = igelu_consts(0.01)
    p.config_st(int(Act.IGELU), 0.03)
    p.ins.append(ConfigNorm(stat_id=1, qb=consts.qb, qc=consts.qc))
    for i in range(6):
        p.mvouts(i, NormCmd.RESET, out="O")
    p.config_st(int(Act.RELU), 0.05)
    p.ins.append(ConfigNorm(stat_id=1, act_msb=1, qb=consts.qb, qc=consts.qc))   # activation 5
    for i in range(0, 6, 4):
        p.mvouts(i, NormCmd.RESET, rows=min(4, 6 - i), out="P")
    p.config_st(int(Act.RELU), 0.05)   # act_msb cleared: ReLU
    for i in range(0, 6, 4):
        p.mvouts(i, NormCmd.RESET, rows=min(4, 6 - i), out="Q")
    # running sums across mvouts, cleared by a RESET under a normalizing activation
    p.config_st(int(Act.LAYERNORM), 0.4)
    p.mvouts(0, NormCmd.SUM)
    p.mvouts(1, NormCmd.RESET, out="S")
    p.mvouts(2, NormCmd.MEAN)
    p.mvouts(2, NormCmd.INV_STDDEV)
    p.mvouts(2, NormCmd.RESET, out="S")
    got, want, _ = run_rtl(p)
    assert_same(got, want)
    np.testing.assert_array_equal(want["O"], igelu_rows(a, consts, 0.03))


def test_final_cycles_tiny(tiny_model) -> None:
    """A final holds the store unit for its documented cycles: a MEAN mvout completes 32 cycles after
    its block's epilogue, INV_STDDEV 74, INV_SUM_EXP 26; SUM 0 (one row of one block each)."""
    a = np.arange(1, 5, dtype=np.int32).reshape(1, 4) * 1000
    span = {}
    for cmd in (NormCmd.SUM, NormCmd.MEAN, NormCmd.INV_STDDEV, NormCmd.INV_SUM_EXP):
        p = _Builder(TINY, a)
        p.config_st(0, 1.0)
        p.mvouts(0, NormCmd.MAX)
        p.mvouts(0, cmd)
        _, _, res = run_rtl(p)
        mv = [e for e in res.log if e["op"] == "mvout"]
        span[cmd] = mv[1]["complete"] - mv[1]["issue"]
    assert span[NormCmd.MEAN] - span[NormCmd.SUM] == 32
    assert span[NormCmd.INV_STDDEV] - span[NormCmd.SUM] == 74
    assert span[NormCmd.INV_SUM_EXP] - span[NormCmd.SUM] == 26


@pytest.fixture(scope="module")
def dim16_model(verilator_ok):
    return V.build(DIM16)


def test_dim16(dim16_model) -> None:
    rng = np.random.default_rng(5)
    a = rng.integers(-6000, 6000, (9, 75)).astype(np.int32)   # two mvouts a row: 64 + 11 columns
    got, want, _ = run_rtl(layernorm_program(DIM16, a, 0.3))
    assert_same(got, want)
    np.testing.assert_array_equal(want["O"], layernorm_rows(a, 0.3))
    b = rng.integers(-300, 300, (6, 37)).astype(np.int32)
    consts = softmax_consts(0.03)
    got, want, _ = run_rtl(softmax_program(DIM16, b, consts, 0.8))
    assert_same(got, want)
    np.testing.assert_array_equal(want["O"], softmax_rows(b, consts, 0.8))


@pytest.fixture(scope="module")
def no_norm_model(verilator_ok):
    return V.build(TINY_NO_NORM)


def test_without_the_unit_activations_2_and_3_are_none(no_norm_model, monkeypatch) -> None:
    """NORM_STATS 0: no unit; config_st's activations 2 and 3 store as activation 0 (only 1 is ReLU). The
    checker refuses such a program (no normalization unit); what the RTL does with it is run unchecked."""
    rng = np.random.default_rng(6)
    a = rng.integers(-3000, 3000, (4, 6)).astype(np.int32)
    p = _Builder(TINY_NO_NORM, a, outputs=("O", "P"))
    p.config_st(2, 0.05)
    p.mvouts(0, NormCmd.RESET, rows=4, out="O")
    p.config_st(3, 0.05)
    p.mvouts(0, NormCmd.RESET, rows=4, out="P")
    prog, inputs = p.program()
    with pytest.raises(ProgramError, match="no normalization unit"):
        check(prog)
    monkeypatch.setattr(V, "check", lambda program: None)
    got = V.run(prog, inputs, timeout=300).outputs
    plain = scale_to_int8(a, np.float32(0.05))
    np.testing.assert_array_equal(got["O"], plain)
    np.testing.assert_array_equal(got["P"], plain)



# ---- clearing: every accumulator mvout passes the unit with RESET ---------------------------------------
def _clearing_program(between: str | None) -> tuple[Program, dict]:
    """On stat 2, twice: statistics of other rows, then ``between`` (an accumulator mvout of row 3: "plain" under
    activation 0, "relu", "full" int32, "pooled" under config_st's pooling; None: nothing), then a row's passes.
    First SUM over row 0 and MAX over row 1 (larger values), then MAX, SUM_EXP / INV_SUM_EXP and a SOFTMAX RESET
    of row 3 into S; then SUM over row 0 again, then MEAN, INV_STDDEV and a LAYERNORM RESET of row 2 into O.
    Cleared, S and O are rows 3's softmax and 2's LayerNorm alone."""
    rng = np.random.default_rng(11)
    a = rng.integers(-3000, 3000, (4, 11)).astype(np.int32)
    a[3] //= 40
    p = _Builder(TINY, a, outputs=("O", "S", "P"), extra=[("F", "output", "int32", (2, 4))])
    consts = softmax_consts(0.05)
    local = acc_addr(p.base(3, 0))

    def mvout_between(k: int) -> None:   # into row k of P or F
        if between in ("plain", "relu"):
            p.config_st(int(Act.RELU if between == "relu" else Act.NONE), 0.5)
            p.ins.append(Mvout(p.bufs["P"].addr + k * a.shape[1], local, 1, 8))   # two blocks
        elif between == "full":
            p.ins.append(Mvout(p.bufs["F"].addr + k * 16, acc_addr(p.base(3, 0), full=True), 1, 4))
        elif between == "pooled":
            p.ins.append(ConfigSt(dram_stride=4, activation=0, acc_scale=1.0, pool_stride=1, pool_size=1,
                                  pool_out_dim=1, porows=1, pocols=1, orows=1, ocols=1))
            p.ins.append(Mvout(p.bufs["P"].addr + k * a.shape[1], local, 1, 4))

    p.config_st(int(Act.NONE), 1.0)
    p.ins.append(ConfigNorm(stat_id=2, act_msb=1, qb=consts.qb, qc=consts.qc, q_const=consts.qln2))
    p.ins.append(ConfigNorm(stat_id=2, act_msb=1, qb=consts.qb, qc=consts.qc, q_const=consts.qln2_inv,
                            q_const_type=1))
    p.mvouts(0, NormCmd.SUM)
    p.mvouts(1, NormCmd.MAX)
    mvout_between(0)
    p.config_st(int(Act.NONE), 2.0)   # act_msb cleared: SOFTMAX is config_st's 0 with it
    p.ins.append(ConfigNorm(stat_id=2, act_msb=1, qb=consts.qb, qc=consts.qc, q_const=consts.qln2_inv,
                            q_const_type=1))
    for cmd in (NormCmd.MAX, NormCmd.INV_SUM_EXP, NormCmd.RESET):
        p.mvouts(3, cmd, out="S" if cmd == NormCmd.RESET else "J")
    p.config_st(int(Act.NONE), 1.0)
    p.mvouts(0, NormCmd.SUM)
    mvout_between(1)
    p.config_st(int(Act.LAYERNORM), 32.0)
    for cmd in (NormCmd.MEAN, NormCmd.INV_STDDEV, NormCmd.RESET):
        p.mvouts(2, cmd, out="O" if cmd == NormCmd.RESET else "J")
    return p.program()


@pytest.mark.parametrize("between", ["plain", "relu", "full", "pooled"])
def test_every_accumulator_mvout_clears_the_stat(tiny_model, between: str) -> None:
    """A SUM, then a plain (activation 0 or 1), .full or pooled accumulator mvout, then a MEAN on the same stat id:
    the MEAN sees only its own row (the mvout between passed the unit as RESET blocks, which clear the running sum,
    count and max), on the RTL as on the functional model."""
    prog, inputs = _clearing_program(between)
    a = inputs["A"]
    check(prog)
    got = V.run(prog, inputs, timeout=300).outputs
    want = functional.run(prog, inputs).outputs
    for name in ("O", "S", "P", "F"):
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    np.testing.assert_array_equal(got["O"][2], layernorm_rows(a[2:3], 32.0)[0])
    np.testing.assert_array_equal(got["S"][3], softmax_rows(a[3:4], softmax_consts(0.05), 2.0)[0])
    # the program is sensitive to the clears: without the mvouts between, row 0's sum stays in the mean and
    # the sum of exponents, row 1's max in the max
    uncleared = functional.run(*_clearing_program(None)).outputs
    assert not np.array_equal(uncleared["O"][2], got["O"][2])
    assert not np.array_equal(uncleared["S"][3], got["S"][3])


# ---- whole programs: the toolkit's ops and LOOP_WS on the RTL --------------------------------------------
def _assert_rtl(prog: Program, inputs: dict, want: dict) -> None:
    """The RTL's outputs equal the functional model's and the reference's, bit for bit."""
    got = tk.run(prog, inputs, backend="verilator").outputs
    fun = tk.run(prog, inputs).outputs
    for name, value in want.items():
        np.testing.assert_array_equal(fun[name], value, err_msg=f"functional {name}")
        np.testing.assert_array_equal(got[name], value, err_msg=f"verilator {name}")


NORM_OPS = {"ln": tk.layernorm(7, 13, scale=0.5), "sm": tk.softmax(9, 21, input_scale=0.05),
            "sm_int8": tk.softmax(6, 10, input_scale=0.1, in_dtype="int8"),   # loaded times 2^8
            "ln_int8": tk.layernorm(5, 11, scale=20.0, in_dtype="int8"), "gelu": tk.igelu(6, 9, input_scale=0.05, scale=20.0)}


@pytest.mark.parametrize("name", NORM_OPS)
def test_norm_ops_on_the_rtl(tiny_model, name: str) -> None:
    """tk.layernorm / tk.softmax / tk.igelu on tiny: the toolkit's default schedule, one of two stat ids and one-block mvouts,
    and gemmini.h's tiled_norm_auto."""
    op = NORM_OPS[name]
    inputs = op.random_inputs(seed=12)
    want = op.reference(inputs)
    default = tk.kinds.KINDS["norm"].default(op, TINY)
    library = ("gemmini",) if op.in_dtype == "int32" else ()   # tiled_norm reads int32 rows only (no I-GELU)
    for schedule in (None, default.replace(stat_ids=2, mvout_blocks=1), *library):
        _assert_rtl(tk.compile(op, TINY, schedule=schedule), inputs, want)


@pytest.mark.parametrize("schedule", [None, "gemmini"])
def test_matmul_igelu_on_the_rtl(tiny_model, schedule) -> None:
    """matmul with I-GELU (config_norm's qb, qc; LOOP_WS act 3 under gemmini.h's schedule) on tiny."""
    op = tk.matmul(19, 21, 10, bias="row", activation="igelu", input_scale=0.02, scale=igelu_step(0.02) / (16 / 127))
    inputs = op.random_inputs(seed=6)
    inputs["A"] //= 16   # accumulators of a few hundred steps: GELU's curve, not its saturation
    inputs["B"] //= 16
    inputs["bias"] //= 8192
    want = op.reference(inputs)
    assert np.unique(want["C"]).size > 20
    _assert_rtl(tk.compile(op, TINY, schedule=schedule), inputs, want)


@pytest.mark.parametrize("act", [Act.LAYERNORM, Act.SOFTMAX], ids=["layernorm", "softmax"])
@pytest.mark.parametrize("shape", [(11, 9, 5), (22, 7, 13)])
def test_loop_ws_normalized_on_the_rtl(tiny_model, act: Act, shape: tuple[int, int, int]) -> None:
    """gemmini.h's tiled_matmul_auto with LAYERNORM / SOFTMAX: the RTL's LoopMatmul stores each row through the
    unit (config_norm per stat id, one-row mvouts with norm commands, after the loop's computes), as
    isa.loop_unroll does: the rows of several loops (row blocks of 4 and a padded one; running and final commands
    across block columns) equal the reference."""
    op = tk.matmul(*shape, bias="full")
    inputs = op.random_inputs(seed=4)
    inputs["A"] //= 16   # scores of a few steps, as a softmax's inputs are
    acc = op.accumulate(inputs)
    want = layernorm_rows(acc, 1.0) if act == Act.LAYERNORM else softmax_rows(acc, softmax_consts(0.05), 1.0)
    prog = loop_ws_normalized(op, act, TINY)
    assert sum(isinstance(ins, LoopWs) for ins in prog.instructions) > (shape[0] > 11)
    _assert_rtl(prog, inputs, {"C": want})


@pytest.mark.parametrize("act", [Act.LAYERNORM, Act.SOFTMAX], ids=["layernorm", "softmax"])
def test_loop_ws_normalized_dim16(dim16_model, act: Act) -> None:
    """The same on the dim-16 build (max_block_len 4): five block columns a row (a running mvout of four
    blocks, then the final one's), row blocks of 16 and a padded one of 8, one row block a loop."""
    op = tk.matmul(40, 75, 20, bias="full")
    inputs = op.random_inputs(seed=13)
    inputs["A"] //= 16
    acc = op.accumulate(inputs)
    want = layernorm_rows(acc, 1.0) if act == Act.LAYERNORM else softmax_rows(acc, softmax_consts(0.05), 1.0)
    prog = loop_ws_normalized(op, act, DIM16, tile_i=1, tile_j=5)
    assert sum(isinstance(ins, LoopWs) for ins in prog.instructions) == 3
    _assert_rtl(prog, inputs, {"C": want})
