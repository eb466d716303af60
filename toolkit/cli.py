"""``systolic``: lower, run, tune and benchmark ops on the accelerator from the shell."""
from __future__ import annotations

import argparse
import importlib
import sys

from isa import ConfigError, ISAError
from simulators.base import BackendError

COMMANDS = ("toolkit.commands.run", "toolkit.commands.bench", "toolkit.commands.tune", "toolkit.commands.net")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="systolic",
        description="Program, simulate and tune a Gemmini-style systolic-array accelerator.",
        epilog="Start with: systolic run matmul --m 64 --n 64 --k 64 --relu --scale 0.05. "
               "Each command has its own --help.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        importlib.import_module(module).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, ISAError, ConfigError, BackendError) as exc:
        print(f"systolic {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"systolic {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
