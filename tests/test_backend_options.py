"""Every backend rejects an option it does not take, naming it (a typo is never silently ignored)."""
from __future__ import annotations

import pytest

import toolkit as tk
from simulators import BACKENDS
from simulators import stand_in

OP = tk.matmul(4, 4, 4)


@pytest.fixture(scope="module")
def program() -> tk.Program:
    return tk.compile(OP, "tiny")


@pytest.mark.parametrize("backend, typo", [
    ("functional", "timeout"),     # functional has no options at all
    ("verilator", "timout"),
    ("cpu", "repeat"),
    ("gpu", "devices"),            # checked before any device is looked for
])
def test_unknown_option_raises_naming_it(program, backend: str, typo: str) -> None:
    with pytest.raises(TypeError, match=rf"backend '{backend}' has no option '{typo}'"):
        tk.run(program, OP.random_inputs(0), backend=backend, **{typo: 5})


def test_every_backend_is_covered() -> None:
    assert set(BACKENDS) == {"functional", "verilator", "cpu", "gpu", "stand-in"}


def test_the_message_lists_the_options(program) -> None:
    with pytest.raises(TypeError, match=r"its options: log, wave, cycle_limit, timeout, watchdog\)"):
        tk.run(program, OP.random_inputs(0), backend="verilator", timout=5)


def test_known_options_still_pass(program) -> None:
    inputs = OP.random_inputs(0)
    res = tk.run(program, inputs, backend="cpu", repeats=1, threads=None)
    assert (res.outputs["C"] == OP.reference(inputs)["C"]).all()


def test_stand_in_rejects_options(program) -> None:
    with pytest.raises(TypeError, match="timeout"):
        stand_in.run(program, OP.random_inputs(0), timeout=5)
