"""Render the docs' pictures from real runs on the RTL (Verilator): run on purpose, not in CI.

    .venv/bin/python docs/make_figures.py                 # all four, into docs/img/
    .venv/bin/python docs/make_figures.py --only stack tuner

- ``stack``: the cycle stack of each unit (load, execute, store) for three layers on the ``gemmini-alone`` preset
  (the default schedule and Gemmini's library on a 256^3 matmul, and a depthwise conv), from the RTL's counters.
- ``tuner``: the tuner's convergence on the RTL (best cycles so far against trials), the model tuner against
  random search, on a depthwise conv at ``tiny`` size (16x16x16, 3x3), from fresh databases.
- ``pareto``: ``tk.explore`` over dim 4 and 8 (base ``tiny``) on a 64^3 matmul: cycles from the RTL, area from
  Yosys plus the SRAM model, and the Pareto front. The first synthesis of each point takes minutes (cached after):
  the figure took 225 s, nearly all of it the two syntheses.
- ``timeline``: the simulate guide's conv on ``tiny``, each instruction a slice on its unit's track from issue to
  done: the events of the Chrome trace the guide writes (what Perfetto shows), drawn with matplotlib.

Each figure's caption in the docs says what produced it; the printed lines give the numbers drawn.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "img"

import toolkit as tk  # noqa: E402
from toolkit.profile import cycle_stacks  # noqa: E402

CATEGORIES = ("bank", "dma", "busy", "hazard", "queue_full", "idle")
COLORS = {"bank": "#d62728", "dma": "#ff7f0e", "busy": "#2ca02c", "hazard": "#9467bd", "queue_full": "#8c564b",
          "idle": "#dddddd"}


def stack_figure() -> None:
    hw = tk.HardwareConfig.preset("gemmini-alone")
    mm = tk.matmul(256, 256, 256)
    dw = tk.depthwise_conv2d(1, 28, 28, 32, bias="channel", activation="relu", scale=0.05)
    runs = [("matmul 256³, default", mm, None), ("matmul 256³, Gemmini's library", mm, "gemmini"),
            ("depthwise 28x28x32, default", dw, None)]
    fig, axes = plt.subplots(len(runs), 1, figsize=(8, 1.6 * len(runs) + 0.6), sharex=True)
    for ax, (title, op, schedule) in zip(axes, runs):
        inputs = op.random_inputs(seed=0)
        res = tk.run(tk.compile(op, hw, schedule), inputs, backend="verilator")
        stacks = cycle_stacks(res.counters)
        print(f"stack: {title}: {res.cycles} cycles; " + "; ".join(
            f"{u} " + ", ".join(f"{c} {v}" for c, v in s.items() if v) for u, s in stacks.items()))
        for y, unit in enumerate(("store", "exec", "load")):
            left = 0.0
            for c in CATEGORIES:
                share = stacks[unit][c] / res.cycles
                ax.barh(y, share, left=left, color=COLORS[c], label=c if y == 0 else None)
                left += share
        ax.set_yticks(range(3), ["store", "execute", "load"])
        ax.set_title(f"{title}: {res.cycles:,} cycles", fontsize=9, loc="left")
    axes[-1].set_xlabel("share of the cycles")
    axes[0].legend(ncol=6, fontsize=7, loc="lower left", bbox_to_anchor=(0, 1.25), frameon=False)
    fig.tight_layout()
    fig.savefig(OUT / "cycle_stack.png", dpi=120)
    plt.close(fig)


def tuner_figure(trials: int = 24) -> None:
    hw = tk.HardwareConfig.preset("tiny")
    op = tk.depthwise_conv2d(1, 16, 16, 16, bias="channel", activation="relu", scale=0.05)
    fig, ax = plt.subplots(figsize=(6, 3.6))
    with tempfile.TemporaryDirectory() as tmp:
        for tuner, color in (("model", "#1f77b4"), ("random", "#7f7f7f")):
            res = tk.tune(op, hw, trials=trials, tuner=tuner, backend="verilator", db=Path(tmp) / f"{tuner}.db",
                          progress=False, seed=0)
            best = [t.best for t in res.history]
            print(f"tuner: {tuner}: best so far by trial {[int(b) for b in best]}; default {res.default_cycles}")
            ax.step(range(1, len(best) + 1), best, where="post", color=color, label=f"{tuner} tuner")
            default = res.default_cycles
    ax.axhline(default, color="#d62728", ls="--", lw=1, label=f"default schedule ({default:,})")
    ax.set_xlabel("trials (candidates measured on the RTL)")
    ax.set_ylabel("best cycles so far")
    ax.set_title(f"{op.key.split('(')[0]} 16x16x16 3x3 on tiny: tuning on the RTL, seed 0", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(OUT / "tuner_convergence.png", dpi=120)
    plt.close(fig)


def pareto_figure() -> None:
    from networks.explore_report import format_table, plot

    with tempfile.TemporaryDirectory() as tmp:
        res = tk.explore(tk.matmul(64, 64, 64), {"dim": [4, 8]}, trials=4, base="tiny", db=Path(tmp) / "e.db",
                         workers=1, progress=False)
    print(format_table(res))
    plot(res, OUT / "pareto.png")


def timeline_figure() -> None:
    """The simulate guide's conv on tiny, its flat stream: each unit's instructions as slices from issue to
    done (the Chrome trace's events, what Perfetto shows), so the units' overlap can be seen."""
    from simulators.trace import chrome_trace_events

    hw = tk.HardwareConfig.preset("tiny")
    op = tk.conv2d(1, 8, 8, 8, 8, kernel=(3, 3), padding=1, activation="relu", scale=0.02)
    res = tk.run(tk.compile(op, hw), op.random_inputs(seed=0), backend="verilator", log=True)
    events = chrome_trace_events(res.log, res.soc_log, res.cycles)
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    tracks = [tid for tid, name in sorted(names.items(), reverse=True) if name in TRACK_COLORS]
    fig, ax = plt.subplots(figsize=(9, 2.2))
    for y, tid in enumerate(tracks):
        spans = [(e["ts"], e["dur"]) for e in events if e["ph"] == "X" and e["tid"] == tid]
        ax.broken_barh(spans, (y - 0.35, 0.7), facecolor=TRACK_COLORS[names[tid]], edgecolor="white", linewidth=0.2)
    ax.set_yticks(range(len(tracks)), [names[t] for t in tracks])
    ax.set_xlabel("cycle")
    ax.set_title(f"{op.key.split('(')[0]} 8x8x8 -> 8, 3x3 on tiny, the default's flat stream: {res.cycles:,} cycles, "
                 "one slice per instruction from issue to done", fontsize=9, loc="left")
    print(f"timeline: {res.cycles} cycles, "
          + ", ".join(f"{names[t]} {sum(1 for e in events if e['ph'] == 'X' and e['tid'] == t)} slices" for t in tracks))
    fig.tight_layout()
    fig.savefig(OUT / "timeline.png", dpi=120)
    plt.close(fig)


TRACK_COLORS = {"load": "#ff7f0e", "execute": "#2ca02c", "store": "#1f77b4"}
FIGURES = {"stack": stack_figure, "tuner": tuner_figure, "pareto": pareto_figure, "timeline": timeline_figure}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", nargs="+", choices=list(FIGURES), default=list(FIGURES))
    args = p.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("SYSTOLIC_QUIET", "1")
    for name in args.only:
        start = time.perf_counter()
        FIGURES[name]()
        print(f"{name}: {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
