"""``systolic explore``: tune a workload on every point of a hardware space; cycles, area, the Pareto front."""
from __future__ import annotations

import argparse
import dataclasses
from typing import Callable

from isa import HardwareConfig
from isa.config import ZERO_OK, ConfigError, check_field

from .common import OP_KINDS, add_op_args, add_report_args, hardware, op_from_args
from .errors import non_negative_int, output_file, positive_int, seconds, seed

SPACE_FIELDS = tuple(f.name for f in dataclasses.fields(HardwareConfig) if f.name != "name")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "explore", help="co-design: tune a workload on each hardware point, cycles (RTL) against area (Yosys)",
        description="For every combination of the hardware values given (over --config), build the RTL, "
                    "synthesize it with Yosys for its area (SRAMs from a documented model), tune the workload's "
                    "schedules with --trials trials per task, and report cycles, area and the Pareto front. "
                    "Records go in --db; rerunning a killed command resumes it.",
        epilog="example: systolic explore matmul --m 256 --n 256 --k 256 --dim 8 16 --sp-kib 64 256 --trials 20 "
               "--plot pareto.png --csv points.csv")
    add_op_args(p, kinds=(*OP_KINDS, "MODEL.onnx"))
    g = p.add_argument_group("the hardware space (each a list of values; a field not named keeps --config's)")
    for name in SPACE_FIELDS:   # the SoC's too (isa.config.TIMING): the L2, DRAM, the host's cost
        g.add_argument(f"--{name.replace('_', '-')}", dest=f"space_{name}", nargs="+", metavar="N",
                       type=space_value(name))
    p.add_argument("--trials", type=positive_int, default=20, help="tuning trials per task and point (default 20)")
    p.add_argument("--db", default="explore.db", type=output_file, help="SQLite tuning database (default explore.db)")
    p.add_argument("--backend", choices=("verilator", "stand-in"), default="verilator",
                   help="cycle source: verilator (RTL) or stand-in (analytical model, NOT RTL; for quick trials)")
    p.add_argument("--workers", type=positive_int, default=None, help="local measuring processes (default: CPUs)")
    p.add_argument("--scheduler", metavar="ADDR",
                   help="Dask scheduler address (tcp://host:8786) to measure and synthesize on")
    p.add_argument("--seed", type=seed, default=0, help="seed of the search and the inputs")
    p.add_argument("--timeout", type=seconds, default=600.0, help="seconds per candidate (default 600)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_report_args(p, "explore", "Pareto plot of cycles against area")
    p.set_defaults(func=cmd_explore)


def space_value(name: str) -> Callable[[str], int]:
    """The type of --NAME's values: an integer that some HardwareConfig can take as its field ``name``
    (isa.config.check_field), so that a value no point could use stops the command before any work."""
    number = non_negative_int if name in ZERO_OK else positive_int

    def parse(text: str) -> int:
        value = number(text)
        try:
            check_field(name, value)
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return value
    return parse


def cmd_explore(args: argparse.Namespace) -> int:
    from networks.explore import explore
    from networks.explore_report import format_table, plot, write_csv

    space = {name: getattr(args, f"space_{name}") for name in SPACE_FIELDS if getattr(args, f"space_{name}")}
    if not space:
        raise ValueError("name at least one hardware field to explore, e.g. --dim 8 16 --sp-kib 64 256")
    if args.op.endswith(".onnx"):
        from networks.onnx_import import from_onnx
        workload = from_onnx(args.op)
    elif args.op in OP_KINDS:
        workload = op_from_args(args)
    else:
        raise ValueError(f"the workload {args.op!r} is no op kind ({', '.join(OP_KINDS)}) and no .onnx file")
    if args.backend == "stand-in":
        print("note: --backend stand-in times candidates with the analytical stand-in model, not the RTL")
    res = explore(workload, space, trials=args.trials, backend=args.backend, workers=args.workers,
                  scheduler=args.scheduler, db=args.db, base=hardware(args), progress=not args.quiet,
                  seed=args.seed, timeout=args.timeout)
    print(format_table(res))
    if args.csv:
        write_csv(res, args.csv)
        print(f"csv: {args.csv}")
    if args.plot:
        plot(res, args.plot)
        print(f"plot: {args.plot}")
    return 0 if any(p.fits for p in res.points) else 1
