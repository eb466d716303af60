"""How well the loop family's prior (toolkit.family.loop_cycles) ranks Gemmini's loops on the SoC, against
the RTL, side by side with another revision's prior on the same points.

For each layer, random points of the tuner's loop space (tuner.space.Space, family "loops", gemmini
preset) are measured on the verilator backend (the RTL with the SoC's host and memory models, each
output checked bit-exact) and estimated by both revisions' loop_cycles. Per layer it prints each prior's
Spearman rank correlation with the measured cycles, and its top-1 and top-5 regret: how much slower than
the fastest point measured is the fastest of the prior's 1 (5) best-ranked points; and the median over the
points of toolkit.family.loop_memory's DRAM bytes read (written) over the RTL's.

    python benchmarks/bench_loop_prior.py --baseline REV [--points 40] [--workers 2] [--cache FILE]

``--cache`` keeps the measured cycles in a JSON file (per layer and point) for a rerun.
"""
from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import toolkit as tk  # noqa: E402
from benchmarks.bench_peer import WORKLOADS  # noqa: E402
from benchmarks.revision import python_tree, run_in  # noqa: E402
from toolkit.family import loop_memory, program_groups, program_loop_cycles  # noqa: E402
from toolkit.kinds import lower, schedule_from_dict  # noqa: E402
from toolkit.traffic import BLOCK, FILLS, WRITE_BACKS  # noqa: E402
from tuner.measure import run_candidates  # noqa: E402
from tuner.model import spearman  # noqa: E402
from tuner.space import Space  # noqa: E402

LAYERS = {   # bench_peer's four and ResNet-50's s2_ds_s2, a downsample 1x1 of stride 2
    **WORKLOADS, "ds_s2": tk.conv2d(1, 56, 56, 256, 512, kernel=1, stride=2, bias="channel", scale=0.001),
}

# run by --baseline in the other revision's tree: argv[1] a JSON file of the op, hardware and knobs; prints
# the prior of each as a JSON list
_BASELINE_RUN = """
import inspect, json, sys
from isa import HardwareConfig
from toolkit.family import program_loop_cycles
from toolkit.kinds import from_dict, lower, schedule_from_dict
case = json.load(open(sys.argv[1]))
op, hw = from_dict(case["op"]), HardwareConfig.from_dict(case["hw"])
progs = [lower(op, schedule_from_dict(op.KIND, k), hw) for k in case["knobs"]]
old = len(inspect.signature(program_loop_cycles).parameters) == 3   # (op, instructions, hw) before f0f16e7
print(json.dumps([program_loop_cycles(op, p.instructions, hw) if old else program_loop_cycles(op, p) for p in progs]))
"""


def baseline(rev: str, op: tk.Op, hw: tk.HardwareConfig, knobs: list[dict]) -> np.ndarray:
    """Revision ``rev``'s loop_cycles of ``knobs``."""
    with python_tree(rev) as tree:
        case = tree / "case.json"
        case.write_text(json.dumps({"op": op.to_dict(), "hw": hw.as_dict(), "knobs": knobs}))
        return np.array(json.loads(run_in(tree, _BASELINE_RUN, str(case)).splitlines()[-1]))


def measured(op: tk.Op, hw: tk.HardwareConfig, knobs: list[dict], workers: int, cache: dict) -> np.ndarray:
    """RTL cycles, DRAM bytes read and written of ``knobs`` (a row each; bit-exact; those in ``cache`` not run
    again), in ``workers`` processes."""
    keys = [json.dumps(k, sort_keys=True) for k in knobs]
    todo = [k for k, key in zip(knobs, keys) if key not in cache]
    if todo:
        size = -(-len(todo) // workers)
        with ProcessPoolExecutor(workers) as pool:
            futs = [pool.submit(run_candidates, op.to_dict(), hw.as_dict(), todo[i:i + size], "verilator", 3600)
                    for i in range(0, len(todo), size)]
            results = [r for f in futs for r in f.result()]
        for k, res in zip(todo, results):
            if not res.ok:
                raise RuntimeError(f"{op.key} {k}: {res.status} {res.error}")
            cache[json.dumps(k, sort_keys=True)] = [res.cycles, *(res.counters[f"dram_bytes_{w}"]
                                                                  for w in ("read", "written"))]
    return np.array([cache[key] for key in keys], dtype=float)


def model_bytes(op: tk.Op, hw: tk.HardwareConfig, knobs: dict) -> tuple[float, float]:
    """toolkit.traffic's DRAM bytes read and written of a point."""
    sums = loop_memory(program_groups(lower(op, schedule_from_dict(op.KIND, knobs), hw)), hw)[2]
    return sums[FILLS] * BLOCK, sums[WRITE_BACKS] * BLOCK


def regret(prior: np.ndarray, cycles: np.ndarray, top: int) -> float:
    """How much slower than the fastest measured is the fastest of the prior's ``top`` best-ranked points."""
    return float(cycles[np.argsort(prior, kind="stable")[:top]].min() / cycles.min() - 1)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--baseline", required=True, metavar="REV", help="the revision whose prior to compare")
    p.add_argument("--points", type=int, default=40, help="random points of each layer's loop space (default 40)")
    p.add_argument("--layers", nargs="+", choices=sorted(LAYERS), default=list(LAYERS))
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cache", type=Path, help="a JSON file of measured cycles, read and extended")
    args = p.parse_args(argv)
    hw = tk.HardwareConfig.preset("gemmini")
    cache = json.loads(args.cache.read_text()) if args.cache and args.cache.exists() else {}
    print(f"{args.points} points a layer, RTL (gemmini), prior {args.baseline} -> working tree")
    print(f"{'layer':<9} {'points':>6} {'spearman':>15} {'top-1 regret':>15} {'top-5 regret':>15} {'best':>10} "
          f"{'DRAM model/RTL':>13}")
    print(f"{'':<16}" + f" {'before':>7}{'after':>8}" * 3 + f" {'':>10} {'read':>6} {'write':>6}")
    for name in args.layers:
        op = LAYERS[name]
        space = Space(op, hw, family="loops")
        knobs = [space[i].to_dict() for i in space.sample(np.random.default_rng(args.seed), args.points)]
        new = np.array([program_loop_cycles(op, lower(op, schedule_from_dict(op.KIND, k), hw)) for k in knobs])
        old = baseline(args.baseline, op, hw, knobs)
        cycles, dram = np.hsplit(measured(op, hw, knobs, args.workers, cache.setdefault(name, {})), [1])
        cycles = cycles.ravel()
        ratio = np.median(np.array([model_bytes(op, hw, k) for k in knobs]) / np.maximum(dram, 1), axis=0)
        if args.cache:
            args.cache.write_text(json.dumps(cache))
        pair = [(spearman(x, cycles), regret(x, cycles, 1), regret(x, cycles, 5)) for x in (old, new)]
        cols = " ".join(f"{a:>7.3f}{b:>8.3f}" for a, b in zip(*pair))
        print(f"{name:<9} {len(knobs):>6} {cols} {int(cycles.min()):>10,} {ratio[0]:>6.3f} {ratio[1]:>6.3f}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
