"""What onnxruntime's quantize_static writes, taken as it comes: a small residual CNN quantized nine ways (QDQ
and QOperator; asymmetric int8 and uint8 activations; per-channel weights; uint8 and asymmetric int8 weights) runs
on the gemmini preset, whose store unit has no zero point, uint8 range or per-channel scale (those layers write
int32 and a host epilogue requantizes), and equals onnxruntime except at rounding ties."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import toolkit as tk  # noqa: E402
from benchmarks.onnx_models import Builder, quant_forms, quantize, type_forms  # noqa: E402
from networks.network import AccelLayer  # noqa: E402
from helpers import assert_matches_onnxruntime, assert_outputs_within_two_steps  # noqa: E402

FORMS = quant_forms()
TYPE_FORMS = type_forms()


def residual_cnn():
    """Convs (one padded, one not), a residual Add and Relu, MaxPool, global pooling, a classifier MatMul."""
    b = Builder("residual_cnn", (1, 3, 8, 8), 0)
    c1 = b.conv("x", 8, 3)
    x = b.maxpool(b.add(b.conv(c1, 8, 1, relu=False), c1, relu=True), 2, 2, 0)
    f = b.node("Flatten", [b.node("GlobalAveragePool", [x], (1, 8, 1, 1))], (1, 8), axis=1)
    return b.model(b.linear(f, 5))


@pytest.fixture(scope="module")
def forms(tmp_path_factory):
    d, model = tmp_path_factory.mktemp("forms"), residual_cnn()
    return {name: quantize(model, d / f"{name}.onnx", fmt, **opts) for name, (fmt, opts) in FORMS.items()}


@pytest.mark.parametrize("form", FORMS)
def test_each_form_runs_and_matches_onnxruntime(forms, form):
    net = tk.from_onnx(forms[form])
    accel = {l.kind for l in net.layers if isinstance(l, AccelLayer)}
    assert {"conv2d", "matmul"} <= accel
    x = {"x": np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)}
    res = tk.run_network(net, x, hw="gemmini")
    assert_matches_onnxruntime(net, res)
    epilogues = [r for r in res.layers if r.kind == "host:Requantize"]
    plain = form in ("qdq-symmetric", "qoperator-symmetric")
    assert bool(epilogues) != plain       # symmetric per-tensor int8 requantizes on the accelerator
    assert all(r.host_s is not None for r in epilogues)


@pytest.mark.parametrize("form", TYPE_FORMS)
def test_every_quant_type_runs(tmp_path, form):
    """quantize_static's other types. 4-bit weights run on the accelerator (int8 holds their values) and are
    bit-exact but at ties. 16-bit, 4-bit and float8 activations and 16-bit weights are float islands on the
    host; a 16-bit tensor they quantize is within one step of onnxruntime's (onnxruntime cannot return 4-bit
    or float8 tensors: those forms are judged at the outputs)."""
    fmt, options = TYPE_FORMS[form]
    net = tk.from_onnx(quantize(residual_cnn(), tmp_path / "q.onnx", fmt, **options))
    x = {"x": np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)}
    res = tk.run_network(net, x, hw="gemmini")
    accel = {l.kind for l in net.layers if isinstance(l, AccelLayer)}
    if form.endswith("4-weights"):
        assert {"conv2d", "matmul"} <= accel
        assert_matches_onnxruntime(net, res)
        return
    assert not {"conv2d", "matmul"} & accel
    assert {"host:Conv", "host:MatMul"} <= {r.kind for r in res.layers}
    assert_outputs_within_two_steps(net, res)
    quantized = [r for r in res.layers if r.kind == "host:QuantizeLinear" and r.dev is not None]
    assert bool(quantized) == ("16" in form)
    assert all(r.dev <= 1 for r in quantized)


def test_asymmetric_input_of_a_padded_conv_is_exact_at_the_borders(tmp_path):
    """The accelerator pads with 0, onnxruntime with the zero point: the fold subtracts zx times only the
    weights inside the input (an input far from 0 gives a zero point far from 0)."""
    b = Builder("pad", (1, 3, 6, 6), 0)
    net = tk.from_onnx(quantize(b.model(b.conv("x", 4, 3, relu=False)), tmp_path / "q.onnx", "QDQ",
                                extra_options={}))
    x = {"x": (np.random.default_rng(2).standard_normal((1, 3, 6, 6)) + 2).astype(np.float32)}
    assert_matches_onnxruntime(net, tk.run_network(net, x, hw="gemmini"))


@pytest.mark.rtl
def test_uint8_activations_on_the_rtl(forms, verilator_ok):
    net = tk.from_onnx(forms["qdq-uint8"])
    x = {"x": np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)}
    res = tk.run_network(net, x, backend="verilator", hw="tiny")
    assert res.cycles and res.cycles > 0
    assert_matches_onnxruntime(net, res)


def cnn_with_gemm_head():
    """A padded conv and a Gemm with its bias (the classifier head of the benchmark models)."""
    b = Builder("cnn_gemm", (1, 3, 8, 8), 0)
    return b.model(b.head(b.conv("x", 8, 3), 5))


OPTIONS = {"QuantizeBias=False": {"QuantizeBias": False},        # the bias stays float: onnxruntime's float path
           "DedicatedQDQPair": {"DedicatedQDQPair": True},       # one QuantizeLinear per reader of a tensor
           "AddQDQPairToWeight": {"AddQDQPairToWeight": True},   # float weights through QuantizeLinear
           # the classifier's float output: on the host in float (the graph's output in the head model)
           "ExcludeOutputQuantization": {"OpTypesToExcludeOutputQuantization": ["MatMul", "Gemm"]}}


@pytest.mark.parametrize("option", OPTIONS)
@pytest.mark.parametrize("model", [residual_cnn, cnn_with_gemm_head], ids=["residual", "gemm-head"])
def test_quantize_static_extra_options_run(tmp_path, model, option):
    net = tk.from_onnx(quantize(model(), tmp_path / "q.onnx", "QDQ", extra_options=OPTIONS[option]))
    x = {"x": np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)}
    assert_matches_onnxruntime(net, tk.run_network(net, x, hw="gemmini"))


def test_a_second_quantization_of_one_output_at_another_scale_is_refused(tmp_path):
    """DedicatedQDQPair's second QuantizeLinear of an output is a copy of the first; at another scale (not what
    quantize_static writes) the accelerator layer cannot write both, and the import says which node."""
    model = onnx.load(quantize(residual_cnn(), tmp_path / "q.onnx", "QDQ",
                               extra_options={"DedicatedQDQPair": True}))
    quants = [n for n in model.graph.node if n.op_type == "QuantizeLinear"]
    second = next(n for i, n in enumerate(quants) if any(m.input[0] == n.input[0] for m in quants[:i]))
    scale = next(t for t in model.graph.initializer if t.name == second.input[1])
    model.graph.initializer.append(onnx.numpy_helper.from_array(2 * onnx.numpy_helper.to_array(scale), "other"))
    second.input[1] = "other"
    with pytest.raises(ValueError, match=rf"node '{second.name}' \(QuantizeLinear\): .* is quantized twice"):
        tk.from_onnx(model)
