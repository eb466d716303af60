"""How the CLI fails: one line on stderr and a nonzero exit status, never a traceback
(``SYSTOLIC_DEBUG=1`` shows it). Arguments are checked as they are parsed, so a bad
number or an output path that cannot be written stops the command before any work."""
from __future__ import annotations

import argparse
import os
import signal
import sys
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, NoReturn

from simulators.base import MAX_TIMEOUT_S, positive_limit

EXIT_ERROR = 2
EXIT_INTERRUPTED = 130


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (subparsers inherit the class)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def debugging() -> bool:
    return os.environ.get("SYSTOLIC_DEBUG", "") not in ("", "0")


def describe(exc: BaseException) -> str:
    """One line for any exception: our errors say what is wrong; others name their type."""
    if isinstance(exc, OSError) and exc.strerror:
        text = f"{exc.strerror}: {exc.filename!r}" if exc.filename else exc.strerror
    elif isinstance(exc, (ValueError, RuntimeError)) and str(exc):
        text = str(exc)
    else:
        text = f"internal error ({type(exc).__name__}: {exc}); SYSTOLIC_DEBUG=1 shows the traceback"
    return " | ".join(line.strip() for line in text.strip().splitlines() if line.strip())


class Terminated(BaseException):
    """A signal that ends the command (``terminate_on``); like KeyboardInterrupt, no ``except Exception``
    stops it, and every ``finally`` on the way runs."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextmanager
def terminate_on(*signums: signal.Signals) -> Iterator[None]:
    """Within: each of ``signums`` raises ``Terminated`` (instead of ending the process at once, which
    skips the cleanup), and once one has, the rest are ignored until the cleanup is done."""
    def handler(signum: int, frame: object) -> None:
        for s in signums:
            signal.signal(s, signal.SIG_IGN)
        raise Terminated(signum)
    before = {s: signal.signal(s, handler) for s in signums}
    try:
        yield
    finally:
        for s, previous in before.items():
            signal.signal(s, previous)


def run_command(prog: str, func: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """``func(args)``, with every failure turned into one line on stderr and an exit status
    (130 for SIGINT, 128 + the signal for ``Terminated``)."""
    try:
        return func(args)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated as exc:
        print(f"{prog}: terminated by {exc}", file=sys.stderr)
        return 128 + exc.signum
    except Exception as exc:
        if debugging():
            traceback.print_exc()
        print(f"{prog}: error: {describe(exc)}", file=sys.stderr)
        return EXIT_ERROR


# ---- argument types: argparse reports their ValueError/ArgumentTypeError as a usage error ----
def positive_int(text: str) -> int:
    return _positive(text, int)


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}")
    return value


def positive_float(text: str) -> float:
    return _positive(text, float)


def seconds(text: str) -> float:
    """A wall-clock limit: positive, and short enough for the operating system's timers."""
    value = _positive(text, float)
    if value > MAX_TIMEOUT_S:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_TIMEOUT_S:g} seconds, got {text!r}")
    return value


def cycle_cap(text: str) -> float | None:
    """A tuning cycle cap: a factor above 1 (times the best cycles so far), or none."""
    if text.lower() == "none":
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number or 'none'") from None
    if not 1 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: the cap is a factor above 1 (times the best so far)")
    return value


def seed(text: str) -> int:
    return non_negative_int(text)


def _positive(text: str, kind: type) -> Any:
    try:
        return positive_limit("the value", kind(text), kind)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive {'integer' if kind is int else 'number'}, "
                                         f"got {text!r}") from None


def output_file(text: str) -> str:
    """A file the command will write: its directory exists and is writable, and it is no directory."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a directory, not a file")
    _writable_dir(path.parent, text)
    return text


def output_dir(text: str) -> str:
    """A directory the command will create if needed: no file in the way, a writable ancestor."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} exists and is not a directory")
    ancestor = path
    while not ancestor.exists():
        ancestor = ancestor.parent
    _writable_dir(ancestor, text)
    return text


def _writable_dir(directory: Path, text: str) -> None:
    directory = directory if str(directory) else Path(".")
    if not directory.is_dir():
        raise argparse.ArgumentTypeError(f"cannot write {text!r}: directory {str(directory)!r} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"cannot write {text!r}: directory {str(directory)!r} is not writable")
