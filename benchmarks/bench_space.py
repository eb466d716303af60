"""Building the tuner's search space (tuner.space.Space: which schedules fit) for each layer of a suite,
in wall and CPU seconds; with --baseline REV, the same layers built by REV's code too, side by side in
one run, and whether each has as many points. ``--family loops``: the space of Gemmini's loops, which
tk.tune searches for a conv on the SoC (a layer without them is left out).

    .venv/bin/python benchmarks/bench_space.py [--suite resnet50] [--layers 'conv1' 's*_3x3'] [--baseline REV]
                                               [--family flat|loops]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import toolkit as tk  # noqa: E402

from benchmarks.revision import python_tree, run_in  # noqa: E402

# run over either tree: argv[1] the suite, argv[2] the hardware preset, argv[3] the family, argv[4:] the
# layers; prints one JSON line a layer: its name, wall and CPU seconds, and the space's points
TIME_SPACES = """
import json, sys, time
from isa import HardwareConfig
from networks.suite import load_suite
from tuner.space import Space
hw, family = HardwareConfig.preset(sys.argv[2]), sys.argv[3]
for layer in load_suite(sys.argv[1]).select(sys.argv[4:] or None):
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        size = len(Space(layer.op, hw, family=family))
    except ValueError:   # a kind with no loop schedules
        continue
    print(json.dumps([layer.name, time.perf_counter() - wall, time.process_time() - cpu, size]), flush=True)
"""


def timings(tree: Path, suite: str, preset: str, family: str, layers: list[str]
            ) -> dict[str, tuple[float, float, int]]:
    lines = run_in(tree, TIME_SPACES, suite, preset, family, *layers).splitlines()
    return {name: (wall, cpu, size) for name, wall, cpu, size in map(json.loads, lines)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--suite", default="resnet50")
    p.add_argument("--hw", default="gemmini", help="hardware preset")
    p.add_argument("--layers", nargs="*", default=[], help="glob patterns of layer names (default: every layer)")
    p.add_argument("--baseline", metavar="REV", help="also build the spaces with this git revision's code")
    p.add_argument("--family", choices=("flat", "loops"), default="flat",
                   help="the toolkit's flat streams (default) or Gemmini's loops")
    args = p.parse_args()
    tk.HardwareConfig.preset(args.hw)   # a bad preset fails here, not in a subprocess
    before = {}
    if args.baseline:
        with python_tree(args.baseline) as tree:
            before = timings(tree, args.suite, args.hw, args.family, args.layers)
    now = timings(ROOT, args.suite, args.hw, args.family, args.layers)
    print(f"Space ({args.family}) of each {args.suite} layer on {args.hw}: wall s (CPU s)"
          + (f", {args.baseline} then this tree" if before else ""))
    for name, (wall, cpu, size) in now.items():
        line = f"  {name:<16} {size:>15,} points  {wall:7.2f} s ({cpu:.2f})"
        if name in before:
            b_wall, b_cpu, b_size = before[name]
            line = (f"  {name:<16} {size:>15,} points  {b_wall:7.2f} s ({b_cpu:.2f}) -> {wall:5.2f} s ({cpu:.2f}), "
                    f"{b_cpu / max(cpu, 1e-9):.0f}x CPU{'' if b_size == size else f'  POINTS DIFFER: {b_size:,}'}")
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
