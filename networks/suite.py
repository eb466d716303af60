"""Workload suites: load them from YAML, run each layer, check it bit-exact, and report.

A suite (``networks/suites/NAME.yaml``, package data) is data: ``name``, ``description``,
``source``, ``departures`` (how it differs from its source), ``defaults`` (op parameters every
layer starts from; keys an op kind
does not take are skipped) and ``layers``, each a ``name``, an optional
``count`` (identical layers in the network) and the op's parameters with its
``kind``, as :func:`toolkit.kinds.from_dict` reads them.

Per layer the report gives MACs, instructions, cycles (None where the backend
has no timing), the ideal compute cycles (a GEMM's
``ceil(M/dim) * ceil(N/dim) * ceil(K/dim) * dim``; a conv's is its im2col GEMM's),
the roofline bound ``max(ideal, compulsory DRAM bytes / dma_beat_bytes)``,
utilization = ideal / cycles, the array occupancy (the MACs the computes do
on real data over the MAC slots of the rows they stream through the ``dim x dim``
array: how well the lowering fills the array, known without cycles), wall times
and the CPU backend's time.
"""
from __future__ import annotations

import fnmatch
import sys
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import yaml

from isa import GARBAGE, ComputePreloaded, HardwareConfig, Preload, Program
from isa.opcodes import STACK, STACK_UNITS, stack_counter
from simulators.base import BackendError
from simulators.base import run as run_program
from toolkit import report
from toolkit.kinds import KINDS, from_dict, ideal_cycles, roofline_cycles
from toolkit.ops import Op
from toolkit.report import Column, fixed, record_columns, show

from .compiling import compile_op

__all__ = ["Suite", "Layer", "LayerResult", "available_suites", "load_suite", "run_layer", "run_suite"]   # the public names (docs/reference/networks.md)

SUITE_DIR = Path(__file__).resolve().parent / "suites"   # package data: found in an install too
STACK_COUNTERS = tuple(stack_counter(u, c) for u in STACK_UNITS for c in STACK)   # the RTL's cycle stacks


@dataclass(frozen=True)
class Layer:
    """One layer of a suite: its name, its op, and how often the workload runs it (``count``).
    """
    name: str
    op: Op
    count: int = 1


@dataclass(frozen=True)
class Suite:
    """A workload suite read from ``networks/suites/NAME.yaml`` by :func:`load_suite`: its source, its layers,
    and how it departs from the source (``departures``).
    """
    name: str
    description: str
    source: str
    layers: tuple[Layer, ...]
    departures: str = ""

    def select(self, layers: Sequence[str] | None = None, limit: int | None = None) -> list[Layer]:
        """Layers whose name matches any of ``layers`` (glob patterns), then the first ``limit``."""
        chosen = list(self.layers)
        if layers:
            chosen = [l for l in chosen if any(fnmatch.fnmatchcase(l.name, p) for p in layers)]
            if not chosen:
                raise ValueError(f"layers={list(layers)} matches no layer of {self.name} "
                                 f"({', '.join(l.name for l in self.layers)})")
        if limit is not None:
            if limit < 1:
                raise ValueError(f"limit must be a positive integer, got {limit}")
            chosen = chosen[:limit]
        return chosen


def available_suites() -> list[str]:
    """The names of the suites in ``networks/suites/``."""
    return sorted(p.stem for p in SUITE_DIR.glob("*.yaml"))


def load_suite(spec: str | Path) -> Suite:
    """A suite by name (``networks/suites/NAME.yaml``) or from a YAML path."""
    path = Path(spec)
    if not path.suffix and not path.exists():
        path = SUITE_DIR / f"{spec}.yaml"
    if not path.is_file():
        raise ValueError(f"suite {str(spec)!r} is neither one of {available_suites()} nor a YAML file")
    try:
        data = yaml.safe_load(path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ValueError(f"suite file {str(path)!r} is not valid YAML: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("layers"), list) or not data["layers"]:
        raise ValueError(f"suite {str(path)!r} needs a non-empty 'layers' list")
    suite = data.get("name", path.stem)
    defaults = data.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise ValueError(f"suite {suite}: 'defaults' must be a mapping of op parameters, got {defaults!r}")
    layers = []
    for index, entry in enumerate(data["layers"]):
        if not isinstance(entry, dict):
            raise ValueError(f"suite {suite}, layer {index + 1} of {len(data['layers'])}: must be a mapping of op "
                             f"parameters (name: ..., kind: ..., ...), got {entry!r}")
        entry = dict(entry)
        name = str(entry.pop("name", f"layer{index}"))
        count = entry.pop("count", 1)
        kind = entry.get("kind", defaults.get("kind"))
        if kind not in KINDS:
            raise ValueError(f"suite {suite}, layer {name}: kind {kind!r} is not one of {sorted(KINDS)}")
        # a default reaches the ops that take it; a resadd's bias (its zero points' offset) is its own, never
        # the GEMMs' default bias
        known = {f.name for f in fields(KINDS[kind].op)} - ({"bias"} if kind == "resadd" else set())
        params = {k: v for k, v in defaults.items() if k in known}
        params.update(entry, kind=kind)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"suite {suite}, layer {name}: count must be a positive integer, got {count!r}")
        try:
            op = from_dict(params)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"suite {suite}, layer {name}: {exc}") from None
        layers.append(Layer(name, op, count))
    return Suite(str(data.get("name", path.stem)), str(data.get("description", "")).strip(),
                 str(data.get("source", "")).strip(), tuple(layers), str(data.get("departures", "")).strip())


# ---- measures ----------------------------------------------------------------------------------
def array_work(prog: Program) -> tuple[int, int, int]:
    """(computes, MACs on real data, MAC slots of the rows streamed) of a program's instruction stream.

    A compute streams a_rows rows through the array, each with dim x dim slots; it
    works on a_rows x a_cols x c_cols of them (none when A is the garbage address).
    """
    computes = useful = rows = 0
    c_cols = 0
    for ins in prog.instructions:
        if isinstance(ins, Preload):
            c_cols = ins.c_cols
        elif isinstance(ins, ComputePreloaded):
            computes += 1
            rows += ins.a_rows
            if ins.a != GARBAGE:
                useful += ins.a_rows * ins.a_cols * c_cols
    return computes, useful, rows * prog.hw.dim * prog.hw.dim


@dataclass
class LayerResult:
    """One layer of :func:`run_suite`: cycles, the ideal and roofline bounds, utilization (ideal / cycles),
    compile and run times, whether the output was bit-exact, and the cycle stacks where the backend has them.
    """
    name: str
    kind: str
    count: int
    macs: int
    instructions: int
    computes: int
    cycles: int | None
    ideal_cycles: int
    roofline_cycles: int
    utilization: float | None       # ideal / cycles
    occupancy: float | None         # MACs on data / (rows the computes stream * dim^2)
    compile_s: float
    run_s: float
    cpu_s: float | None
    exact: bool
    note: str = ""
    stacks: dict[str, int] | None = None   # the cycle-stack counters, where the backend has them

    @property
    def roofline_utilization(self) -> float | None:
        return self.roofline_cycles / self.cycles if self.cycles else None


def run_layer(layer: Layer, hw: HardwareConfig, *, backend: str = "functional", schedule: Any = None,
              db: str | Path | None = None, cpu: bool = True, seed: int = 0) -> LayerResult:
    """Compile, run and check one layer (bit-exact against ``op.reference``)."""
    op = layer.op
    start = time.perf_counter()
    prog = compile_op(op, hw, schedule, db=db)
    compile_s = time.perf_counter() - start
    inputs = op.random_inputs(seed)
    res = run_program(prog, inputs, backend)
    ref = op.reference(inputs)
    exact = all(np.array_equal(res.outputs[name], ref[name]) for name in ref)
    note = "" if exact else "MISMATCH against the numpy reference"
    cpu_s = None
    if cpu:
        try:
            cpu_res = run_program(prog, inputs, "cpu")
            cpu_s = cpu_res.wall_s
            if not all(np.array_equal(cpu_res.outputs[name], ref[name]) for name in ref):
                note = (note + "; " if note else "") + "cpu backend output differs"
        except (BackendError, ImportError) as exc:
            note = (note + "; " if note else "") + str(exc).split(" (")[0]
    computes, useful, streamed = array_work(prog)
    ideal = ideal_cycles(op, hw)
    roofline = roofline_cycles(op, hw)
    cycles = res.cycles
    stacks = {name: res.counters[name] for name in STACK_COUNTERS if name in res.counters}
    return LayerResult(layer.name, op.KIND, layer.count, op.macs, len(prog), computes, cycles, ideal, roofline,
                       ideal / cycles if cycles and ideal else None, useful / streamed if streamed else None,
                       compile_s, res.wall_s, cpu_s, exact, note,
                       stacks if len(stacks) == len(STACK_COUNTERS) else None)


def run_suite(suite: Suite, hw: HardwareConfig, *, backend: str = "functional", schedule: Any = None,
              db: str | Path | None = None, layers: Sequence[str] | None = None, limit: int | None = None,
              cpu: bool = True, seed: int = 0, progress: bool = True) -> list[LayerResult]:
    """Run the suite's layers (or those ``layers`` names, then the first ``limit``) on ``backend``, each
    compiled under ``schedule`` and checked bit-exact against its reference: one :class:`LayerResult` each."""
    chosen = suite.select(layers, limit)
    results = []
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(chosen, desc=f"{suite.name} ({backend})", unit="layer", file=sys.stderr, leave=False)
    for layer in bar if bar is not None else chosen:
        if bar is not None:
            bar.set_postfix_str(layer.name)
        results.append(run_layer(layer, hw, backend=backend, schedule=schedule, db=db, cpu=cpu, seed=seed))
    if bar is not None:
        bar.close()
    return results


# ---- reports -------------------------------------------------------------------------------------
def _stack_column(name: str) -> Column:
    return Column(name, get=lambda r: (r.stacks or {}).get(name))


# The CSV has every field (the cycle stacks as one column per counter, empty without them); the table those
# with a header.
COLUMNS = record_columns(LayerResult, (
    Column("name", "layer", left=True), Column("kind", "kind", left=True), Column("count", "count"),
    Column("macs", "MACs", fixed(1, per=1e6, suffix="M")), Column("instructions", "instrs"),
    Column("cycles", "cycles"), Column("ideal_cycles", "ideal"), Column("roofline_cycles", "roofline"),
    Column("utilization", "util"), Column("occupancy", "occupancy"), Column("compile_s", "compile_s", fixed(2)),
    Column("run_s", "run_s", fixed(2)), Column("cpu_s", "cpu_ms", fixed(2, times=1e3)), Column("exact", "exact")),
    extra=(Column("roofline_utilization"), *map(_stack_column, STACK_COUNTERS)), skip=("stacks",))


def summary(results: Sequence[LayerResult]) -> dict[str, Any]:
    """Network totals, each layer weighted by its count."""
    def total(attr: str, partial: bool = False) -> Any:
        pairs = [(getattr(r, attr), r.count) for r in results]
        if not partial and any(v is None for v, _ in pairs):
            return None
        known = [v * n for v, n in pairs if v is not None]
        return sum(known) if known else None
    cycles, ideal = total("cycles"), total("ideal_cycles")
    return {"layers": sum(r.count for r in results), "macs": total("macs"), "instructions": total("instructions"),
            "cycles": cycles, "ideal_cycles": ideal, "utilization": ideal / cycles if cycles else None,
            "compile_s": total("compile_s"), "run_s": total("run_s"),
            "cpu_s": total("cpu_s", partial=True), "cpu_layers": sum(r.count for r in results if r.cpu_s is not None),
            "exact": all(r.exact for r in results)}


def format_table(results: Sequence[LayerResult]) -> str:
    s = summary(results)
    lines = [report.format_table(COLUMNS, results),
             f"total ({s['layers']} layers with counts): {s['macs'] / 1e9:.2f} GMACs, "
             f"{s['instructions']} instructions, cycles {show(s['cycles'])}, utilization "
             f"{show(s['utilization'])}, compile {s['compile_s']:.1f} s, run {s['run_s']:.1f} s, "
             f"cpu {fixed(1, times=1e3)(s['cpu_s'])} ms ({s['cpu_layers']} layers with a cpu kernel), "
             f"all exact: {show(s['exact'])}"]
    notes = [f"  {r.name}: {r.note}" for r in results if r.note]
    if notes:
        lines += ["notes:"] + notes
    return "\n".join(lines)


def write_csv(results: Iterable[LayerResult], path: str | Path) -> None:
    report.write_csv(COLUMNS, list(results), path)


def plot(results: Sequence[LayerResult], path: str | Path, title: str = "") -> None:
    """Utilization per layer (measured where there are cycles, else the no-stall occupancy), with the
    roofline's share of the ideal as the ceiling; below it, where every layer has them (verilator),
    the cycle stacks of the load, execute and store units per layer."""
    with_stacks = all(r.stacks for r in results)
    width = max(6.0, 0.35 * len(results) + 2)
    size = (max(width, 0.6 * len(results) + 2), 8.4) if with_stacks else (width, 4.2)
    with report.figure(path, *size, panels=2 if with_stacks else 1) as axes:
        if with_stacks:
            _plot_stacks(axes[1], results)
        _plot_utilization(axes[0], results, title)


def _plot_utilization(ax: Any, results: Sequence[LayerResult], title: str) -> None:
    measured = all(r.cycles for r in results)
    values = [(r.utilization if measured else r.occupancy) or 0.0 for r in results]
    ceiling = [r.ideal_cycles / r.roofline_cycles if r.roofline_cycles else 0.0 for r in results]
    x = report.label_rows(ax, [r.name for r in results])
    ax.bar(x, values, color="tab:blue", label="utilization (ideal / cycles)" if measured else
           "array occupancy (MACs on data / MAC slots streamed); no cycles on this backend")
    moving = [i for i, r in enumerate(results) if not r.macs and r.cycles]
    if moving:   # layers without MACs are DRAM-bound: how close they come to the bandwidth bound
        ax.bar(x[moving], [results[i].roofline_utilization for i in moving], color="tab:orange",
               label="no MACs: roofline / cycles (DRAM bandwidth)")
    ax.scatter(x, ceiling, color="tab:red", marker="_", s=200, label="roofline ceiling (ideal / roofline)")
    ax.set_ylim(0, 1.3)   # headroom for the legend
    ax.set_ylabel("fraction of peak")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="upper right")


_STACK_COLORS = {"bank": "tab:red", "dma": "tab:orange", "busy": "tab:green", "hazard": "tab:purple",
                 "queue_full": "tab:brown", "idle": "lightgray"}


def _plot_stacks(ax: Any, results: Sequence[LayerResult]) -> None:
    """Three bars per layer (load, execute, store), each its cycle stack as shares of the layer's cycles."""
    x = report.label_rows(ax, [r.name for r in results])
    bar = 0.27
    for u, unit in enumerate(STACK_UNITS):
        bottom = np.zeros(len(results))
        for category in STACK:
            share = np.array([r.stacks[stack_counter(unit, category)] / r.cycles for r in results])
            ax.bar(x + (u - 1) * bar, share, bar * 0.95, bottom=bottom, color=_STACK_COLORS[category],
                   label=category if u == 0 else None)
            bottom += share
    ax.set_ylim(0, 1.0)
    ax.set_ylabel("share of cycles")
    ax.set_title("cycle stacks per layer: bars load | execute | store", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))

