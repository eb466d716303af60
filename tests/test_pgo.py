"""Profile-guided builds of the Verilator model (simulators/pgo.py) and the plain ones SYSTOLIC_PGO=0 asks for:
each under its own key, and the two models run a program to the same outputs and cycles."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import toolkit as tk
from simulators import verilator as V

TINY = tk.HardwareConfig.preset("tiny")


def test_plain_builds_are_kept_apart_and_waveform_builds_are_never_profile_guided(monkeypatch) -> None:
    monkeypatch.delenv("SYSTOLIC_PGO", raising=False)
    guided = V.build_key(TINY)
    assert V.profile_guided(None) and not V.profile_guided("fst") and not V.profile_guided("vcd")
    monkeypatch.setenv("SYSTOLIC_PGO", "0")
    assert not V.profile_guided(None)
    assert V.build_key(TINY) != guided


@pytest.mark.rtl
def test_a_plain_model_runs_as_the_profile_guided_one(tmp_path: Path, monkeypatch) -> None:
    op = tk.matmul(24, 20, 36, bias="row", activation="relu", scale=0.05)
    prog, inputs = tk.compile(op, TINY), op.random_inputs(seed=3)
    monkeypatch.delenv("SYSTOLIC_PGO", raising=False)
    guided = tk.run(prog, inputs, backend="verilator")
    monkeypatch.setenv("SYSTOLIC_CACHE", str(tmp_path))
    monkeypatch.setenv("SYSTOLIC_PGO", "0")
    plain = tk.run(prog, inputs, backend="verilator")
    assert len(list(tmp_path.iterdir())) >= 1   # the plain model was built here, not taken from the cache
    np.testing.assert_array_equal(plain.outputs["C"], op.reference(inputs)["C"])
    np.testing.assert_array_equal(plain.outputs["C"], guided.outputs["C"])
    assert plain.cycles == guided.cycles
