"""What a tuning run reports: its trials in the order it saw them, and the best and default schedules."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from isa import HardwareConfig
from toolkit.ops import Op
from toolkit.schedule import Schedule


@dataclass
class Trial:
    """One measured candidate, in the order tuning measured them (resumed records first)."""

    n: int
    schedule: dict[str, Any]
    status: str
    cycles: int | None
    best: float             # best cycles so far (inf until the first success)
    error: str = ""


@dataclass
class TuneResult:
    """What ``tk.tune`` returns: the best schedule and its cycles, the default's, every trial in the order it was
    measured (``history``), the space's size and the cost model's rank correlation per batch; ``summary()``
    prints them."""

    op: Op
    hw: HardwareConfig
    backend: str
    tuner: str
    schedule: Schedule | None
    cycles: int | None
    default_schedule: Schedule | None
    default_cycles: int | None
    history: list[Trial] = field(default_factory=list)
    space_size: int = 0
    model_spearman: list[float] = field(default_factory=list)  # per batch, on records the model had not seen
    measured_now: int = 0
    seconds: float = 0.0
    feature_seconds: float = 0.0

    @property
    def speedup(self) -> float | None:
        """Default cycles / tuned cycles."""
        if self.cycles and self.default_cycles:
            return self.default_cycles / self.cycles
        return None

    @property
    def search_cycles(self) -> int | None:
        """The best the search itself found: every ok trial but the seeded default. The tuned best is
        never slower than the default by construction (it is measured first); this one may be."""
        default = self.default_schedule.to_dict() if self.default_schedule is not None else None
        found = [t.cycles for t in self.history if t.status == "ok" and t.schedule != default]
        return min(found) if found else None  # type: ignore[type-var]

    def failures(self) -> str:
        """The trials that failed, counted by status ("" when none did); slow ones (stopped at the cycle
        cap) are not failures."""
        failed: dict[str, int] = {}
        for t in self.history:
            if t.status not in ("ok", "slow"):
                failed[t.status] = failed.get(t.status, 0) + 1
        text = ", ".join(f"{n} {s}" for s, n in sorted(failed.items()))
        if "timeout" in failed:
            text += " (a rerun with a longer timeout measures the timeouts again)"
        return text

    def summary(self) -> str:
        lines = [f"{self.op.key} on {self.hw.name}, backend {self.backend}, tuner {self.tuner}: "
                 f"{len(self.history)} trials in the db ({self.measured_now} measured now, {self.seconds:.1f} s), "
                 f"space of {self.space_size:,}"]
        if self.schedule is None:
            lines.append("  no candidate succeeded")
        else:
            lines.append(f"  best     {self.cycles:,} cycles  {self.schedule}")
        if self.default_cycles is not None:
            sp = self.speedup
            lines.append(f"  default  {self.default_cycles:,} cycles" + (f"  (tuned is {sp:.2f}x faster)" if sp else ""))
            if self.search_cycles is not None:
                lines.append(f"  search   {self.search_cycles:,} cycles  (best without the seeded default: "
                             f"{self.default_cycles / self.search_cycles:.2f}x the default's speed)")
        slow = sum(t.status == "slow" for t in self.history)
        if slow:
            lines.append(f"  stopped at the cycle cap (slower than the cap times the best so far): {slow}")
        if self.failures():
            lines.append(f"  failed: {self.failures()}")
        rho = [r for r in self.model_spearman if not math.isnan(r)]
        if rho:
            lines.append(f"  model rank correlation on unseen batches: last {rho[-1]:.2f}, mean {sum(rho) / len(rho):.2f}")
        return "\n".join(lines)
