"""Utilization of few-channel convs (the network stems) with and without packed taps.

    .venv/bin/python benchmarks/bench_pack_taps.py                       # RTL, gemmini preset
    .venv/bin/python benchmarks/bench_pack_taps.py --backend functional  # check only, no cycles

For each layer: the flat port of Gemmini's tiled_conv_auto (schedule "gemmini-flat"), the toolkit's default
without packing, and the default with packed taps (toolkit/conv/geometry.py). Every run
is checked bit-exact against the op's reference. Utilization = ideal / cycles, ideal
being the im2col GEMM's ceil-blocked cycles (toolkit.kinds.ideal_cycles).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

import toolkit as tk  # noqa: E402
from toolkit.conv.heuristic import default_conv_schedule, gemmini_conv_schedule  # noqa: E402
from networks.suite import load_suite  # noqa: E402
from toolkit.kinds import ideal_cycles  # noqa: E402

LAYERS = (("resnet50", "conv1"), ("mobilenetv2", "stem_3x3_s2"))


def schedules(op: tk.Op, hw: tk.HardwareConfig) -> dict[str, tk.Schedule]:
    return {"gemmini-flat": gemmini_conv_schedule(op, hw),
            "default, taps unpacked": default_conv_schedule(op, hw, pack_taps=False),
            "default, taps packed": default_conv_schedule(op, hw, pack_taps=True)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", default="verilator", choices=["verilator", "functional"])
    ap.add_argument("--preset", default="gemmini")
    args = ap.parse_args(argv)
    hw = tk.HardwareConfig.preset(args.preset)
    print(f"{'layer':<24} {'schedule':<24} {'cycles':>10} {'ideal':>9} {'util':>6} {'wall s':>7}")
    for suite, name in LAYERS:
        (layer,) = load_suite(suite).select([name])
        op = layer.op
        inputs = op.random_inputs(seed=0)
        want = op.reference(inputs)["output"]
        ideal = ideal_cycles(op, hw)
        for label, sched in schedules(op, hw).items():
            start = time.perf_counter()
            res = tk.run(tk.compile(op, hw, sched), inputs, backend=args.backend)
            np.testing.assert_array_equal(res.outputs["output"], want)
            util = f"{ideal / res.cycles:.3f}" if res.cycles else "-"
            print(f"{suite + '/' + name:<24} {label:<24} {res.cycles or '-':>10} {ideal:>9} {util:>6} "
                  f"{time.perf_counter() - start:>7.1f}", flush=True)


if __name__ == "__main__":
    main()
