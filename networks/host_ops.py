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
from scipy.special import erf

Arrays = Sequence[np.ndarray]
HostFn = Callable[[Arrays, dict[str, Any]], list[np.ndarray]]


def quantize(x: np.ndarray, scale: float, zero_point: int = 0) -> np.ndarray:
    q = np.rint(np.asarray(x, dtype=np.float32) / np.float32(scale)) + zero_point
    return np.clip(q, -128, 127).astype(np.int8)


def dequantize(q: np.ndarray, scale: float, zero_point: int = 0) -> np.ndarray:
    return (np.asarray(q).astype(np.int32) - zero_point).astype(np.float32) * np.float32(scale)


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
        y = 0.5 * x * (1 + erf(x / math.sqrt(2)))
    return y.astype(np.float32)


def _global_avg_pool(x: np.ndarray) -> np.ndarray:
    return x.mean(axis=tuple(range(2, x.ndim)), keepdims=True, dtype=np.float32).astype(np.float32)


def _flatten(x: np.ndarray, axis: int) -> np.ndarray:
    axis %= max(x.ndim, 1)
    return x.reshape(int(np.prod(x.shape[:axis])), -1)


def _reshape(x: np.ndarray, shape: np.ndarray, allowzero: int) -> np.ndarray:
    dims = [x.shape[i] if d == 0 and not allowzero else int(d) for i, d in enumerate(shape)]
    return x.reshape(dims)


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
    "GlobalAveragePool": _unary(lambda x, a: _global_avg_pool(x)),
    "Softmax": _unary(lambda x, a: _softmax(x, a.get("axis", -1))),
    "LayerNormalization": _layernorm,
    "Gelu": _unary(lambda x, a: _gelu(x, a.get("approximate", "none"))),
    "Erf": _unary(lambda x, a: erf(x).astype(np.float32)),
    "Sigmoid": _unary(lambda x, a: (1 / (1 + np.exp(-x))).astype(np.float32)),
    "Tanh": _unary(lambda x, a: np.tanh(x)),
    "Sqrt": _unary(lambda x, a: np.sqrt(x)),
    "Add": _binary(np.add),
    "Sub": _binary(np.subtract),
    "Mul": _binary(np.multiply),
    "Div": _binary(np.divide),
    "Pow": _binary(np.power),
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


def qlinear(op_type: str, in_q: Sequence[tuple[float, int]], out_q: tuple[float, int]) -> HostFn:
    """A QOperator op: dequantize the inputs, run the float op, quantize the output."""
    fn = FLOAT_OPS[QLINEAR_OPS[op_type][0]]

    def run(inputs: Arrays, attrs: dict[str, Any]) -> list[np.ndarray]:
        if attrs.get("channels_last"):
            raise ValueError(f"{op_type} with channels_last=1 is not supported")
        floats = [dequantize(x, *q) for x, q in zip(inputs, in_q)]
        return [quantize(fn(floats, attrs)[0], *out_q)]
    return run


def requantize_relu(in_scale: float, out_scale: float) -> HostFn:
    """DequantizeLinear -> Relu -> QuantizeLinear between two different scales, as onnxruntime runs it."""
    return lambda inputs, attrs: [quantize(np.maximum(dequantize(inputs[0], in_scale), 0), out_scale)]


def requantize(in_scale: float, out_scale: float) -> HostFn:
    return lambda inputs, attrs: [quantize(dequantize(inputs[0], in_scale), out_scale)]
