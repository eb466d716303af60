"""The static checker's CPU time (isa.checker.check, best of --repeats) on programs tk.run checks before
every run, side by side with another revision's code on the same ops, and whether both say the same.

    .venv/bin/python benchmarks/bench_checker.py [--baseline main] [--repeats 5]

The programs: bench_verilator's 512^3 matmul (default schedule, gemmini preset at dim 16) and three
of ResNet-50's convs (networks/suites/resnet50.yaml) on the gemmini preset. CPU time
(time.process_time), so that other processes on the machine weigh less on the ratio.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import toolkit as tk  # noqa: E402

from benchmarks.revision import python_tree, run_in  # noqa: E402

GEMMINI = tk.HardwareConfig.preset("gemmini")
CASES = {   # name: (op, hardware)
    "matmul 512^3 dim 16": (tk.matmul(512, 512, 512), dataclasses.replace(GEMMINI, name="gemmini-dim16", dim=16)),
    "s1_1x1a 56x56x256->64 1x1": (tk.conv2d(1, 56, 56, 256, 64, kernel=1, padding=0, bias="channel",
                                            activation="relu"), GEMMINI),
    "s1_3x3 56x56x64->64 3x3": (tk.conv2d(1, 56, 56, 64, 64, kernel=3, padding=1, bias="channel",
                                          activation="relu"), GEMMINI),
    "s4_3x3 7x7x512->512 3x3": (tk.conv2d(1, 7, 7, 512, 512, kernel=3, padding=1, bias="channel",
                                          activation="relu"), GEMMINI),
}

# run in either tree: argv[1] the JSON of the op and hardware, argv[2] the repeats; prints the best
# CPU seconds of check() and what it said (OK, or the error's text)
_TIMED_CHECK = """
import json, sys, time
import toolkit as tk
from isa.checker import check
from toolkit.kinds import from_dict
case = json.loads(sys.argv[1])
prog = tk.compile(from_dict(case["op"]), tk.HardwareConfig.from_dict(case["hw"]))
best, said = float("inf"), "OK"
for _ in range(int(sys.argv[2])):
    start = time.process_time()
    try:
        check(prog)
    except ValueError as exc:
        said = str(exc)
    best = min(best, time.process_time() - start)
print(json.dumps([best, said]))
"""


def timed(tree: Path, op: tk.Op, hw: tk.HardwareConfig, repeats: int) -> tuple[float, str]:
    """Best CPU seconds of check() on ``op``'s default program under ``tree``'s code, and what it said."""
    case = json.dumps({"op": op.to_dict(), "hw": hw.as_dict()})
    best, said = json.loads(run_in(tree, _TIMED_CHECK, case, str(repeats)).splitlines()[-1])
    return best, said


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--baseline", metavar="REV", default="main", help="the revision to compare with (main)")
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args(argv)
    print(f"{'program':<28} {'current ms':>10} {f'{args.baseline} ms':>14} {'speedup':>8}  same verdict")
    same = True
    with python_tree(args.baseline) as base_tree:
        for name, (op, hw) in CASES.items():
            cur, cur_said = timed(ROOT, op, hw, args.repeats)
            base, base_said = timed(base_tree, op, hw, args.repeats)
            same &= cur_said == base_said
            print(f"{name:<28} {cur * 1e3:>10.1f} {base * 1e3:>14.1f} {base / cur:>7.2f}x  {cur_said == base_said}",
                  flush=True)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
