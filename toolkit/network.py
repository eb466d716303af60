"""A network: ordered layers (accelerator ops and host ops), the tensors between them, its unique tasks.

:func:`toolkit.onnx_import.from_onnx` builds one from a quantized ONNX model;
:func:`run_network` runs it whole. Activations live as int8 DRAM buffers between
accelerator layers at the scale the model gives them; a 4-D tensor an accelerator
layer writes stays channels-last (``layout="nhwc"``), and is transposed to ONNX's
NCHW only where a host op or a graph output reads it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Union

import numpy as np

from isa import HardwareConfig

from .api import compile as compile_op
from .api import resolve_schedule
from .api import run as run_program
from .bench import compulsory_bytes, ideal_cycles
from .host_ops import HostFn
from .ops import Op
from .schedule import ScheduleError

LAYOUTS = ("native", "nhwc")


@dataclass(frozen=True)
class TensorInfo:
    """A tensor between layers: its ONNX shape and dtype, the scale of an int8 tensor, its DRAM layout."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    scale: float | None = None
    layout: str = "native"
    zero_point: int = 0         # nonzero only where host ops quantize asymmetrically (e.g. QLinearSoftmax)

    @property
    def stored_shape(self) -> tuple[int, ...]:
        return to_layout_shape(self.shape, self.layout)


def to_layout_shape(shape: tuple[int, ...], layout: str) -> tuple[int, ...]:
    if layout == "nhwc":
        n, c, h, w = shape
        return n, h, w, c
    return tuple(shape)


def convert_layout(arr: np.ndarray, have: str, want: str) -> np.ndarray:
    if have == want:
        return arr
    perm = (0, 2, 3, 1) if want == "nhwc" else (0, 3, 1, 2)
    return np.ascontiguousarray(arr.transpose(perm))


@dataclass(frozen=True)
class Feed:
    """An activation an accelerator op reads: the tensor, the layout it reads it in, the shape it sees
    (with a leading axis of ``repeat`` slices when ``per_repeat``)."""

    tensor: str
    layout: str
    shape: tuple[int, ...]
    per_repeat: bool = False


@dataclass(frozen=True, eq=False)
class AccelLayer:
    """One toolkit op (run ``repeat`` times over slices, for batched matmuls) from the ONNX nodes ``nodes``."""

    name: str
    op: Op
    feeds: dict[str, Feed]
    constants: dict[str, np.ndarray]
    output: str
    repeat: int = 1
    nodes: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        return self.op.KIND

    @property
    def outputs(self) -> tuple[str, ...]:
        return (self.output,)

    def tensor_inputs(self) -> list[str]:
        return [f.tensor for f in self.feeds.values()]


@dataclass(frozen=True, eq=False)
class HostLayer:
    """An op the accelerator has no unit for, run in numpy on the host. ``inputs`` holds tensor names,
    None where ``constants`` gives the value (by input position)."""

    name: str
    op_type: str
    inputs: tuple[str | None, ...]
    constants: dict[int, np.ndarray]
    attrs: dict[str, Any]
    outputs: tuple[str, ...]
    fn: HostFn

    @property
    def kind(self) -> str:
        return f"host:{self.op_type}"

    def tensor_inputs(self) -> list[str]:
        return [t for t in self.inputs if t is not None]


Layer = Union[AccelLayer, HostLayer]


_VALUE_ONLY = ("scale", "a_scale", "b_scale")    # op fields that change values, never the instruction timing


def task_op(op: Op) -> Op:
    """The workload a layer's op is an instance of: its scales set to 1, so layers of one shape share
    tuning records whatever the requantization scales the model gives them."""
    return replace(op, **{f: 1.0 for f in _VALUE_ONLY if hasattr(op, f)})


@dataclass(frozen=True)
class Task:
    """A unique accelerator workload of a network and how often one run executes it."""

    op: Op
    count: int
    layers: tuple[str, ...]


@dataclass(eq=False)
class Network:
    name: str
    inputs: dict[str, TensorInfo]
    outputs: tuple[str, ...]
    tensors: dict[str, TensorInfo]
    layers: list[Layer]
    model: Any = None           # the onnx.ModelProto it came from (for the onnxruntime comparison)

    @property
    def tasks(self) -> list[Task]:
        """Unique accelerator workloads (:func:`task_op`), in order of first appearance, with their execution
        counts per inference."""
        found: dict[Op, list] = {}
        for layer in self.layers:
            if isinstance(layer, AccelLayer):
                entry = found.setdefault(task_op(layer.op), [0, []])
                entry[0] += layer.repeat
                entry[1].append(layer.name)
        return [Task(op, n, tuple(names)) for op, (n, names) in found.items()]

    def summary(self) -> str:
        accel = [l for l in self.layers if isinstance(l, AccelLayer)]
        kinds: dict[str, int] = {}
        for l in self.layers:
            kinds[l.kind] = kinds.get(l.kind, 0) + 1
        macs = sum(l.op.macs * l.repeat for l in accel)
        return (f"network {self.name}: {len(self.layers)} layers ({len(accel)} on the accelerator, "
                f"{len(self.layers) - len(accel)} on the host), {len(self.tasks)} unique tasks, {macs / 1e9:.3f} GMACs; "
                + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))


# ---- running ---------------------------------------------------------------------------------
@dataclass
class LayerRow:
    """One layer of a network run. Accelerator layers have cycles (on a timed backend); host layers host_s."""

    name: str
    kind: str
    op: str
    repeat: int
    macs: int
    cycles: int | None
    ideal_cycles: int | None
    roofline_cycles: int | None
    utilization: float | None
    bound: str                  # compute / memory (which side of the roofline binds), or host
    share: float | None         # of the network's accelerator cycles
    host_s: float | None
    wall_s: float
    dev: float | None = None         # max |this layer on onnxruntime's inputs - onnxruntime's output| (its units)
    net_dev: float | None = None     # max |our network's tensor - onnxruntime's| (upstream deviations included)
    exact: bool | None = None        # dev == 0: the layer's arithmetic is onnxruntime's
    mismatches: int | None = None    # elements that differ (on onnxruntime's inputs)
    ties: int | None = None          # of those, where the exact value lies within 1e-4 of a rounding tie
    note: str = ""


@dataclass
class NetworkResult:
    network: str
    hw: str
    backend: str
    schedule: str
    outputs: dict[str, np.ndarray]
    cycles: int | None
    layers: list[LayerRow]
    host_s: float
    wall_s: float
    output_dev: dict[str, float] = field(default_factory=dict)   # per graph output: max |ours - onnxruntime|
    ort_latency_s: float | None = None
    compare_s: float = 0.0          # wall time of the onnxruntime comparison (not in wall_s)
    notes: list[str] = field(default_factory=list)

    def latency_s(self, clock_ghz: float = 1.0) -> float | None:
        """Accelerator time at ``clock_ghz`` (host ops not included: see host_s)."""
        return self.cycles / (clock_ghz * 1e9) if self.cycles is not None else None


def _check_inputs(net: Network, inputs: Mapping[str, np.ndarray]) -> None:
    for name, info in net.inputs.items():
        if name not in inputs:
            raise ValueError(f"inputs: missing {name!r} ({info.dtype} of shape {info.shape})")
        arr = inputs[name]
        if not isinstance(arr, np.ndarray) or arr.shape != info.shape or arr.dtype != np.dtype(info.dtype):
            got = f"{arr.dtype} {arr.shape}" if isinstance(arr, np.ndarray) else type(arr).__name__
            raise ValueError(f"inputs[{name!r}]: expected {info.dtype} of shape {info.shape}, got {got}")
    extra = sorted(set(inputs) - set(net.inputs))
    if extra:
        raise ValueError(f"inputs: {extra} are not inputs of {net.name} (it takes {sorted(net.inputs)})")


class _Compiler:
    """Programs per op, compiled once per run; 'gemmini' and 'best' fall back to the default where missing."""

    def __init__(self, hw: HardwareConfig, schedule: Any, db: str | Path | None) -> None:
        self.hw, self.schedule, self.db = hw, schedule, db
        self.programs: dict[Op, Any] = {}
        self.notes: dict[Op, str] = {}

    def __call__(self, op: Op) -> Any:
        if op not in self.programs:
            try:
                schedule = self.schedule
                if schedule == "best":   # records are kept per task: the op with its scales set to 1
                    schedule = resolve_schedule(task_op(op), self.hw, "best", self.db)
                self.programs[op] = compile_op(op, self.hw, schedule, db=self.db)
            except ScheduleError as exc:
                if self.schedule not in ("gemmini", "best"):
                    raise
                self.notes[op] = f"schedule {self.schedule!r} unavailable ({exc}); ran the default"
                self.programs[op] = compile_op(op, self.hw, None)
        return self.programs[op]


def run_network(net: Network, inputs: Mapping[str, np.ndarray], backend: str = "functional", *,
                hw: HardwareConfig | str = "gemmini", schedule: Any = None, db: str | Path | None = None,
                compare: bool = True, progress: bool = False) -> NetworkResult:
    """Run ``net`` whole on ``backend`` ("functional" or "verilator"); host ops run in numpy.

    schedule: None/"default", "gemmini" or "best" (with ``db``) for every accelerator layer.
    compare: also run the model on onnxruntime (CPU) with the same input, and report the largest
    deviation per layer and per output, and onnxruntime's latency.
    """
    if not isinstance(net, Network):
        raise ValueError(f"net must be a Network from tk.from_onnx, got {type(net).__name__}")
    if backend not in ("functional", "verilator"):
        raise ValueError(f"backend={backend!r} is not one of ('functional', 'verilator')")
    _check_inputs(net, inputs)
    hw = HardwareConfig.resolve(hw)
    compiler = _Compiler(hw, schedule, db)
    env: dict[str, np.ndarray] = {name: np.asarray(inputs[name]) for name in net.inputs}

    def fetch(name: str, layout: str) -> np.ndarray:
        return convert_layout(env[name], net.tensors[name].layout, layout)

    start = time.perf_counter()
    rows: list[LayerRow] = []
    layers = net.layers
    if progress:
        from tqdm import tqdm
        layers = tqdm(layers, desc=f"{net.name} ({backend})", unit="layer", leave=False)
    for layer in layers:
        t0 = time.perf_counter()
        if isinstance(layer, HostLayer):
            outs = execute_host(layer, fetch)
            host_s = time.perf_counter() - t0
            for name, arr in zip(layer.outputs, outs):
                env[name] = convert_layout(np.asarray(arr), "native", net.tensors[name].layout)
            rows.append(LayerRow(layer.name, layer.kind, layer.op_type, 1, 0, None, None, None, None, "host", None,
                                 host_s, host_s))
            continue
        prog = compiler(layer.op)
        out, cycles = execute_accel(layer, fetch, lambda op, op_inputs: run_program(prog, op_inputs, backend))
        env[layer.output] = out.reshape(net.tensors[layer.output].stored_shape)
        rows.append(_accel_row(layer, hw, cycles, time.perf_counter() - t0, compiler.notes.get(layer.op, "")))
    wall = time.perf_counter() - start
    total = sum(r.cycles for r in rows if r.cycles is not None) if backend != "functional" else None
    for r in rows:
        if total and r.cycles is not None:
            r.share = r.cycles / total
    outputs = {name: fetch(name, "native") for name in net.outputs}
    result = NetworkResult(net.name, hw.name, backend, str(schedule or "default"), outputs, total, rows,
                           sum(r.host_s or 0.0 for r in rows), wall, notes=sorted(set(compiler.notes.values())))
    if compare and net.model is not None:
        from .ort_reference import compare_with_onnxruntime
        compare_with_onnxruntime(net, inputs, result, {name: fetch(name, "native") for name in env})
        result.compare_s = time.perf_counter() - start - wall
    return result


def execute_host(layer: HostLayer, fetch: Callable[[str, str], np.ndarray]) -> list[np.ndarray]:
    """The host op's outputs, in ONNX layout; ``fetch(tensor, layout)`` gives its inputs."""
    return layer.fn([layer.constants[i] if t is None else fetch(t, "native") for i, t in enumerate(layer.inputs)],
                    layer.attrs)


def execute_accel(layer: AccelLayer, fetch: Callable[[str, str], np.ndarray],
                  run_op: Callable[[Op, dict[str, np.ndarray]], Any]) -> tuple[np.ndarray, int | None]:
    """The layer's output (op layout, slices stacked) and its cycles (None where ``run_op`` gives none).
    ``run_op(op, inputs)`` returns a RunResult or a dict of outputs (``op.reference``)."""
    views = {k: fetch(f.tensor, f.layout).reshape(f.shape) for k, f in layer.feeds.items()}
    cycles: int | None = 0
    results = []
    for r in range(layer.repeat):
        op_inputs = dict(layer.constants)
        op_inputs.update({k: np.ascontiguousarray(views[k][r] if f.per_repeat else views[k])
                          for k, f in layer.feeds.items()})
        res = run_op(layer.op, op_inputs)
        outs = res if isinstance(res, dict) else res.outputs
        results.append(next(iter(outs.values())))
        step = None if isinstance(res, dict) else res.cycles
        cycles = cycles + step if cycles is not None and step is not None else None
    return (np.stack(results) if layer.repeat > 1 else results[0]), cycles


def _accel_row(layer: AccelLayer, hw: HardwareConfig, cycles: int | None, wall_s: float, note: str) -> LayerRow:
    op, n = layer.op, layer.repeat
    ideal = ideal_cycles(op, hw) * n
    dram = -(-compulsory_bytes(op) // hw.dma_beat_bytes) * n
    bound = "compute" if ideal >= dram else "memory"
    util = ideal / cycles if cycles and ideal else None
    return LayerRow(layer.name, layer.kind, op.key, n, op.macs * n, cycles, ideal, max(ideal, dram), util, bound,
                    None, None, wall_s, note=note)
