"""Co-design sweep: one workload tuned on every point of a hardware space, cycles from the RTL
(Verilator), area from Yosys synthesis plus the SRAM model; prints the points, the front, the
largest tuned/default gains and the wall time by stage.

    .venv/bin/python benchmarks/bench_explore.py                          # matmul 64^3, dim 4 8 x sp 4 16 KiB
    .venv/bin/python benchmarks/bench_explore.py --dim 8 16 32 --sp-kib 128 256 --base gemmini \
        --m 256 --n 256 --k 256 --trials 8

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
from networks.explore_report import format_table  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", default="tiny", help="preset the space varies (default tiny)")
    p.add_argument("--dim", type=int, nargs="+", default=[4, 8])
    p.add_argument("--sp-kib", type=int, nargs="+", default=[4, 16])
    p.add_argument("--m", type=int, default=64)
    p.add_argument("--n", type=int, default=64)
    p.add_argument("--k", type=int, default=64)
    p.add_argument("--trials", type=int, default=6, help="tuning trials per point (default 6)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--db", default="build/bench_explore.db")
    args = p.parse_args()
    Path(args.db).parent.mkdir(parents=True, exist_ok=True)
    op = tk.matmul(args.m, args.n, args.k, bias="row", activation="relu", scale=0.05)
    start = time.perf_counter()
    res = explore(op, {"dim": args.dim, "sp_kib": args.sp_kib}, trials=args.trials, backend="verilator",
                  workers=args.workers, db=args.db, base=args.base)
    print(format_table(res))
    print("front (fewest cycles first): " + ", ".join(f"{p.name} {p.cycles:,} cycles {p.transistors / 1e6:.2f}M"
                                                      for p in res.pareto))
    gains = sorted((p for p in res.points if p.speedup), key=lambda p: -p.speedup)
    print("tuned over default, largest first: " + ", ".join(
        f"{p.name}{' (preset)' if res.is_preset(p) else ''} {p.speedup:.2f}x" for p in gains))
    print(f"wall time {time.perf_counter() - start:.1f} s (builds and syntheses cached across runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
