"""What every backend returns, and the registry ``tk.run`` picks backends from."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from isa import Program


class BackendError(RuntimeError):
    """A backend could not run (missing tool or device, failed build, hung simulation)."""


@dataclass
class RunResult:
    outputs: dict[str, np.ndarray]
    cycles: int | None
    counters: dict[str, Any] = field(default_factory=dict)
    backend: str = ""
    wall_s: float = 0.0
    log: list[dict] | None = None   # per-instruction issue/complete log, where the backend keeps one


RunFn = Callable[..., RunResult]


def get_backend(name: str) -> RunFn:
    """The ``run(program, inputs, **options)`` function of a backend, imported on first use."""
    import importlib
    if name not in BACKENDS:
        raise ValueError(f"backend={name!r} is not one of {sorted(BACKENDS)}")
    return getattr(importlib.import_module(f"simulators.{BACKENDS[name]}"), "run")


BACKENDS = {"functional": "functional", "verilator": "verilator", "cpu": "cpu", "gpu": "gpu"}


def run(program: Program, inputs: Mapping[str, np.ndarray], backend: str = "functional", **options: Any) -> RunResult:
    return get_backend(backend)(program, inputs, **options)
