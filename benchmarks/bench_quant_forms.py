"""Every model in every form onnxruntime's quantizer writes, on the accelerator, against onnxruntime.

    python benchmarks/bench_quant_forms.py [--models resnet18 resnet50 mobilenetv2 bert] [--forms ...]
                                           [--backend verilator] [--config gemmini] [--out build/onnx]
                                           [--workers 1]

Each model of benchmarks/onnx_models.py is quantized by ``quantize_static`` in each form of
``quant_forms()`` (QDQ or QOperator; symmetric or asymmetric int8, uint8 activations, per-channel
weights, uint8 or asymmetric int8 weights) and of ``type_forms()`` (4-bit weights; 16-bit, 4-bit and float8
activations, 16-bit weights: float islands on the host), imported with ``tk.from_onnx`` and run whole with
``tk.run_network``. One row per model and form:

- ``off``: elements of the accelerator layers (conv, depthwise, matmul), of the host requantize
  epilogues and of the host QuantizeLinears that differ from onnxruntime on onnxruntime's own inputs,
  ``ties`` of those at a rounding tie of the float32 requantization, ``max``: the largest difference, in
  the layer's integer units;
- ``out dev``: the largest difference of the network's float outputs, in steps of the quantization they
  are dequantized from (its scale; float8 values apart for float8);
- ``cycles``: the accelerator's (None on the functional model);
- ``host``: layers that ran on the host (numpy), their wall time, and their share of the run's wall time;
  the host op kinds that ran most.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import ml_dtypes
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import toolkit as tk  # noqa: E402
from benchmarks.onnx_models import MODELS, build, quant_forms, type_forms  # noqa: E402
from networks.network import NetworkResult  # noqa: E402
from networks.ort_reference import session  # noqa: E402
from toolkit.cli.net import random_inputs  # noqa: E402

# the layers that round to integers: the accelerator's, the host's requantizations, and the QuantizeLinears of
# float islands (a 16-bit one is compared; onnxruntime cannot return 4-bit or float8 tensors)
ROUNDING = ("conv2d", "depthwise", "matmul", "host:Requantize", "host:QuantizeLinear")
HEADER = (f"{'model':12s} {'form':24s} {'layers':>6s} {'off':>7s} {'ties':>6s} {'max':>4s} {'out dev':>8s} "
          f"{'cycles':>13s} {'host':>5s} {'host_s':>7s} {'host%':>6s} {'wall_s':>7s}  host kinds")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    forms = [*quant_forms(), *type_forms()]
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    p.add_argument("--forms", nargs="+", default=forms, choices=forms)
    p.add_argument("--backend", choices=("functional", "verilator"), default="verilator")
    p.add_argument("--config", default="gemmini", help="a preset or a TOML file")
    p.add_argument("--out", default="build/onnx", help="where the quantized models are cached")
    p.add_argument("--workers", type=int, default=1, help="processes running the accelerator layers side by side")
    return p.parse_args(argv)


def _float8_ordinal(x: np.ndarray, scale: float) -> np.ndarray:
    """Each value's float8 code as a signed count of float8 values from 0 (codes are sign and magnitude)."""
    code = (np.asarray(x, np.float32) / np.float32(scale)).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    return np.where(code & 0x80, -(code & 0x7F).astype(np.int64), (code & 0x7F).astype(np.int64))


def output_steps(net: tk.Network, res: NetworkResult, inputs: dict[str, np.ndarray]) -> float:
    """The largest difference of the network's float outputs from onnxruntime's (unfused: exact QDQ
    arithmetic), in steps of the quantization they come from: its scale for integer types, float8 values
    apart for float8 (whose steps grow with the magnitude)."""
    sess = session(net.model.SerializeToString(), fuse=False)
    worst = 0.0
    for name, ref in zip([o.name for o in sess.get_outputs()], sess.run(None, inputs)):
        src = net.tensors[net.quantized_source(name)]
        ours = res.outputs[name]
        if src.dtype.startswith("float8"):
            steps = np.abs(_float8_ordinal(ours, src.scale) - _float8_ordinal(ref, src.scale)).max()
        else:
            steps = np.abs(ours.astype(np.float64) - ref).max() / src.scale
        worst = max(worst, float(steps))
    return worst


def row(model: str, form: str, net: tk.Network, res: NetworkResult, wall: float, out_steps: float) -> str:
    """One printed line: how far from onnxruntime, cycles, and what ran on the host."""
    exact = [r for r in res.layers if r.kind in ROUNDING and r.mismatches is not None]
    off = sum(r.mismatches for r in exact)
    ties = sum(r.ties or 0 for r in exact)
    worst = max((r.dev for r in exact if r.dev is not None), default=0.0)
    host = [r for r in res.layers if r.host_s is not None]
    host_s = sum(r.host_s for r in host)
    kinds = ", ".join(f"{k.removeprefix('host:')} x{n}" for k, n in Counter(r.kind for r in host).most_common(3))
    cycles = f"{res.cycles:,}" if res.cycles else "-"
    return (f"{model:12s} {form:24s} {len(net.layers):6d} {off:7d} {ties:6d} {worst:4.0f} {out_steps:8.2f} "
            f"{cycles:>13s} {len(host):5d} {host_s:7.2f} {100 * host_s / max(res.wall_s, 1e-9):5.1f}% "
            f"{wall:7.1f}  {kinds}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    hw = tk.HardwareConfig.resolve(args.config)
    print(f"{args.backend} backend, {hw.name} preset; off / ties / max over conv, depthwise, matmul, host "
          "requantize and host QuantizeLinear layers, on onnxruntime's inputs; out dev in steps of the output's quantization")
    print(HEADER)
    for model in args.models:
        for form in args.forms:
            try:
                path = build(model, args.out, form=form)
            except Exception as exc:  # noqa: BLE001  (onnxruntime's quantizer: its own errors, not ours)
                print(f"{model:12s} {form:24s} onnxruntime's quantize_static fails: {type(exc).__name__}: "
                      f"{str(exc)[:120]}", flush=True)
                continue
            net = tk.from_onnx(path)
            t0 = time.perf_counter()
            inputs = random_inputs(net, 0)
            res = tk.run_network(net, inputs, args.backend, hw=hw, workers=args.workers)
            wall = time.perf_counter() - t0
            print(row(model, form, net, res, wall, output_steps(net, res, inputs)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
