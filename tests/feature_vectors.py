"""Frozen feature vectors: a fixed set of candidates (every op kind, both presets, the default, the
gemmini-flat schedule and random points of the tuner's space) and their recorded features.

    python tests/feature_vectors.py            # compare with tests/feature_vectors.json
    python tests/feature_vectors.py --update   # re-record (on purpose: see below)

Saved cost models and feature caches (keyed by FEATURE_VERSION) depend on every value, its slot and its
name, so a moved value is either a bug or a FEATURE_VERSION bump. A change to the lowering moves the
streams too: re-record then, after checking that only the lowering moved. Each case keeps its op and
knobs, so a change to the space's enumeration does not move it.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

import toolkit as tk
from toolkit.kinds import KINDS, gemmini_flat_schedule, lower, schedule_from_dict
from toolkit.kinds import from_dict as op_from_dict
from tuner.features import FEATURE_NAMES, features, stream_features
from tuner.space import Space

VECTORS_FILE = Path(__file__).resolve().with_suffix(".json")
RANDOM_POINTS = 3   # random points of the tuner's space per op, besides the default and gemmini-flat

# preset -> ops: every kind of toolkit.kinds.KINDS, with the options that change the stream
OPS: dict[str, list[tk.Op]] = {
    "tiny": [tk.matmul(13, 5, 21, bias="full", out_dtype="int32"),
             tk.matmul(32, 16, 40, bias="row", activation="relu", scale=0.1),
             tk.conv2d(1, 6, 6, 3, 5, bias="channel", activation="relu", scale=0.02),
             tk.conv2d(2, 8, 8, 6, 9, stride=2, kernel=1, padding=0),
             tk.depthwise_conv2d(1, 7, 7, 6, scale=0.05), tk.depthwise_conv2d(1, 8, 8, 8, stride=2, bias="channel"),
             tk.resadd(1, 4, 4, 8), tk.resadd(2, 5, 3, 6, out_dtype="int32", activation="none"),
             tk.maxpool2d(1, 6, 6, 8), tk.maxpool2d(1, 7, 7, 5, kernel=3, stride=2, padding=1),
             tk.layernorm(7, 13), tk.softmax(9, 20, input_scale=0.05)],
    "gemmini": [tk.matmul(100, 50, 70, bias="row", activation="relu", scale=0.03), tk.matmul(256, 256, 256),
                tk.conv2d(1, 14, 14, 64, 64, bias="channel", scale=0.01), tk.conv2d(1, 16, 16, 3, 32, stride=2),
                tk.depthwise_conv2d(1, 14, 14, 32, scale=0.05), tk.resadd(1, 14, 14, 64),
                tk.maxpool2d(1, 16, 16, 32, kernel=3, stride=2, padding=1), tk.layernorm(64, 768),
                tk.softmax(128, 128, input_scale=0.05)],
}


def cases() -> list[dict[str, Any]]:
    """Each candidate as its preset, op and knobs (the space's random points drawn with a fixed seed)."""
    out = []
    for preset, ops in OPS.items():
        hw = tk.HardwareConfig.preset(preset)
        for n, op in enumerate(ops):
            space = Space(op, hw)
            points = space.sample(np.random.default_rng(n), min(RANDOM_POINTS, len(space)))
            schedules = {"default": tk.default_schedule(op, hw), "gemmini-flat": gemmini_flat_schedule(op, hw),
                         **{f"point{p}": space[p] for p in points}}
            out += [{"name": f"{preset}/{op.KIND}{n}/{label}", "preset": preset, "op": op.to_dict(),
                     "schedule": s.to_dict()} for label, s in schedules.items()]
    return out


def vectors(case: dict[str, Any]) -> dict[str, list[float]]:
    """The stream part (float64, as computed) and the whole float32 vector of one case."""
    hw = tk.HardwareConfig.preset(case["preset"])
    op = op_from_dict(case["op"])
    schedule = schedule_from_dict(op.KIND, case["schedule"])
    prog = lower(op, schedule, hw)
    return {"stream": stream_features(prog).tolist(), "features": features(prog, op, schedule).tolist()}


def load() -> dict[str, Any]:
    return json.loads(VECTORS_FILE.read_text())


def moved(recorded: dict[str, Any]) -> list[str]:
    """Each recorded case whose vector moved, with the names of the slots that moved."""
    lines = []
    if recorded["names"] != list(FEATURE_NAMES):
        lines.append("FEATURE_NAMES moved")
    for case in recorded["cases"]:
        now = vectors(case)
        for part in ("stream", "features"):
            if now[part] != case[part]:
                diff = [FEATURE_NAMES[i] for i, (a, b) in enumerate(zip(now[part], case[part])) if a != b]
                lines.append(f"{case['name']}: {part} moved in {diff or 'length'}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tests/feature_vectors.py", description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help=f"re-record the vectors of {VECTORS_FILE.name}'s cases")
    parser.add_argument("--new-cases", action="store_true",
                        help="with --update: draw the cases again (the spaces' points, each op's default)")
    args = parser.parse_args(argv)
    if args.update:
        # the cases as recorded: a default that has since become Gemmini's loops (on the SoC) keeps its knobs
        base = cases() if args.new_cases or not VECTORS_FILE.exists() else load()["cases"]
        recorded = [dict(case, **vectors(case)) for case in base]
        lines = ",\n".join(json.dumps(case) for case in recorded)   # a case a line: diffs name the cases
        VECTORS_FILE.write_text(f'{{"names": {json.dumps(list(FEATURE_NAMES))},\n"cases": [\n{lines}\n]}}\n')
        print(f"recorded {len(recorded)} cases in {VECTORS_FILE}")
        return 0
    lines = moved(load())
    print("\n".join(lines) or "all feature vectors match")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
