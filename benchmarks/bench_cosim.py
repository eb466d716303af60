"""C co-simulation against the harness, on the same programs.

    python benchmarks/bench_cosim.py [--config gemmini] [--repeats 3] [--size 256] [--conv 56 56 64 64]

Each program is lowered once and run two ways on the RTL: through ``tk.run`` (the harness reads
the program file) and as the C program ``Program.to_c`` exports, compiled and run by
``systolic cc``'s machinery (the accelerator clocked inside the C program's process, its DMA on the
program's own memory). Both check the outputs (the C program against the numpy reference it
embeds). Printed per program: the cycles of each (they must be equal); the best of --repeats runs
of each side's own time in its clock loop (wall time, so a loaded machine's preemption is in it);
the best CPU time of the simulating process (the harness process of one ``tk.run``, which also
reads the program file and writes its results; the C program from start to exit), which a loaded
machine disturbs far less; the co-simulation overhead by each (C over harness); and the wall times:
``tk.run`` whole, and the C program from its start to its exit.

The programs: a size^3 matmul (the default schedule) and a ResNet-50-sized 3x3 conv (--conv
H W C K, stride 1, pad 1, bias and ReLU; by default conv2_x's 56x56x64 -> 64) under Gemmini's own
schedule (LOOP_CONV_WS words) and the default one.
"""
from __future__ import annotations

import argparse
import re
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import toolkit as tk  # noqa: E402
from simulators import cosim  # noqa: E402


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="gemmini", help="preset or TOML file (default gemmini)")
    p.add_argument("--repeats", type=int, default=3, help="runs of each side; the best clock loop counts")
    p.add_argument("--size", type=int, default=256, help="the matmul's M = N = K")
    p.add_argument("--conv", type=int, nargs=4, default=(56, 56, 64, 64), metavar=("H", "W", "C", "K"))
    return p.parse_args()


def children_cpu() -> float:
    """CPU seconds of the finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def harness_side(prog: tk.Program, inputs: dict, repeats: int) -> tuple[int, float, float, float]:
    """(cycles, best clock-loop s, best CPU s, best wall s) of tk.run on the harness (each run starts
    and ends its own harness process)."""
    tk.run(prog, inputs, backend="verilator")   # the build and the toolchain checks, once
    runs, cpus = [], []
    for _ in range(repeats):
        before = children_cpu()
        runs.append(tk.run(prog, inputs, backend="verilator"))
        cpus.append(children_cpu() - before)
    assert len({r.cycles for r in runs}) == 1
    return runs[0].cycles, min(r.sim_seconds for r in runs), min(cpus), min(r.wall_s for r in runs)


def c_side(prog: tk.Program, op: tk.Op, inputs: dict, hw: tk.HardwareConfig, repeats: int,
           work: Path) -> tuple[int, float, float, float]:
    """(cycles, best clock-loop s, best CPU s, best wall s) of the exported C program."""
    source = work / "program.c"
    source.write_text(prog.to_c(inputs, check=op.reference(inputs)))
    binary = cosim.compile_c([source], work / "program", hw=hw, engine="verilator", workdir=work)
    cycles, loops, cpus, walls = set(), [], [], []
    for _ in range(repeats):
        before, start = children_cpu(), time.perf_counter()
        ran = cosim.run_c(binary, capture=True)
        walls.append(time.perf_counter() - start)
        cpus.append(children_cpu() - before)
        if ran.returncode != 0 or "outputs match" not in ran.stdout:
            raise SystemExit(f"the C program failed (exit {ran.returncode}): {ran.stdout}{ran.stderr}")
        cycles.add(int(re.search(r"^systolic: cycles (\d+)$", ran.stderr, re.M).group(1)))
        loops.append(float(re.search(r"^systolic: clock loop ([\d.]+) s$", ran.stderr, re.M).group(1)))
    assert len(cycles) == 1
    return cycles.pop(), min(loops), min(cpus), min(walls)


def main() -> None:
    args = parse_args()
    hw = tk.HardwareConfig.resolve(args.config)
    h, w, c, k = args.conv
    conv = tk.conv2d(1, h, w, c, k, bias="channel", activation="relu", scale=0.02)
    cases = [(f"matmul {args.size}^3, default", tk.matmul(args.size, args.size, args.size), None),
             (f"conv {h}x{w}x{c}->{k} 3x3, gemmini", conv, "gemmini"),
             (f"conv {h}x{w}x{c}->{k} 3x3, default", conv, None)]
    print(f"hardware {hw.name} (dim {hw.dim}); best of {args.repeats} runs each")
    header = (f"{'program':34} {'words':>6} {'cycles (harness)':>16} {'cycles (C)':>11} {'loop harness s':>14} "
              f"{'loop C s':>9} {'overhead':>9} {'CPU harness s':>13} {'CPU C s':>8} {'overhead':>9} "
              f"{'tk.run wall s':>13} {'C program wall s':>16}")
    print(header)
    print("-" * len(header))
    for name, op, schedule in cases:
        prog = tk.compile(op, hw, schedule)
        inputs = op.random_inputs(seed=0)
        h_cycles, h_loop, h_cpu, h_wall = harness_side(prog, inputs, args.repeats)
        with tempfile.TemporaryDirectory(prefix="bench-cosim-") as tmp:
            c_cycles, c_loop, c_cpu, c_wall = c_side(prog, op, inputs, hw, args.repeats, Path(tmp))
        print(f"{name:34} {len(prog):>6} {h_cycles:>16,} {c_cycles:>11,} {h_loop:>14.3f} {c_loop:>9.3f} "
              f"{(c_loop / h_loop - 1) * 100:>8.1f}% {h_cpu:>13.3f} {c_cpu:>8.3f} {(c_cpu / h_cpu - 1) * 100:>8.1f}% "
              f"{h_wall:>13.3f} {c_wall:>16.3f}")
        if h_cycles != c_cycles:
            raise SystemExit(f"{name}: the C program took {c_cycles} cycles, tk.run {h_cycles}")


if __name__ == "__main__":
    main()
