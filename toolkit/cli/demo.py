"""``make demo``: tune one matmul on the cycle-accurate RTL for a short budget and set the
best schedule found beside the toolkit's default and Gemmini's own library (schedule="gemmini"),
each checked bit-exact against numpy."""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

import toolkit as tk
from toolkit.kinds import ideal_cycles


# Over 40 lines: a script: tune, then a table of the three schedules, printed in the order they run.
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--m", type=int, default=200)
    p.add_argument("--n", type=int, default=256)
    p.add_argument("--k", type=int, default=384)
    p.add_argument("--config", default="gemmini")
    p.add_argument("--trials", type=int, default=24, help="RTL simulations the tuner may spend")
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args(argv)

    hw = tk.HardwareConfig.resolve(args.config)
    op = tk.matmul(args.m, args.n, args.k, bias="row", activation="relu", scale=0.02)
    print(f"Tuning {op.key} on {hw.name} ({hw.dim}x{hw.dim}) with the cost-model tuner, "
          f"{args.trials} RTL simulations (the first run builds the Verilator model, about a minute)")
    with tempfile.TemporaryDirectory() as tmp:
        result = tk.tune(op, hw, trials=args.trials, backend="verilator", workers=args.workers,
                         db=Path(tmp) / "demo.db", seed=0)
    if result.schedule is None:
        print("no candidate ran successfully", file=sys.stderr)
        return 1

    inputs = op.random_inputs(seed=1)
    ref = op.reference(inputs)["C"]
    ideal = ideal_cycles(op, hw)
    cpu = tk.run(tk.compile(op, hw), inputs, backend="cpu")
    print(f"\n{'schedule':<9} {'tiles':>10} {'cycles':>10} {'util':>6} {'us @1GHz':>9}  bit-exact  knobs")
    rows = [("gemmini", tk.gemmini_schedule(op, hw)), ("default", tk.default_schedule(op, hw)),
            ("tuned", result.schedule)]
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
    print(f"\ntuned vs gemmini: {cycles['gemmini'] / cycles['tuned']:.2f}x fewer cycles, vs default "
          f"{cycles['default'] / cycles['tuned']:.2f}x; "
          f"ideal {ideal:,} cycles; CPU baseline (numpy BLAS) {cpu.wall_s * 1e6:.0f} us")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
