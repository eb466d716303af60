"""Ops the accelerator has no unit for, run on the host CPU in numpy.

Each takes its inputs in ONNX layout (constants filled in) and the node's
attributes, and returns its outputs. Quantize/dequantize follow onnxruntime:
``q = clip(rne(float32(x) / float32(scale)))`` and ``x = float32(q) * scale``,
both in float32. Float ops compute in float32 (float64 inside LayerNormalization's
statistics); they need not match onnxruntime's kernels bit for bit, and the network
report states the deviation where they do not.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from toolkit.window import taps

from . import host_linear

Arrays = Sequence[np.ndarray]
HostFn = Callable[[Arrays, dict[str, Any]], list[np.ndarray]]


def narrow_types() -> Any:
    """ml_dtypes, imported on first use: importing it takes 0.6 s, more than the rest of ``import toolkit``, and
    only an ONNX model's 4-bit and float8 tensors need it (the import gives numpy the int4, uint4 and
    float8_e4m3fn types)."""
    import ml_dtypes
    return ml_dtypes


def _erf(x: np.ndarray) -> np.ndarray:
    from scipy.special import erf   # on first use, as ml_dtypes: importing scipy.special takes 0.15 s
    return erf(x)


def quantize(x: np.ndarray, scale: float, zero_point: int = 0, dtype: str = "int8") -> np.ndarray:
    """ONNX QuantizeLinear to ``dtype``: an integer type (4 to 16 bits), or float8 (saturated to its largest
    finite value, then rounded to nearest even, as onnxruntime does with saturate=1)."""
    if dtype.startswith("float8"):
        top = float(narrow_types().finfo(dtype).max)
        v = np.asarray(x, dtype=np.float32) / np.float32(scale) + np.float32(zero_point)
        return np.clip(v, -top, top).astype(dtype)
    q = np.rint(np.asarray(x, dtype=np.float32) / np.float32(scale)) + zero_point
    info = narrow_types().iinfo(dtype)
    return np.clip(q, info.min, info.max).astype(dtype)


def dequantize(q: np.ndarray, scale: float, zero_point: int = 0) -> np.ndarray:
    q = np.asarray(q)
    if str(q.dtype).startswith("float8"):
        return (q.astype(np.float32) - np.float32(zero_point)) * np.float32(scale)
    return (q.astype(np.int32) - zero_point).astype(np.float32) * np.float32(scale)


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(np.float32)


def _layernorm(inputs: Arrays, attrs: dict[str, Any]) -> list[np.ndarray]:
    x = inputs[0].astype(np.float64)
    axis = attrs.get("axis", -1) % x.ndim
    axes = tuple(range(axis, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + attrs.get("epsilon", 1e-5)) * inputs[1]
    if len(inputs) > 2 and inputs[2] is not None:
        y = y + inputs[2]
    return [y.astype(np.float32)]


def _gelu(x: np.ndarray, approximate: str) -> np.ndarray:
    x = x.astype(np.float64)
    if approximate == "tanh":
        y = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    else:
        y = 0.5 * x * (1 + _erf(x / math.sqrt(2)))
    return y.astype(np.float32)


def _reduce_mean(inputs: Arrays, attrs: dict[str, Any]) -> list[np.ndarray]:
    """ReduceMean with its axes an attribute (before opset 18) or an input (all axes where neither gives them)."""
    x = inputs[0]
    axes = inputs[1] if len(inputs) > 1 and inputs[1] is not None else attrs.get("axes")
    axes = None if axes is None or np.size(axes) == 0 else tuple(int(a) for a in np.ravel(axes))
    if axes is None and attrs.get("noop_with_empty_axes", 0):
        return [x]
    return [np.mean(x, axis=axes, keepdims=bool(attrs.get("keepdims", 1)), dtype=np.float32).astype(np.float32)]


def _global_avg_pool(x: np.ndarray) -> np.ndarray:
    return x.mean(axis=tuple(range(2, x.ndim)), keepdims=True, dtype=np.float32).astype(np.float32)


def _flatten(x: np.ndarray, axis: int) -> np.ndarray:
    axis %= max(x.ndim, 1)
    return x.reshape(int(np.prod(x.shape[:axis])), -1)


def _reshape(x: np.ndarray, shape: np.ndarray, allowzero: int) -> np.ndarray:
    dims = [x.shape[i] if d == 0 and not allowzero else int(d) for i, d in enumerate(shape)]
    return x.reshape(dims)


def _maxpool(x: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    """ONNX MaxPool (2-D, no dilation, floor mode) on any dtype: padding never wins. Exact on integers too, so
    a pool on a quantized tensor keeps its scale and zero point."""
    kh, kw = attrs["kernel_shape"]
    sh, sw = attrs.get("strides", [1, 1])
    top, left, bottom, right = attrs.get("pads", [0, 0, 0, 0])
    low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    padded = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=low)
    oh, ow = (padded.shape[2] - kh) // sh + 1, (padded.shape[3] - kw) // sw + 1
    taps = [padded[:, :, i:i + sh * oh:sh, j:j + sw * ow:sw] for i in range(kh) for j in range(kw)]
    return np.max(taps, axis=0)


def _onnx_dtype(elem_type: int) -> np.dtype:
    from onnx import helper
    return helper.tensor_dtype_to_np_dtype(elem_type)


def _unary(fn: Callable[..., np.ndarray]) -> HostFn:
    return lambda inputs, attrs: [fn(inputs[0], attrs)]


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> HostFn:
    return lambda inputs, attrs: [fn(inputs[0], inputs[1]).astype(np.result_type(inputs[0], inputs[1]))]


# Ops that only move or relabel elements: exact on int8, keep the input's quantization scale.
LAYOUT_OPS: dict[str, HostFn] = {
    "Identity": _unary(lambda x, a: x),
    "Flatten": _unary(lambda x, a: _flatten(x, a.get("axis", 1))),
    "Reshape": lambda inputs, a: [_reshape(inputs[0], inputs[1], a.get("allowzero", 0))],
    "Transpose": _unary(lambda x, a: np.transpose(x, a.get("perm")).copy()),
    "Squeeze": lambda inputs, a: [np.squeeze(inputs[0], tuple(int(i) for i in inputs[1]) if len(inputs) > 1
                                             else a.get("axes"))],
    "Unsqueeze": lambda inputs, a: [np.expand_dims(inputs[0], tuple(int(i) for i in inputs[1]))],
}

# Float ops: inputs and outputs float32.
FLOAT_OPS: dict[str, HostFn] = {
    "Relu": _unary(lambda x, a: np.maximum(x, np.float32(0))),
    "Clip": lambda inputs, a: [np.clip(inputs[0], inputs[1] if len(inputs) > 1 and inputs[1] is not None else None,
                                       inputs[2] if len(inputs) > 2 and inputs[2] is not None else None)],
    "MaxPool": _unary(_maxpool),
    "GlobalAveragePool": _unary(lambda x, a: _global_avg_pool(x)),
    "Softmax": _unary(lambda x, a: _softmax(x, a.get("axis", -1))),
    "LayerNormalization": _layernorm,
    "ReduceMean": _reduce_mean,
    "Gelu": _unary(lambda x, a: _gelu(x, a.get("approximate", "none"))),
    "Erf": _unary(lambda x, a: _erf(x).astype(np.float32)),
    "Sigmoid": _unary(lambda x, a: (1 / (1 + np.exp(-x))).astype(np.float32)),
    "Tanh": _unary(lambda x, a: np.tanh(x)),
    "Sqrt": _unary(lambda x, a: np.sqrt(x)),
    "Add": _binary(np.add),
    "Sub": _binary(np.subtract),
    "Mul": _binary(np.multiply),
    "Div": _binary(np.divide),
    "Pow": _binary(np.power),
    "Cast": _unary(lambda x, a: x.astype(_onnx_dtype(a["to"]))),
    "Conv": host_linear.conv,
    "MatMul": host_linear.matmul,
    "Gemm": host_linear.gemm,
    **LAYOUT_OPS,
}

# onnxruntime's QOperator forms of float ops: (float op, number of quantized inputs).
# Inputs are (x, x_scale, x_zero_point) per operand, then (y_scale, y_zero_point).
QLINEAR_OPS: dict[str, tuple[str, int]] = {
    "QLinearGlobalAveragePool": ("GlobalAveragePool", 1),
    "QLinearSoftmax": ("Softmax", 1),
    "QLinearSigmoid": ("Sigmoid", 1),
    "QLinearMul": ("Mul", 2),
}

HOST_OP_TYPES = sorted(set(FLOAT_OPS) | set(QLINEAR_OPS) | {"QuantizeLinear", "DequantizeLinear"})


def qlinear(op_type: str, in_q: Sequence[tuple[float, int]], out_q: tuple[float, int, str]) -> HostFn:
    """A QOperator op: dequantize the inputs, run the float op, quantize the output."""
    fn = FLOAT_OPS[QLINEAR_OPS[op_type][0]]

    def run(inputs: Arrays, attrs: dict[str, Any]) -> list[np.ndarray]:
        if attrs.get("channels_last"):
            raise ValueError(f"{op_type} with channels_last=1 is not supported")
        floats = [dequantize(x, *q) for x, q in zip(inputs, in_q)]
        return [quantize(fn(floats, attrs)[0], *out_q)]
    return run


def requantize_relu(in_q: tuple[float, int], out_q: tuple[float, int, str]) -> HostFn:
    """DequantizeLinear -> Relu -> QuantizeLinear between two quantizations, as onnxruntime runs it."""
    return lambda inputs, attrs: [quantize(np.maximum(dequantize(inputs[0], *in_q), 0), *out_q)]


def requantize(in_q: tuple[float, int], out_q: tuple[float, int, str]) -> HostFn:
    return lambda inputs, attrs: [quantize(dequantize(inputs[0], *in_q), *out_q)]


def shift_to_int8(inputs: Arrays, attrs: dict[str, Any]) -> list[np.ndarray]:
    """uint8 x as int8 x - 128 (flipping the top bit): the accelerator reads int8; its zero point drops by 128."""
    return [(inputs[0] ^ np.uint8(0x80)).view(np.int8)]


def quantized_add(a_q: tuple[float, int], b_q: tuple[float, int], out_q: tuple[float, int, str],
                  relu: bool = False) -> HostFn:
    """onnxruntime's QLinearAdd (MLAS): (a - za) * (sa / sy) + (b - zb) * (sb / sy) in float32, rounded half
    to even, plus zy, clipped. Zero points have no place in the accelerator's resadd."""
    ra, rb = (np.float32(np.float32(q[0]) / np.float32(out_q[0])) for q in (a_q, b_q))
    info = np.iinfo(out_q[2])
    low = max(info.min, out_q[1]) if relu else info.min     # ReLU: max with the zero point, the real 0

    def run(inputs: Arrays, attrs: dict[str, Any]) -> list[np.ndarray]:
        a, b = ((x.astype(np.int32) - z).astype(np.float32) for x, (_, z) in zip(inputs, (a_q, b_q)))
        y = np.rint(a * ra + b * rb) + out_q[1]
        return [np.clip(y, low, info.max).astype(out_q[2])]
    return run


Term = Callable[[np.ndarray], np.ndarray]
"""One input tensor's share of each int32 sum of a conv or matmul, for the zero points its int8 operands leave
out: an int64 array that broadcasts to the accumulator (ONNX layout)."""


def window_sum_term(coef: np.ndarray, kernel: tuple[int, int], stride: int, padding: int, depthwise: bool) -> Term:
    """``coef[k]`` times the sum of the input (N x C x H x W) over each output's window, padded with 0: over every
    input channel for a conv, over the output's own channel for a depthwise conv. The share of a weight shift,
    ``w - zw = w8 + coef``, of the sums of products."""
    coef = np.asarray(coef, np.int64).reshape(1, -1, 1, 1)

    def term(x: np.ndarray) -> np.ndarray:
        nhwc = x.transpose(0, 2, 3, 1).astype(np.int64)
        if not depthwise:
            nhwc = nhwc.sum(axis=3, keepdims=True)
        total = sum(view for _, _, view in taps(nhwc, kernel, stride, padding))
        return coef * total.transpose(0, 3, 1, 2)
    return term


def row_sum_term(coef: Any) -> Term:
    """``coef`` (one, or one per output column) times each row's sum of A (... x M x K): a matmul's share of a
    shift of B."""
    return lambda a: a.sum(axis=-1, keepdims=True, dtype=np.int64) * np.asarray(coef, np.int64)


def col_sum_term(coef: int) -> Term:
    """``coef`` times each column's sum of B (... x K x N): a matmul's share of a shift of A."""
    return lambda b: b.sum(axis=-2, keepdims=True, dtype=np.int64) * np.int64(coef)


def _corrected_sums(inputs: Arrays, offset: np.ndarray, terms: Sequence[Term]) -> np.ndarray:
    """acc + offset + each term of its input, wrapped to int32 as onnxruntime's integer sums wrap."""
    total = inputs[0].astype(np.int64) + offset
    for term, x in zip(terms, inputs[1:]):
        total = total + term(x)
    return total.astype(np.int32)


def requantize_accumulator(scale: np.ndarray, zero_point: int, dtype: str, offset: np.ndarray,
                           relu: bool, terms: Sequence[Term] = ()) -> HostFn:
    """The output of onnxruntime's QLinearConv/QLinearMatMul from the accelerator's int32 accumulator:
    ``clip(rne(float32(sums) * scale) + zero_point)`` in float32 as MLAS computes it, then ReLU (as max with the
    zero point, the real 0). ``sums`` is the accumulator (first input) plus ``offset`` (the zero points' constant
    share) plus each term of the next inputs (their shares that depend on the data: :func:`window_sum_term`,
    :func:`row_sum_term`, :func:`col_sum_term`); ``scale`` one per output channel or one."""
    info = np.iinfo(dtype)
    low = max(info.min, zero_point) if relu else info.min

    def run(inputs: Arrays, attrs: dict[str, Any]) -> list[np.ndarray]:
        acc = _corrected_sums(inputs, offset, terms).astype(np.float32)
        return [np.clip(np.rint(acc * scale) + zero_point, low, info.max).astype(dtype)]
    return run


def accumulator_value(scale: np.ndarray, offset: np.ndarray, terms: Sequence[Term] = ()) -> HostFn:
    """The real number :func:`requantize_accumulator` rounds (to find rounding ties)."""
    return lambda inputs, attrs: [_corrected_sums(inputs, offset, terms).astype(np.float64)
                                  * scale.astype(np.float64)]


def requantize_float_bias(in_scale: np.ndarray, bias: np.ndarray, out_q: tuple[float, int, str],
                          offset: np.ndarray, relu: bool, terms: Sequence[Term] = ()) -> HostFn:
    """onnxruntime's float path where quantize_static left the bias in float (``QuantizeBias=False``): the conv or
    matmul of the dequantized operands, ``float32(sums) * in_scale`` (x_scale * w_scale; the sums as in
    :func:`requantize_accumulator`), plus the bias, then ReLU and QuantizeLinear."""
    def run(inputs: Arrays, attrs: dict[str, Any]) -> list[np.ndarray]:
        y = _corrected_sums(inputs, offset, terms).astype(np.float32) * in_scale + bias
        return [quantize(np.maximum(y, np.float32(0)) if relu else y, *out_q)]
    return run


def float_bias_value(in_scale: np.ndarray, bias: np.ndarray, y_scale: float, offset: np.ndarray,
                     terms: Sequence[Term] = ()) -> HostFn:
    """The real number :func:`requantize_float_bias` rounds (to find rounding ties)."""
    return lambda inputs, attrs: [(_corrected_sums(inputs, offset, terms).astype(np.float64)
                                   * in_scale.astype(np.float64) + bias) / float(np.float32(y_scale))]
