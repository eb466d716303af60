"""A loop's execute phase checked at once from its words (isa.execute_check) passes exactly where checking its
primitives one by one passes, leaving the same array state and touching the same rows; else the checker walks
the primitives and names the first that fails."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import toolkit as tk
from isa import PRESETS, Program
from isa.checker import ProgramError, _Checker
from isa.encoding import decode_all
from isa.execute_check import Checked, checked_pairs
from isa.instructions import ACC_BIT, ACCUM_BIT, FULL_BIT, GARBAGE, NORM_SHIFT, ConfigEx, Fence
from isa.opcodes import Funct
from isa.spans import union

TINY = PRESETS["tiny"]
OPS = {
    "matmul": tk.matmul(72, 40, 56, bias="row"),
    "conv_3x3": tk.conv2d(1, 30, 30, 8, 12, kernel=3, padding=1),
    "conv_1x1": tk.conv2d(1, 24, 24, 16, 16, kernel=1),
    "conv_s2": tk.conv2d(1, 17, 17, 8, 24, kernel=3, stride=2, padding=1),
    "depthwise": tk.depthwise_conv2d(1, 20, 20, 16, kernel=3, padding=1),
}


def _phases(prog: Program, monkeypatch) -> list[tuple[np.ndarray, tuple]]:
    """The execute phases the checker meets in ``prog`` as words, each with the array state it starts in."""
    seen = []
    phase = _Checker._execute_phase

    def spy(self, index, ins, sub, prims, build):
        if isinstance(prims, np.ndarray):
            seen.append((prims, self.array_state()))
        return phase(self, index, ins, sub, prims, build)

    monkeypatch.setattr(_Checker, "_execute_phase", spy)
    _Checker(prog).run()
    monkeypatch.undo()
    return seen


def _walk(words: np.ndarray, state: tuple) -> Checked | None:
    """The words' primitives checked one by one from ``state``, as the checker walks a loop's."""
    checker = _Checker(Program(TINY, [], {}))
    checker.ex, checker.preloaded, checker.held, checker.weights = state
    touched: list = []
    try:
        checker._primitives(0, Fence(), 0, decode_all(words), {}, touched)
    except ProgramError:
        return None
    return Checked(checker.array_state(), union(touched))


@pytest.mark.parametrize("name", OPS)
def test_a_program_checked_with_its_phases_at_once_is_checked_as_primitive_by_primitive(name, monkeypatch) -> None:
    prog = tk.compile(OPS[name], TINY, "gemmini")
    phases = _phases(prog, monkeypatch)
    assert phases, "the checker met no execute phase as words"
    for words, state in phases:
        pairs = words[np.isin(words[:, 0], [Funct.PRELOAD, Funct.COMPUTE_PRELOADED, Funct.COMPUTE_ACCUMULATED])]
        at_once = checked_pairs(pairs, TINY, *state)
        assert at_once is not None and at_once == _walk(pairs, state)
    fast = _Checker(prog)
    fast.run()
    monkeypatch.setattr("isa.checker.checked_pairs", lambda *args: None)   # every phase walked
    walked = _Checker(prog)
    walked.run()
    np.testing.assert_array_equal(np.frombuffer(fast.accesses.log, np.int64),
                                  np.frombuffer(walked.accesses.log, np.int64))
    assert fast.state() == walked.state()
    assert [k.spans for k in fast.loops.values()] == [k.spans for k in walked.loops.values()]


def _mutated(words: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, str]:
    """``words`` with one thing changed that the checker may refuse: a count, a flag, an address, the order."""
    w = words.copy()
    at = int(rng.integers(len(w)))
    how = rng.choice(["count", "flag", "row", "garbage", "accumulated", "order"])
    column = int(rng.integers(1, 3))
    if how == "count":   # rows (bits 48..63) or columns (32..47): 0, dim, dim + 1
        shift = int(rng.choice([32, 48]))
        w[at, column] = (w[at, column] & ~np.uint64(0xFFFF << shift)) | np.uint64(
            int(rng.choice([0, TINY.dim, TINY.dim + 1])) << shift)
    elif how == "flag":
        w[at, column] |= np.uint64(int(rng.choice([ACC_BIT, ACCUM_BIT, FULL_BIT, 1 << NORM_SHIFT])))
    elif how == "row":   # an address near a memory's end
        limit = int(rng.choice([TINY.sp_rows, TINY.acc_rows]))
        acc = ACC_BIT if rng.random() < 0.5 else 0
        w[at, column] = (w[at, column] & ~np.uint64(0xFFFFFFFF)) | np.uint64(acc | (limit - int(rng.integers(1, 4))))
    elif how == "garbage":
        w[at, column] = (w[at, column] & ~np.uint64(0xFFFFFFFF)) | np.uint64(GARBAGE)
    elif how == "accumulated":
        w[at, 0] = Funct.COMPUTE_ACCUMULATED if w[at, 0] != Funct.PRELOAD else Funct.COMPUTE_PRELOADED
    else:
        w = np.delete(w, at, axis=0)
    return w, str(how)


def test_mutated_phases_pass_at_once_only_where_the_walk_passes_them(monkeypatch) -> None:
    phases = [p for name in ("conv_3x3", "matmul") for p in _phases(tk.compile(OPS[name], TINY, "gemmini"),
                                                                     monkeypatch)]
    rng = np.random.default_rng(0)
    outcomes = {"refused": 0, "passed": 0}
    for _ in range(600):
        words, state = phases[int(rng.integers(len(phases)))]
        pairs = words[np.isin(words[:, 0], [Funct.PRELOAD, Funct.COMPUTE_PRELOADED, Funct.COMPUTE_ACCUMULATED])]
        mutated, how = _mutated(pairs[:int(rng.integers(2, min(len(pairs), 40) + 1))], rng)
        if rng.random() < 0.3:   # the state it starts in: no config_ex, no weights, a preload pending, or OS
            ex, preloaded, held, weights = state
            os = dataclasses.replace(ex, dataflow=0)
            states = [(None, preloaded, held, weights), (ex, preloaded, held, False),
                      (ex, decode_all(pairs[:1])[0], held, weights), (os, preloaded, False, False),
                      (os, preloaded, True, False), (os, preloaded, True, True)]
            state = states[int(rng.integers(len(states)))]
        walked, at_once = _walk(mutated, state), checked_pairs(mutated, TINY, *state)
        assert at_once is None or at_once == walked, how
        assert walked is not None or at_once is None, how
        outcomes["refused" if walked is None else "passed"] += 1
    assert min(outcomes.values()) > 100, outcomes


def test_a_refused_phase_is_named_by_its_first_failing_primitive() -> None:
    prog = tk.compile(OPS["matmul"], TINY, "gemmini")
    # the A stride makes the loops' computes read past the scratchpad: the walk names the compute
    at = next(i for i, ins in enumerate(prog.instructions) if isinstance(ins, ConfigEx))
    bad = [*prog.instructions[:at], ConfigEx(a_stride=TINY.sp_rows), *prog.instructions[at + 1:]]
    with pytest.raises(ProgramError, match=r"expanded compute_preloaded .*: a: row \d+ is past the scratchpad"):
        _Checker(Program(TINY, bad, prog.buffers)).run()
