"""Max pooling in the store unit, on the RTL: cycles against the DMA bound, before and after.

    python benchmarks/bench_pool.py [--before DIR] [--config gemmini] [--cases pool ...]

Each case is compiled with its default schedule and run on the verilator backend, bit-exact
against its numpy reference, in a child process whose PYTHONPATH is this checkout (after) or,
with --before, another checkout of the toolkit (before: e.g. one whose maxpool2d still runs
through ReLU round trips); both are printed side by side with the op's DMA bound (the
compulsory bytes at one beat a cycle).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# name -> the op, as an expression over `tk` that every checkout understands
CASES = {
    "pool": "tk.maxpool2d(1, 112, 112, 64, kernel=3, stride=2, padding=1)",   # ResNet-50's pool
    "pool_small": "tk.maxpool2d(1, 28, 28, 64, kernel=3, stride=2, padding=1)",
}

# what the child runs: compile, run on verilator, check bit-exact, print the figures as JSON
_MEASURE = """
import json, sys, numpy as np, toolkit as tk
from toolkit.kinds import dram_cycles
from isa import PRESETS
op, hw = {op}, PRESETS[{config!r}]
rng = np.random.default_rng(0)
x = {{n: rng.integers(-128, 128, s, dtype=np.int8) for n, (s, _) in op.input_specs().items()}}
res = tk.run(tk.compile(op, hw=hw), x, backend="verilator")
ref = op.reference(x)
exact = all(np.array_equal(res.outputs[k], ref[k]) for k in ref)
print(json.dumps(dict(cycles=res.cycles, dram=dram_cycles(op, hw), exact=exact)))
"""


def measure(checkout: Path, op: str, config: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    out = subprocess.run([sys.executable, "-c", _MEASURE.format(op=op, config=config)], cwd=checkout, env=env,
                         capture_output=True, text=True, check=False)
    if out.returncode:
        raise SystemExit(f"{checkout}: {op} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--before", type=Path, help="a checkout to measure the same ops with (before)")
    p.add_argument("--config", default="gemmini")
    p.add_argument("--cases", nargs="+", default=["pool"], choices=list(CASES))
    args = p.parse_args(argv)
    print(f"{'case':12} {'op':64} {'DMA bound':>10} {'before':>10} {'after':>10} {'after/bound':>11} "
          f"{'speedup':>8}  exact")
    for name in args.cases:
        op = CASES[name]
        after = measure(ROOT, op, args.config)
        before = measure(args.before.resolve(), op, args.config) if args.before else None
        b = f"{before['cycles']:>10,}" if before else f"{'-':>10}"
        speed = f"{before['cycles'] / after['cycles']:>7.1f}x" if before else f"{'-':>8}"
        exact = after["exact"] and (before is None or before["exact"])
        print(f"{name:12} {op:64} {after['dram']:>10,} {b} {after['cycles']:>10,} "
              f"{after['cycles'] / after['dram']:>10.2f}x {speed}  {exact}")


if __name__ == "__main__":
    main()
