"""``systolic tune``: search schedules of one op and record them in a tuning database."""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import cycle_cap, output_file, positive_int, seconds, seed
from .common import add_op_args, hardware, op_from_args
from ..kinds import TUNE_FAMILIES

if TYPE_CHECKING:
    from tuner.results import TuneResult

TUNER_NAMES = ("model", "random", "grid", "ga")
TUNE_BACKENDS = ("verilator", "stand-in")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tune", help="search schedules of an op (AutoTVM-style) and record them",
        description="Search tilings, loop orders, buffering and scratchpad placement of an op with a learned cost "
                    "model; every candidate is simulated, checked bit-exact and recorded in --db. Rerunning a "
                    "killed command resumes it: --trials counts the records already in the database.",
        epilog="example: systolic tune matmul --m 256 --n 256 --k 256 --trials 200 --db tuning.db; then "
               "systolic run matmul --m 256 --n 256 --k 256 --schedule best --db tuning.db")
    add_op_args(p)
    p.add_argument("--trials", type=positive_int, default=200, help="measurement budget in the db (default 200)")
    p.add_argument("--db", default="tuning.db", type=output_file, help="SQLite tuning database (default tuning.db)")
    p.add_argument("--tuner", choices=TUNER_NAMES, default="model", help="search strategy (default model)")
    p.add_argument("--backend", choices=TUNE_BACKENDS, default="verilator",
                   help="cycle source: verilator (RTL) or stand-in (analytical model, NOT RTL; for quick trials)")
    p.add_argument("--workers", type=positive_int, default=None, help="local measuring processes (default: CPU count)")
    p.add_argument("--scheduler", metavar="ADDR", help="Dask scheduler address (tcp://host:8786) to measure on")
    p.add_argument("--seed", type=seed, default=0, help="seed of the search and the inputs")
    p.add_argument("--timeout", type=seconds, default=600.0,
                   help="seconds per candidate before it counts as hung (default 600); a timeout is recorded and "
                        "counts against --trials, but a rerun with a longer --timeout measures it again")
    p.add_argument("--cycle-cap", type=cycle_cap, default=3.0, metavar="FACTOR",
                   help="stop a candidate at FACTOR times the best cycles so far and record it as slow, its cap a "
                        "lower bound of its cycles (default 3; 'none': run every candidate to its end)")
    p.add_argument("--batch-size", type=positive_int, default=None,
                   help="candidates per batch (default 8, whatever the workers, so that a seed searches alike "
                        "with any; give at least the workers on a large cluster)")
    p.add_argument("--family", choices=TUNE_FAMILIES, default="auto",
                   help="schedules searched: flat (the toolkit's streams), loops (Gemmini's LOOP_WS/LOOP_CONV_WS "
                        "with every tile a knob), pointwise (a 1x1 conv of stride 1 as tiled_matmul_nn_auto's "
                        "LOOP_WS, as Gemmini's own networks call it), both (one space of all of them), auto (the "
                        "default schedule's family, for a pointwise conv both loop families; default)")
    p.add_argument("--no-transfer", action="store_true", help="ignore records of other workloads")
    p.add_argument("--show-space", action="store_true", help="print the search space and exit")
    p.add_argument("--plot", metavar="CURVE.png", type=output_file, help="plot best cycles against trials")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_tune)


def cmd_tune(args: argparse.Namespace) -> int:
    from tuner.api import tune

    from ..limits import check_size
    from tuner.union import make_space

    op, hw = op_from_args(args), hardware(args)
    check_size(op, hw, args.allow_large)   # before the space is built
    space = make_space(op, hw, args.family)
    if args.show_space:
        print(space.summary())
        return 0
    if args.backend == "stand-in":
        print("note: --backend stand-in times candidates with the analytical stand-in model, not the RTL")
    if args.trials > len(space):
        print(f"note: --trials {args.trials} is more than the {len(space):,} candidates of the space: tuning stops "
              "when it has measured them all")
    result = tune(op, hw, trials=args.trials, tuner=args.tuner, backend=args.backend, db=args.db,
                  workers=args.workers, seed=args.seed, scheduler=args.scheduler, progress=not args.quiet,
                  timeout=args.timeout, batch_size=args.batch_size, transfer_learning=not args.no_transfer, space=space,
                  allow_large=args.allow_large, cycle_cap=args.cycle_cap)
    print(result.summary())
    if args.plot:
        plot_curve(result, args.plot)
        print(f"wrote {args.plot}")
    if result.schedule is None:
        print(f"systolic tune: error: no candidate succeeded: {result.failures() or 'none was measured'}",
              file=sys.stderr)
        return 1
    return 0


def plot_curve(result: "TuneResult", path: str | Path) -> None:
    """Best cycles so far against trials, with the default schedule for reference."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    history = result.history
    xs = [t.n for t in history if math.isfinite(t.best)]
    ys = [t.best for t in history if math.isfinite(t.best)]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.step(xs, ys, where="post", label=f"best ({result.tuner})")
    if result.default_cycles:
        ax.axhline(result.default_cycles, color="gray", ls="--", label="default schedule")
    ax.set_xlabel("trials")
    ax.set_ylabel(f"cycles ({result.backend})")
    ax.set_title(result.op.key, fontsize=8)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
