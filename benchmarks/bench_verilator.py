"""Speed of the RTL backend: simulated cycles per second of the Verilator harness.

    python benchmarks/bench_verilator.py [--dims 4 8 16] [--size 512] [--fresh]
    python benchmarks/bench_verilator.py --dims 16 --size 256 --baseline 9dff36b [--repeats 3]
    python benchmarks/bench_verilator.py --wall --dims 16 --size 512 [--repeats 3]

For each array size (the gemmini preset with ``dim`` changed) it builds the model
(or reports the cached build's time; --fresh rebuilds into an empty cache), runs
the default schedule of a size^3 matmul, checks it against the reference and
prints simulated cycles, cycles/s of the harness's clock loop (one core),
build time and utilization = ideal cycles / measured cycles.

With --soc it runs the same words twice on one model, the SoC's models off (gemmini-alone) and on
(gemmini: the host and the memory behind the DMA), alternating, and prints both clock-loop rates:
the cost of the SoC's models in the harness. (A revision from before the SoC cannot be the
baseline of the current program files: their hardware fields differ.)

With --wall it times whole tk.run calls (best of --repeats) and prints simulated cycles per wall
second next to the clock loop's rate: what a caller gets, with the fixed costs of a run (the
harness process's start, writing and reading the program and results files, the readback).

With --baseline REV it also exports rtl/, isa/ and simulators/ of that git
revision into a temporary directory, builds that revision's model with that
revision's own build function (cached like any build, keyed by its sources),
and runs the same program files on both models, alternating, best clock-loop
time of --repeats runs each. It prints both rates and their ratio, and checks
that both models take the same cycles and produce the same (reference) outputs.
"""
from __future__ import annotations

import argparse
import dataclasses
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import toolkit as tk  # noqa: E402
from simulators import results_file  # noqa: E402
from simulators import verilator as V  # noqa: E402

# what the exported revision needs to build its own model
BASELINE_TREES = ("rtl", "isa", "simulators")
_BUILD_SNIPPET = ("import json, sys; from isa import HardwareConfig; from simulators import verilator as V; "
                  "print(V.build(HardwareConfig(**json.loads(sys.argv[1]))))")


def hw_of(dim: int) -> tk.HardwareConfig:
    return dataclasses.replace(tk.HardwareConfig.preset("gemmini"), name=f"gemmini-dim{dim}", dim=dim)


def bench(dim: int, size: int) -> dict:
    hw = hw_of(dim)
    cached = (V.cache_root() / V.build_key(hw) / "Vsim").exists()
    t0 = time.perf_counter()
    binary = V.build(hw)
    build_s = time.perf_counter() - t0
    if cached:
        recorded = binary.parent / "build_seconds"
        build_s = float(recorded.read_text()) if recorded.exists() else float("nan")
    op = tk.matmul(size, size, size)
    prog = tk.compile(op, hw)
    inputs = op.random_inputs(seed=0)
    res = tk.run(prog, inputs, backend="verilator", timeout=3600)
    np.testing.assert_array_equal(res.outputs["C"], op.reference(inputs)["C"])
    d = hw.dim
    ideal = -(-size // d) ** 3 * d
    sched = tk.default_schedule(op, hw)
    return {"dim": dim, "build_s": build_s, "cached": cached, "cycles": res.cycles, "sim_s": res.sim_seconds,
            "wall_s": res.wall_s, "rate": res.cycles / res.sim_seconds, "ideal": ideal,
            "util": ideal / res.cycles, "schedule": f"{sched.tile_i}x{sched.tile_j}x{sched.tile_k}",
            "counters": res.counters}


# ---- baseline comparison --------------------------------------------------------------
def baseline_binary(rev: str, hw: tk.HardwareConfig) -> Path:
    """The harness binary of git revision ``rev`` for ``hw``, built by that revision's own code."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, *BASELINE_TREES], capture_output=True)
    if archive.returncode:
        raise SystemExit(f"--baseline {rev}: git archive failed: {archive.stderr.decode().strip()}")
    with tempfile.TemporaryDirectory(prefix="systolic-baseline-") as tmp:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(tmp, filter="data")
        out = subprocess.run([sys.executable, "-c", _BUILD_SNIPPET, json.dumps(hw.as_dict())], cwd=tmp,
                             env={**os.environ, "PYTHONPATH": tmp}, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"--baseline {rev}: its build failed:\n{out.stderr.strip()[-3000:]}")
    return Path(out.stdout.strip().splitlines()[-1])


def run_binary(binary: Path, prog: tk.Program, inputs: dict, prog_file: Path) -> tuple[int, float, dict] | None:
    """Cycles, clock-loop seconds and outputs of one harness run; None if that model cannot run it."""
    res_file = prog_file.with_suffix(".res")
    proc = subprocess.run([str(binary), str(prog_file), str(res_file), "--watchdog", str(prog.hw.watchdog_cycles)],
                          capture_output=True, text=True)
    if proc.returncode:
        return None
    cycles, sim_s, _, segments, _, _ = results_file.parse(res_file.read_bytes(), prog)
    dram = prog.dram_image(inputs)
    for addr, chunk in segments.items():
        dram[addr:addr + len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
    return cycles, sim_s, prog.read_outputs(dram)


def compare(rev: str, dim: int, size: int, schedules: list[str], repeats: int) -> list[dict]:
    """The same programs on the baseline and the current model: best rate of each, cycles, outputs."""
    hw = hw_of(dim)
    models = {"baseline": baseline_binary(rev, hw), "current": V.build(hw)}
    rows = []
    for schedule in schedules:
        op = tk.matmul(size, size, size)
        prog = tk.compile(op, hw, schedule=None if schedule == "default" else schedule)
        inputs = op.random_inputs(seed=0)
        expected = op.reference(inputs)["C"]
        runs: dict[str, list[tuple[int, float]]] = {name: [] for name in models}
        failed = set()
        with tempfile.TemporaryDirectory(prefix="systolic-bench-") as tmp:
            prog_file = Path(tmp) / "program.bin"
            prog_file.write_bytes(prog.to_bytes(inputs))
            for _ in range(repeats):   # alternate, so that a busy moment hurts both alike
                for name, binary in models.items():
                    got = None if name in failed else run_binary(binary, prog, inputs, prog_file)
                    if got is None:
                        failed.add(name)
                        continue
                    np.testing.assert_array_equal(got[2]["C"], expected, err_msg=f"{name} model")
                    runs[name].append(got[:2])
        best = {name: (r[0][0], min(t for _, t in r)) if r else None for name, r in runs.items()}
        rows.append({"dim": dim, "program": f"matmul {size}^3 {schedule}", **best})
    return rows


def compare_soc(dim: int, size: int, schedules: list[str], repeats: int) -> None:
    """The same words with the SoC's models off and on, one binary: best clock-loop rate of each, printed."""
    alone = dataclasses.replace(tk.HardwareConfig.preset("gemmini-alone"), name=f"gemmini-alone-dim{dim}", dim=dim)
    soc = dataclasses.replace(hw_of(dim), name=f"gemmini-dim{dim}")
    binary = V.build(alone)
    for schedule in schedules:
        op = tk.matmul(size, size, size)
        words = tk.compile(op, alone, schedule=None if schedule == "default" else schedule)
        inputs = op.random_inputs(seed=0)
        best: dict[str, tuple[int, float]] = {}
        with tempfile.TemporaryDirectory(prefix="systolic-bench-") as tmp:
            progs = {name: tk.Program(hw, words.instructions, words.buffers) for name, hw in
                     (("alone", alone), ("soc", soc))}
            for name, prog in progs.items():
                (Path(tmp) / f"{name}.bin").write_bytes(prog.to_bytes(inputs))
            for _ in range(repeats):   # alternate, so that a busy moment hurts both alike
                for name, prog in progs.items():
                    cycles, sim_s, outputs = run_binary(binary, prog, inputs, Path(tmp) / f"{name}.bin")
                    np.testing.assert_array_equal(outputs["C"], op.reference(inputs)["C"], err_msg=name)
                    best[name] = (cycles, min(sim_s, best.get(name, (0, float("inf")))[1]))
        (ca, ta), (cs, ts) = best["alone"], best["soc"]
        print(f"{dim:>4} {f'matmul {size}^3 {schedule}':<24} {ca:>10} {ca / ta:>13,.0f} {cs:>10} {cs / ts:>13,.0f} "
              f"{(cs / ts) / (ca / ta):>6.2f}x", flush=True)


def wall(dim: int, size: int, repeats: int) -> None:
    """Cycles per wall second of whole tk.run calls (the model built beforehand), printed."""
    hw = hw_of(dim)
    V.build(hw)
    op = tk.matmul(size, size, size)
    prog = tk.compile(op, hw)
    inputs = op.random_inputs(seed=0)
    expected = op.reference(inputs)["C"]
    best_wall, best_sim, cycles = float("inf"), float("inf"), 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = tk.run(prog, inputs, backend="verilator", timeout=3600)
        wall_s = time.perf_counter() - t0
        np.testing.assert_array_equal(res.outputs["C"], expected)
        cycles = res.cycles
        best_wall, best_sim = min(best_wall, wall_s), min(best_sim, res.sim_seconds)
    print(f"{dim:>4} {f'matmul {size}^3 default':<24} {cycles:>10} {best_sim:>8.3f} {best_wall:>8.3f} "
          f"{best_wall - best_sim:>9.3f} {cycles / best_sim:>13,.0f} {cycles / best_wall:>13,.0f}", flush=True)


def print_comparison(rev: str, rows: list[dict]) -> bool:
    """Prints the table; True when every program both models ran took the same cycles."""
    print(f"{'dim':>4} {'program':<24} {'cycles':>10} {f'{rev} cycles/s':>18} {'current cycles/s':>17} "
          f"{'ratio':>6}")
    same = True
    for r in rows:
        base, cur = r["baseline"], r["current"]
        if cur is None:
            raise SystemExit(f"the current model failed on {r['program']} at dim {r['dim']}")
        if base is None:
            print(f"{r['dim']:>4} {r['program']:<24} {cur[0]:>10} {'(cannot run it)':>18} "
                  f"{cur[0] / cur[1]:>17,.0f}")
            continue
        note = ""
        if base[0] != cur[0]:
            same = False
            note = f"  CYCLES DIFFER: baseline {base[0]}"
        rb, rc = base[0] / base[1], cur[0] / cur[1]
        print(f"{r['dim']:>4} {r['program']:<24} {cur[0]:>10} {rb:>18,.0f} {rc:>17,.0f} {rc / rb:>5.2f}x{note}")
    print("cycles: equal on every program both models ran" if same
          else "cycles: NOT equal on every program both models ran")
    return same


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[4, 8, 16])
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--fresh", action="store_true", help="build into an empty temporary cache")
    parser.add_argument("--baseline", metavar="REV", help="compare with the RTL of this git revision")
    parser.add_argument("--wall", action="store_true", help="cycles per wall second of whole tk.run calls")
    parser.add_argument("--soc", action="store_true", help="the SoC's models off and on, the same words, one model")
    parser.add_argument("--schedules", nargs="+", default=["default"], choices=["default", "gemmini"],
                        help="with --baseline or --soc: the matmul schedules to run")
    parser.add_argument("--repeats", type=int, default=3,
                        help="with --baseline, --soc or --wall: runs of each, best kept")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.fresh:
        os.environ["SYSTOLIC_CACHE"] = tempfile.mkdtemp(prefix="systolic-bench-")
    if args.wall:
        print(f"whole tk.run calls (backend verilator, model built beforehand): matmul {args.size}^3, default "
              f"schedule, gemmini preset with dim changed, best of {args.repeats}; machine {V.machine_key()}")
        print(f"{'dim':>4} {'program':<24} {'cycles':>10} {'sim s':>8} {'wall s':>8} {'fixed s':>9} "
              f"{'loop cyc/s':>13} {'wall cyc/s':>13}")
        for dim in args.dims:
            wall(dim, args.size, args.repeats)
        return 0
    if args.soc:
        print(f"the SoC's models off (gemmini-alone) and on (gemmini), the same words on one model: matmul "
              f"{args.size}^3, best clock-loop time of {args.repeats} alternating runs; machine {V.machine_key()}")
        print(f"{'dim':>4} {'program':<24} {'alone cyc':>10} {'alone cyc/s':>13} {'SoC cyc':>10} {'SoC cyc/s':>13} "
              f"{'ratio':>7}")
        for dim in args.dims:
            compare_soc(dim, args.size, args.schedules, args.repeats)
        return 0
    if args.baseline:
        print(f"baseline {args.baseline} vs the working tree: matmul {args.size}^3, gemmini preset with dim "
              f"changed, best clock-loop time of {args.repeats} alternating runs; machine {V.machine_key()}")
        rows = [row for dim in args.dims for row in compare(args.baseline, dim, args.size, args.schedules,
                                                            args.repeats)]
        return 0 if print_comparison(args.baseline, rows) else 1
    print(f"matmul {args.size}^3, default schedule, gemmini preset with dim changed; "
          f"machine {V.machine_key()}, CFLAGS {V.CFLAGS}, {' '.join(V.MAKE_VARS)}")
    print(f"{'dim':>4} {'build s':>8} {'tiles':>9} {'cycles':>10} {'ideal':>10} {'util':>6} "
          f"{'sim s':>7} {'cycles/s':>11} {'bank stall':>10} {'dma wait':>9}")
    for dim in args.dims:
        r = bench(dim, args.size)
        c = r["counters"]
        print(f"{r['dim']:>4} {r['build_s']:>7.1f}{'*' if r['cached'] else ' '} {r['schedule']:>9} "
              f"{r['cycles']:>10} {r['ideal']:>10} {r['util']:>6.1%} {r['sim_s']:>7.2f} {r['rate']:>11,.0f} "
              f"{c['stall_bank_conflict']:>10} {c['stall_dma_wait']:>9}", flush=True)
    print("* build time recorded when the cached model was built")
    return 0


if __name__ == "__main__":
    sys.exit(main())
