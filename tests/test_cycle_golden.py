"""The RTL's cycle counts of a fixed set of programs must not move unnoticed.

Re-record after an intended change with ``make golden``.
"""
from __future__ import annotations

import golden_cycles as golden   # tests/golden_cycles.py, the recorder


def test_golden_cycles_unchanged(verilator_ok) -> None:
    recorded = golden.load()
    assert set(recorded) == set(golden.CASES), "golden_cycles.json and golden_cycles.CASES disagree"
    measured = golden.measure_all()
    moved = golden.deltas(recorded, measured)
    assert not moved, "cycle counts moved (make golden re-records):\n  " + "\n  ".join(moved)
