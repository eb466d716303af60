"""Co-design sweep: one workload tuned on every point of a hardware space, cycles from the RTL
(Verilator), area from Yosys synthesis plus the SRAM model; prints the points, the front, the
largest tuned/default gains and the wall time by stage.

    .venv/bin/python benchmarks/bench_explore.py                          # matmul 64^3, dim 4 8 x sp 4 16 KiB
    .venv/bin/python benchmarks/bench_explore.py --dim 8 16 32 --sp-kib 128 256 --base gemmini \
        --m 256 --n 256 --k 256 --trials 8
    .venv/bin/python benchmarks/bench_explore.py --workload resnet50-3x3 --base gemmini \
        --dim 8 16 --sp-kib 64 256 --acc-kib 16 32 64 --trials 4     # the 12-point sweep of docs/results.md

Builds and syntheses are cached (~/.cache/systolic), so a second run costs only the tuning, and
the tuning resumes from --db.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import toolkit as tk  # noqa: E402
from networks.explore import explore  # noqa: E402
from networks.explore_report import format_table, plot, write_csv  # noqa: E402
from networks.suite import load_suite  # noqa: E402


def workload(args: argparse.Namespace) -> tk.Op | list[tk.Op]:
    if args.workload == "matmul":
        return tk.matmul(args.m, args.n, args.k, bias="row", activation="relu", scale=0.05)
    if args.workload == "depthwise":
        # MobileNet's depthwise 3x3 stride 1 over 28x28x32 (the demo's layer before it moved to a dense conv)
        return tk.depthwise_conv2d(1, 28, 28, 32, bias="channel", activation="relu", scale=0.05)
    layers = load_suite("resnet50").select(["s?_3x3"])
    return [layer.op for layer in layers for _ in range(layer.count)]   # a list holds an op once per run


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", default="tiny", help="preset the space varies (default tiny)")
    p.add_argument("--dim", type=int, nargs="+", default=[4, 8])
    p.add_argument("--sp-kib", type=int, nargs="+", default=[4, 16])
    p.add_argument("--workload", choices=("matmul", "resnet50-3x3", "depthwise"), default="matmul",
                   help="a matmul of --m --n --k; ResNet-50's four stride-1 3x3 convs (s1_3x3 .. s4_3x3 of the "
                        "resnet50 suite), each counted as often as the network runs it; or a MobileNet-style "
                        "depthwise conv, 3x3 over 28x28x32 (default matmul)")
    p.add_argument("--acc-kib", type=int, nargs="+", help="accumulator sizes (default: the base's)")
    p.add_argument("--m", type=int, default=64)
    p.add_argument("--n", type=int, default=64)
    p.add_argument("--k", type=int, default=64)
    p.add_argument("--trials", type=int, default=6, help="tuning trials per point (default 6)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--db", default="build/bench_explore.db")
    p.add_argument("--csv", help="write the points here")
    p.add_argument("--plot", help="draw cycles against area here (PNG)")
    args = p.parse_args()
    Path(args.db).parent.mkdir(parents=True, exist_ok=True)
    space = {"dim": args.dim, "sp_kib": args.sp_kib, **({"acc_kib": args.acc_kib} if args.acc_kib else {})}
    start = time.perf_counter()
    res = explore(workload(args), space, trials=args.trials, backend="verilator", workers=args.workers,
                  db=args.db, base=args.base)
    print(format_table(res))
    if args.csv:
        write_csv(res, args.csv)
    if args.plot:
        plot(res, args.plot)
    print("front (fewest cycles first): " + ", ".join(f"{p.name} {p.cycles:,} cycles {p.transistors / 1e6:.2f}M"
                                                      for p in res.pareto))
    gains = sorted((p for p in res.points if p.speedup), key=lambda p: -p.speedup)
    print("tuned over default, largest first: " + ", ".join(
        f"{p.name}{' (preset)' if res.is_preset(p) else ''} {p.speedup:.2f}x" for p in gains))
    print(f"wall time {time.perf_counter() - start:.1f} s (builds and syntheses cached across runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
