"""``run_network`` one layer after another and with its accelerator layers side by side, in one run.

    python benchmarks/bench_network_parallel.py [--depth 18] [--image 64] [--width 32] [--workers 2]
                                                [--backend verilator] [--config gemmini] [--repeats 1]

Builds a ResNet (benchmarks/onnx_models.py, random seeded weights, quantized by onnxruntime),
runs it whole with ``workers=1`` and with ``--workers``, alternating, and prints the wall time of
each (best of ``--repeats``), the speedup, and whether the outputs and every layer's cycles are
the same (they must be: the parallel run checks each layer against its op's reference).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import toolkit as tk  # noqa: E402
from benchmarks.onnx_models import quantize, resnet  # noqa: E402
from networks.network import AccelLayer  # noqa: E402
from toolkit.cli.net import random_inputs  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--depth", type=int, choices=(18, 50), default=18)
    p.add_argument("--image", type=int, default=64)
    p.add_argument("--width", type=int, default=32, help="channels of the first stage (ResNet's own: 64)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--backend", choices=("functional", "verilator"), default="verilator")
    p.add_argument("--config", default="gemmini")
    p.add_argument("--repeats", type=int, default=1)
    args = p.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        model = quantize(resnet(args.depth, image=args.image, width=args.width), Path(tmp) / "net.onnx")
        net = tk.from_onnx(model)
    inputs = random_inputs(net, 0)
    accel = sum(isinstance(layer, AccelLayer) for layer in net.layers)
    print(f"{net.name} at {args.image}x{args.image}, width {args.width}: {len(net.layers)} layers ({accel} on "
          f"the accelerator), {args.backend} on {args.config}, best of {args.repeats}")
    walls: dict[int, float] = {}
    results = {}
    for _ in range(args.repeats):
        for workers in (1, args.workers):
            start = time.perf_counter()
            results[workers] = tk.run_network(net, inputs, args.backend, hw=args.config, workers=workers,
                                              compare=False)
            walls[workers] = min(walls.get(workers, np.inf), time.perf_counter() - start)
    serial, parallel = results[1], results[args.workers]
    same = (all(np.array_equal(serial.outputs[k], parallel.outputs[k]) for k in serial.outputs)
            and [r.cycles for r in serial.layers] == [r.cycles for r in parallel.layers])
    print(f"{'workers':>8} {'wall s':>8} {'cycles':>14}")
    for workers, res in results.items():
        print(f"{workers:>8} {walls[workers]:>8.1f} {res.cycles or 0:>14,}")
    print(f"speedup {walls[1] / walls[args.workers]:.2f}x with {args.workers} workers; outputs and per-layer "
          f"cycles {'identical' if same else 'DIFFER'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
