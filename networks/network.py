"""A network: ordered layers (accelerator ops and host ops), the tensors between them, its unique tasks.

:func:`networks.onnx_import.from_onnx` builds one from a quantized ONNX model;
:func:`networks.network_run.run_network` runs it whole. Activations live as int8 DRAM buffers between
accelerator layers at the scale the model gives them; a 4-D tensor an accelerator
layer writes stays channels-last (``layout="nhwc"``), and is transposed to ONNX's
NCHW only where a host op or a graph output reads it.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Union

import numpy as np

from .host_ops import LAYOUT_OPS, HostFn
from toolkit.ops import Op

__all__ = ["Network", "NetworkResult", "LayerRow", "Task", "TensorInfo"]   # the public names (docs/reference/networks.md)

LAYOUTS = ("native", "nhwc")


@dataclass(frozen=True)
class TensorInfo:
    """A tensor between layers: its ONNX shape and dtype, the scale of an int8 tensor, its DRAM layout."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    scale: float | None = None
    layout: str = "native"
    zero_point: int = 0         # of an asymmetric quantization (int8 or uint8)

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
    rounds: HostFn | None = None     # the real values fn rounds to its integer output (to find rounding ties)
    why: str = ""                    # why the importer left it to the host (else :meth:`reason` says by its type)

    @property
    def kind(self) -> str:
        return f"host:{self.op_type}"

    @property
    def reason(self) -> str:
        """Why it runs on the host: the importer's word, else what its type is."""
        if self.why:
            return self.why
        if self.op_type in MOVES:
            return "data movement (exact on 8-bit values)"
        if self.op_type in ("QuantizeLinear", "DequantizeLinear"):
            return "a quantization the model puts around a host op or at its edge"
        return f"no accelerator op for {self.op_type}"

    def tensor_inputs(self) -> list[str]:
        return [t for t in self.inputs if t is not None]


Layer = Union[AccelLayer, HostLayer]
MOVES = (*LAYOUT_OPS, "ShiftToInt8")   # host ops that only move values


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
    """A network imported by :func:`networks.onnx_import.from_onnx` (``tk.from_onnx``): its graph inputs and
    outputs, every tensor's shape and quantization, and its layers in order, each on the accelerator (an op) or on
    the host (numpy). ``tasks`` are its unique accelerator workloads, which ``tk.tune_network`` tunes."""

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

    def quantized_source(self, tensor: str) -> str:
        """The quantized tensor a graph output is computed from: the input of the DequantizeLinear that
        writes it, or, for a host float op's output (OpTypesToExcludeOutputQuantization), the nearest
        quantized tensor up its first inputs."""
        tensor = next(l for l in self.layers if tensor in l.outputs).tensor_inputs()[0]
        while self.tensors[tensor].scale is None:
            tensor = next(l for l in self.layers if tensor in l.outputs).tensor_inputs()[0]
        return tensor

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
    mean_dev: float | None = None    # mean |diff| on onnxruntime's inputs (its units: steps of an 8-bit tensor)
    net_mean_dev: float | None = None   # mean |diff| through our whole network
    cosine: float | None = None      # of our network's dequantized tensor and onnxruntime's
    note: str = ""


@dataclass(frozen=True)
class OutputError:
    """A graph output against onnxruntime's, in steps of the quantization its last DequantizeLinear reads (or of
    the output's own units): the largest and mean |diff|, the share within 2 steps, the cosine of the values."""

    step: float
    max_steps: float
    mean_steps: float
    within_2: float
    cosine: float

    @classmethod
    def of(cls, ours: np.ndarray, ref: np.ndarray, step: float) -> "OutputError":
        diff = np.abs(ours.astype(np.float64) - ref.astype(np.float64)) / step
        return cls(step, float(diff.max(initial=0)), float(diff.mean()) if diff.size else 0.0,
                   float(np.mean(diff <= 2 + 1e-6)) if diff.size else 1.0, cosine(ours, ref))


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.ravel(a).astype(np.float64), np.ravel(b).astype(np.float64)
    norms = np.linalg.norm(a) * np.linalg.norm(b)
    return float(a @ b / norms) if norms else float(np.array_equal(a, b))


@dataclass
class NetworkResult:
    """What ``tk.run_network`` returns: the graph outputs (onnxruntime's dtypes and shapes), the accelerator
    cycles of the whole network (None on the functional backend), one :class:`LayerRow` per layer, the host's
    time, and the deviation of each output from onnxruntime's (``compare=True``)."""

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
    output_error: dict[str, OutputError] = field(default_factory=dict)   # per graph output, in its steps
    ort_latency_s: float | None = None
    compare_s: float = 0.0          # wall time of the onnxruntime comparison (not in wall_s)
    notes: list[str] = field(default_factory=list)

    def latency_s(self, clock_ghz: float = 1.0) -> float | None:
        """Accelerator time at ``clock_ghz`` (host ops not included: see host_s)."""
        return self.cycles / (clock_ghz * 1e9) if self.cycles is not None else None


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
