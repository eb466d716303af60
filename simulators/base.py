"""What every backend returns, and the registry ``tk.run`` picks backends from."""
from __future__ import annotations

import inspect
import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from isa import Program


class BackendError(RuntimeError):
    """A backend could not run (missing tool or device, failed build, hung simulation)."""


class ToolchainError(BackendError):
    """The backend itself cannot run any program here (missing tool, failed build, unusable
    cache): no fault of the program it was given."""


class SimulationTimeout(BackendError):
    """A simulation ran past its wall-clock ``timeout`` and was killed."""


class CycleLimit(BackendError):
    """A simulation reached its ``cycle_limit`` before the program ended."""


# The longest wall-clock limit: past about 1e8 s the operating system's timers overflow.
MAX_TIMEOUT_S = 1e7


def positive_limit(name: str, value: Any, kind: type = int, maximum: float | None = None) -> Any:
    """A run limit: None (no limit) or a positive, finite ``kind`` up to ``maximum``; zero and negatives
    are errors, not "off"."""
    if value is None:
        return None
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    if not ok or (kind is int and value != int(value)):
        raise ValueError(f"{name} must be a positive {'integer' if kind is int else 'number'}, got {value!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be at most {maximum:g}, got {value!r}")
    return kind(value)


@dataclass
class RunResult:
    """What ``tk.run`` returns: the output arrays by name, the cycles (an int on the verilator backend and
    the stand-in, None on the functional, cpu and gpu backends), the backend's counters, and its wall time."""

    outputs: dict[str, np.ndarray]
    cycles: int | None
    counters: dict[str, Any] = field(default_factory=dict)
    backend: str = ""
    wall_s: float = 0.0
    log: list[dict] | None = None   # per-instruction issue/complete log, where the backend keeps one
    # with the log, on the SoC: the host's and the memory's states as runs, stack -> [(start cycle, state)]
    soc_log: dict[str, list[tuple[int, str]]] | None = None


RunFn = Callable[..., RunResult]


def get_backend(name: str) -> RunFn:
    """The ``run(program, inputs, **options)`` function of a backend, imported on first use."""
    import importlib
    if name not in BACKENDS:
        raise ValueError(f"backend={name!r} is not one of {sorted(BACKENDS)}")
    return getattr(importlib.import_module(f"simulators.{BACKENDS[name]}"), "run")


# name -> module of simulators/; "stand-in" is an analytical timing model, not the RTL (see stand_in.py)
BACKENDS = {"functional": "functional", "verilator": "verilator", "cpu": "cpu", "gpu": "gpu", "stand-in": "stand_in"}


def check_options(backend: str, fn: RunFn, options: Mapping[str, Any]) -> None:
    """TypeError naming each option that ``backend`` does not take: a misspelt option is never ignored.

    A backend's options are the keyword-only parameters of its ``run``."""
    params = inspect.signature(fn).parameters
    known = [n for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY]
    unknown = [name for name in options if name not in known]
    if unknown:
        public = ", ".join(n for n in known if not n.startswith("_")) or "none"
        raise TypeError(f"backend {backend!r} has no option {', '.join(map(repr, unknown))} (its options: {public})")


def run(program: Program, inputs: Mapping[str, np.ndarray], backend: str = "functional", **options: Any) -> RunResult:
    fn = get_backend(backend)
    check_options(backend, fn, options)
    return fn(program, inputs, **options)
