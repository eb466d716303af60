"""``systolic bench``: run a workload suite layer by layer, check every output, report and plot."""
from __future__ import annotations

import argparse

from networks.suite import available_suites, format_table, load_suite, plot, run_suite, write_csv

from .common import add_layers_run_args, add_report_args, hardware
from .errors import positive_int


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bench", help="run a workload suite (ResNet-50, BERT, ...) and report utilization per layer",
        description="Compile and run every layer of a suite, check it bit-exact against numpy, and report MACs, "
                    "instructions, cycles, utilization (ideal / cycles), the roofline bound and wall times. "
                    "The functional backend has no cycles; the array occupancy (useful MACs over the MAC "
                    "slots the computes stream) needs none.",
        epilog="example: systolic bench resnet50 --backend functional --layers 's1_*' --csv r50.csv --plot r50.png")
    p.add_argument("suite", help=f"a suite ({', '.join(available_suites())}) or a YAML file")
    add_layers_run_args(p)
    p.add_argument("--db", default=None, help="tuning database for --schedule best")
    p.add_argument("--layers", metavar="PATTERN[,PATTERN]", help="only layers whose name matches a glob pattern")
    p.add_argument("--limit", type=positive_int, metavar="N", help="only the first N (selected) layers")
    add_report_args(p, "bench", "plot utilization per layer")
    p.add_argument("--no-cpu", action="store_true", help="skip the CPU backend's timing")
    p.set_defaults(func=cmd_bench)


def cmd_bench(args: argparse.Namespace) -> int:
    suite = load_suite(args.suite)
    hw = hardware(args)
    layers = [s for s in args.layers.split(",") if s] if args.layers else None
    results = run_suite(suite, hw, backend=args.backend, schedule=args.schedule, db=args.db, layers=layers,
                        limit=args.limit, cpu=not args.no_cpu, seed=args.seed, progress=not args.quiet)
    print(f"suite {suite.name} on {hw.name} ({args.backend}, {args.schedule} schedule)")
    print(format_table(results))
    if args.backend == "functional":
        print("the functional model has no timing: cycles and utilization need --backend verilator; "
              "occupancy = MACs on data / (rows the computes stream x dim^2) needs no cycles")
    if args.csv:
        write_csv(results, args.csv)
        print(f"csv: {args.csv}")
    if args.plot:
        plot(results, args.plot, f"{suite.name} on {hw.name} ({args.backend})")
        print(f"plot: {args.plot}")
    return 0 if all(r.exact for r in results) else 1

