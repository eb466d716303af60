"""Network reports: the per-layer table, the whole-network line, CSV and a per-layer bar chart."""
from __future__ import annotations

from pathlib import Path

from toolkit import report
from toolkit.report import Column, fixed, record_columns

from .network import LayerRow, NetworkResult

_small = fixed(small=True)   # deviations from onnxruntime are often far under 1e-3
# The CSV has every field of a LayerRow; the table those with a header.
COLUMNS = record_columns(LayerRow, (
    Column("name", "layer", left=True), Column("kind", "kind", left=True), Column("repeat", "x"),
    Column("macs", "MACs", lambda m: f"{m / 1e6:.2f}M" if m else "-"), Column("cycles", "cycles", _small),
    Column("utilization", "util", _small), Column("bound", "bound", left=True),
    Column("share", "share", fixed(1, times=100, small=True)),
    Column("host_s", "host_ms", fixed(3, times=1e3, small=True)),
    Column("dev", "dev", _small), Column("mean_dev", "mean", fixed(3, small=True)), Column("net_dev", "net_dev", _small),
    Column("cosine", "cosine", fixed(5, small=True))))


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
    lines += _host_reasons(res)
    if res.ort_latency_s is not None:
        lines.append(f"  onnxruntime on this CPU: {res.ort_latency_s * 1e3:.3f} ms per inference")
    if res.output_dev:
        lines.append("  outputs vs onnxruntime, max |diff|: "
                     + ", ".join(f"{k} {v:.3g}" for k, v in res.output_dev.items()))
    for k, e in res.output_error.items():
        lines.append(f"  output {k} in steps of {e.step:.4g}: max {e.max_steps:g}, mean {e.mean_steps:.3f}, "
                     f"{e.within_2:.2%} within 2 steps; cosine {e.cosine:.6f}")
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


def _host_reasons(res: NetworkResult) -> list[str]:
    """The host layers grouped by type and reason: what the importer could not map, and why."""
    groups: dict[tuple[str, str], int] = {}
    for r in res.layers:
        if r.bound == "host":
            groups[(r.kind, r.note)] = groups.get((r.kind, r.note), 0) + 1
    return ["  on the host, and why:", *(f"    {n} x {kind}: {why}" for (kind, why), n in groups.items())] \
        if groups else []


def format_table(res: NetworkResult, clock_ghz: float = 1.0) -> str:
    return "\n".join([report.format_table(COLUMNS, res.layers),
                      "x: runs per inference; share: % of the accelerator cycles; dev: max |diff| from onnxruntime "
                      "with the layer fed onnxruntime's inputs (mean: its mean); net_dev: the same through our whole network; "
                      "cosine: of our network's dequantized values and onnxruntime's",
                      totals(res, clock_ghz)])


def write_csv(res: NetworkResult, path: str | Path) -> None:
    report.write_csv(COLUMNS, res.layers, path)


def plot(res: NetworkResult, path: str | Path, clock_ghz: float = 1.0) -> None:
    """Per-layer bars: accelerator time (cycles at ``clock_ghz``) and host time, in microseconds."""
    accel = [(r.cycles or 0) / (clock_ghz * 1e3) for r in res.layers]
    host = [(r.host_s or 0.0) * 1e6 for r in res.layers]
    with report.figure(path, max(6.0, 0.12 * len(res.layers) + 3), 4.2) as (ax,):
        x = report.label_rows(ax, [r.name for r in res.layers], rotation=90,
                              fontsize=5 if len(res.layers) > 60 else 7, ha="center")
        if res.cycles is not None:
            ax.bar(x, accel, color="tab:blue", label=f"accelerator ({res.backend}, {clock_ghz:g} GHz)")
        ax.bar(x, host, color="tab:orange", label="host ops (numpy)")
        ax.set_ylabel("time per layer (us)")
        ax.set_yscale("log")
        ax.set_title(f"{res.network} on {res.hw}: " + (f"{res.cycles:,} cycles" if res.cycles is not None else
                                                        "functional (no cycles)"), fontsize=9)
        ax.legend(fontsize=7)
