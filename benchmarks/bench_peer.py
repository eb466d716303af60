"""The model tuner against Optuna's TPE on real-size workloads, on the RTL, with the same trials.

    python benchmarks/bench_peer.py [--workloads matmul conv conv_1x1 bert_ffn] [--trials 32] [--seeds 0]
                                    [--workers 2] [--family auto|flat|loops|both]

For each workload neither search has records of (the default not seeded, no transfer), over one space
(``--family``: by default the family tk.tune searches, that of the default schedule; on the SoC preset
Gemmini's loops for all four):

- model: ``tk.tune(tuner="model")``, the toolkit's search, ``--workers`` candidates at a time;
- tpe: Optuna's TPESampler over each knob's value index, one candidate at a time. A point that does not
  fit (or fails) is told a penalty, twice the slowest cycles measured so far (before any, a failed trial),
  and is not counted as a trial, as benchmarks/bench_tuner_tables.py does; a point it has measured is
  told its cycles again, not re-measured.

Both measure on the verilator backend, each output checked bit-exact, with the tuner's cycle cap: a
candidate stops at CYCLE_CAP times the best cycles measured before it, and the search is told the cap, a
lower bound. The model's rule is per batch, and its first batch (unseeded here) runs uncapped; TPE caps
from its second candidate on. It prints each search's best cycles, model/TPE (below 1:
the model found faster schedules) and the default heuristic's cycles for scale (its output checked bit-exact too).
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import toolkit as tk  # noqa: E402
from benchmarks.bench_utilization import measure  # noqa: E402
from tuner.api import tune  # noqa: E402
from tuner.measure import run_candidates  # noqa: E402
from tuner.session import CYCLE_CAP  # noqa: E402
from tuner.space import Space  # noqa: E402
from tuner.union import UnionSpace, make_space  # noqa: E402
from toolkit.kinds import TUNE_FAMILIES  # noqa: E402

WORKLOADS = {   # real sizes the tables do not hold: a GEMM of 784 rows (28x28 pixels), ResNet-50's s2_3x3 and
    # its first expanding 1x1 conv, BERT-base's first feed-forward GEMM (128 tokens)
    "matmul": tk.matmul(784, 256, 512),
    "conv": tk.conv2d(1, 28, 28, 128, 128, kernel=3, padding=1, bias="channel", activation="relu", scale=0.0001),
    "conv_1x1": tk.conv2d(1, 56, 56, 64, 256, kernel=1, bias="channel", scale=0.001),
    "bert_ffn": tk.matmul(128, 768, 3072, bias="row", scale=0.001),
}


def tpe_best(op: tk.Op, hw: tk.HardwareConfig, space: Space | UnionSpace, trials: int, seed: int) -> int:
    """The best cycles Optuna's TPE finds in ``trials`` measured points."""
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed))
    told: dict[int, float] = {}
    best, penalty = math.inf, math.inf
    for _ in range(50 * trials):
        if len(told) >= trials:
            break
        trial = study.ask()
        p = space.index([trial.suggest_categorical(k, list(range(len(space.domains[k])))) for k in space.names])
        if p is not None and p not in told:
            cap = math.ceil(CYCLE_CAP * best) if math.isfinite(best) else None
            res = run_candidates(op.to_dict(), hw.as_dict(), [space[p].to_dict()], "verilator", 3600, cycle_limit=cap)[0]
            told[p] = float(res.cycles) if res.status in ("ok", "slow") else math.inf
            if res.ok:
                best = min(best, res.cycles)
                penalty = 2 * max(c for c in told.values() if math.isfinite(c))
        value = told.get(p, math.inf) if p is not None else math.inf
        if math.isfinite(value) or math.isfinite(penalty):
            study.tell(trial, value if math.isfinite(value) else penalty)
        else:   # nothing measured yet to scale a penalty by: a failed trial, which TPE leaves out
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
    if not math.isfinite(best):
        raise RuntimeError(f"TPE measured no point of {op} that ran in {trials} trials")
    return int(best)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workloads", nargs="+", choices=sorted(WORKLOADS), default=sorted(WORKLOADS))
    p.add_argument("--trials", type=int, default=32)
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--workers", type=int, default=2, help="the model tuner's measuring processes")
    p.add_argument("--tile-policy", default="pow2")
    p.add_argument("--family", choices=TUNE_FAMILIES, default="auto",
                   help="the schedules both search (default: the family of the default schedule, as tk.tune)")
    args = p.parse_args()
    hw = tk.HardwareConfig.preset("gemmini")
    print(f"{args.trials} trials, RTL (gemmini), default not seeded, cycle cap {CYCLE_CAP}, tiles {args.tile_policy}, "
          f"family {args.family}")
    print(f"{'workload':<8} {'seed':>4} {'default':>9} {'model':>9} {'tpe':>9} {'model/tpe':>9} {'model s':>8} "
          f"{'tpe s':>7}")
    for name in args.workloads:
        op = WORKLOADS[name]
        space = make_space(op, hw, args.family, tile_policy=args.tile_policy)
        default = measure(op, hw, tk.default_schedule(op, hw))
        for seed in args.seeds:
            start = time.perf_counter()
            with tempfile.TemporaryDirectory(prefix="bench-peer-") as tmp:
                model = tune(op, hw, trials=args.trials, backend="verilator", db=str(Path(tmp) / "r.db"),
                             workers=args.workers, seed=seed, progress=False, space=space, include_default=False,
                             transfer_learning=False).cycles
            mid = time.perf_counter()
            tpe = tpe_best(op, hw, space, args.trials, seed)
            end = time.perf_counter()
            print(f"{name:<8} {seed:>4} {default:>9,} {model:>9,} {tpe:>9,} {model / tpe:>9.3f} {mid - start:>8.0f} "
                  f"{end - mid:>7.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
