"""ResNet-50 whole, with its stem's max pool apart and fused into conv1 (``tk.from_onnx(path, fuse_pool=True)``),
side by side in one run on the RTL (gemmini preset, Verilator), each checked against onnxruntime as the
network runner does.

    python benchmarks/bench_pool_fusion.py [--model resnet50] [--workers 1] [--out build/onnx]

Prints per import: the network's cycles, the stem's (conv1 and the pool, or the fused conv1), how its
layers compare with onnxruntime, and whether the two runs' outputs are equal. Then the stem's layers run
alone on the RTL with their DMA counters: the bytes the RTL wrote to DRAM and read from it, against the
size of conv1's unpooled output, which the fused conv1 never writes (no DRAM round trip).
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
from benchmarks.bench_networks import differing  # noqa: E402
from benchmarks.onnx_models import MODELS, build  # noqa: E402
from networks.network import AccelLayer  # noqa: E402
from toolkit.cli.net import random_inputs  # noqa: E402

GEMMS = ("conv2d", "depthwise", "matmul")


def stem(net: tk.Network) -> list[AccelLayer]:
    """The first conv and the max pool after it, or the first conv alone where it carries the pool."""
    accel = [layer for layer in net.layers if isinstance(layer, AccelLayer)]
    first = accel[0]
    return [first] + ([] if first.op.pool else [next(layer for layer in accel if layer.kind == "maxpool")])


def dma_of(layer: AccelLayer, hw: tk.HardwareConfig) -> dict[str, int]:
    """The layer's op alone on the RTL (default schedule, bit-exact against its reference): cycles, DMA bytes."""
    inputs = layer.op.random_inputs(seed=0)
    res = tk.run(tk.compile(layer.op, hw), inputs, backend="verilator", timeout=3600)
    for name, want in layer.op.reference(inputs).items():
        if not np.array_equal(res.outputs[name], want):
            raise AssertionError(f"{layer.name}: output {name} differs from the reference")
    return dict(cycles=int(res.cycles), written=int(res.counters["dma_bytes_written"]),
                read=int(res.counters["dma_bytes_read"]))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="resnet50", choices=list(MODELS))
    p.add_argument("--workers", type=int, default=1, help="accelerator layers run at once")
    p.add_argument("--out", default="build/onnx", help="where the quantized model is built and cached")
    args = p.parse_args(argv)
    hw = tk.HardwareConfig.preset("gemmini")
    path = build(args.model, args.out)
    nets = {label: tk.from_onnx(path, fuse_pool=fuse) for label, fuse in (("apart", False), ("fused", True))}
    inputs = random_inputs(nets["apart"], 0)
    runs = {label: tk.run_network(net, inputs, "verilator", hw=hw, workers=args.workers)
            for label, net in nets.items()}
    print(f"{args.model} on gemmini (Verilator, default schedules), checked against onnxruntime")
    print(f"{'pool':<6} {'layers':>6} {'cycles':>12} {'stem cycles':>12}  stem layers (cycles)  vs onnxruntime")
    for label, res in runs.items():
        rows = {row.name: row for row in res.layers}
        parts = [rows[layer.name] for layer in stem(nets[label])]
        print(f"{label:<6} {len(res.layers):>6} {res.cycles:>12,} {sum(r.cycles for r in parts):>12,}  "
              + ", ".join(f"{r.name} {r.kind} {r.cycles:,}" for r in parts)
              + f"  {differing(res, GEMMS)}; maxpool {differing(res, ('maxpool',))}")
    same = all(np.array_equal(runs["apart"].outputs[k], runs["fused"].outputs[k]) for k in runs["apart"].outputs)
    print(f"fused / apart: {runs['fused'].cycles / runs['apart'].cycles:.3f} of the cycles; outputs equal: {same}")
    conv1_out = stem(nets["apart"])[0].op.output_specs()
    print(f"the stem's layers alone on the RTL; conv1's unpooled output is {sum(np.prod(s) for s, _ in conv1_out.values()):,}"
          " bytes")
    for label, net in nets.items():
        for layer in stem(net):
            d = dma_of(layer, hw)
            print(f"  {label:<6} {layer.name:<16} {layer.kind:<8} {d['cycles']:>10,} cycles, DRAM written "
                  f"{d['written']:>9,} B, read {d['read']:>9,} B")


if __name__ == "__main__":
    main()
