"""The checker keeps a loop's checks per shape and state (isa.loop_checks): what it finds of every later loop of
the shape, moved to that loop's bases, must be what checking the loop primitive by primitive finds."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import toolkit as tk
from isa import PRESETS, Program
from isa.checker import ProgramError, _Checker
from isa.loop_words import LoopConvWs, LoopWs, LoopWsConfigAddrsAB

TINY = PRESETS["tiny"]


class _NeverKept(dict):
    """A checker's loop cache that keeps nothing: every loop is checked primitive by primitive."""

    def __setitem__(self, key, value) -> None:
        pass


def _checked(prog: Program, keep: bool) -> _Checker:
    checker = _Checker(prog)
    if not keep:
        checker.loops = _NeverKept()
    checker.run()
    return checker


def _error(prog: Program, keep: bool) -> str:
    with pytest.raises(ProgramError) as caught:
        _checked(prog, keep)
    return str(caught.value)


@pytest.mark.parametrize("op", [
    tk.matmul(72, 40, 56, bias="row"),
    tk.conv2d(1, 30, 30, 8, 12, kernel=3, padding=1),
    tk.conv2d(1, 24, 24, 16, 16, kernel=1),
], ids=["matmul", "conv_3x3", "conv_1x1"])
def test_kept_loops_record_what_checking_each_loop_records(op, monkeypatch) -> None:
    prog = tk.compile(op, TINY, "gemmini")
    loops = sum(isinstance(w, (LoopWs, LoopConvWs)) for w in prog.instructions)
    expanded = []
    expansion = _Checker._expansion
    monkeypatch.setattr(_Checker, "_expansion", lambda self, *args: expanded.append(1) or expansion(self, *args))
    kept = _checked(prog, True)
    # the shapes are few: each is checked once, and every other loop of it is moved
    assert len(expanded) == len(kept.loops) and loops > 2 * len(kept.loops) > 0
    afresh = _checked(prog, False)
    np.testing.assert_array_equal(np.frombuffer(kept.accesses.log, np.int64),
                                  np.frombuffer(afresh.accesses.log, np.int64))
    assert kept.state() == afresh.state()


def test_a_moved_loop_outside_its_buffer_is_named_as_checking_it_names_it() -> None:
    prog = tk.compile(tk.matmul(72, 40, 56), TINY, "gemmini")
    ins = prog.instructions
    last = max(i for i, w in enumerate(ins) if isinstance(w, LoopWsConfigAddrsAB))
    a_end = prog.buffers["A"].end
    slipped = dataclasses.replace(ins[last], a=a_end - 8)   # the last tile's A rows run past A's buffer
    bad = Program(TINY, [*ins[:last], slipped, *ins[last + 1:]], prog.buffers)
    message = _error(bad, True)
    assert "not inside one buffer" in message
    assert message == _error(bad, False)
