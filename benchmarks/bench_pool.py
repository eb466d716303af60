"""Max pooling in the store unit, on the RTL: cycles against the DMA bound, before and after.

    python benchmarks/bench_pool.py [--before DIR] [--config gemmini] [--cases pool ...]

Each op is compiled (default schedule unless the row names one) and run on the verilator
backend, bit-exact against its numpy reference, in a child process whose PYTHONPATH is this
checkout (after) or, with --before, another checkout of the toolkit (before: e.g. one whose
maxpool2d still runs through ReLU round trips, and which has no fused pool); both are printed
side by side with the op's DMA bound (its compulsory bytes at one beat a cycle). ResNet-50's
pool (112x112x64, 3/2/1) and its conv1 (224x224x3 -> 64, 7/2/3) with and without the fused pool.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CONV1 = "tk.conv2d(1, 224, 224, 3, 64, kernel=7, stride=2, padding=3, bias='channel', activation='relu', scale=0.01"
# name -> rows of (label, the op as an expression over `tk` and `CONV1`, schedule)
CASES = {
    "pool": [("pool 112x112x64 3/2/1", "tk.maxpool2d(1, 112, 112, 64, kernel=3, stride=2, padding=1)", None)],
    "pool_small": [("pool 28x28x64 3/2/1", "tk.maxpool2d(1, 28, 28, 64, kernel=3, stride=2, padding=1)", None)],
    "conv1": [("conv1", CONV1 + ")", None), ("conv1 (gemmini)", CONV1 + ")", "gemmini"),
              ("conv1+pool fused", CONV1 + ", pool=(3, 2, 1))", None)],
}

# what the child runs: compile each op, run it on verilator, check bit-exact, print the figures as JSON
# (an op that checkout cannot compile prints its error)
_MEASURE = """
import json, numpy as np, toolkit as tk
from toolkit.kinds import dram_cycles
from isa import PRESETS
hw, out = PRESETS[{config!r}], {{}}
for label, expr, schedule in {rows!r}:
    try:
        op = eval(expr)
        prog = tk.compile(op, hw=hw, schedule=schedule)
    except (ValueError, TypeError) as exc:
        out[label] = dict(error=str(exc)[:80])
        continue
    x = op.random_inputs(0)
    res = tk.run(prog, x, backend="verilator")
    ref = op.reference(x)
    out[label] = dict(cycles=res.cycles, dram=dram_cycles(op, hw),
                      exact=all(np.array_equal(res.outputs[k], ref[k]) for k in ref))
print(json.dumps(out))
"""


def measure(checkout: Path, rows: list, config: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    out = subprocess.run([sys.executable, "-c", _MEASURE.format(rows=rows, config=config)], cwd=checkout, env=env,
                         capture_output=True, text=True, check=False)
    if out.returncode:
        raise SystemExit(f"{checkout}: failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _cycles(m: dict | None) -> str:
    return f"{m['cycles']:>12,}" if m and "cycles" in m else f"{'-':>12}"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--before", type=Path, help="a checkout to measure the same ops with (before)")
    p.add_argument("--config", default="gemmini")
    p.add_argument("--cases", nargs="+", default=["pool", "conv1"], choices=list(CASES))
    args = p.parse_args(argv)
    rows = [row for name in args.cases for row in CASES[name]]
    after = measure(ROOT, rows, args.config)
    before = measure(args.before.resolve(), rows, args.config) if args.before else {}
    print(f"{'op':24} {'DMA bound':>10} {'before':>12} {'after':>12} {'after/bound':>11} {'speedup':>8}  exact")
    for label, _, _ in rows:
        a, b = after[label], before.get(label)
        speed = f"{b['cycles'] / a['cycles']:>7.2f}x" if b and "cycles" in b else f"{'-':>8}"
        exact = a["exact"] and (b is None or b.get("exact", True))
        print(f"{label:24} {a['dram']:>10,} {_cycles(b)} {_cycles(a)} {a['cycles'] / a['dram']:>10.2f}x {speed}  "
              f"{exact}")
    if "conv1" in args.cases and "pool" in args.cases:
        for name, m in (("before", before), ("after", after)):
            if m:
                unfused = m["conv1"]["cycles"] + m["pool 112x112x64 3/2/1"]["cycles"]
                print(f"{name}: conv1 then pool (a DRAM round trip) {unfused:,} cycles")


if __name__ == "__main__":
    main()
