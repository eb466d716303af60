"""``make demo``: tune one convolution of a real network on the cycle-accurate RTL of the Gemmini SoC
model for a short budget, and set the best schedule found beside the toolkit's default and Gemmini's
own library (schedule="gemmini", and "gemmini-nn" as Gemmini's own networks call it), each checked
bit-exact against numpy.

The layer is MobileNetV2's project_384_64, a dense 1x1 conv (the mobilenetv2 suite). It was picked by
tuning four of MobileNetV2's pointwise convs on the RTL of the SoC preset, 16 trials at seed 0, when the
default was the library's tiled_conv_auto: expand_64_384 reached 1.08x, expand_32_192 1.32x,
project_576_96 1.32x, and project_384_64 1.34x (32,193 cycles down to 24,007). Its default is now
tiled_matmul_nn_auto's loops (25,326 cycles), which the tuner's space of the layer's loops searches.
The seed fixes the search (budgets are in candidates), so the demo finds the same schedule on any machine.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import toolkit as tk
from networks.suite import load_suite
from toolkit.floor import floor
from toolkit.kinds import gemmini_nn_schedule
from toolkit.schedule import Schedule

LAYER = "project_384_64"

WHY = ("A 1x1 projection: 384 input channels reduce to 64 output channels over a 14x14 image. Its MACs keep the\n"
       "16x16 array busy {compute:,} cycles at the least, and its inputs and weights need {dram_read:,} cycles of\n"
       "the SoC's 8 B/cycle DRAM channel, so it is fast only where loads overlap computes. Gemmini's library\n"
       "(tiled_conv_auto, schedule=\"gemmini\") picks the largest tiles that fit half the scratchpad and the\n"
       "accumulator: two tiles, each all 196 pixels x 32 output channels x all 384 input channels, and its\n"
       "loops give the array little to do while a tile's inputs stream in. Gemmini's own MobileNet runs the\n"
       "layer as the matmul it is (tiled_matmul_nn_auto, schedule=\"gemmini-nn\"), and so does the default\n"
       "here, with the same tiles; the tuner searches that call's tiles and the walk over them.")


def workload(layer: str = LAYER) -> tk.Op:
    """The demo's layer, from the mobilenetv2 suite."""
    return load_suite("mobilenetv2").select([layer])[0].op


def tune(op: tk.Op, hw: tk.HardwareConfig, args: argparse.Namespace) -> Schedule | None:
    print(f"Tuning it on {hw.name} ({hw.dim}x{hw.dim}, the SoC model: a host that issues each command and "
          f"an L2 and DRAM behind the DMA)\nwith the cost-model tuner, {args.trials} RTL simulations, seed "
          f"{args.seed} (the first run builds the Verilator model, about a minute)")
    with tempfile.TemporaryDirectory() as tmp:
        return tk.tune(op, hw, trials=args.trials, backend="verilator", workers=args.workers,
                       db=Path(tmp) / "demo.db", seed=args.seed).schedule


def compare(op: tk.Op, hw: tk.HardwareConfig, low: int,
            rows: list[tuple[str, Schedule]]) -> tuple[dict[str, tuple[int, int]], bool]:
    """Run each schedule on the RTL and print a row: cycles, the floor's (``low``) share, the array's waiting
    cycles (those it multiplies nothing), DRAM bytes read, and whether the output is bit-exact."""
    inputs = op.random_inputs(seed=1)
    ref = op.reference(inputs)
    print(f"\n{'schedule':<10} {'cycles':>8} {'floor/cyc':>9} {'array waits':>11} {'DRAM read':>9}  bit-exact  knobs")
    measured, ok = {}, True
    for name, sched in rows:
        res = tk.run(tk.compile(op, hw, sched), inputs, backend="verilator")
        exact = all(np.array_equal(res.outputs[out], want) for out, want in ref.items())
        ok &= exact
        waits = res.cycles - res.counters["mesh_busy"]
        measured[name] = (res.cycles, waits)
        print(f"{name:<10} {res.cycles:>8,} {low / res.cycles:>9.1%} {waits:>11,} "
              f"{res.counters['dram_bytes_read']:>9,}  {'yes' if exact else 'NO':<9}  {sched.to_dict()}")
    return measured, ok


def changes(default: Schedule, tuned: Schedule) -> dict[str, str]:
    """The knobs ``tuned`` sets otherwise than ``default``: each changed value, or, where the two are different
    calls of gemmini.h, the call and all of the tuned one's knobs."""
    old, new = default.to_dict(), tuned.to_dict()
    if old.get("call") != new.get("call"):
        return {k: f"{old.get(k, '-')} -> {v}" if k == "call" else str(v) for k, v in new.items()}
    return {k: f"{v} -> {new[k]}" for k, v in old.items() if new.get(k) != v}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layer", default=LAYER, help=f"a layer of the mobilenetv2 suite (default {LAYER})")
    p.add_argument("--config", default="gemmini", help="hardware preset or TOML file (default gemmini, the SoC)")
    p.add_argument("--trials", type=int, default=16, help="RTL simulations the tuner may spend (default 16)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    start = time.perf_counter()
    hw = tk.HardwareConfig.resolve(args.config)
    try:
        op = workload(args.layer)
    except ValueError as exc:
        p.error(f"--layer: {exc}")
    bounds = floor(op, hw)
    print(f"Workload: MobileNetV2's {args.layer}, {op.key}")
    if args.layer == LAYER:
        print(WHY.format(compute=bounds.compute, dram_read=bounds.dram_read))
    print(f"Its floor: {bounds.cycles:,} cycles ({bounds.bound}-bound)\n")
    tuned = tune(op, hw, args)
    if tuned is None:
        print("no candidate ran successfully", file=sys.stderr)
        return 1
    default = tk.default_schedule(op, hw)
    rows = [("gemmini", tk.gemmini_schedule(op, hw)), ("gemmini-nn", gemmini_nn_schedule(op, hw)),
            ("default", default), ("tuned", tuned)]
    measured, ok = compare(op, hw, bounds.cycles, rows)
    cycles = {name: c for name, (c, _) in measured.items()}
    print(f"\ntuned vs gemmini: {cycles['gemmini'] / cycles['tuned']:.3f}x fewer cycles, vs gemmini-nn "
          f"{cycles['gemmini-nn'] / cycles['tuned']:.3f}x, vs default {cycles['default'] / cycles['tuned']:.3f}x; "
          f"tuned is {cycles['tuned'] / bounds.cycles:.2f}x its floor")
    print(f"what the tuner changed from the default: {changes(default, tuned) or 'nothing'}")
    print(f"the array waited {measured['tuned'][1]:,} cycles under the tuned schedule, "
          f"{measured['default'][1]:,} under the default: the waits are what tiling can win here")
    print(f"demo took {time.perf_counter() - start:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
