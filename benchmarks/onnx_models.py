"""ONNX models built with onnx.helper (random seeded weights, no downloads), quantized with onnxruntime.

    python benchmarks/onnx_models.py [--out build/onnx] [--models resnet18 resnet50 mobilenetv2 bert]

ResNet-18/50 (torchvision's layout, v1.5: the stride on the 3x3), MobileNetV2 (the
blocks of networks/suites/mobilenetv2.yaml; ReLU for ReLU6, as there) and one
BERT-base encoder layer at sequence 128 (softmax, layernorm and GELU on the host).
No BatchNorm: convs carry a bias, as after folding. Weights are He-initialised,
the last conv of each residual branch scaled down so that activations stay in
range through the depth. :func:`quantize` runs onnxruntime's ``quantize_static``
(int8 symmetric activations and weights, per-tensor scales) on random
calibration data. Tests build their small models with the same :class:`Builder`.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

MOBILENETV2_BLOCKS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                      (6, 320, 1, 1))   # expansion t, channels c, repeats n, first stride s (Sandler et al., Table 2)


class Builder:
    """An ONNX graph in float32, NCHW, built layer by layer with seeded random weights."""

    def __init__(self, name: str, input_shape: tuple[int, ...], seed: int = 0, opset: int = 17) -> None:
        from onnx import TensorProto, helper
        self.name, self.opset = name, opset
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.inits: list = []
        self.shapes: dict[str, tuple[int, ...]] = {"x": tuple(input_shape)}
        self.inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(input_shape))]
        self._n = 0

    def _name(self, kind: str) -> str:
        self._n += 1
        return f"{kind}{self._n}"

    def const(self, value: np.ndarray, kind: str = "w") -> str:
        from onnx import numpy_helper
        name = self._name(kind)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], shape: tuple[int, ...], **attrs) -> str:
        from onnx import helper
        out = self._name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        self.shapes[out] = tuple(shape)
        return out

    def conv(self, x: str, out_c: int, kernel: int = 3, stride: int = 1, padding: int | None = None,
             group: int = 1, relu: bool = True, gain: float = 1.0) -> str:
        n, c, h, w = self.shapes[x]
        p = kernel // 2 if padding is None else padding
        fan_in = c // group * kernel * kernel
        wt = self.rng.normal(0, gain * math.sqrt(2 / fan_in), (out_c, c // group, kernel, kernel)).astype(np.float32)
        b = self.rng.normal(0, 0.05, out_c).astype(np.float32)
        oh, ow = (h + 2 * p - kernel) // stride + 1, (w + 2 * p - kernel) // stride + 1
        y = self.node("Conv", [x, self.const(wt), self.const(b, "b")], (n, out_c, oh, ow), kernel_shape=[kernel] * 2,
                      strides=[stride] * 2, pads=[p] * 4, group=group)
        return self.relu(y) if relu else y

    def relu(self, x: str) -> str:
        return self.node("Relu", [x], self.shapes[x])

    def add(self, a: str, b: str, relu: bool = False) -> str:
        y = self.node("Add", [a, b], self.shapes[a])
        return self.relu(y) if relu else y

    def maxpool(self, x: str, kernel: int, stride: int, padding: int) -> str:
        n, c, h, w = self.shapes[x]
        oh, ow = (h + 2 * padding - kernel) // stride + 1, (w + 2 * padding - kernel) // stride + 1
        return self.node("MaxPool", [x], (n, c, oh, ow), kernel_shape=[kernel] * 2, strides=[stride] * 2,
                         pads=[padding] * 4)

    def head(self, x: str, classes: int) -> str:
        """GlobalAveragePool, Flatten, Gemm to ``classes`` logits."""
        n, c = self.shapes[x][:2]
        g = self.node("GlobalAveragePool", [x], (n, c, 1, 1))
        f = self.node("Flatten", [g], (n, c), axis=1)
        wt = self.rng.normal(0, math.sqrt(1 / c), (classes, c)).astype(np.float32)
        return self.node("Gemm", [f, self.const(wt), self.const(np.zeros(classes, np.float32), "b")], (n, classes),
                         transB=1)

    def layernorm_ops(self, x: str, gamma: str, beta: str, epsilon: float) -> str:
        """LayerNorm over the last axis as ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add."""
        shape = self.shapes[x]
        row = (*shape[:-1], 1)
        d = self.node("Sub", [x, self.mean_last(x)], shape)
        var = self.mean_last(self.node("Pow", [d, self.const(np.array(2.0, np.float32), "two")], shape))
        std = self.node("Sqrt", [self.node("Add", [var, self.const(np.array(epsilon, np.float32), "eps")], row)], row)
        scaled = self.node("Mul", [self.node("Div", [d, std], shape), gamma], shape)
        return self.node("Add", [scaled, beta], shape)

    def mean_last(self, x: str) -> str:
        """ReduceMean over the last axis, keeping it (its axes an input from opset 18, an attribute before)."""
        row = (*self.shapes[x][:-1], 1)
        if self.opset >= 18:
            return self.node("ReduceMean", [x, self.const(np.array([-1], np.int64), "axes")], row)
        return self.node("ReduceMean", [x], row, axes=[-1])

    def gelu_ops(self, x: str, form: str = "x*e*half") -> str:
        """GELU as Div (by sqrt 2), Erf, Add (1) and two Muls, in the order ``form`` names: "x*e*half" (PyTorch's),
        "x*half*e" or "x*(e*half)"."""
        shape = self.shapes[x]
        e = self.node("Add", [self.node("Erf", [self.node("Div", [x, self.const(np.array(math.sqrt(2), np.float32),
                                                                                 "sqrt2")], shape)], shape),
                              self.const(np.array(1.0, np.float32), "one")], shape)
        half = self.const(np.array(0.5, np.float32), "half")
        if form == "x*e*half":
            return self.node("Mul", [self.node("Mul", [x, e], shape), half], shape)
        if form == "x*half*e":
            return self.node("Mul", [self.node("Mul", [x, half], shape), e], shape)
        return self.node("Mul", [x, self.node("Mul", [e, half], shape)], shape)

    def linear(self, x: str, out_f: int, bias: bool = True) -> str:
        """MatMul by a constant (then a separate Add of the bias, as exporters write it)."""
        k = self.shapes[x][-1]
        wt = self.rng.normal(0, math.sqrt(1 / k), (k, out_f)).astype(np.float32)
        y = self.node("MatMul", [x, self.const(wt)], (*self.shapes[x][:-1], out_f))
        if bias:
            y = self.node("Add", [y, self.const(self.rng.normal(0, 0.05, out_f).astype(np.float32), "b")],
                          self.shapes[y])
        return y

    def model(self, output: str):
        from onnx import TensorProto, checker, helper
        out = helper.make_tensor_value_info(output, TensorProto.FLOAT, list(self.shapes[output]))
        graph = helper.make_graph(self.nodes, self.name, self.inputs, [out], self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        m.ir_version = 8 if self.opset < 20 else 9
        checker.check_model(m)
        return m


def resnet(depth: int = 50, image: int = 224, width: int = 64, classes: int = 1000, seed: int = 0):
    """ResNet-18 (basic blocks 2,2,2,2) or ResNet-50 (bottlenecks 3,4,6,3) at batch 1."""
    blocks, bottleneck = {18: ((2, 2, 2, 2), False), 50: ((3, 4, 6, 3), True)}[depth]
    b = Builder(f"resnet{depth}", (1, 3, image, image), seed)
    x = b.maxpool(b.conv("x", width, 7, 2), 3, 2, 1)
    for stage, n in enumerate(blocks):
        planes = width * 2 ** stage
        out_c = planes * 4 if bottleneck else planes
        for i in range(n):
            stride = 2 if stage and not i else 1
            if bottleneck:
                y = b.conv(b.conv(b.conv(x, planes, 1), planes, 3, stride), out_c, 1, relu=False, gain=0.3)
            else:
                y = b.conv(b.conv(x, planes, 3, stride), out_c, 3, relu=False, gain=0.3)
            short = x if stride == 1 and b.shapes[x][1] == out_c else b.conv(x, out_c, 1, stride, relu=False)
            x = b.add(y, short, relu=True)
    return b.model(b.head(x, classes))


def mobilenetv2(image: int = 224, classes: int = 1000, blocks=MOBILENETV2_BLOCKS, seed: int = 0):
    b = Builder("mobilenetv2", (1, 3, image, image), seed)
    x = b.conv("x", 32, 3, 2)
    for t, c, n, s in blocks:
        for i in range(n):
            cin = b.shapes[x][1]
            y = b.conv(x, cin * t, 1) if t != 1 else x
            y = b.conv(y, cin * t, 3, s if i == 0 else 1, group=cin * t)
            y = b.conv(y, c, 1, relu=False, gain=0.3 if cin == c else 1.0)
            x = b.add(y, x) if i and cin == c else y
    return b.model(b.head(b.conv(x, 1280, 1), classes))


def bert_layer(seq: int = 128, hidden: int = 768, heads: int = 12, ffn: int = 3072, seed: int = 0,
               affine: bool = True, decomposed: bool = False):
    """One BERT-base encoder layer (post-LN): attention, residual, LayerNorm, FFN with GELU, residual, LayerNorm.
    ``affine``: LayerNorm's gamma and beta spread as a trained model's (gamma ~ N(1, 0.2), beta ~ N(0, 0.1), drawn
    apart from the weights, which stay those of ``affine=False``); else 1 and 0. ``decomposed``: LayerNorm and
    GELU as PyTorch's exporter writes them before opset 17 (:meth:`Builder.layernorm_ops`, :meth:`Builder.gelu_ops`)."""
    b = Builder("bert_layer", (1, seq, hidden), seed, opset=20)
    d = hidden // heads
    ln_rng = np.random.default_rng(seed + 1)

    def heads_of(x: str, transpose_last: bool = False) -> str:
        shape = b.const(np.array([1, seq, heads, d], np.int64), "shape")
        r = b.node("Reshape", [x, shape], (1, seq, heads, d))
        perm = [0, 2, 3, 1] if transpose_last else [0, 2, 1, 3]
        return b.node("Transpose", [r], (1, heads, d, seq) if transpose_last else (1, heads, seq, d), perm=perm)

    def layernorm(x: str) -> str:
        g = b.const(ln_rng.normal(1, 0.2, hidden).astype(np.float32) if affine else np.ones(hidden, np.float32),
                    "gamma")
        beta = b.const(ln_rng.normal(0, 0.1, hidden).astype(np.float32) if affine else np.zeros(hidden, np.float32),
                       "beta")
        if decomposed:
            return b.layernorm_ops(x, g, beta, 1e-12)
        return b.node("LayerNormalization", [x, g, beta], b.shapes[x], axis=-1, epsilon=1e-12)

    q, k, v = heads_of(b.linear("x", hidden)), heads_of(b.linear("x", hidden), True), heads_of(b.linear("x", hidden))
    scores = b.node("MatMul", [q, k], (1, heads, seq, seq))
    scaled = b.node("Mul", [scores, b.const(np.array(1 / math.sqrt(d), np.float32), "s")], (1, heads, seq, seq))
    probs = b.node("Softmax", [scaled], (1, heads, seq, seq), axis=-1)
    ctx = b.node("Transpose", [b.node("MatMul", [probs, v], (1, heads, seq, d))], (1, seq, heads, d), perm=[0, 2, 1, 3])
    ctx = b.node("Reshape", [ctx, b.const(np.array([1, seq, hidden], np.int64), "shape")], (1, seq, hidden))
    h = layernorm(b.add(b.linear(ctx, hidden), "x"))
    up = b.linear(h, ffn)
    up = b.gelu_ops(up) if decomposed else b.node("Gelu", [up], (1, seq, ffn))
    return b.model(layernorm(b.add(b.linear(up, hidden), h)))


def quantize(model, path: str | Path, fmt: str = "QDQ", samples: int = 4, seed: int = 0, **options) -> Path:
    """onnxruntime's quantize_static: int8 symmetric activations and weights, per-tensor, random calibration.
    ``options`` replace those defaults (quantize_static's keywords: ``activation_type``, ``per_channel``,
    ``extra_options``, ...)."""
    import tempfile

    import onnx
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    rng = np.random.default_rng(seed)
    inp = model.graph.input[0]
    shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.data = iter([{inp.name: rng.standard_normal(shape).astype(np.float32)} for _ in range(samples)])

        def get_next(self):
            return next(self.data, None)

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "float.onnx"
        onnx.save(model, src)
        settings = dict(activation_type=QuantType.QInt8, weight_type=QuantType.QInt8, per_channel=False,
                        extra_options={"ActivationSymmetric": True, "WeightSymmetric": True})
        quantize_static(str(src), str(path), Reader(), quant_format=getattr(QuantFormat, fmt),
                        **{**settings, **options})
    return path


def quant_forms() -> dict[str, tuple[str, dict]]:
    """The forms onnxruntime's quantize_static writes, by name: (quant format, its keyword options). "defaults" is
    what a user gets without options (int8 symmetric weights: its default for QInt8); the "-weights" forms quantize
    weights asymmetrically (uint8 with activations uint8, as onnxruntime requires; or int8 with
    WeightSymmetric=False), so that w - zw leaves int8."""
    from onnxruntime.quantization import QuantType

    symmetric = {"ActivationSymmetric": True}
    uint8 = {"activation_type": QuantType.QUInt8, "weight_type": QuantType.QUInt8}
    return {
        "qdq-defaults": ("QDQ", {"extra_options": {}}),
        "qdq-uint8": ("QDQ", {"extra_options": {}, "activation_type": QuantType.QUInt8}),
        "qdq-per-channel": ("QDQ", {"extra_options": symmetric, "per_channel": True}),
        "qoperator-symmetric": ("QOperator", {"extra_options": symmetric}),
        "qoperator-defaults": ("QOperator", {"extra_options": {}}),
        "qdq-symmetric": ("QDQ", {"extra_options": symmetric}),
        "qdq-uint8-weights": ("QDQ", {"extra_options": {}, **uint8}),
        "qdq-asymmetric-weights": ("QDQ", {"extra_options": {"WeightSymmetric": False}}),
        "qoperator-uint8-weights": ("QOperator", {"extra_options": {}, **uint8}),
    }


def type_forms() -> dict[str, tuple[str, dict]]:
    """quantize_static's other types, by name (QDQ: onnxruntime writes 16-bit and 4-bit types in no other format).
    4-bit weights run on the accelerator, whose int8 holds their values; 16-bit, 4-bit and float8 activations
    and 16-bit weights are float islands, on the host as onnxruntime's QDQ path runs them. Float8 takes the
    Distribution calibration, the only one onnxruntime allows for it."""
    from onnxruntime.quantization import CalibrationMethod, QuantType

    def form(activations: QuantType, weights: QuantType, **more: Any) -> tuple[str, dict]:
        return "QDQ", {"extra_options": {}, "activation_type": activations, "weight_type": weights, **more}
    return {
        "qdq-int4-weights": form(QuantType.QInt8, QuantType.QInt4),
        "qdq-uint4-weights": form(QuantType.QUInt8, QuantType.QUInt4),
        "qdq-int16-weights": form(QuantType.QInt8, QuantType.QInt16),
        "qdq-int16": form(QuantType.QInt16, QuantType.QInt16),
        "qdq-uint16": form(QuantType.QUInt16, QuantType.QUInt8),
        "qdq-int4": form(QuantType.QInt4, QuantType.QInt4),
        "qdq-float8": form(QuantType.QFLOAT8E4M3FN, QuantType.QFLOAT8E4M3FN,
                           calibrate_method=CalibrationMethod.Distribution),
    }


MODELS: dict[str, Callable] = {
    "resnet18": lambda: resnet(18),
    "resnet50": lambda: resnet(50),
    "mobilenetv2": mobilenetv2,
    "bert": bert_layer,
    "bert-decomposed": lambda: bert_layer(decomposed=True),   # LayerNorm and GELU as PyTorch exports them
}


def build(name: str, out: str | Path = "build/onnx", fmt: str = "QDQ", form: str | None = None) -> Path:
    """The quantized model file, built on first use: the project's recipe in ``fmt`` (symmetric int8,
    per-tensor), or one of :func:`quant_forms` or :func:`type_forms` by name."""
    if form is None:
        path = Path(out) / f"{name}_{fmt.lower()}.onnx"
        if not path.exists():
            quantize(MODELS[name](), path, fmt)
        return path
    forms = {**quant_forms(), **type_forms()}
    if form not in forms:
        raise ValueError(f"form={form!r} is not one of {', '.join(forms)}")
    path = Path(out) / f"{name}_{form}.onnx"
    if not path.exists():
        fmt, options = forms[form]
        quantize(MODELS[name](), path, fmt, **options)
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="build/onnx")
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    p.add_argument("--format", choices=("QDQ", "QOperator"), default="QDQ")
    args = p.parse_args(argv)
    for name in args.models:
        print(f"{name}: {build(name, args.out, args.format)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
