"""The checker refuses DRAM hazards that nothing orders (isa.dram_hazards), so that what it accepts
runs to the same bits on both backends: the issue's repro, read-after-write, write-after-read and
write-after-write, what orders them (a fence; for a read and a write, shared local rows), loops, and
random programs full of DRAM overlaps, where the checker refuses or the backends agree."""
from __future__ import annotations

from bisect import bisect_right

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import toolkit as tk
from isa import (
    ACC_BIT, GARBAGE, PRESETS, ROW_MASK, ConfigEx, ConfigLd, ConfigSt, Fence, HardwareConfig, Instruction, Mvin,
    Mvout, Program, acc_addr, dram_hazards, layout,
)
from isa.checker import ProgramError, check
from isa.dram_hazards import DramAccesses
from simulators import functional
from simulators import verilator as V

from isa.gemmini_words import ws_configs, ws_loop
from helpers import checker_accepts
from program_strategies import inputs_for

TINY = PRESETS["tiny"]
BUFFERS = layout([("X", "input", "int8", (4, 4)), ("O", "output", "int8", (4, 4))])
X, O = BUFFERS["X"].addr, BUFFERS["O"].addr


def _tiny(*body: Instruction) -> Program:
    """``body`` after the configs it needs (4-byte DRAM rows), over X and O."""
    return Program(TINY, [ConfigEx(), ConfigLd(dram_stride=4), ConfigSt(dram_stride=4), *body], BUFFERS)


def _refused(prog: Program, match: str) -> ProgramError:
    with pytest.raises(ProgramError, match=match) as err:
        check(prog)
    return err.value


# ---- the repro --------------------------------------------------------------------------------
def _repro() -> Program:
    """The tiny 30x20x70 matmul with an mvout over B right after the first mvin2 that reads B."""
    prog = tk.compile(tk.matmul(30, 20, 70), TINY)
    lines = prog.to_asm().splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("mvin2 dram=B "))
    lines.insert(first + 1, "mvout dram=B local=acc[60] rows=1 cols=4")
    return Program.from_asm("\n".join(lines))


def test_the_repro_is_refused_naming_both_instructions_and_the_missing_fence() -> None:
    repro = _repro()
    n = next(i for i, ins in enumerate(repro.instructions) if isinstance(ins, Mvout))   # the inserted one
    local = repro.instructions[n - 1].local
    err = _refused(repro, rf"^instruction {n} `mvout dram=B local=acc\[60\] rows=1 cols=4`: writes DRAM bytes "
                          rf"2176..2179 \(B\) that instruction {n - 1} `mvin2 dram=B local=sp\[{local}\] rows=4 "
                          rf"cols=8` reads, with no fence between them \(write-after-read: .*\): a `fence` is missing "
                          rf"between instructions {n - 1} and {n}$")
    assert err.index == n
    with_fence = _repro()
    with_fence.instructions.insert(n, Fence())
    check(with_fence)


def test_a_program_the_toolkit_lowers_passes() -> None:
    check(tk.compile(tk.matmul(30, 20, 70), TINY))


# ---- each hazard, and what orders it --------------------------------------------------------------------
HAZARDS = {   # kind: (earlier, later), sharing no local rows
    "read-after-write": (Mvout(X, acc_addr(0), 4, 4), Mvin(X + 4, 0, 2, 4)),
    "write-after-read": (Mvin(X, 0, 4, 4), Mvout(X + 8, acc_addr(0), 1, 4)),
    "write-after-write": (Mvout(O, acc_addr(0), 2, 4), Mvout(O + 4, acc_addr(4), 2, 4)),
}


@pytest.mark.parametrize("kind", HAZARDS)
def test_each_hazard_is_refused_and_a_fence_makes_it_legal(kind: str) -> None:
    earlier, later = HAZARDS[kind]
    _refused(_tiny(earlier, later), rf"^instruction 4 .* that instruction 3 .*\({kind}: .*between instructions 3 "
                                    r"and 4$")
    check(_tiny(earlier, Fence(), later))


def test_the_hazard_reported_is_the_first_and_its_nearest_partner() -> None:
    reads = [Mvin(X, 0, 1, 4), Mvin(X, 4, 1, 4), Mvin(O, 8, 1, 4)]
    err = _refused(_tiny(*reads, Mvout(O, acc_addr(0), 1, 4), Mvout(X, acc_addr(4), 1, 4)),
                   r"^instruction 6 `mvout dram=O .* that instruction 5 `mvin dram=O ")
    assert "bytes 128..131 (O)" in str(err)


@pytest.mark.parametrize("earlier, later", [(Mvin(X, acc_addr(0), 4, 4), Mvout(X, acc_addr(2), 1, 4)),
                                            (Mvout(X, acc_addr(0), 4, 4), Mvin(X, acc_addr(3), 1, 4))])
def test_a_read_and_a_write_that_share_local_rows_are_ordered(earlier: Instruction, later: Instruction) -> None:
    """The RTL holds the mvout until the mvin has written its rows, and the mvin until the mvout is acknowledged."""
    check(_tiny(earlier, later))


def test_two_writes_are_never_ordered_by_local_rows() -> None:
    _refused(_tiny(Mvout(O, acc_addr(0), 2, 4), Mvout(O, acc_addr(0), 2, 4)), "write-after-write")


def test_strides_decide_which_bytes_rows_touch() -> None:
    # rows of 4 bytes 8 apart miss the bytes between them; stride 0 reads one row; int32 rows are 4x wider
    check(_tiny(ConfigLd(dram_stride=8), Mvin(X, 0, 2, 4), Mvout(X + 4, acc_addr(0), 1, 4)))
    check(_tiny(ConfigLd(dram_stride=0), Mvin(X, 0, 4, 4), Mvout(X + 4, acc_addr(0), 1, 4)))
    _refused(_tiny(ConfigLd(dram_stride=0), Mvin(X, acc_addr(4), 4, 2), Mvout(X + 4, acc_addr(0), 1, 4)),
             "write-after-read")


def test_garbage_and_zero_writer_mvins_read_no_dram() -> None:
    check(_tiny(Mvout(0, acc_addr(0), 1, 4), Mvin(0, 0, 1, 4), Mvout(X, acc_addr(0), 1, 4),
                Mvin(X, GARBAGE, 1, 4)))


# ---- loops ------------------------------------------------------------------------------------------
def _two_loops(fence: bool) -> tuple[Program, dict[str, np.ndarray], np.ndarray]:
    """T = A @ B by one LOOP_WS, then C = T @ B by another (tiny, 4x4): the second reads what the first wrote."""
    bufs = layout([("A", "input", "int8", (4, 4)), ("B", "input", "int8", (4, 4)), ("T", "output", "int8", (4, 4)),
                   ("C", "output", "int8", (4, 4))])
    a, b, t, c = (bufs[n].addr for n in "ABTC")
    words = (ws_configs(4, 4, 4, 0, 4) + ws_loop(1, 1, 1, 0, 0, 0, a, b, 0, t, 4, 4, 0, 4) + [Fence()] * fence
             + ws_configs(4, 4, 4, 0, 4) + ws_loop(1, 1, 1, 0, 0, 0, t, b, 0, c, 4, 4, 0, 4))
    rng = np.random.default_rng(0)
    inputs = {"A": rng.integers(-3, 4, (4, 4), dtype=np.int8), "B": rng.integers(-3, 4, (4, 4), dtype=np.int8)}
    t_want = np.clip(inputs["A"].astype(np.int32) @ inputs["B"], -128, 127)
    return Program(TINY, words, bufs), inputs, np.clip(t_want @ inputs["B"], -128, 127).astype(np.int8)


def test_a_loop_reading_what_the_loop_before_it_wrote_needs_a_fence() -> None:
    prog, inputs, want = _two_loops(fence=False)
    _refused(prog, r"^instruction 21 `loop_ws .*`: its expanded `mvin dram=T .*` reads DRAM bytes .* that instruction "
                   r"10 `loop_ws .*` \(its expanded `mvout dram=T .*`\) writes, .*\(read-after-write: .*between "
                   r"instructions 10 and 21$")
    prog, inputs, want = _two_loops(fence=True)
    np.testing.assert_array_equal(functional.run(prog, inputs).outputs["C"], want)


def test_a_loop_storing_over_what_it_loads_is_refused() -> None:
    bufs = layout([("A", "input", "int8", (4, 4)), ("B", "input", "int8", (4, 4))])
    a, b = bufs["A"].addr, bufs["B"].addr
    prog = Program(TINY, ws_configs(4, 4, 4, 0, 4) + ws_loop(1, 1, 1, 0, 0, 0, a, b, 0, a, 4, 4, 0, 4), bufs)
    _refused(prog, r"^instruction 10 `loop_ws .*`: its expanded `mvout dram=A .*` writes DRAM bytes .* that its "
                   r"expanded `mvin dram=A .*` reads, .*: no fence can order two primitives of one loop$")


# ---- the search against brute force ----------------------------------------------------------------------
ACCESS = st.tuples(st.integers(0, 40), st.integers(1, 4), st.sampled_from([0, 1, 2, 3, 5, 8]), st.integers(1, 6),
                   st.booleans(), st.sampled_from([-1, -1, 0, 1]), st.booleans(), st.integers(0, 6))


def _brute_force(accesses: list[tuple], fences: list[int]) -> tuple[int, int, set[int]] | None:
    """(earlier, later, shared bytes) of the first hazard: the least later access, then the nearest earlier."""
    def touched(addr, rows, stride, nbytes, *_):
        return {addr + r * stride + k for r in range(rows) for k in range(nbytes)}

    def ordered(x, y):   # a read and a write outside loops whose first-block local rows meet
        return (x[5] < 0 and y[5] < 0 and x[4] != y[4] and x[6] == y[6]
                and x[7] < y[7] + y[1] and y[7] < x[7] + x[1])

    for j, later in enumerate(accesses):
        for i in range(j - 1, -1, -1):
            earlier = accesses[i]
            shared = touched(*earlier) & touched(*later)
            if (bisect_right(fences, i) == bisect_right(fences, j) and (earlier[4] or later[4]) and shared
                    and not ordered(earlier, later)):
                return i, j, shared
    return None


@given(st.lists(ACCESS, max_size=14), st.lists(st.integers(0, 14), max_size=3))
def test_the_first_hazard_is_the_one_brute_force_finds(accesses: list[tuple], fences: list[int]) -> None:
    log = DramAccesses(dram_size=100)
    fences = sorted(fences)
    for n, acc in enumerate(accesses + [None]):
        for _ in range(fences.count(n)):
            log.fence()
        if acc:
            addr, rows, stride, nbytes, write, sub, in_acc, local = acc
            log.record(n, sub, addr, rows, stride, nbytes, write, acc_addr(local) if in_acc else local)
    want, got = _brute_force(accesses, fences), log.first_hazard()
    if want is None:
        assert got is None
    else:
        assert (got.earlier[0], got.later[0]) == want[:2] and set(range(got.lo, got.hi)) <= want[2]
        assert got.earlier[2] == accesses[want[0]][4] and got.later[2] == accesses[want[1]][4]


# ---- random programs full of DRAM overlaps ----------------------------------------------------------------
def overlap_program(hw: HardwareConfig, seed: int) -> Program:
    """Local rows loaded from X, then random mvins and mvouts over a few small buffers, so that their DRAM
    bytes and local rows often meet, with random strides (rows that overlap, touch, repeat or skip),
    element sizes and fences, and round trips (a load and a store of the same local rows and DRAM address,
    in either order); then, after a fence, every local row used and the input X are stored to outputs, so
    that what a hazard changes shows."""
    d, pool = hw.dim, 2 * hw.dim
    bufs = layout([("X", "input", "int8", (pool, 2 * d)), ("O", "output", "int8", (pool, 2 * d)),
                   ("P", "output", "int32", (d, d)), ("DS", "output", "int8", (pool, d)),
                   ("DA", "output", "int32", (pool, d)), ("DX", "output", "int8", (pool, 2 * d))])
    steps = _OverlapSteps(np.random.default_rng(seed), d, pool, bufs["X"].addr, bufs["P"].end)
    body = [ConfigEx(), *_fill_local_rows(bufs, d, pool), Fence(), *steps.ld.values(), steps.st_cfg,
            *steps.body(), Fence(), *_dump_local_rows_and_x(bufs, d, pool)]
    return Program(hw, body, bufs)


def _fill_local_rows(bufs: dict, d: int, pool: int) -> list[Instruction]:
    """Data from X in every local row, so that stores change the bytes they write."""
    body: list[Instruction] = [ConfigLd(dram_stride=2 * d, shrink=1)]
    lo = bufs["X"].addr
    for r in range(0, pool, d):
        body += [Mvin(lo + r * 2 * d, r, d, d), Mvin(lo + r * 2 * d + d, acc_addr(r), d, d)]
    return body


def _dump_local_rows_and_x(bufs: dict, d: int, pool: int) -> list[Instruction]:
    """Every local row the steps used to DS / DA, then X as it ended to DX."""
    body: list[Instruction] = []
    for r in range(0, pool, d):
        body += [ConfigSt(dram_stride=d), Mvout(bufs["DS"].addr + r * d, r, d, d),
                 ConfigSt(dram_stride=4 * d), Mvout(bufs["DA"].addr + r * 4 * d, acc_addr(r, full=True), d, d)]
    body += [Fence(), ConfigLd(dram_stride=2 * d, block_stride=d), ConfigSt(dram_stride=2 * d)]
    for r in range(0, pool, d):
        body += [Mvin(bufs["X"].addr + r * 2 * d, 0, d, 2 * d), Mvout(bufs["DX"].addr + r * 2 * d, 0, d, 2 * d)]
    return body


class _OverlapSteps:
    """The random steps of an overlap program over DRAM bytes [lo, hi) and local rows [0, pool), with the
    load and store configs they run under (drawn first: the program sets them before the steps)."""

    def __init__(self, rng: np.random.Generator, d: int, pool: int, lo: int, hi: int) -> None:
        self.rng, self.d, self.pool, self.lo, self.hi = rng, d, pool, lo, hi
        self.strides = [0, 1, d // 2, d, 2 * d, 3 * d, 4 * d]
        self.ld = {s: self._config_ld(s) for s in range(3)}
        self.st_cfg = self._config_st()

    def _config_ld(self, state: int) -> ConfigLd:
        return ConfigLd(dram_stride=int(self.rng.choice(self.strides)), state=state,
                        shrink=int(self.rng.integers(2)))

    def _config_st(self) -> ConfigSt:
        return ConfigSt(dram_stride=int(self.rng.choice(self.strides[1:])))

    def _local(self, rows: int, acc: bool, **flags: bool) -> int:
        row = int(self.rng.integers(self.pool - rows + 1))
        return acc_addr(row, **flags) if acc else row

    def _dram(self, rows: int, stride: int, nbytes: int) -> int:
        return int(self.rng.integers(self.lo, self.hi - (rows - 1) * stride - nbytes + 1))

    def _load_bytes(self, cols: int, acc: bool, state: int) -> int:
        """Bytes of one row an mvin reads: 4 per element into the accumulator unless its config shrinks."""
        return cols * (4 if acc and not self.ld[state].shrink else 1)

    def body(self) -> list[Instruction]:
        """4 to 19 random steps, each followed by a fence at a rate drawn for the program."""
        fences = self.rng.choice([0.1, 0.3, 0.6])
        body: list[Instruction] = []
        for _ in range(int(self.rng.integers(4, 20))):
            body += self._step()
            if self.rng.random() < fences:
                body.append(Fence())
        return body

    def _step(self) -> list[Instruction]:
        """An mvin, an mvout, a round trip or a new load or store config."""
        rng = self.rng
        u, acc = rng.random(), bool(rng.integers(2))
        rows, cols = int(rng.integers(1, self.d + 1)), int(rng.integers(1, self.d + 1))
        if u < 0.35:
            return [self._mvin(rows, cols, acc)]
        if u < 0.7:
            full = acc and bool(rng.integers(2))
            return [Mvout(self._dram(rows, self.st_cfg.dram_stride, cols * (4 if full else 1)),
                          self._local(rows, acc, full=full), rows, cols)]
        if u < 0.85:
            return self._round_trip(rows, cols, acc)
        if u < 0.92:
            state = int(rng.integers(3))
            self.ld[state] = self._config_ld(state)
            return [self.ld[state]]
        self.st_cfg = self._config_st()
        return [self.st_cfg]

    def _mvin(self, rows: int, cols: int, acc: bool) -> Mvin:
        state = int(self.rng.integers(3))
        nbytes = self._load_bytes(cols, acc, state)
        a = 0 if self.rng.random() < 0.1 else self._dram(rows, self.ld[state].dram_stride, nbytes)  # 0: the zero writer
        return Mvin(a, self._local(rows, acc, accumulate=acc and bool(self.rng.integers(2))), rows, cols, state)

    def _round_trip(self, rows: int, cols: int, acc: bool) -> list[Instruction]:
        """A load and a store of the same local rows and DRAM address, in either order."""
        at, state = self._local(rows, acc), int(self.rng.integers(3))
        nbytes = max(self._load_bytes(cols, acc, state), cols)
        a = self._dram(rows, max(self.ld[state].dram_stride, self.st_cfg.dram_stride), nbytes)
        pair: list[Instruction] = [Mvin(a, at, rows, cols, state), Mvout(a, at, rows, cols)]
        return pair if self.rng.integers(2) else pair[::-1]


def _reordered(prog: Program, seed: int) -> Program:
    """``prog`` in another order the RTL may run it in: its load and store units run apart, so (at random)
    mvins move ahead of older mvouts, or mvouts ahead of older mvins, with which they share no local rows
    (an mvin never passes a config_ld, an mvout never a config_st, nothing passes a fence)."""
    rng = np.random.default_rng(seed)
    ins = list(prog.instructions)
    mover, other, config = (Mvin, Mvout, ConfigSt) if rng.integers(2) else (Mvout, Mvin, ConfigLd)

    def rows(i: Instruction) -> set[tuple[bool, int]]:
        return set() if i.local == GARBAGE else {(bool(i.local & ACC_BIT), (i.local & ROW_MASK) + r)
                                                 for r in range(i.rows)}

    for k in range(len(ins)):
        j = k
        while (j > 0 and type(ins[j]) is mover and isinstance(ins[j - 1], (other, config)) and rng.random() < 0.8
               and not (isinstance(ins[j - 1], other) and rows(ins[j - 1]) & rows(ins[j]))):
            ins[j - 1], ins[j] = ins[j], ins[j - 1]
            j -= 1
    return Program(prog.hw, ins, prog.buffers)


ORDERS = 4   # reorderings tried per program


def _outcomes(hw: HardwareConfig, seeds: range) -> tuple[list[Program], list[Program]]:
    """The programs of ``seeds``, (accepted, refused)."""
    accepted, refused = [], []
    for seed in seeds:
        prog = overlap_program(hw, seed)
        try:
            check(prog)
            accepted.append(prog)
        except ProgramError as exc:
            assert "fence" in str(exc) and exc.reason.count("`") >= 4, exc   # it names both instructions
            refused.append(prog)
    return accepted, refused


@pytest.mark.parametrize("preset", ["tiny", "gemmini"])
def test_accepted_overlapping_programs_run_the_same_in_any_order_the_rtl_may_choose(preset: str,
                                                                                   monkeypatch) -> None:
    accepted, refused = _outcomes(PRESETS[preset], range(300))
    with monkeypatch.context() as m:   # how many accepted programs hold reads and writes of the same bytes
        m.setattr(dram_hazards, "_ordered", lambda log, a, b: np.zeros(len(a), dtype=bool))
        overlapping = sum(1 for prog in accepted if not checker_accepts(prog))
    assert len(accepted) > 100 and len(refused) > 100 and overlapping > 30, (len(accepted), overlapping)
    for n, prog in enumerate(accepted):
        inputs = inputs_for(prog, seed=n)
        want = functional.run(prog, inputs).outputs
        for order in range(ORDERS):
            for name, got in functional.run(_reordered(prog, n * ORDERS + order), inputs).outputs.items():
                np.testing.assert_array_equal(got, want[name], err_msg=f"{name} of\n{prog.to_asm()}")


def test_without_the_hazard_check_reordering_changes_results(monkeypatch) -> None:
    """The property above has teeth: many programs that only the hazard check refuses change."""
    _, refused = _outcomes(TINY, range(100))
    monkeypatch.setattr(DramAccesses, "first_hazard", lambda self: None)
    changed = 0
    for n, prog in enumerate(refused):
        inputs = inputs_for(prog, seed=n)
        want = functional.run(prog, inputs).outputs
        changed += any(not np.array_equal(functional.run(_reordered(prog, n * ORDERS + order), inputs).outputs[k],
                                          want[k]) for order in range(ORDERS) for k in want)
    assert changed > len(refused) // 4, (changed, len(refused))


def test_accepted_overlapping_programs_run_to_the_same_bits_on_the_rtl(tiny_model, monkeypatch) -> None:
    """30 accepted programs in one harness process agree with the functional model bit for bit; without the
    hazard check, some refused ones (and the issue's repro) do not."""
    accepted, refused = _outcomes(TINY, range(80))
    assert len(accepted) >= 30 and len(refused) >= 30
    repro = _repro()
    jobs = [(p, inputs_for(p, seed=n)) for n, p in enumerate(accepted[:30] + refused[:30])]
    jobs.append((repro, inputs_for(repro, seed=1)))
    monkeypatch.setattr(DramAccesses, "first_hazard", lambda self: None)
    differ = []
    for n, ((prog, inputs), res) in enumerate(zip(jobs, V.run_many(jobs, timeout=60))):
        assert not isinstance(res, Exception), res
        want = functional.run(prog, inputs).outputs
        if not all(np.array_equal(res.outputs[k], want[k]) for k in want):
            assert n >= 30, f"accepted program {n} differs on the RTL:\n{prog.to_asm()}"
            differ.append(n)
    assert 60 in differ and len(differ) > 1, differ
