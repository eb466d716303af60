"""``systolic profile``: run an op on the RTL and show where each unit's cycles go, and the bound."""
from __future__ import annotations

import argparse
import json

import numpy as np

from .. import compile as compile_op
from .. import run as run_program
from ..profile import bound, cycle_stacks, format_soc_stacks, format_stacks, soc_stacks
from .errors import seed
from .common import add_host_arg, add_op_args, add_schedule_args, hardware, op_from_args
from .run import add_limit_args


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("profile", help="cycle stack of each unit of the RTL for an op, and what bounds it",
                       description="Lower an op, run it on the RTL (verilator backend), check it bit-exact and "
                                   "print each unit's cycle stack (bank, dma, busy, hazard, queue_full, idle: "
                                   "every cycle in exactly one, the first that applies) and the bound: compute, "
                                   "DMA read, DMA write, banks or dispatch.",
                       epilog="example: systolic profile matmul --m 256 --n 256 --k 256 --json")
    add_op_args(p)
    add_host_arg(p)
    add_schedule_args(p)
    p.add_argument("--seed", type=seed, default=0, help="seed of the random inputs")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    add_limit_args(p)
    p.set_defaults(func=cmd_profile)


def cmd_profile(args: argparse.Namespace) -> int:
    op = op_from_args(args)
    hw = hardware(args)
    prog = compile_op(op, hw, args.schedule, db=args.db, allow_large=args.allow_large)
    inputs = op.random_inputs(args.seed)
    limits = {"cycle_limit": args.cycle_limit, "watchdog": args.watchdog, "timeout": args.timeout}
    res = run_program(prog, inputs, "verilator", **{k: v for k, v in limits.items() if v})
    ref = op.reference(inputs)
    exact = all(np.array_equal(res.outputs[name], ref[name]) for name in ref)
    stacks = cycle_stacks(res.counters)
    soc = soc_stacks(res.counters)
    b = bound(res.counters, hw)
    if args.json:
        print(json.dumps({"op": op.key, "hardware": hw.name, "cycles": res.cycles, "exact": exact,
                          "stacks": stacks, "soc_stacks": soc, "bound": b.name, "reason": b.reason,
                          "scores": b.scores}))
    else:
        print(f"{op.key} on {hw.name} (verilator): {res.cycles} cycles, bit-exact: {'yes' if exact else 'NO'}")
        print(format_stacks(stacks, res.cycles))
        if soc:
            print(format_soc_stacks(soc, res.cycles))
        print(f"bound: {b.name}: {b.reason}")
    return 0 if exact else 1
