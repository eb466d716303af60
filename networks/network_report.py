"""Network reports: the per-layer table, the whole-network line, CSV and a per-layer bar chart."""
from __future__ import annotations

import csv
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from .network import LayerRow, NetworkResult

COLUMNS = ("layer", "kind", "x", "MACs", "cycles", "util", "bound", "share", "host_ms", "dev", "net_dev")


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}" if abs(value) < 1e-3 and value else f"{value:.{digits}f}"
    return str(value)


def _row(r: LayerRow) -> list[str]:
    return [r.name, r.kind, str(r.repeat), f"{r.macs / 1e6:.2f}M" if r.macs else "-", _fmt(r.cycles),
            _fmt(r.utilization), r.bound, _fmt(r.share * 100 if r.share is not None else None, 1),
            _fmt(r.host_s * 1e3 if r.host_s is not None else None, 3), _fmt(r.dev), _fmt(r.net_dev)]


def totals(res: NetworkResult, clock_ghz: float = 1.0) -> str:
    accel = [r for r in res.layers if r.bound != "host"]
    lines = [f"network {res.network} on {res.hw} ({res.backend}, {res.schedule} schedule): {len(accel)} accelerator "
             f"layers, {len(res.layers) - len(accel)} host layers"]
    if res.cycles is not None:
        ideal = sum(r.ideal_cycles or 0 for r in accel)
        lines.append(f"  accelerator: {res.cycles:,} cycles = {res.latency_s(clock_ghz) * 1e3:.3f} ms at "
                     f"{clock_ghz:g} GHz, utilization {ideal / res.cycles:.3f}")
    else:
        lines.append("  accelerator: no cycles on the functional backend (use --backend verilator)")
    lines.append(f"  host ops: {res.host_s * 1e3:.3f} ms (numpy)")
    if res.ort_latency_s is not None:
        lines.append(f"  onnxruntime on this CPU: {res.ort_latency_s * 1e3:.3f} ms per inference")
    if res.output_dev:
        lines.append("  outputs vs onnxruntime, max |diff|: "
                     + ", ".join(f"{k} {v:.3g}" for k, v in res.output_dev.items()))
    checked = [r for r in res.layers if r.dev is not None]
    if checked:
        exact = {k: [r for r in checked if r.kind == k] for k in sorted({r.kind for r in checked})}
        lines.append("  layers bit-exact with onnxruntime on its own inputs: "
                     + ", ".join(f"{k} {sum(r.exact for r in rs)}/{len(rs)}" for k, rs in exact.items()))
        for label, kinds in (("conv/matmul", ("conv2d", "depthwise", "matmul")), ("resadd", ("resadd",))):
            rows = [r for r in checked if r.kind in kinds]
            n, ties = sum(r.mismatches or 0 for r in rows), sum(r.ties or 0 for r in rows)
            if n:
                lines.append(f"  {label} elements that differ from onnxruntime: {n}, by at most "
                             f"{max(r.dev for r in rows):g}; {ties} of them at rounding ties (the exact value within "
                             "1e-4 of k + 1/2, where float32 rounding decides)")
    lines.append(f"  wall time: {res.wall_s:.1f} s to run" + (f", {res.compare_s:.1f} s to compare with onnxruntime"
                                                               if res.compare_s else ""))
    lines += [f"  note: {n}" for n in res.notes]
    return "\n".join(lines)


def format_table(res: NetworkResult, clock_ghz: float = 1.0) -> str:
    rows = [list(COLUMNS)] + [_row(r) for r in res.layers]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(c.ljust(w) if i < 2 or i == 6 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
             for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append("x: runs per inference; share: % of the accelerator cycles; dev: max |diff| from onnxruntime "
                 "with the layer fed onnxruntime's inputs; net_dev: the same through our whole network")
    return "\n".join(lines) + "\n" + totals(res, clock_ghz)


def write_csv(res: NetworkResult, path: str | Path) -> None:
    names = [f.name for f in fields(LayerRow)]
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=names)
        writer.writeheader()
        for r in res.layers:
            writer.writerow(asdict(r))


def plot(res: NetworkResult, path: str | Path, clock_ghz: float = 1.0) -> None:
    """Per-layer bars: accelerator time (cycles at ``clock_ghz``) and host time, in microseconds."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    x = np.arange(len(res.layers))
    accel = [(r.cycles or 0) / (clock_ghz * 1e3) for r in res.layers]
    host = [(r.host_s or 0.0) * 1e6 for r in res.layers]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.12 * len(res.layers) + 3), 4.2))
    if res.cycles is not None:
        ax.bar(x, accel, color="tab:blue", label=f"accelerator ({res.backend}, {clock_ghz:g} GHz)")
    ax.bar(x, host, color="tab:orange", label="host ops (numpy)")
    ax.set_xticks(x, [r.name for r in res.layers], rotation=90, fontsize=5 if len(x) > 60 else 7)
    ax.set_ylabel("time per layer (us)")
    ax.set_yscale("log")
    ax.set_title(f"{res.network} on {res.hw}: " + (f"{res.cycles:,} cycles" if res.cycles is not None else
                                                    "functional (no cycles)"), fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
