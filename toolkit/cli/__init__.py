"""``systolic``: lower, run, tune and benchmark ops on the accelerator from the shell."""
from __future__ import annotations

import argparse
import importlib
import os
from contextlib import contextmanager
from typing import Iterator

from .errors import Parser, run_command

COMMANDS = ("toolkit.cli.run", "toolkit.cli.profile", "toolkit.cli.bench",
            "toolkit.cli.tune", "toolkit.cli.net", "toolkit.cli.cc", "toolkit.cli.explore")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="systolic",
        description="Program, simulate and tune a Gemmini-style systolic-array accelerator.",
        epilog="Start with: systolic run matmul --m 64 --n 64 --k 64 --relu --scale 0.05. "
               "Each command has its own --help. Errors are one line; SYSTOLIC_DEBUG=1 shows the traceback.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        importlib.import_module(module).register(sub)
    return parser


@contextmanager
def quiet_builds(quiet: bool) -> Iterator[None]:
    """``--quiet`` silences the Verilator build notes too; through the environment, they reach
    the measuring processes of the tuner."""
    before = os.environ.get("SYSTOLIC_QUIET")
    if quiet:
        os.environ["SYSTOLIC_QUIET"] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("SYSTOLIC_QUIET", None)
        else:
            os.environ["SYSTOLIC_QUIET"] = before


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with quiet_builds(getattr(args, "quiet", False)):
        return run_command(f"systolic {args.command}", args.func, args)

