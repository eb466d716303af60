"""The RTL's cycle counts of a fixed set of programs must not move unnoticed.

Re-record after an intended change with ``make golden``.
"""
from __future__ import annotations

import pytest

from simulators import BackendError
from simulators import verilator as V

import golden_cycles as golden   # tests/golden_cycles.py, the recorder


@pytest.fixture(scope="module")
def toolchain():
    try:
        V.verilator_env()
    except BackendError as exc:
        pytest.skip(f"verilator backend unavailable: {exc}")


def test_golden_cycles_unchanged(toolchain) -> None:
    recorded = golden.load()
    assert set(recorded) == set(golden.CASES), "golden_cycles.json and golden_cycles.CASES disagree"
    measured = golden.measure_all()
    moved = golden.deltas(recorded, measured)
    assert not moved, "cycle counts moved (make golden re-records):\n  " + "\n  ".join(moved)
