"""onnxruntime as the reference: the same quantized model on the same input, per layer and at the outputs.

The per-layer comparison runs a copy of the model with every layer output that
also exists in the ONNX graph made a graph output; the output comparison and the
latency use the model as it is (extra outputs can keep onnxruntime from fusing). Where onnxruntime's
fused int8 kernels are not exact (x86-64 without VNNI), both comparisons run the model unfused.
"""
from __future__ import annotations

import functools
import platform
import re
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

import numpy as np

if TYPE_CHECKING:
    from .network import Network, NetworkResult

# the types onnxruntime's Python API returns, by their ONNX element type (not its 4-bit and float8 ones: layers
# reading those are compared through the DequantizeLinear that follows)
_ELEM = {"uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6, "int64": 7, "float32": 1}


def session(model_bytes: bytes, optimize: bool = True, fuse: bool = True):  # -> onnxruntime.InferenceSession
    """optimize=False: load and check the model only (graph optimizations take long on large models).
    fuse=False: basic optimizations only, so that QDQ pairs stay apart and are not fused into int8 kernels."""
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    if not optimize:
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    elif not fuse:
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    return ort.InferenceSession(model_bytes, opts, providers=["CPUExecutionProvider"])


@functools.cache   # the CPU does not change while we run: read /proc/cpuinfo once
def exact_int8_kernels() -> bool:
    """Whether onnxruntime's fused int8 kernels compute exactly on this CPU. On x86-64 without VNNI they
    multiply u8 x s8 with VPMADDUBSW, which sums pairs of products in saturating int16 (onnxruntime's
    quantization guide: "U8S8 ... might suffer from saturation"). Seen on an AVX2 machine: a padded 3x3 QDQ
    conv fused into QLinearConv is off by up to 52 steps, and the same model unfused agrees with exact
    integer arithmetic."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return True
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return True
    return bool(re.search(r"\b(avx512_vnni|avx_vnni)\b", flags))


def latency_s(sess, feeds: Mapping[str, np.ndarray], repeats: int = 5) -> float:
    """Median wall time of one inference after a warm-up run."""
    sess.run(None, dict(feeds))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        sess.run(None, dict(feeds))
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def max_deviation(ours: np.ndarray, ref: np.ndarray) -> float:
    if ours.shape != ref.shape:
        raise ValueError(f"shape {ours.shape} differs from onnxruntime's {ref.shape}")
    if ours.size == 0:
        return 0.0
    return float(np.max(np.abs(ours.astype(np.float64) - ref.astype(np.float64))))


# Over 40 lines: one onnxruntime session whose outputs fill the network's and every layer's columns.
def compare_with_onnxruntime(net: "Network", inputs: Mapping[str, np.ndarray], result: "NetworkResult",
                             ours: Mapping[str, np.ndarray]) -> None:
    """Fill ``result``'s onnxruntime columns: output_dev, ort_latency_s, and max_dev/exact per layer."""
    from .network import OutputError

    feeds = {name: inputs[name] for name in net.inputs}
    plain, fuse = _reference_session(net, feeds, result)
    names = [o.name for o in plain.get_outputs()]
    for name, ref in zip(names, plain.run(None, feeds)):
        result.output_dev[name] = max_deviation(ours[name], ref)
        result.output_error[name] = OutputError.of(ours[name], ref, _output_step(net, name))
        if ours[name].dtype != ref.dtype:
            result.notes.append(f"output {name}: dtype {ours[name].dtype}, onnxruntime returns {ref.dtype}")
    refs = _intermediate_references(net, feeds, names, fuse)
    _compare_layers(net, result, ours, refs)


def _reference_session(net: "Network", feeds: Mapping[str, np.ndarray], result: "NetworkResult") -> tuple:
    """onnxruntime's session of the model as it is, timed into ``result``, and whether the layers' reference
    may run fused; a note in ``result`` says why not."""
    from .onnx_quant import ISLAND_TYPES, NARROW_TYPES   # the 4-bit types; all the types not int8 or uint8

    # onnxruntime's optimizer fuses 4-bit QDQ pairs into int8 kernels that then refuse the model (seen with
    # onnxruntime 1.32: "Type 'tensor(int4)' of input parameter ... of operator (QLinearConv) ... is invalid")
    four_bit = any(t.dtype in NARROW_TYPES for t in net.tensors.values())
    plain = session(net.model.SerializeToString(), fuse=not four_bit)
    result.ort_latency_s = latency_s(plain, feeds)
    # 16-bit and float8 QDQ pairs fuse into kernels that are not exact either (seen with onnxruntime 1.32 on a
    # VNNI machine: the residual CNN of tests/test_onnx_quant_forms.py in uint16, 260 steps off fused, exact unfused)
    wide = any(t.dtype in ISLAND_TYPES for t in net.tensors.values())
    fuse = exact_int8_kernels() and not wide
    if four_bit:
        result.notes.append("onnxruntime runs this model unfused: its optimizer fuses 4-bit activations into int8 "
                            "kernels that refuse them")
    elif wide:
        result.notes.append("onnxruntime's reference runs this model unfused: its fused 16-bit and float8 QDQ "
                            "kernels are not exact")
    elif not fuse:
        result.notes.append("onnxruntime's reference runs its QDQ models unfused: this CPU has no VNNI, where its "
                            "fused int8 kernels saturate pairs of products in int16")
    if not fuse and not four_bit:   # (a 4-bit model's session is unfused already)
        plain = session(net.model.SerializeToString(), fuse=False)
    return plain, fuse


def _intermediate_references(net: "Network", feeds: Mapping[str, np.ndarray], names: list[str],
                             fuse: bool) -> dict[str, np.ndarray]:
    """onnxruntime's value of every graph tensor a layer reads or writes (the model with them all made
    outputs), and the feeds."""
    from onnx import helper

    graph_values = {o for node in net.model.graph.node for o in node.output} | set(net.inputs)
    used = {t for layer in net.layers for t in (*layer.tensor_inputs(), *layer.outputs)}
    wanted = sorted(t for t in used if t in graph_values and t not in names and t not in net.inputs
                    and net.tensors[t].dtype in _ELEM)
    model = type(net.model)()
    model.CopyFrom(net.model)
    for t in wanted:
        model.graph.output.append(helper.make_tensor_value_info(t, _ELEM[net.tensors[t].dtype], None))
    probe = session(model.SerializeToString(), fuse=fuse)
    refs = dict(zip([o.name for o in probe.get_outputs()], probe.run(None, feeds)))
    refs.update(feeds)
    return refs


def _compare_layers(net: "Network", result: "NetworkResult", ours: Mapping[str, np.ndarray],
                    refs: dict[str, np.ndarray]) -> None:
    """Each layer's row of ``result``: ours on onnxruntime's inputs against onnxruntime's output. A layer
    whose output is not in the graph (an int32 accumulator, ...) adds ours on onnxruntime's inputs to
    ``refs``, for the layers after it."""
    from .network import AccelLayer, convert_layout

    def fetch(name: str, layout: str) -> np.ndarray:
        return convert_layout(refs[name], "native", layout)

    for row, layer in zip(result.layers, net.layers):
        out = layer.outputs[0]
        if not all(t in refs for t in layer.tensor_inputs()):
            continue
        if out not in refs:
            refs[out] = _on_reference_inputs(net, layer, fetch)
            continue
        mine = _on_reference_inputs(net, layer, fetch)
        _fill_deviations(row, ours[out], mine, refs[out], net.tensors[out].zero_point)
        row.exact = row.dev == 0
        row.mismatches = int(np.count_nonzero(mine != refs[out]))
        if row.mismatches and isinstance(layer, AccelLayer) and layer.kind in TIE_KINDS:
            row.ties = _ties_among_mismatches(layer, fetch, mine != refs[out], net.tensors[out])
        elif row.mismatches and getattr(layer, "rounds", None) is not None:
            value = layer.rounds([fetch(t, "native") for t in layer.tensor_inputs()], layer.attrs)[0]
            row.ties = _ties(value[mine != refs[out]])


def _fill_deviations(row, ours: np.ndarray, mine: np.ndarray, ref: np.ndarray, zero_point: int) -> None:
    """A layer's max and mean |diff| from onnxruntime on its inputs (dev, mean_dev) and through our network
    (net_dev, net_mean_dev), and the cosine of our network's values and onnxruntime's (less the zero point: the
    dequantized values' cosine, since the scale cancels)."""
    from .network import cosine

    row.net_dev, row.dev = max_deviation(ours, ref), max_deviation(mine, ref)
    if ref.size:
        diff = lambda x: np.abs(x.astype(np.float64) - ref.astype(np.float64))   # noqa: E731
        row.mean_dev, row.net_mean_dev = float(diff(mine).mean()), float(diff(ours).mean())
    if ref.dtype.kind in "iuf":
        row.cosine = cosine(ours.astype(np.float64) - zero_point, ref.astype(np.float64) - zero_point)


def _output_step(net: "Network", name: str) -> float:
    """The real value of one step of a graph output: the scale its last DequantizeLinear reads (the tensor's own
    scale for an 8-bit output is 1: its units are steps)."""
    from .network import HostLayer

    layer = next((l for l in net.layers if name in l.outputs), None)
    if isinstance(layer, HostLayer) and layer.op_type == "DequantizeLinear" and layer.inputs[0]:
        scale = net.tensors[layer.inputs[0]].scale
        return float(scale) if scale else 1.0
    return 1.0


def _on_reference_inputs(net: "Network", layer, fetch) -> np.ndarray:
    """The layer's output (ONNX layout) computed by its reference arithmetic on onnxruntime's inputs."""
    from .network import AccelLayer, convert_layout, execute_accel, execute_host

    out = net.tensors[layer.outputs[0]]
    if isinstance(layer, AccelLayer):
        got, _ = execute_accel(layer, fetch, lambda op, op_inputs: op.reference(op_inputs))
        return convert_layout(got.reshape(out.stored_shape), out.layout, "native")
    return execute_host(layer, fetch)[0]


def _ties(values: np.ndarray) -> int:
    return int(np.count_nonzero(np.abs(np.mod(values, 1.0) - 0.5) < TIE))


TIE_KINDS = ("conv2d", "depthwise", "matmul", "resadd")
TIE = 1e-4     # an output this close to k + 1/2 rounds either way within float32's error of the inputs


def _exact_value(op, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    """The real number the layer rounds to its int8 output: acc x scale (GEMMs; a fused max pool takes the
    window's largest, since rounding and ReLU keep the order), or the scaled sum (resadd)."""
    if op.KIND == "resadd":
        a, b = (inputs[k].astype(np.float64) * float(np.float32(s)) for k, s in (("A", op.a_scale), ("B", op.b_scale)))
        return (a + b) * float(np.float32(op.scale))
    value = op.accumulate(inputs).astype(np.float64) * float(np.float32(op.scale))
    return _max_pool(op, value) if getattr(op, "pool", None) else value


def _max_pool(op, value: np.ndarray) -> np.ndarray:
    """The max of a pooled conv's exact values over each window of its pool (padding never wins)."""
    from toolkit.window import window_max

    k, s, p = op.pool
    return window_max(value, (k, k), s, p, -np.inf)


def _ties_among_mismatches(layer, fetch, differs: np.ndarray, out) -> int:
    """How many differing elements lie within TIE of a rounding tie: there the accelerator's float32
    arithmetic and onnxruntime's kernels (FMA, one float32 sum) may round to different sides."""
    from .network import convert_layout, execute_accel

    value, _ = execute_accel(layer, fetch, lambda op, op_inputs: {"v": _exact_value(op, op_inputs)})
    value = convert_layout(value.reshape(out.stored_shape), out.layout, "native")
    return _ties(value[differs])
