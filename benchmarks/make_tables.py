"""Generate the RTL ground-truth tables under benchmarks/tables/ (``make tables``).

Each workload's (sub)space is measured point by point on the Verilator RTL, every
point checked bit-exact against the reference. A table that exists and whose
source hashes match the working tree is kept (cached); a missing, stale or damaged
one is measured again. Where the full space is too large, the workload names a
subspace (``restrict``) and says why it keeps the good schedules; the script then
also measures ``--outside`` random points of the full space outside the subspace
and stores how their best compares with the subspace's best (``notes.outside``).

    .venv/bin/python benchmarks/make_tables.py              # missing or stale tables
    .venv/bin/python benchmarks/make_tables.py --force mm_64x16x32_tiny
    .venv/bin/python benchmarks/make_tables.py --list
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import toolkit as tk  # noqa: E402
from toolkit.kinds import knob_domains  # noqa: E402
from toolkit.schedule import Schedule  # noqa: E402
from tuner.measure import MeasureResult, Measurer  # noqa: E402
from tuner.space import Space  # noqa: E402
from tuner.tables import Table, TableError, load, source_hashes  # noqa: E402

TABLES = ROOT / "benchmarks" / "tables"
TINY, GEMMINI = tk.HardwareConfig.preset("tiny"), tk.HardwareConfig.preset("gemmini")


@dataclass(frozen=True)
class Workload:
    name: str
    op: Any
    hw: tk.HardwareConfig
    restrict: dict[str, list]     # knob -> the values kept (empty: the full space)
    why: str = ""                 # why the subspace keeps the good schedules

    def space(self, full: bool = False) -> Space:
        if full or not self.restrict:
            return Space(self.op, self.hw)
        return Space(self.op, self.hw, domains={**knob_domains(self.op, self.hw), **self.restrict})

    @property
    def path(self) -> Path:
        return TABLES / f"{self.name}.json"


# Why the subspaces keep the good schedules (measured on the RTL one knob at a time around the default,
# and over 60 random points of each full space; make_tables also checks each table, see generate()):
_PIPE = {"split_buffers": [True], "spread": [0.5, 1.0]}
_WHY_PIPE = ("split_buffers off cost 5-18% at the default on every tiny workload; spread 0.25 was never more "
             "than 1% better than 0.5; mvin_blocks at the maximum (one longer DMA per row block) was within 2% "
             "of the others; one operand's bank (A / input) and the accumulator bank stay at the default's, "
             "the other operand's bank varies")
_MM = {**_PIPE, "a_bank": [0], "c_bank": [0], "b_bank": [0, 1]}
_CONV = {**_PIPE, "in_bank": [0], "acc_bank": [0], "w_bank": [0, 1], "store_delay": [1],
         "tile_oh": [2, 4, 8], "tile_ow": [2, 4, 8], "tile_kh": [1, 3], "tile_kw": [1, 3]}
_WHY_CONV = (_WHY_PIPE + "; store_delay 0 cost 3-5% at the default; output tiles of one row or column cost "
             "40-110% and 3 is ragged on 8, so 2/4/8 (and the default's); kernel tiles of the whole kernel or "
             "one tap; loop orders other than the default's changed cycles by under 1%, bkhw kept for contrast")


def _max_blocks(hw: tk.HardwareConfig) -> dict[str, list]:
    return {"mvin_blocks": [hw.max_block_len]}


WORKLOADS: list[Workload] = [
    Workload("mm_32x32x32_bias_relu_tiny", tk.matmul(32, 32, 32, bias="row", activation="relu", scale=0.05), TINY,
             {**_MM, **_max_blocks(TINY), "b_bank": [0]}, _WHY_PIPE + "; B's bank too stays at the default's"),
    Workload("mm_64x16x32_tiny", tk.matmul(64, 16, 32), TINY, {**_MM, **_max_blocks(TINY)}, _WHY_PIPE),
    Workload("mm_64x64x64_gemmini", tk.matmul(64, 64, 64), GEMMINI, {**_MM, **_max_blocks(GEMMINI)}, _WHY_PIPE),
    Workload("conv_8x8x8_8_3x3_tiny", tk.conv2d(1, 8, 8, 8, 8), TINY,
             {**_CONV, **_max_blocks(TINY), "loop_order": ["bhwk", "bkhw"]}, _WHY_CONV),
    Workload("conv_6x6x8_16_s2_bias_tiny", tk.conv2d(1, 6, 6, 8, 16, stride=2, bias="channel"), TINY,
             {**_CONV, **_max_blocks(TINY), "tile_oh": [1, 2, 3], "tile_ow": [1, 2, 3], "loop_order": ["bhwk"]},
             _WHY_CONV + "; output 3x3, so its tiles are all kept; every loop order gave the same cycles"),
    Workload("conv_8x8x16_8_1x1_tiny", tk.conv2d(1, 8, 8, 16, 8, kernel=(1, 1), padding=0), TINY,
             {**_CONV, **_max_blocks(TINY), "tile_kh": [1], "tile_kw": [1], "loop_order": ["bhwk", "bkhw"]},
             _WHY_CONV),
    Workload("conv_8x8x32_32_1x1_gemmini", tk.conv2d(1, 8, 8, 32, 32, kernel=(1, 1), padding=0), GEMMINI,
             {**_CONV, **_max_blocks(GEMMINI), "w_bank": [1, 2], "tile_kh": [1], "tile_kw": [1],
              "loop_order": ["bhwk", "bkhw"]}, _WHY_CONV),
    Workload("dw_8x8x8_3x3_tiny", tk.depthwise_conv2d(1, 8, 8, 8), TINY,
             {**_CONV, **_max_blocks(TINY), "loop_order": ["bhwc", "bchw"]}, _WHY_CONV),
]


def measure(op: Any, hw: tk.HardwareConfig, schedules: Sequence[Schedule], workers: int) -> list[MeasureResult]:
    """RTL cycles of each schedule, checked bit-exact, in order. The one place tables measure: it goes
    through the tuner's Measurer (a process pool, one harness run per point), so a batched harness
    behind the Measurer speeds up the tables too."""
    out: list[MeasureResult | None] = [None] * len(schedules)
    with Measurer("verilator", workers=workers, timeout=120.0) as m:
        for i, res in m.measure(op, hw, schedules):
            out[i] = res
    return out  # type: ignore[return-value]


def generate(w: Workload, workers: int, outside: int, seed: int = 0) -> Table:
    space = w.space()
    t = time.perf_counter()
    results = measure(w.op, w.hw, list(space), workers)
    cycles = np.array([r.cycles if r.ok else np.nan for r in results], dtype=float)
    notes: dict[str, Any] = {"restrict": w.restrict, "why": w.why, "full_space": len(w.space(full=True)),
                             "seconds": round(time.perf_counter() - t, 1)}
    if w.restrict and outside:
        notes["outside"] = check_subspace(w, space, cycles, workers, outside, seed)
    return Table(w.name, w.op, w.hw, space.domains, cycles, [r.status for r in results],
                 source_hashes(w.op, w.hw), notes)


def _outside_moves(w: Workload, full: Space, space: Space, point: int) -> list[Schedule]:
    """Schedules one knob away from subspace point ``point`` whose value the subspace left out."""
    knobs = space.knobs(point)
    out = []
    for name, values in w.restrict.items():
        for v in full.domains[name]:
            if v not in space.domains[name] and full.index_of({**knobs, name: v}) is not None:
                out.append(full.cls(**{**knobs, name: v}))
    return out


def check_subspace(w: Workload, space: Space, cycles: np.ndarray, workers: int, n_random: int, seed: int,
                   top: int = 3) -> dict[str, Any]:
    """Measure what the subspace leaves out where it matters most: every one-knob move out of it from
    its ``top`` best points, and ``n_random`` random points of the full space outside it. Returns the
    best of each over the table's best (>= 1: the subspace's best was not beaten)."""
    full = w.space(full=True)
    best = float(np.nanmin(cycles))
    moves = [s for p in np.argsort(np.where(np.isnan(cycles), np.inf, cycles))[:top]
             for s in _outside_moves(w, full, space, int(p))]
    rng = np.random.default_rng(seed)
    rand = [full[p] for p in full.sample(rng, 4 * n_random) if space.index_of(full[p]) is None][:n_random]
    res = measure(w.op, w.hw, moves + rand, workers)
    out: dict[str, Any] = {}
    for label, part, sched in (("moves", res[:len(moves)], moves), ("random", res[len(moves):], rand)):
        ok = [(r.cycles, s) for r, s in zip(part, sched) if r.ok]
        c, s = min(ok, key=lambda x: x[0]) if ok else (None, None)
        out[label] = {"measured": len(part), "ok": len(ok), "best_over_table_best": round(c / best, 4) if c else None,
                      "best_schedule": s.to_dict() if s else None}
    return out


def state(w: Workload) -> str:
    """"ok", or why the table must be (re)generated."""
    if not w.path.exists():
        return "missing"
    try:
        load(w.path)
    except TableError as exc:
        return str(exc)
    return "ok"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("names", nargs="*", help="workloads (default all)")
    p.add_argument("--force", action="store_true", help="measure again even when the table is current")
    p.add_argument("--list", action="store_true", help="print each table's state and space size, measure nothing")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--outside", type=int, default=16, help="random points outside a subspace measured to check it")
    args = p.parse_args(argv)
    chosen = [w for w in WORKLOADS if not args.names or w.name in args.names]
    TABLES.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    for w in chosen:
        why = state(w)
        if args.list:
            print(f"{w.name:<30} {len(w.space()):>6} points (full space {len(w.space(full=True)):,})  {why}")
            continue
        if why == "ok" and not args.force:
            print(f"{w.name}: current")
            continue
        print(f"{w.name}: {why}; measuring {len(w.space())} points", flush=True)
        table = generate(w, args.workers, args.outside)
        table.save(w.path)
        bad = len(table.status) - table.status.count("ok")
        out = table.notes.get("outside", {})
        print(f"  best {table.best:,.0f} cycles, {bad} not ok, {table.notes['seconds']} s; best outside / table "
              f"best: " + ", ".join(f"{k} {v['best_over_table_best']} ({v['measured']} points)" for k, v in out.items()),
              flush=True)
    print(f"done in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
