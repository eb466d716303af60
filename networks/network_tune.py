"""Tune a whole network: its unique tasks, one trial budget shared by their share of the cycles, one database.

1. Each task's default schedule is run once: its cycles x its count is its share
   of the network.
2. Every task gets one trial (the tuner's first: the default schedule) and the rest
   of the budget goes in proportion to the shares (largest remainders first); the
   tasks are tuned in order of share, so the records of the big tasks warm-start
   the smaller ones (the tuner's transfer).

Every measurement is committed to ``db`` as it lands and ``trials`` counts records
already there, so rerunning a killed ``tune_network`` with the same arguments
resumes it: the allocation depends only on the default cycles, which are in the db.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from isa import HardwareConfig
from simulators.base import BACKENDS
from simulators.base import run as run_program
from toolkit.ops import Op

from .compiling import compile_op
from .network import Network

__all__ = ["NetworkTuning", "TaskTuning", "tune_network"]   # the public names (docs/reference/networks.md)


@dataclass
class TaskTuning:
    """One task of a network's tuning: its op, how often the network runs it, its trials, its share of the
    default cycles, and its default and best cycles."""

    op: Op
    count: int
    trials: int
    share: float                    # of the network's default cycles
    default_cycles: int | None
    best_cycles: int | None

    @property
    def speedup(self) -> float | None:
        return self.default_cycles / self.best_cycles if self.default_cycles and self.best_cycles else None


@dataclass
class NetworkTuning:
    """What ``tk.tune_network`` returns: one :class:`TaskTuning` per task, and the network's cycles with the
    default and the tuned schedules (``default_cycles``, ``tuned_cycles``, ``speedup``); ``summary()`` prints them."""

    network: str
    hw: str
    backend: str
    db: str
    trials: int
    tasks: list[TaskTuning] = field(default_factory=list)

    @property
    def default_cycles(self) -> int | None:
        if any(t.default_cycles is None for t in self.tasks):
            return None
        return sum(t.count * t.default_cycles for t in self.tasks)

    @property
    def tuned_cycles(self) -> int | None:
        """Accelerator cycles of one inference with the best schedule of every task (the default where
        tuning found nothing better)."""
        best = [min(c for c in (t.best_cycles, t.default_cycles) if c is not None)
                if (t.best_cycles or t.default_cycles) else None for t in self.tasks]
        if any(b is None for b in best):
            return None
        return sum(t.count * b for t, b in zip(self.tasks, best))

    @property
    def speedup(self) -> float | None:
        d, t = self.default_cycles, self.tuned_cycles
        return d / t if d and t else None

    def summary(self) -> str:
        lines = [f"tuned {self.network} on {self.hw} ({self.backend}): {len(self.tasks)} tasks, budget {self.trials} "
                 f"trials, records in {self.db}"]
        lines.append(f"  {'task':70s} {'x':>3s} {'share':>6s} {'trials':>6s} {'default':>11s} {'best':>11s} speedup")
        for t in sorted(self.tasks, key=lambda t: -t.share):
            sp = f"{t.speedup:.2f}x" if t.speedup else "-"
            lines.append(f"  {t.op.key[:70]:70s} {t.count:3d} {t.share * 100:5.1f}% {t.trials:6d} "
                         f"{t.default_cycles or 0:11,d} {t.best_cycles or 0:11,d} {sp}")
        if self.speedup:
            lines.append(f"  network: default {self.default_cycles:,} cycles, tuned {self.tuned_cycles:,} cycles: "
                         f"{self.speedup:.3f}x end to end (accelerator cycles; host ops unchanged)")
        return "\n".join(lines)


def allocate(budget: int, weights: list[float]) -> list[int]:
    """One trial each, the rest in proportion to ``weights`` by largest remainders."""
    n = len(weights)
    extra = max(0, budget - n)
    total = sum(weights) or 1.0
    exact = [extra * w / total for w in weights]
    alloc = [1 + math.floor(e) for e in exact]
    left = budget - sum(alloc)
    for i in sorted(range(n), key=lambda i: -(exact[i] - math.floor(exact[i])))[:max(0, left)]:
        alloc[i] += 1
    return alloc


def tune_network(net: Network, hw: HardwareConfig | str = "gemmini", trials: int = 200, *,
                 db: str | Path = "tuning.db", backend: str = "verilator", progress: bool = True,
                 **options: Any) -> NetworkTuning:
    """Tune every unique task of ``net`` with one shared budget of ``trials`` measurements; records go in ``db``.
    ``options`` pass on to :func:`toolkit.tune` (tuner, workers, seed, timeout, ...)."""
    from tuner.api import tune as tune_op   # the public face calls the tuner, lazily: importing it is slow

    if not isinstance(net, Network):
        raise ValueError(f"net must be a Network from tk.from_onnx, got {type(net).__name__}")
    tasks = net.tasks
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < len(tasks):
        raise ValueError(f"trials must be an integer of at least the number of tasks ({len(tasks)}): one each "
                         f"measures the default schedule; got {trials!r}")
    hw = HardwareConfig.resolve(hw)

    def tune(op: Op, n: int, **extra: Any) -> Any:
        return tune_op(op, hw, trials=n, backend=backend, db=str(db), progress=progress, **{**options, **extra})

    def default_cycles(op: Op) -> int | None:
        """Cycles of the default schedule. A backend of simulators/ (the stand-in too) runs it directly; a
        custom cycle source (a callable) through the tuner, whose first trial is the default (it measures
        its seeds first)."""
        if backend in BACKENDS:
            return run_program(compile_op(op, hw), op.random_inputs(0), backend).cycles
        res = tune(op, 1, tuner="random", transfer_learning=False)
        return res.default_cycles if res.default_cycles is not None else res.cycles

    defaults = [default_cycles(t.op) for t in tasks]
    weights = [t.count * (d or 0) for t, d in zip(tasks, defaults)]
    total = sum(weights) or 1
    alloc = allocate(trials, weights)
    out = NetworkTuning(net.name, hw.name, backend, str(db), trials)
    best: dict[int, int | None] = {}
    for i in sorted(range(len(tasks)), key=lambda i: -weights[i]):   # big tasks first: they seed the transfer
        best[i] = tune(tasks[i].op, alloc[i]).cycles
    for i, t in enumerate(tasks):
        out.tasks.append(TaskTuning(t.op, t.count, alloc[i], weights[i] / total, defaults[i], best[i]))
    return out
