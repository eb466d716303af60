"""ResNet-50's pointwise convs under both of gemmini.h's calls, on the RTL (SoC preset): the baseline as Gemmini's
own ResNet-50 runs it.

The toolkit's ``schedule="gemmini"`` lowers every conv2d as gemmini.h's tiled_conv_auto (LOOP_CONV_WS). Gemmini's
own ResNet-50 (gemmini-rocc-tests 180c468, imagenet/resnet50.c, its direct-convolution build) calls tiled_conv_auto
for 20 of its 53 convs (the stem, the 16 3x3s, the 3 strided downsamples); the other 33, every 1x1 conv of stride 1,
go to tiled_matmul_nn_auto (LOOP_WS), the NHWC input read as the matrix it already is. tiled_matmul_nn_auto
(include/gemmini_nn.h:127) is tiled_matmul_auto with stride_A = K, stride_B = stride_D = stride_C = J, identity
mvin scales, repeating_bias, no full_C or low_D: the call toolkit/library/matmul.py ports. The two differ on the SoC: LOOP_CONV_WS stores one 16-column
block a mvout (16 bytes a DRAM row, each filling its 64-byte L2 block from DRAM first), LOOP_WS up to
max_block_len blocks (whole 64-byte blocks, which the L2 allocates without a fill).

For each 1x1 stride-1 conv of networks/suites/resnet50.yaml this runs, on the verilator backend:

  conv      the conv2d op under schedule="gemmini" (tiled_conv_auto)
  matmul    the same layer as a matmul op (M = pixels, K = in_c, N = out_c, the conv's bias as a row bias, its
            epilogue) under schedule="gemmini" (tiled_matmul_auto's tiles, the words of tiled_matmul_nn_auto's
            call), fed the conv's own inputs; its output must equal the conv's numpy reference bit for bit
  default   the conv2d op under the toolkit's default schedule

and prints the suite's totals (each layer times its count): the library as the toolkit runs it, as resnet50.c
runs it (the other layers as tiled_conv_auto, the pool and the residual adds as the library), and the default.

    .venv/bin/python benchmarks/bench_pointwise.py [--suite resnet50] [--config gemmini]
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
from networks.suite import load_suite  # noqa: E402


def pointwise(op: tk.Op) -> bool:
    """A conv that resnet50.c runs as tiled_matmul_nn_auto: 1x1, stride 1, no padding, no pool."""
    return (op.KIND == "conv2d" and op.kernel == (1, 1) and op.stride == 1 and op.padding == 0
            and op.pool is None)


def as_matmul(op: tk.Op) -> tk.Op:
    """The pointwise conv ``op`` as the matmul resnet50.c hands gemmini.h (the same bytes in DRAM)."""
    return tk.matmul(op.batch * op.in_h * op.in_w, op.out_c, op.in_c, bias="row" if op.bias else None,
                     activation=op.activation, scale=op.scale, out_dtype=op.out_dtype, out_offset=op.out_offset)


def cycles(op: tk.Op, hw: tk.HardwareConfig, schedule: str | None, inputs: dict[str, np.ndarray],
           want: np.ndarray) -> int:
    """The RTL's cycles of ``op`` under ``schedule`` on ``inputs``; its one output must equal ``want``."""
    res = tk.run(tk.compile(op, hw, schedule), inputs, "verilator")
    (got,) = res.outputs.values()
    if not np.array_equal(got.reshape(want.shape), want):
        raise SystemExit(f"{op}: the RTL's output differs from the conv's numpy reference")
    return int(res.cycles)


def matmul_inputs(op: tk.Op, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The conv's inputs under the matmul's names: the NHWC input as A (pixels x in_c), the 1x1 HWIO weights as
    B (in_c x out_c), the bias as the row bias."""
    out = {"A": inputs["input"].reshape(-1, op.in_c), "B": inputs["weight"].reshape(op.in_c, op.out_c)}
    return out | ({"bias": inputs["bias"]} if op.bias else {})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--suite", default="resnet50")
    p.add_argument("--config", default="gemmini", help="hardware preset (default gemmini: the SoC)")
    args = p.parse_args(argv)
    hw = tk.HardwareConfig.preset(args.config)
    suite = load_suite(args.suite)
    totals = {"conv": 0, "matmul": 0, "default": 0}
    print(f"{'layer':<14} {'count':>5} {'conv':>11} {'matmul':>11} {'default':>11} {'conv/matmul':>12} "
          f"{'default/matmul':>15}")
    for layer in suite.layers:
        op = layer.op
        inputs = op.random_inputs(0)
        (want,) = op.reference(inputs).values()
        row = {"conv": cycles(op, hw, "gemmini", inputs, want), "default": cycles(op, hw, None, inputs, want)}
        row["matmul"] = cycles(as_matmul(op), hw, "gemmini", matmul_inputs(op, inputs), want) if pointwise(op) \
            else row["conv"]
        for name in totals:
            totals[name] += row[name] * layer.count
        if pointwise(op):
            print(f"{layer.name:<14} {layer.count:>5} {row['conv']:>11,} {row['matmul']:>11,} {row['default']:>11,} "
                  f"{row['conv'] / row['matmul']:>11.3f}x {row['default'] / row['matmul']:>14.3f}x", flush=True)
    print(f"\n{args.suite} whole (every layer x its count): conv, the library as the toolkit runs it; matmul, as "
          f"resnet50.c runs it (the other layers as conv); default, the toolkit's default on every layer:")
    for name, total in totals.items():
        print(f"  {name:<8} {total:>13,} cycles  ({total / totals['matmul']:.3f}x the matmul column's)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
