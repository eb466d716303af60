"""What the stand-in prior costs and buys in a real tuning run on the RTL, side by side.

The cost model's prior is the stand-in's cycles for streams up to
``tuner.features.STAND_IN_MAX_INSTRUCTIONS`` instructions (else the stream's DMA + compute
cycles). Running the stand-in makes each candidate's features dearer; this prints, per
workload, `tune()` on the verilator backend with the stand-in column on and off
(``STAND_IN_MAX_INSTRUCTIONS = 0``), alternating, for several seeds: wall seconds per
trial, seconds spent on features, and the best cycles after 8 and after all trials
(median over seeds). Search quality over whole spaces is `make bench-tables`'s job;
this is the throughput side.

    .venv/bin/python benchmarks/bench_prior.py [--trials 24] [--seeds 3]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import toolkit as tk  # noqa: E402
from tuner import features  # noqa: E402
from tuner.api import tune  # noqa: E402

WORKLOADS = {
    "matmul 64^3 gemmini": (tk.matmul(64, 64, 64), "gemmini"),
    "conv 8x8x32->32 3x3 tiny": (tk.conv2d(1, 8, 8, 32, 32, kernel=3, padding=1), "tiny"),
}


def one(op: tk.Op, hw: str, trials: int, seed: int, stand_in: bool) -> tuple[float, float, int, int]:
    limit = features.STAND_IN_MAX_INSTRUCTIONS
    features.STAND_IN_MAX_INSTRUCTIONS = limit if stand_in else 0
    try:
        start = time.perf_counter()
        res = tune(op, tk.HardwareConfig.preset(hw), trials=trials, backend="verilator", seed=seed, workers=1,
                   include_default=False, transfer_learning=False, progress=False)
        wall = time.perf_counter() - start
    finally:
        features.STAND_IN_MAX_INSTRUCTIONS = limit
    curve = [t.best for t in res.history]
    return wall / len(curve), res.feature_seconds / len(curve), int(curve[min(7, len(curve) - 1)]), int(curve[-1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=24)
    p.add_argument("--seeds", type=int, default=3)
    args = p.parse_args()
    print(f"tune() on the RTL, model tuner, unseeded, {args.trials} trials, median of {args.seeds} seeds")
    print(f"{'workload':<26} {'prior':<9} {'s/trial':>8} {'feat s/trial':>12} {'best@8':>8} "
          f"{'best@' + str(args.trials):>8}")
    for name, (op, hw) in WORKLOADS.items():
        runs: dict[bool, list] = {True: [], False: []}
        for seed in range(args.seeds):
            for on in (True, False):   # alternating: both see the same load on the machine
                runs[on].append(one(op, hw, args.trials, seed, on))
        for on in (True, False):
            med = np.median(np.array(runs[on]), axis=0)
            print(f"{name:<26} {'stand-in' if on else 'roofline':<9} {med[0]:>8.3f} {med[1]:>12.3f} "
                  f"{med[2]:>8,.0f} {med[3]:>8,.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
