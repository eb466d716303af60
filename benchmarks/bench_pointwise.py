"""A suite's pointwise convs (ResNet-50's by default) under both of gemmini.h's calls, on the RTL (SoC preset): the
baseline as Gemmini's own networks run it.

The toolkit's ``schedule="gemmini"`` lowers every conv2d as gemmini.h's tiled_conv_auto (LOOP_CONV_WS). Gemmini's
own ResNet-50 (gemmini-rocc-tests 180c468, imagenet/resnet50.c, its direct-convolution build) calls tiled_conv_auto
for 20 of its 53 convs (the stem, the 16 3x3s, the 3 strided downsamples); the other 33, every 1x1 conv of stride 1,
go to tiled_matmul_nn_auto (LOOP_WS), the NHWC input read as the matrix it already is. tiled_matmul_nn_auto
(include/gemmini_nn.h:127) is tiled_matmul_auto with stride_A = K, stride_B = stride_D = stride_C = J, identity
mvin scales, repeating_bias, no full_C or low_D: the call toolkit/library/matmul.py ports. The two differ on
the SoC: LOOP_CONV_WS stores one 16-column block a mvout (16 bytes a DRAM row, each filling its 64-byte L2 block
from DRAM first), LOOP_WS up to max_block_len blocks (whole 64-byte blocks, which the L2 allocates without a fill).

For each 1x1 stride-1 conv of the suite (networks/suites/NAME.yaml) this runs, on the verilator backend, each output
held bit-exact to the conv's numpy reference:

  conv      schedule="gemmini" (tiled_conv_auto)
  matmul    schedule="gemmini-nn" (tiled_matmul_nn_auto: toolkit/library/pointwise.py, tiled_matmul_auto's tiles
            and words on the conv's matmul view, over the conv's own buffers)
  default   the toolkit's default schedule

and prints the suite's totals (each layer times its count): the library as the toolkit runs it, as Gemmini's own
networks run it (the other layers as schedule="gemmini"), and the default. (mobilenet.c makes the same choice for
its 35 pointwise convs: --suite mobilenetv2.) With --network, also the quantized ONNX
ResNet-50 (benchmarks/bench_networks.py's) whole on the RTL under the default, "gemmini" and "gemmini-nn".

    .venv/bin/python benchmarks/bench_pointwise.py [--suite resnet50] [--config gemmini] [--network]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import toolkit as tk  # noqa: E402
from networks.suite import Layer, load_suite, run_layer  # noqa: E402
from toolkit.library import is_pointwise  # noqa: E402

COLUMNS = {"conv": "gemmini", "matmul": "gemmini-nn", "default": None}   # column -> the schedule it runs


def cycles(layer: Layer, hw: tk.HardwareConfig, schedule: str | None) -> int:
    """The RTL's cycles of ``layer`` under ``schedule`` (networks.suite.run_layer: its outputs checked against
    numpy's); SystemExit where they differ."""
    res = run_layer(layer, hw, backend="verilator", schedule=schedule, cpu=False)
    if not res.exact:
        raise SystemExit(f"{layer.name} under {schedule or 'default'}: {res.note}")
    return int(res.cycles)


def network(hw: tk.HardwareConfig) -> None:
    """The quantized ONNX ResNet-50 whole on the RTL under each baseline; its outputs the same under each."""
    from benchmarks.bench_networks import build
    from toolkit.cli.net import random_inputs
    net = tk.from_onnx(build("resnet50", "build/onnx"))
    inputs = random_inputs(net, 0)
    runs = {s: tk.run_network(net, inputs, "verilator", hw=hw, schedule=s, compare=False)
            for s in ("default", "gemmini", "gemmini-nn")}
    first = runs["default"].outputs
    same = all(np.array_equal(r.outputs[k], first[k]) for r in runs.values() for k in first)
    print(f"\nthe ONNX ResNet-50 whole ({len(net.layers)} layers), outputs {'identical' if same else 'DIFFER'}:")
    for name, r in runs.items():
        print(f"  {name:<11} {r.cycles:>13,} cycles  ({r.cycles / runs['gemmini-nn'].cycles:.3f}x gemmini-nn's)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--suite", default="resnet50")
    p.add_argument("--config", default="gemmini", help="hardware preset (default gemmini: the SoC)")
    p.add_argument("--network", action="store_true", help="also run the ONNX ResNet-50 whole under each baseline")
    args = p.parse_args(argv)
    hw = tk.HardwareConfig.preset(args.config)
    suite = load_suite(args.suite)
    totals = dict.fromkeys(COLUMNS, 0)
    print(f"{'layer':<14} {'count':>5} {'conv':>11} {'matmul':>11} {'default':>11} {'conv/matmul':>12} "
          f"{'default/matmul':>15}")
    for layer in suite.layers:
        op = layer.op
        row = {name: cycles(layer, hw, schedule) for name, schedule in COLUMNS.items()
               if name != "matmul" or is_pointwise(op)}
        row.setdefault("matmul", row["conv"])   # gemmini-nn is gemmini here
        for name in totals:
            totals[name] += row[name] * layer.count
        if is_pointwise(op):
            print(f"{layer.name:<14} {layer.count:>5} {row['conv']:>11,} {row['matmul']:>11,} {row['default']:>11,} "
                  f"{row['conv'] / row['matmul']:>11.3f}x {row['default'] / row['matmul']:>14.3f}x", flush=True)
    print(f"\n{args.suite} whole (every layer x its count): conv, the library as the toolkit runs it; matmul, as "
          f"Gemmini's own networks run it (the other layers as conv); default, the toolkit's default on every layer:")
    for name, total in totals.items():
        print(f"  {name:<8} {total:>13,} cycles  ({total / totals['matmul']:.3f}x the matmul column's)")
    if args.network:
        network(hw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
