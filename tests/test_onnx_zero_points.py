"""Zero points the accelerator's int8 operands cannot hold, taken out in int32 on the host beside them: weights
whose w - zw leaves int8 (uint8 weights, asymmetric int8 weights, per-channel zero points) and matmuls of two
activations with zero points (attention quantized asymmetrically). Small models, quantized by onnxruntime, equal
onnxruntime except at rounding ties."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnxruntime.quantization import QuantType  # noqa: E402

import toolkit as tk  # noqa: E402
from benchmarks.onnx_models import Builder, quantize  # noqa: E402
from helpers import assert_matches_onnxruntime  # noqa: E402

UINT8 = {"activation_type": QuantType.QUInt8, "weight_type": QuantType.QUInt8}
WEIGHTS = {"uint8": {"extra_options": {}, **UINT8},
           "int8-asymmetric": {"extra_options": {"WeightSymmetric": False}}}


def _after_relu(shape: tuple[int, ...], seed: int = 0) -> tuple[Builder, str]:
    """A builder whose tensor feeds the op under test through a ReLU: its range starts at 0, so that its zero
    point lies far from 0 (uint8 0, int8 -128) and the zero points' cross terms are large."""
    b = Builder("op", shape, seed)
    if len(shape) == 4:
        return b, b.conv("x", shape[1], 1)
    return b, b.relu(b.linear("x", shape[-1], bias=False))


def _conv(padding: int, stride: int = 1, group: int = 1):
    b, x = _after_relu((1, 4, 7, 7))
    return b.model(b.conv(x, 4 if group > 1 else 6, 3, stride, padding, group=group, relu=False))


def _matmul():
    b, x = _after_relu((1, 5, 8))
    return b.model(b.linear(x, 6, bias=False))


def _gemm():
    b, x = _after_relu((1, 8, 2, 2))
    return b.model(b.head(x, 6))


OPS = {"conv-padded": lambda: _conv(1), "conv-strided": lambda: _conv(0, 2),
       "depthwise-padded": lambda: _conv(1, group=4), "matmul": _matmul, "gemm": _gemm}


def _run(path, shape: tuple[int, ...], seed: int = 1):
    net = tk.from_onnx(path)
    x = {"x": np.random.default_rng(seed).standard_normal(shape).astype(np.float32)}
    return net, tk.run_network(net, x, hw="gemmini")


def _terms(net) -> list[int]:
    """How many data-dependent terms each host requantization adds (its inputs beyond the accumulator)."""
    return [len(l.tensor_inputs()) - 1 for l in net.layers if l.kind == "host:Requantize"]


@pytest.mark.parametrize("weights", WEIGHTS)
@pytest.mark.parametrize("op", OPS)
def test_weights_beyond_int8_run_exact(tmp_path, op, weights):
    model = OPS[op]()
    shape = tuple(d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim)
    net, res = _run(quantize(model, tmp_path / "q.onnx", "QDQ", **WEIGHTS[weights]), shape)
    assert max(_terms(net)) == 1            # the weight shift's term: d times the window's (row's) input sum
    assert_matches_onnxruntime(net, res)


def test_per_channel_weight_zero_points(tmp_path):
    """onnxruntime's own per-channel weights are symmetric; zero points set per channel by hand (some where
    w - zw fits int8, some where it does not) run exact too."""
    path = quantize(_conv(1), tmp_path / "q.onnx", "QDQ", per_channel=True, extra_options={}, **UINT8)
    model = onnx.load(path)
    conv = next(n for n in model.graph.node if n.op_type == "Conv" and n.input[0] != "x")
    weight_dq = next(n for n in model.graph.node if n.output[0] == conv.input[1])
    zp = next(t for t in model.graph.initializer if t.name == weight_dq.input[2])
    values = np.array([128, 40, 200, 90, 128, 255][:zp.dims[0]], np.uint8)
    zp.CopyFrom(onnx.numpy_helper.from_array(values, zp.name))
    onnx.save(model, path)
    net, res = _run(path, (1, 4, 7, 7))
    assert max(_terms(net)) == 1
    assert_matches_onnxruntime(net, res)


def _attention(seq: int = 6, d: int = 8):
    """softmax(q k^T) v, the two matmuls of activations of attention."""
    b, x = _after_relu((1, seq, d))
    q, k, v = (b.linear(x, d) for _ in range(3))
    kt = b.node("Transpose", [k], (1, d, seq), perm=[0, 2, 1])
    probs = b.node("Softmax", [b.node("MatMul", [q, kt], (1, seq, seq))], (1, seq, seq), axis=-1)
    return b.model(b.node("MatMul", [probs, v], (1, seq, d)))


@pytest.mark.parametrize("form", [("QDQ", {"extra_options": {}}),
                                  ("QDQ", {"extra_options": {}, "activation_type": QuantType.QUInt8}),
                                  ("QOperator", {"extra_options": {}, **UINT8})], ids=["qdq", "qdq-uint8", "qop-u8u8"])
def test_attention_with_zero_points(tmp_path, form):
    fmt, options = form
    net, res = _run(quantize(_attention(), tmp_path / "q.onnx", fmt, **options), (1, 6, 8))
    assert max(_terms(net)) == 2            # -zb * rows of A and -za * columns of B
    assert_matches_onnxruntime(net, res)
