"""``systolic net``: import a quantized ONNX model, run it whole, compare with onnxruntime, report, tune."""
from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from networks.network import Network, NetworkResult
from networks.network_report import format_table, plot, write_csv
from networks.network_run import check_finite, run_network
from networks.onnx_import import from_onnx

from .common import add_layers_run_args, add_report_args, hardware
from .errors import output_file, positive_float, positive_int

EXACT_KINDS = ("conv2d", "depthwise", "matmul")   # layers whose arithmetic is onnxruntime's


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "net", help="run a quantized ONNX model whole on the accelerator, against onnxruntime",
        description="Import a model quantized by onnxruntime's quantize_static (QDQ or QOperator; int8 or uint8 "
                    "activations, with or without zero points; per-tensor or per-channel weight scales), "
                    "run every layer on the accelerator (host ops in numpy), compare each layer and the outputs "
                    "with onnxruntime on the same input, and report cycles, utilization, bound and share per "
                    "layer. --tune N tunes the network's unique tasks with one budget of N trials.",
        epilog="example: systolic net resnet18.onnx --backend verilator --csv r18.csv --plot r18.png --tune 200")
    p.add_argument("model", help="a .onnx file")
    add_layers_run_args(p)
    p.add_argument("--db", default="tuning.db", type=output_file, help="tuning database (for --schedule best and --tune)")
    p.add_argument("--fuse-pool", action="store_true",
                   help="fold Conv -> (Relu) -> MaxPool into the conv's store unit (no DRAM round trip; slower today: "
                        "a pooled conv runs under Gemmini's library tiling)")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                   help="an input array (default: seeded standard-normal float32 for each graph input)")
    add_report_args(p, "net", "bar chart of time per layer")
    p.add_argument("--tune", type=positive_int, metavar="N", help="tune the network with a budget of N trials, then rerun it")
    p.add_argument("--tune-backend", choices=("verilator", "stand-in"), default="verilator",
                   help="cycle source while tuning (stand-in: the analytical model, NOT RTL)")
    p.add_argument("--workers", type=positive_int, default=None,
                   help="processes that run the layers side by side and measure while tuning (default: the CPU "
                        "count on verilator; 1 runs the layers one after another)")
    p.add_argument("--tile-policy", choices=("balanced", "pow2", "all"), default="pow2",
                   help="tile sizes in the tuner's spaces (default pow2: balanced spaces of large convs take "
                        "minutes each to enumerate)")
    p.add_argument("--clock-ghz", type=positive_float, default=1.0, help="clock for latencies (default 1 GHz)")
    p.add_argument("--no-compare", action="store_true", help="skip onnxruntime")
    p.set_defaults(func=cmd_net)


def random_inputs(net: Network, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {name: rng.standard_normal(info.shape).astype(info.dtype) for name, info in net.inputs.items()}


def _inputs(net: Network, args: argparse.Namespace) -> dict[str, np.ndarray]:
    inputs = random_inputs(net, args.seed)
    for spec in args.input:
        name, eq, path = spec.partition("=")
        if not eq:
            raise ValueError(f"--input {spec!r} must be NAME=FILE.npy")
        inputs[name] = np.load(path, allow_pickle=False)
        check_finite(f"--input {spec}", inputs[name])
    return inputs


def _run(net: Network, inputs: dict[str, np.ndarray], args: argparse.Namespace, schedule: str, **kw: Any
         ) -> NetworkResult:
    return run_network(net, inputs, args.backend, hw=hardware(args), schedule=schedule, db=args.db,
                       compare=not args.no_compare, progress=not args.quiet, workers=args.workers, **kw)


def cmd_net(args: argparse.Namespace) -> int:
    net = from_onnx(args.model, fuse_pool=args.fuse_pool, hw=hardware(args))
    print(net.summary())
    inputs = _inputs(net, args)
    res = _run(net, inputs, args, args.schedule)
    print(format_table(res, args.clock_ghz))
    if args.csv:
        write_csv(res, args.csv)
        print(f"csv: {args.csv}")
    if args.plot:
        plot(res, args.plot, args.clock_ghz)
        print(f"plot: {args.plot}")
    if args.tune:
        from networks.network_tune import tune_network
        if args.tune_backend == "stand-in":
            print("note: tuning with the stand-in analytical model, not the RTL")
        tuning = tune_network(net, hardware(args), args.tune, db=args.db, backend=args.tune_backend,
                              workers=args.workers, progress=not args.quiet, tile_policy=args.tile_policy)
        print(tuning.summary())
        tuned = _run(net, inputs, args, "best")
        print(totals_line("tuned", tuned, res))
        if res.cycles and tuned.cycles:
            base = _run(net, inputs, args, "gemmini")
            print(totals_line("vs gemmini", tuned, base))
    bad = [r.name for r in res.layers if r.kind in EXACT_KINDS and r.mismatches and r.ties != r.mismatches]
    if bad:
        print(f"NOT bit-exact with onnxruntime (beyond rounding ties): {', '.join(bad)}")
        return 1
    return 0


def totals_line(label: str, new: NetworkResult, base: NetworkResult) -> str:
    if not new.cycles or not base.cycles:
        return f"  {label}: no cycles on the {new.backend} backend"
    return (f"  {label}: {new.cycles:,} cycles against {base.cycles:,} ({base.schedule}): "
            f"{base.cycles / new.cycles:.3f}x end to end")
