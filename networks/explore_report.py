"""The report of an exploration: a row per hardware point (table and CSV), the front, the Pareto plot."""
from __future__ import annotations

from pathlib import Path

from toolkit import report
from toolkit.report import Column, fixed

from .area import PARTS
from .explore import ExploreResult

_mega = fixed(2, per=1e6, suffix="M")
# seconds a point spent: synthesis runs beside build and tuning, and "synthesis_wait" is what it added
STAGES = ("build", "tuning", "synthesis", "synthesis_wait")
COLUMNS = (
    Column("name", "point", left=True), Column("cycles", "cycles"),
    Column("default_cycles", "default"), Column("speedup", "tuned/default", fixed(2, suffix="x")),
    Column("utilization", "util"), Column("transistors", "area", _mega),
    *(Column(part, part[:4] if part != "accumulator" else "acc", _mega, get=lambda p, part=part: p.area.get(part))
      for part in PARTS),
    Column("logic_depth", "depth", get=lambda p: p.area.get("logic_depth")),
    Column("bound", "bound", left=True), Column("reason", "reason", left=True, get=lambda p: p.reason or None),
    *(Column(f"{stage}_s", get=lambda p, stage=stage: p.seconds.get(stage)) for stage in STAGES),
)


def format_table(res: ExploreResult) -> str:
    front = {id(p) for p in res.pareto}
    cols = (Column("front", "front", left=True, get=lambda p: "*" if id(p) in front else
                   ("preset" if res.is_preset(p) else "")), *COLUMNS)
    text = report.format_table(cols, res.points)
    spent = {stage: sum(p.seconds.get(stage, 0.0) for p in res.points) for stage in STAGES}
    return "\n".join([f"explore {res.workload}: {len(res.points)} points, {sum(p.fits for p in res.points)} fit",
                      text, "area in transistors (M = 1e6): logic from Yosys (mesh, control), SRAMs from the model "
                      "of networks/area.py; depth: the longest gate chain; front: * on the Pareto front",
                      "seconds by stage: " + ", ".join(f"{k} {v:.1f}" for k, v in spent.items()) +
                      " (synthesis runs beside build and tuning; the wall time is build + tuning + synthesis_wait)"])


def write_csv(res: ExploreResult, path: str | Path) -> None:
    report.write_csv(COLUMNS, res.points, path)


def plot(res: ExploreResult, path: str | Path) -> None:
    """Cycles against area for every point that fits, the front joined and marked, the preset labelled."""
    done = [p for p in res.points if p.cycles is not None and p.transistors is not None]
    with report.figure(path, 6.4, 4.6) as (ax,):
        ax.scatter([p.transistors / 1e6 for p in done], [p.cycles for p in done], color="tab:gray", s=18,
                   label="hardware points (tuned)")
        front = res.pareto
        ax.plot([p.transistors / 1e6 for p in front], [p.cycles for p in front], "o-", color="tab:red",
                label="Pareto front")
        for p in done:
            if res.is_preset(p):
                ax.annotate(f"{res.preset.name} preset", (p.transistors / 1e6, p.cycles), fontsize=8,
                            xytext=(6, 6), textcoords="offset points")
        ax.set_xlabel("area (million transistors)")
        ax.set_ylabel("cycles (RTL, best schedule)")
        ax.set_yscale("log")
        ax.set_title(f"explore {res.workload}", fontsize=9)
        ax.legend(fontsize=7)
