"""``make demo``: tune one layer on the cycle-accurate RTL for a short budget and set the best
schedule found beside the toolkit's default and Gemmini's own library (schedule="gemmini"), each
checked bit-exact against numpy.

The layer is BERT-base's attention scores for one head, Q x K^T: 128 x 128 x 64 (sequence 128,
head size 64). It was picked by measuring on the RTL, with 24 trials each, candidates where a
hand heuristic is likely weakest (odd shapes, depthwise, small convs, attention matmuls): on the
others the default was already the best of the trials; here the search beats it. The seed fixes
the search (budgets are in candidates), so the demo finds the same schedule on any machine.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import toolkit as tk
from toolkit.kinds import ideal_cycles

WHY = ("BERT-base attention scores of one head (sequence 128, head size 64). Its reduction is short\n"
       "(K = 64: 4 blocks of 16), so each output tile computes briefly beside its loads and stores, and how\n"
       "the tiles overlap in the pipeline decides the cycles: the default heuristic ranks its tilings by a\n"
       "cycle estimate that models that overlap only roughly, and Gemmini's library tiles by what fits.")


# Over 40 lines: a script: tune, then a table of the three schedules, printed in the order they run.
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--m", type=int, default=128)
    p.add_argument("--n", type=int, default=128)
    p.add_argument("--k", type=int, default=64)
    p.add_argument("--config", default="gemmini")
    p.add_argument("--trials", type=int, default=24, help="RTL simulations the tuner may spend")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    start = time.perf_counter()
    hw = tk.HardwareConfig.resolve(args.config)
    op = tk.matmul(args.m, args.n, args.k, scale=0.02)
    print(f"Workload: {op.key}\n{WHY}\n")
    print(f"Tuning it on {hw.name} ({hw.dim}x{hw.dim}) with the cost-model tuner, {args.trials} RTL simulations, "
          f"seed {args.seed} (the first run builds the Verilator model, about a minute)")
    with tempfile.TemporaryDirectory() as tmp:
        result = tk.tune(op, hw, trials=args.trials, backend="verilator", workers=args.workers,
                         db=Path(tmp) / "demo.db", seed=args.seed)
    if result.schedule is None:
        print("no candidate ran successfully", file=sys.stderr)
        return 1

    inputs = op.random_inputs(seed=1)
    ref = op.reference(inputs)["C"]
    ideal = ideal_cycles(op, hw)
    cpu = tk.run(tk.compile(op, hw), inputs, backend="cpu")
    default = tk.default_schedule(op, hw)
    print(f"\n{'schedule':<9} {'tiles':>10} {'cycles':>10} {'util':>6} {'us @1GHz':>9}  bit-exact  knobs")
    rows = [("gemmini", tk.gemmini_schedule(op, hw)), ("default", default), ("tuned", result.schedule)]
    cycles = {}
    ok = True
    for name, sched in rows:
        res = tk.run(tk.compile(op, hw, sched), inputs, backend="verilator")
        exact = bool(np.array_equal(res.outputs["C"], ref))
        ok &= exact
        cycles[name] = res.cycles
        knobs = {k: v for k, v in sched.to_dict().items() if not k.startswith("tile_")}
        print(f"{name:<9} {f'{sched.tile_i}x{sched.tile_j}x{sched.tile_k}':>10} {res.cycles:>10,} "
              f"{ideal / res.cycles:>6.1%} {res.cycles / 1e3:>9.1f}  {'yes' if exact else 'NO':<9}  {knobs}")
    changed = {k: f"{v} -> {result.schedule.to_dict()[k]}" for k, v in default.to_dict().items()
               if result.schedule.to_dict()[k] != v}
    print(f"\ntuned vs gemmini: {cycles['gemmini'] / cycles['tuned']:.3f}x fewer cycles, vs default "
          f"{cycles['default'] / cycles['tuned']:.3f}x; ideal {ideal:,} cycles; "
          f"CPU baseline (numpy BLAS) {cpu.wall_s * 1e6:.0f} us")
    print(f"what the tuner changed from the default: {changed or 'nothing'}")
    print(f"demo took {time.perf_counter() - start:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
