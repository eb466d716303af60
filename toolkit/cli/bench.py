"""``systolic bench``: run a workload suite layer by layer, check every output, report and plot."""
from __future__ import annotations

import argparse

from networks.suite import available_suites, format_table, load_suite, plot, run_suite, write_csv

from .errors import output_file, positive_int, seed
from .common import add_hardware_args, hardware


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bench", help="run a workload suite (ResNet-50, BERT, ...) and report utilization per layer",
        description="Compile and run every layer of a suite, check it bit-exact against numpy, and report MACs, "
                    "instructions, cycles, utilization (ideal / cycles), the roofline bound and wall times. "
                    "The functional backend has no cycles; the array occupancy (useful MACs over the MAC "
                    "slots the computes stream) needs none.",
        epilog="example: systolic bench resnet50 --backend functional --layers 's1_*' --csv r50.csv --plot r50.png")
    p.add_argument("suite", help=f"a suite ({', '.join(available_suites())}) or a YAML file")
    p.add_argument("--backend", choices=("functional", "verilator"), default="functional")
    p.add_argument("--schedule", choices=("default", "gemmini", "gemmini-flat", "best"), default="default",
                   help="default (the toolkit's heuristic), gemmini (Gemmini's own library: its LOOP_WS / "
                        "LOOP_CONV_WS words, the baseline), gemmini-flat (the library's tiles in a flat "
                        "load-compute-store order) or best (best record in --db)")
    p.add_argument("--db", default=None, help="tuning database for --schedule best")
    add_hardware_args(p)
    p.add_argument("--layers", metavar="PATTERN[,PATTERN]", help="only layers whose name matches a glob pattern")
    p.add_argument("--limit", type=positive_int, metavar="N", help="only the first N (selected) layers")
    p.add_argument("--csv", nargs="?", const="bench.csv", type=output_file, metavar="OUT.csv",
                   help="write the table as CSV")
    p.add_argument("--plot", nargs="?", const="bench.png", type=output_file, metavar="OUT.png",
                   help="plot utilization per layer")
    p.add_argument("--no-cpu", action="store_true", help="skip the CPU backend's timing")
    p.add_argument("--seed", type=seed, default=0, help="seed of the random inputs")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
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

