"""Featurizing candidates of Gemmini's loops (the tuner's loop family): candidates a CPU second on real
ResNet-50 layers and matmuls (gemmini preset), random points and then neighbours of them (what the annealing asks
for: most of their loops' shapes seen before), side by side with another revision's code on the same points, and
whether every row is bit-identical to it.

A loop candidate's loops are unrolled (isa.loop_unroll), alike loops once, to count what the accelerator's
unrollers issue; a conv's tiles come as arrays of their words' fields (isa.loop_groups), with no text rendered.
This is what tuning a conv on the SoC spends its time on besides the simulations.

    .venv/bin/python benchmarks/bench_loop_features.py [--points 12] [--neighbours 4] [--baseline REV]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import toolkit as tk  # noqa: E402
from toolkit.kinds import schedule_from_dict  # noqa: E402
from tuner.features import candidate_features  # noqa: E402
from tuner.space import Space  # noqa: E402

from benchmarks.revision import python_tree, run_in  # noqa: E402

LAYERS = {   # ResNet-50's (networks/suites/resnet50.yaml)
    "s1_1x1a 56x56x256->64 1x1": tk.conv2d(1, 56, 56, 256, 64, kernel=1, padding=0, bias="channel",
                                           activation="relu"),
    "s1_3x3 56x56x64->64 3x3": tk.conv2d(1, 56, 56, 64, 64, kernel=3, padding=1, bias="channel", activation="relu"),
    "s4_3x3 7x7x512->512 3x3": tk.conv2d(1, 7, 7, 512, 512, kernel=3, padding=1, bias="channel", activation="relu"),
    "s1_resadd 56x56x256": tk.resadd(1, 56, 56, 256),
    # BERT-base's ffn_up (networks/suites/bert_base.yaml) and bench_peer.py's matmul
    "ffn_up 128x3072x768": tk.matmul(128, 3072, 768, activation="igelu", input_scale=0.05),
    "matmul 784x256x512": tk.matmul(784, 256, 512),
}

# run by --baseline in the other revision's tree: argv[1] a JSON file of the op, hardware, domains and
# knobs (the random points, then their neighbours), argv[2] where to save the rows; prints the candidates a CPU
# second of the random points and of the neighbours
_BASELINE_RUN = """
import json, sys, time
import numpy as np
from isa import HardwareConfig
from toolkit.kinds import from_dict, schedule_from_dict
from tuner.features import candidate_features
case = json.load(open(sys.argv[1]))
op, hw = from_dict(case["op"]), HardwareConfig.from_dict(case["hw"])
schedules = [schedule_from_dict(op.KIND, k) for k in case["knobs"]]
rows = []
for part in (schedules[:case["random"]], schedules[case["random"]:]):
    start = time.process_time()
    rows += [candidate_features(op, hw, s, case["domains"]) for s in part]
    print(len(part) / (time.process_time() - start))
np.save(sys.argv[2], np.stack(rows))
"""


def baseline(rev: str, space: Space, knobs: list[dict], random: int) -> tuple[list[float], np.ndarray]:
    """The candidates a CPU second of the first ``random`` of ``knobs`` and of the rest, and the rows of
    ``knobs``, under revision ``rev``'s code."""
    with python_tree(rev) as tree:
        case = tree / "case.json"
        case.write_text(json.dumps({"op": space.op.to_dict(), "hw": space.hw.as_dict(), "domains": space.domains,
                                    "knobs": knobs, "random": random}))
        rates = [float(x) for x in run_in(tree, _BASELINE_RUN, str(case), f"{tree}/rows.npy").split()[-2:]]
        return rates, np.load(f"{tree}/rows.npy")


def rates(op: tk.Op, hw: tk.HardwareConfig, space: Space, knobs: list[dict], random: int
          ) -> tuple[list[float], np.ndarray]:
    """:func:`baseline`'s figures under this tree's code."""
    schedules, out, rows = [schedule_from_dict(op.KIND, k) for k in knobs], [], []
    for part in (schedules[:random], schedules[random:]):
        start = time.process_time()
        rows += [candidate_features(op, hw, s, space.domains) for s in part]
        out.append(len(part) / (time.process_time() - start))
    return out, np.stack(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--points", type=int, default=12, help="random points of each layer's loop space (default 12)")
    p.add_argument("--neighbours", type=int, default=4,
                   help="then this many neighbours of each point, as the annealing asks for them (default 4)")
    p.add_argument("--baseline", metavar="REV", help="also featurize the points with this git revision's code")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    hw = tk.HardwareConfig.preset("gemmini")
    print(f"{'layer':<28} {'points':>6} {'random':>8} {'nearby':>8}" + (
        f" {'baseline':>9} {'nearby':>8} {'speedup':>8} {'nearby':>7}  identical" if args.baseline else ""))
    for name, op in LAYERS.items():
        space = Space(op, hw, family="loops")
        rng = np.random.default_rng(args.seed)
        points = space.sample(rng, args.points)
        near = [space.neighbor(p, rng) for p in points for _ in range(args.neighbours)]
        knobs = [space[i].to_dict() for i in (*points, *near)]
        ours, rows = rates(op, hw, space, knobs, len(points))
        line = f"{name:<28} {len(points):>6} {ours[0]:>8.2f} {ours[1]:>8.2f}"
        if args.baseline:
            base, base_rows = baseline(args.baseline, space, knobs, len(points))
            line += (f" {base[0]:>9.2f} {base[1]:>8.2f} {ours[0] / base[0]:>7.2f}x {ours[1] / base[1]:>6.2f}x  "
                     f"{np.array_equal(rows, base_rows)}")
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
