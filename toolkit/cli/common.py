"""Arguments shared by the subcommands: the workload, the hardware, the schedule, a run's report."""
from __future__ import annotations

import argparse
import dataclasses

from isa import PRESETS, ConfigError, HardwareConfig

from ..ops import Op
from .errors import output_file, seed

OP_KINDS = ("matmul", "conv2d", "depthwise", "resadd", "maxpool", "layernorm", "softmax", "igelu")
LAYER_SCHEDULES = ("default", "gemmini", "gemmini-nn", "gemmini-flat", "best")


def add_hardware_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default="gemmini", metavar="PRESET|FILE.toml",
                   help=f"hardware: a preset ({', '.join(PRESETS)}) or a TOML file (default: gemmini, inside "
                        "the SoC FireSim builds for it; gemmini-alone: the same accelerator alone)")



def add_host_arg(p: argparse.ArgumentParser) -> None:
    """--host-cmd-cycles over --config's (``hardware`` applies it): for the commands that run one program."""
    p.add_argument("--host-cmd-cycles", type=int, metavar="N",
                   help="the host's cycles per command on the SoC, instead of the config's (gemmini: "
                        f"{PRESETS['gemmini'].host_cmd_cycles}, derived from the code exported C issues; "
                        "0: free issue)")


def add_op_args(p: argparse.ArgumentParser, kinds: tuple[str, ...] = OP_KINDS) -> None:
    """The op as a positional kind plus its sizes; unused sizes are ignored. ``kinds`` other than
    OP_KINDS name what else the command takes there (explore: a model file), checked by the command."""
    if kinds == OP_KINDS:
        p.add_argument("op", choices=OP_KINDS, help="the tensor op")
    else:
        p.add_argument("op", metavar="|".join(kinds), help="the tensor op, or " + ", ".join(kinds[len(OP_KINDS):]))
    g = p.add_argument_group("matmul sizes (C[M,N] = A[M,K] @ B[K,N]); layernorm / softmax / igelu: rows --m, columns --n")
    g.add_argument("--m", type=int, default=64, help="rows of A and C (default 64)")
    g.add_argument("--n", type=int, default=64, help="columns of B and C (default 64)")
    g.add_argument("--k", type=int, default=64, help="columns of A, rows of B (default 64)")
    g = p.add_argument_group("conv2d / depthwise / resadd / maxpool sizes (NHWC tensors, HWIO weights)")
    g.add_argument("--batch", type=int, default=1)
    g.add_argument("--in-h", type=int, default=14)
    g.add_argument("--in-w", type=int, default=14)
    g.add_argument("--in-c", type=int, default=16, help="input channels (depthwise, resadd, maxpool: channels)")
    g.add_argument("--out-c", type=int, default=16)
    g.add_argument("--kernel", type=int, nargs=2, default=(3, 3), metavar=("KH", "KW"))
    g.add_argument("--stride", type=int, default=1)
    g.add_argument("--padding", type=int, default=1)
    g.add_argument("--a-scale", type=float, default=1.0, help="resadd: load scale of A")
    g.add_argument("--b-scale", type=float, default=1.0, help="resadd: load scale of B")
    g = p.add_argument_group("epilogue")
    g.add_argument("--bias", choices=("row", "full", "channel"), default=None,
                   help="matmul: row (N) or full (MxN) int32 bias; conv2d: channel")
    g.add_argument("--relu", action="store_true", help="apply ReLU to the output")
    g.add_argument("--igelu", action="store_true", help="matmul: the normalization unit's I-GELU at --input-scale")
    g.add_argument("--input-scale", type=float, default=0.05,
                   help="softmax, igelu, matmul --igelu: the real value of one input step (default 0.05, gemmini.h's)")
    g.add_argument("--scale", type=float, default=1.0, help="float32 output scale (default 1.0)")
    g.add_argument("--out-dtype", choices=("int8", "int32"), default="int8")
    p.add_argument("--allow-large", action="store_true",
                   help="lower an op past the size limits (10M instructions, 1 GiB of DRAM)")
    add_hardware_args(p)


def op_from_args(args: argparse.Namespace) -> Op:
    import toolkit as tk
    if args.igelu and (args.op != "matmul" or args.relu):
        raise ValueError("--igelu is a matmul's activation, instead of --relu")
    act = "igelu" if args.igelu else "relu" if args.relu else "none"
    epilogue = dict(bias=args.bias, activation=act, scale=args.scale, out_dtype=args.out_dtype)
    window = dict(kernel=tuple(args.kernel), stride=args.stride, padding=args.padding)
    nhwc = (args.batch, args.in_h, args.in_w, args.in_c)
    if args.op == "matmul":
        return tk.matmul(args.m, args.n, args.k, **epilogue, **({"input_scale": args.input_scale} if args.igelu else {}))
    if args.op in ("layernorm", "softmax", "igelu"):
        return _norm_from_args(args)
    if args.op == "conv2d":
        return tk.conv2d(*nhwc, args.out_c, **window, **epilogue)
    if args.op == "depthwise":
        return tk.depthwise_conv2d(*nhwc, **window, **epilogue)
    if args.bias and args.op in ("resadd", "maxpool"):
        raise ValueError(f"--bias does not apply to {args.op}")
    if args.op == "resadd":
        return tk.resadd(*nhwc, a_scale=args.a_scale, b_scale=args.b_scale, activation=act, scale=args.scale,
                         out_dtype=args.out_dtype)
    if args.relu or args.scale != 1.0 or args.out_dtype != "int8":
        raise ValueError("maxpool has no epilogue: --relu, --scale and --out-dtype do not apply")
    return tk.maxpool2d(*nhwc, **window)


def _norm_from_args(args: argparse.Namespace) -> Op:
    import toolkit as tk
    if args.bias or args.relu or args.out_dtype != "int8":
        raise ValueError(f"{args.op} stores int8 rows through the normalization unit: --bias, --relu and "
                         "--out-dtype do not apply")
    if args.op == "layernorm":
        return tk.layernorm(args.m, args.n, scale=args.scale)
    if args.op == "igelu":
        return tk.igelu(args.m, args.n, input_scale=args.input_scale, scale=args.scale)
    return tk.softmax(args.m, args.n, input_scale=args.input_scale, scale=args.scale)


def add_schedule_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--schedule", default="default", metavar="default|best|FILE.json",
                   help="default (library heuristic), best (best record in --db) or a JSON file of knobs")
    p.add_argument("--db", default=None, help="tuning database for --schedule best")


def add_layers_run_args(p: argparse.ArgumentParser) -> None:
    """What bench and net share to run many layers: backend, hardware, every layer's schedule, the
    inputs' seed and the progress bars."""
    p.add_argument("--backend", choices=("functional", "verilator"), default="functional")
    add_hardware_args(p)
    p.add_argument("--schedule", choices=LAYER_SCHEDULES, default="default",
                   help="schedule of every layer: default (the toolkit's heuristic), gemmini (Gemmini's own "
                        "library: its LOOP_WS / LOOP_CONV_WS words, the baseline), gemmini-nn (the library as "
                        "Gemmini's own ResNet-50 and MobileNet call it: 1x1 stride-1 convs as tiled_matmul_nn_auto), "
                        "gemmini-flat (the library's tiles in a flat load-compute-store order) or best (best record "
                        "in --db)")
    p.add_argument("--seed", type=seed, default=0, help="seed of the random inputs")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def add_report_args(p: argparse.ArgumentParser, stem: str, plot_help: str) -> None:
    """The per-layer table as CSV and its plot, each to a file (``stem``.csv / .png when named bare)."""
    p.add_argument("--csv", nargs="?", const=f"{stem}.csv", type=output_file, metavar="OUT.csv",
                   help="write the per-layer table as CSV")
    p.add_argument("--plot", nargs="?", const=f"{stem}.png", type=output_file, metavar="OUT.png", help=plot_help)


def hardware(args: argparse.Namespace) -> HardwareConfig:
    hw = HardwareConfig.resolve(args.config)
    cycles = getattr(args, "host_cmd_cycles", None)
    if cycles is None:
        return hw
    try:
        return dataclasses.replace(hw, host_cmd_cycles=cycles)
    except ConfigError as exc:
        raise ConfigError(f"--host-cmd-cycles {cycles}: {exc}") from None
