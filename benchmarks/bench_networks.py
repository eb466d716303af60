"""Whole networks from quantized ONNX models on the accelerator, against onnxruntime.

    python benchmarks/bench_networks.py [--models resnet18 resnet50 mobilenetv2 bert] [--backend verilator]
                                        [--tune N] [--db build/networks.db] [--table]

Builds each model with onnx.helper (benchmarks/onnx_models.py: random seeded
weights, quantized by onnxruntime on random calibration data; cached under
--out), imports it with ``tk.from_onnx``, runs it whole with ``tk.run_network``
and prints per model: layers, unique tasks, accelerator cycles and latency at
1 GHz, onnxruntime's CPU latency, how many conv/matmul and resadd elements differ
from onnxruntime (and how many of those sit at rounding ties), and the wall and
CPU time of the run (CPU includes the Verilator harness processes, so it is the
one-core time on a busy machine). Per-layer CSV and bar charts go to --out.

--tune N tunes every network with a budget of N trials (``tk.tune_network``,
records in --db; rerunning resumes), reruns it with the best schedules and
prints the end-to-end speedup over the default schedule and over the "gemmini"
baseline (Gemmini's own library, schedule="gemmini") and "gemmini-nn" (the library as Gemmini's own ResNet-50 and
MobileNet call it: their 1x1 stride-1 convs as tiled_matmul_nn_auto), and per task its best against
its default and its floor (``toolkit.floor``). --unseeded leaves the default out of
each task's search, so the best is the learned search's own.
"""
from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import toolkit as tk  # noqa: E402
from benchmarks.onnx_models import MODELS, build  # noqa: E402
from toolkit.cli.net import random_inputs  # noqa: E402
from networks.network_report import format_table, plot, totals, write_csv  # noqa: E402
from toolkit.floor import floor  # noqa: E402


def cpu_s() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def differing(res, kinds: tuple[str, ...]) -> str:
    rows = [r for r in res.layers if r.kind in kinds and r.mismatches is not None]
    n, ties = sum(r.mismatches for r in rows), sum(r.ties or 0 for r in rows)
    exact = sum(r.exact for r in rows)
    return f"{exact}/{len(rows)} exact, {n} el. differ ({ties} ties)"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    p.add_argument("--backend", choices=("functional", "verilator"), default="verilator")
    p.add_argument("--config", default="gemmini")
    p.add_argument("--tune", type=int, default=0, metavar="N", help="tune each network with N trials")
    p.add_argument("--tuner", default="model")
    p.add_argument("--unseeded", action="store_true",
                   help="tune without the default seeded into each task's first batch (the search on its own: "
                        "issue 38's measure of the learned search); the per-task table then compares the search's "
                        "best with the default")
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--tile-policy", default="pow2",
                   help="tile sizes the tuner's spaces hold (pow2: power-of-two tiles; 'balanced' spaces of "
                        "ResNet-50's convs take 12-50 s each to enumerate (conv1 the most), pow2 ones 3-9 s, "
                        "measured on a loaded 2-core machine)")
    p.add_argument("--db", default="build/networks.db")
    p.add_argument("--out", default="build/onnx")
    p.add_argument("--table", action="store_true", help="print every network's per-layer table")
    return p.parse_args(argv)


def bench(name: str, args: argparse.Namespace, hw: tk.HardwareConfig) -> dict:
    """Run one model (and tune it, with --tune); print its results and write its CSV and plot; its summary row."""
    net = tk.from_onnx(build(name, args.out))
    inputs = random_inputs(net, 0)
    t0, c0 = time.perf_counter(), cpu_s()
    res = tk.run_network(net, inputs, args.backend, hw=hw)
    wall, cpu = time.perf_counter() - t0, cpu_s() - c0
    print(format_table(res) if args.table else totals(res))
    print(f"  run_network wall {wall:.1f} s ({res.wall_s:.1f} s running, {res.compare_s:.1f} s comparing), "
          f"CPU {cpu:.1f} s (this process and the harness processes)")
    write_csv(res, Path(args.out) / f"{name}_{args.backend}.csv")
    plot(res, Path(args.out) / f"{name}_{args.backend}.png")
    row = dict(model=name, layers=len(net.layers), tasks=len(net.tasks),
               gmacs=sum(r.macs for r in res.layers) / 1e9, cycles=res.cycles, ort_ms=res.ort_latency_s * 1e3,
               run=res.wall_s, wall=wall, cpu=cpu, gemm=differing(res, ("conv2d", "depthwise", "matmul")),
               resadd=differing(res, ("resadd",)), speedup="-", vs_gemmini="-", vs_gemmini_nn="-")
    if args.tune and res.cycles:
        row.update(tuned_speedups(net, inputs, res.cycles, args, hw))
    return row


def tuned_speedups(net: tk.Network, inputs: dict, cycles: int, args: argparse.Namespace,
                   hw: tk.HardwareConfig) -> dict[str, str]:
    """Tune ``net``; the tuned run's speedup over the default's ``cycles`` and over gemmini's library."""
    t0 = time.perf_counter()
    tuning = tk.tune_network(net, hw, args.tune, db=args.db, backend="verilator", tuner=args.tuner,
                             workers=args.workers, progress=False, tile_policy=args.tile_policy,
                             include_default=not args.unseeded)
    print(f"  tuning took {time.perf_counter() - t0:.0f} s")
    print(tuning.summary())
    print(against_default_and_floor(tuning, hw))
    tuned = tk.run_network(net, inputs, args.backend, hw=hw, schedule="best", db=args.db, compare=False)
    speedup = f"{cycles / tuned.cycles:.3f}x"
    bases = {name: tk.run_network(net, inputs, args.backend, hw=hw, schedule=name, compare=False).cycles
             for name in ("gemmini", "gemmini-nn")}
    vs = {name: f"{cycles_ / tuned.cycles:.3f}x" for name, cycles_ in bases.items()}
    print(f"  tuned: {tuned.cycles:,} cycles, {speedup} over the default, {vs['gemmini']} over gemmini, "
          f"{vs['gemmini-nn']} over gemmini-nn (the library as Gemmini's own networks call it)")
    return {"speedup": speedup, "vs_gemmini": vs["gemmini"], "vs_gemmini_nn": vs["gemmini-nn"]}


def against_default_and_floor(tuning, hw: tk.HardwareConfig) -> str:
    """Each task's best against its default and its floor (``toolkit.floor``), and how many tasks the best beats
    the default by 5% or more, ends within 2% of it, and ends within 1.15x of the floor (issue 38's measures)."""
    lines = [f"  {'task':60s} {'x':>3s} {'default':>11s} {'best':>11s} {'best/def':>8s} {'floor':>11s} "
             f"{'best/floor':>10s} floor is"]
    ratios, over_floor = [], []
    for t in sorted(tuning.tasks, key=lambda t: -t.share):
        under = floor(t.op, hw)
        best = t.best_cycles or 0
        ratios.append(t.default_cycles / best if best and t.default_cycles else 0.0)
        over_floor.append(best / under.cycles if best else float("inf"))
        lines.append(f"  {t.op.key[:60]:60s} {t.count:3d} {t.default_cycles or 0:11,d} {best:11,d} "
                     f"{ratios[-1]:7.3f}x {under.cycles:11,d} {over_floor[-1]:9.3f}x {under.bound}")
    n = len(ratios)
    lines.append(f"  best beats the default by >= 5% on {sum(r >= 1.05 for r in ratios)} of {n} tasks, ends within 2% "
                 f"of it or better on {sum(r >= 1 / 1.02 for r in ratios)} of {n}, within 1.15x of the floor on "
                 f"{sum(f <= 1.15 for f in over_floor)} of {n}")
    return "\n".join(lines)


def print_summary(summary: list[dict]) -> None:
    print()
    print(f"{'model':12s} {'layers':>6s} {'tasks':>5s} {'GMACs':>6s} {'cycles':>12s} {'ms@1GHz':>8s} {'ort_ms':>7s} "
          f"{'run_s':>6s} {'wall_s':>7s} {'cpu_s':>6s}  {'conv/matmul vs onnxruntime':36s} "
          f"{'resadd vs onnxruntime':34s} tuned  vs_gemmini  vs_gemmini_nn")
    for r in summary:
        cyc = f"{r['cycles']:,}" if r["cycles"] else "-"
        ms = f"{r['cycles'] / 1e6:.2f}" if r["cycles"] else "-"
        print(f"{r['model']:12s} {r['layers']:6d} {r['tasks']:5d} {r['gmacs']:6.2f} {cyc:>12s} {ms:>8s} "
              f"{r['ort_ms']:7.1f} {r['run']:6.1f} {r['wall']:7.1f} {r['cpu']:6.1f}  {r['gemm']:36s} {r['resadd']:34s} "
              f"{r['speedup']}  {r['vs_gemmini']}  {r['vs_gemmini_nn']}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    hw = tk.HardwareConfig.resolve(args.config)
    print_summary([bench(name, args, hw) for name in args.models])
    return 0


if __name__ == "__main__":
    sys.exit(main())
