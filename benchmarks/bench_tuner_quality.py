"""The tuner's quality claims, checked (exit status 1 when one fails); they took too long for a test.

On matmul 12x8x20 on the tiny preset (9,600 points, enumerated with the STAND-IN analytical model,
not the RTL), 64 trials of the model tuner come within 3% of the optimum (the annealing visits
~1,000 points in 64 trials; which seed lands exactly on it varies), at least as good as random
search with the same budget and as the default schedule. tests/test_tuner.py keeps a fast test of
the loop's mechanism.

    .venv/bin/python benchmarks/bench_tuner_quality.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import toolkit as tk  # noqa: E402
from simulators.stand_in import estimate  # noqa: E402
from toolkit.kinds import lower  # noqa: E402
from tuner.api import tune  # noqa: E402
from tuner.space import Space  # noqa: E402

TINY = tk.HardwareConfig.preset("tiny")
TRIALS = 64
NEAR = 1.03   # within 3% of the enumerated optimum


def main() -> int:
    op = tk.matmul(12, 8, 20)
    space = Space(op, TINY)
    best = min(estimate(lower(op, s, TINY))[0] for s in space)
    common = dict(trials=TRIALS, backend="stand-in", workers=2, seed=0, progress=False, space=space)
    model = tune(op, TINY, tuner="model", tuner_options={"feature_budget": 128}, **common)
    rand = tune(op, TINY, tuner="random", **common)
    claims = {f"model within {NEAR - 1:.0%} of the optimum {best:,.0f}": model.cycles <= NEAR * best,
              f"model ({model.cycles:,}) no worse than random ({rand.cycles:,})": model.cycles <= rand.cycles,
              f"model no worse than the default ({model.default_cycles:,})": model.cycles <= model.default_cycles}
    print(f"{op.key} on {TINY.name}, {len(space):,} points, {TRIALS} trials, stand-in cycles (not RTL)")
    for claim, holds in claims.items():
        print(f"  {'ok  ' if holds else 'FAIL'} {claim}")
    return 0 if all(claims.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
