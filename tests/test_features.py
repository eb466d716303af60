"""Feature vectors stay what the saved models and records were fitted on (tests/feature_vectors.json).

Re-record after an intended change with ``python tests/feature_vectors.py --update`` (see there).
"""
from __future__ import annotations

import json

import feature_vectors as frozen   # tests/feature_vectors.py, the recorder


def test_recorded_cases_cover_every_op_kind_on_both_presets() -> None:
    recorded = frozen.load()["cases"]
    ops = {(preset, json.dumps(op.to_dict())) for preset, ops in frozen.OPS.items() for op in ops}
    assert {(c["preset"], json.dumps(c["op"])) for c in recorded} == ops, "re-record: feature_vectors.OPS changed"
    assert {(c["preset"], c["op"]["kind"]) for c in recorded} == {(p, k) for p in frozen.OPS for k in frozen.KINDS}
    assert {c["name"].rsplit("/", 1)[1] for c in recorded} > {"default", "gemmini-flat"}, "and random points"


def test_feature_vectors_unchanged() -> None:
    moved = frozen.moved(frozen.load())
    assert not moved, "feature vectors moved (python tests/feature_vectors.py --update re-records):\n  " + \
        "\n  ".join(moved)
