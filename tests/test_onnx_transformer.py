"""A transformer layer's ops from ONNX on the accelerator: LayerNorm and GELU as exporters decompose them
(networks/onnx_fuse.py), constant Muls folded into store scales, and what stays on the host."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import toolkit as tk  # noqa: E402
from benchmarks.onnx_models import Builder, bert_layer, quantize  # noqa: E402
from networks.network import AccelLayer  # noqa: E402

pytest.importorskip("onnxruntime")


def _input(net, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {name: rng.standard_normal(info.shape).astype(np.float32) for name, info in net.inputs.items()}


def _kinds(net) -> list[str]:
    return [l.op.function if l.kind == "norm" else l.kind if isinstance(l, AccelLayer) else f"host:{l.op_type}"
            for l in net.layers]


def test_decomposed_layernorm_and_gelu_run_on_the_unit(tmp_path):
    """A BERT layer whose LayerNorms and GELU are PyTorch's decomposition (opset 20: ReduceMean's axes an input),
    with onnxruntime's Q/DQ pairs inside them: each is one unit op (gamma and beta a depthwise after it), and the
    host only moves data."""
    model = bert_layer(seq=8, hidden=16, heads=2, ffn=32, decomposed=True)
    assert {"ReduceMean", "Pow", "Sqrt", "Erf"} <= {n.op_type for n in model.graph.node}
    net = tk.from_onnx(quantize(model, tmp_path / "bert.onnx"))
    kinds = _kinds(net)
    assert [k for k in kinds if k in ("softmax", "layernorm", "igelu")] == ["softmax", "layernorm", "igelu", "layernorm"]
    assert kinds.count("depthwise") == 2
    assert {k for k in kinds if k.startswith("host:")} == {"host:QuantizeLinear", "host:Reshape", "host:Transpose",
                                                             "host:Identity", "host:DequantizeLinear"}
    assert net.model.graph.node[0].op_type != "LayerNormalization"   # onnxruntime runs the model as given
    res = tk.run_network(net, _input(net), hw="tiny")
    (err,) = res.output_error.values()
    # onnxruntime rounds the decomposition's steps to int8 (the normalized value, erf, ...); the unit does not
    assert err.cosine > 0.99 and err.mean_steps < 2


@pytest.mark.parametrize("form", ["x*e*half", "x*half*e", "x*(e*half)"])
def test_every_order_of_gelus_muls_fuses(tmp_path, form):
    b = Builder("gelu", (1, 4, 8), 0)
    net = tk.from_onnx(quantize(b.model(b.gelu_ops(b.linear("x", 8), form)), tmp_path / "g.onnx"))
    assert _kinds(net) == ["host:QuantizeLinear", "matmul", "resadd", "igelu", "host:DequantizeLinear"]
    res = tk.run_network(net, _input(net), hw="tiny")
    assert next(iter(res.output_error.values())).max_steps <= 2


def _wrong_gelu(b: Builder, x: str) -> str:
    """x * 0.5 * (1.5 + erf(x / sqrt 2)): not GELU."""
    shape = b.shapes[x]
    e = b.node("Erf", [b.node("Div", [x, b.const(np.array(np.sqrt(2), np.float32))], shape)], shape)
    e = b.node("Add", [e, b.const(np.array(1.5, np.float32))], shape)
    return b.node("Mul", [b.node("Mul", [x, e], shape), b.const(np.array(0.5, np.float32))], shape)


def _cubed_layernorm(b: Builder, x: str) -> str:
    """LayerNorm's ops with a cube where the square belongs: not LayerNorm."""
    shape = b.shapes[x]
    d = b.node("Sub", [x, b.mean_last(x)], shape)
    var = b.mean_last(b.node("Pow", [d, b.const(np.array(3.0, np.float32))], shape))
    row = b.shapes[var]
    std = b.node("Sqrt", [b.node("Add", [var, b.const(np.array(1e-5, np.float32))], row)], row)
    return b.node("Div", [d, std], shape)


@pytest.mark.parametrize("wrong", [_wrong_gelu, _cubed_layernorm])
def test_lookalikes_stay_on_the_host(tmp_path, wrong):
    b = Builder("lookalike", (1, 4, 8), 0)
    net = tk.from_onnx(quantize(b.model(wrong(b, b.linear("x", 8))), tmp_path / "w.onnx"))
    kinds = _kinds(net)
    assert "igelu" not in kinds and "layernorm" not in kinds
    assert {"host:Erf", "host:Pow"} & set(kinds)


def test_a_mul_whose_input_has_other_readers_requantizes_on_the_host(tmp_path):
    """Mul(x, 0.25) folds into x's matmul only where nothing else reads x; here an Add does too, so the Mul is
    a requantization on the host (the Add a resadd), within a step of onnxruntime."""
    b = Builder("mul", (1, 4, 8), 0)
    y = b.linear("x", 8, bias=False)
    scaled = b.node("Mul", [y, b.const(np.array(0.25, np.float32))], b.shapes[y])
    net = tk.from_onnx(quantize(b.model(b.add(scaled, y)), tmp_path / "m.onnx"))
    assert _kinds(net) == ["host:QuantizeLinear", "matmul", "host:Mul", "resadd", "host:DequantizeLinear"]
    res = tk.run_network(net, _input(net), hw="tiny")
    assert next(r for r in res.layers if r.kind == "host:Mul").dev <= 1


def test_qoperator_bert_folds_its_qlinearmul(tmp_path):
    """In QOperator form the attention's scale is a QLinearMul (com.microsoft): folded into the scores' store
    scale as the QDQ Mul is. Its QLinearSoftmax writes uint8 at 1/256, which the unit cannot: on the host."""
    from onnxruntime.quantization import QuantType
    path = quantize(bert_layer(seq=8, hidden=16, heads=2, ffn=32), tmp_path / "q.onnx", "QOperator",
                    activation_type=QuantType.QInt8, extra_options={"ActivationSymmetric": True})
    net = tk.from_onnx(path)
    kinds = _kinds(net)
    assert "host:QLinearMul" not in kinds and "host:QLinearSoftmax" in kinds
    scores = [l for l in net.layers if isinstance(l, AccelLayer) and l.repeat == 2][0]
    assert any(n.startswith("mul") for n in scores.nodes[1:])
    res = tk.run_network(net, _input(net), hw="tiny")
    assert next(r for r in res.layers if r.name == scores.name).dev <= 1


def test_residual_adds_with_zero_points_run_on_the_accelerator(tmp_path):
    """quantize_static's defaults (int8 activations with zero points): every Add is a resadd, the zero points
    folded into a per-channel bias in the accumulator (the output's too: it is an integer, so the int8 clip is
    onnxruntime's); each within a step of onnxruntime's QLinearAdd on its inputs."""
    net = tk.from_onnx(quantize(bert_layer(seq=8, hidden=16, heads=2, ffn=32), tmp_path / "asym.onnx",
                                extra_options={}))
    kinds = _kinds(net)
    assert "host:QLinearAdd" not in kinds and kinds.count("resadd") == 8
    adds = [l for l in net.layers if isinstance(l, AccelLayer) and l.kind == "resadd"]
    assert all(l.op.bias == "channel" and np.all(l.constants["bias"] == l.constants["bias"][0]) for l in adds)
    res = tk.run_network(net, _input(net), hw="tiny")
    rows = [r for r in res.layers if r.kind == "resadd"]
    assert all(r.dev is not None and r.dev <= 1 for r in rows) and sum(r.mismatches for r in rows) < 20
    # what stays on the host says why: Gemmini's store (and so its normalization unit) writes no zero point
    why = {r.kind: r.note for r in res.layers if r.bound == "host"}
    assert "zero point -128), which the normalization unit does not write" in why["host:Softmax"]
    assert why["host:Requantize"].startswith("Gemmini's store unit has no zero point")
    assert why["host:Transpose"] == "data movement (exact on 8-bit values)"
    from networks.network_report import totals
    assert "on the host, and why:" in totals(res)
