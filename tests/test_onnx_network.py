"""Networks from quantized ONNX models: import (QDQ and QOperator), whole runs against onnxruntime, reports,
network tuning, and a clear error for each kind of bad model. Models are small, built with onnx.helper."""
from __future__ import annotations

import re
import sqlite3
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import toolkit as tk  # noqa: E402
from benchmarks.onnx_models import Builder, bert_layer, quantize, resnet  # noqa: E402
from networks.network import AccelLayer  # noqa: E402
from networks.network_tune import allocate  # noqa: E402

GEMMS = ("conv2d", "depthwise", "matmul")


def small_cnn(seed: int = 0):
    """Conv+ReLU, conv, residual add+ReLU, depthwise conv, max pool, global pool, flatten, MatMul with a
    separate bias Add, Gemm, Add of the two heads, Softmax: every op kind of the importer."""
    b = Builder("small_cnn", (1, 3, 8, 8), seed)
    c1 = b.conv("x", 8, 3)
    x = b.add(b.conv(c1, 8, 3, relu=False), c1, relu=True)
    x = b.maxpool(b.conv(x, 8, 3, group=8, relu=False), 2, 2, 0)
    n, c = b.shapes[x][:2]
    f = b.node("Flatten", [b.node("GlobalAveragePool", [x], (n, c, 1, 1))], (n, c), axis=1)
    y = b.add(b.linear(f, 5), b.head(x, 5))
    return b.model(b.node("Softmax", [y], b.shapes[y], axis=-1))


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("onnx")
    return {fmt: quantize(small_cnn(), d / f"cnn_{fmt}.onnx", fmt) for fmt in ("QDQ", "QOperator")}


def _input(net, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {name: rng.standard_normal(info.shape).astype(np.float32) for name, info in net.inputs.items()}


def _ort(path, inputs):
    import onnxruntime as ort
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, inputs)))


def _op_types(net) -> dict[str, str]:
    return {n.name: n.op_type for n in net.model.graph.node}


def _folded(net) -> set[str]:
    """The layers that took a Mul (a scale) of the graph into their own store."""
    op_type = _op_types(net)
    return {l.name for l in net.layers if isinstance(l, AccelLayer) and any(op_type.get(n) == "Mul" for n in l.nodes[1:])}


def _gemms_match(res, net=None) -> None:
    """conv/matmul layers equal onnxruntime's, except at rounding ties of the float32 requantization; a layer
    with a folded Mul rounds once where onnxruntime rounds twice, so within a step. (A LayerNormalization's gamma
    and beta, a depthwise conv, have no counterpart in onnxruntime: its error shows at the output.)"""
    folded = _folded(net) if net is not None else set()
    affine = {l.name for l in net.layers if isinstance(l, AccelLayer)
              and _op_types(net).get(l.nodes[0]) == "LayerNormalization"} if net is not None else set()
    rows = [r for r in res.layers if r.kind in GEMMS and r.name not in affine]
    assert rows and all(r.dev is not None for r in rows)
    for r in rows:
        exact = r.name not in folded
        assert r.dev <= 1 and (not exact or r.mismatches == (r.ties or 0)), (r.name, r.dev, r.mismatches, r.ties)


@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
def test_small_cnn_maps_to_toolkit_ops_and_matches_onnxruntime(models, fmt):
    net = tk.from_onnx(models[fmt])
    kinds = [l.kind for l in net.layers if isinstance(l, AccelLayer)]
    # QDQ's Softmax head is the normalization unit's; QOperator's QLinearSoftmax (com.microsoft) runs on the host
    assert sorted(set(kinds)) == sorted(["conv2d", "depthwise", "matmul", "maxpool", "resadd"]
                                        + (["norm"] if fmt == "QDQ" else []))
    assert kinds.count("resadd") == 3 and kinds.count("matmul") == 2   # residual, bias Add, head Add
    relu = [l.op for l in net.layers if isinstance(l, AccelLayer) and getattr(l.op, "activation", "") == "relu"]
    assert len(relu) == 2                                              # conv1 and the residual add took their ReLU
    host = {l.op_type for l in net.layers if not isinstance(l, AccelLayer)}
    assert {"Flatten"} <= host and host & {"GlobalAveragePool", "QLinearGlobalAveragePool"}
    # tasks ignore the scales: the bias Add and the head Add are one resadd workload, run twice
    assert len(net.tasks) == len(kinds) - 1 and sum(t.count for t in net.tasks) == len(kinds)
    assert [t.count for t in net.tasks if t.op.KIND == "resadd"] == [1, 2]

    inputs = _input(net)
    res = tk.run_network(net, inputs, backend="functional", hw="tiny")
    ref = _ort(models[fmt], inputs)
    assert set(res.outputs) == set(ref)
    for name, arr in ref.items():
        assert res.outputs[name].dtype == arr.dtype and res.outputs[name].shape == arr.shape
        assert res.output_dev[name] == pytest.approx(np.abs(res.outputs[name] - arr).max())
    assert res.cycles is None and res.ort_latency_s > 0
    _gemms_match(res, net)
    for r in res.layers:
        if r.kind in ("resadd", "maxpool"):
            assert r.dev is not None and r.dev <= 1        # resadd rounds each operand: at most one step


def test_preprocessed_model_imports_too(tmp_path):
    """onnxruntime's quant_pre_process folds the MatMul's bias Add into a Gemm: one resadd fewer."""
    from onnxruntime.quantization.shape_inference import quant_pre_process
    onnx.save(small_cnn(), tmp_path / "f.onnx")
    quant_pre_process(str(tmp_path / "f.onnx"), str(tmp_path / "pre.onnx"), skip_symbolic_shape=True)
    net = tk.from_onnx(quantize(onnx.load(str(tmp_path / "pre.onnx")), tmp_path / "q.onnx"))
    assert [l.kind for l in net.layers if isinstance(l, AccelLayer)].count("resadd") == 2
    _gemms_match(tk.run_network(net, _input(net), hw="tiny"))


def test_model_proto_and_path_import_alike(models):
    by_path = tk.from_onnx(models["QDQ"])
    by_proto = tk.from_onnx(onnx.load(str(models["QDQ"])))
    assert [l.name for l in by_path.layers] == [l.name for l in by_proto.layers]
    assert [t.op for t in by_path.tasks] == [t.op for t in by_proto.tasks]


def test_verilator_network_cycles_and_report(models, tmp_path, verilator_ok):
    from networks.network_report import format_table, plot, write_csv
    net = tk.from_onnx(models["QDQ"])
    res = tk.run_network(net, _input(net), backend="verilator", hw="tiny", workers=2)
    serial = tk.run_network(net, _input(net), backend="verilator", hw="tiny", workers=1, compare=False)
    assert [(r.name, r.cycles) for r in res.layers] == [(r.name, r.cycles) for r in serial.layers]
    assert all(np.array_equal(res.outputs[k], v) for k, v in serial.outputs.items())
    accel = [r for r in res.layers if r.bound != "host"]
    assert res.cycles == sum(r.cycles for r in accel) > 0
    assert sum(r.share for r in accel) == pytest.approx(1.0)
    assert all(r.host_s is not None and r.cycles is None for r in res.layers if r.bound == "host")
    assert all(0 < r.utilization <= 1 for r in accel if r.macs)
    _gemms_match(res, net)
    text = format_table(res)
    assert f"{res.cycles:,} cycles" in text and "onnxruntime on this CPU" in text
    write_csv(res, tmp_path / "n.csv")
    plot(res, tmp_path / "n.png")
    assert len((tmp_path / "n.csv").read_text().splitlines()) == len(res.layers) + 1
    assert (tmp_path / "n.png").stat().st_size > 0


def test_resnet_blocks_and_bert_layer_run_whole(tmp_path):
    """A narrow ResNet-18 (downsample projections, 7x7 stem, max pool) and a small BERT layer (batched
    matmuls per head; softmax, LayerNorm and GELU on the normalization unit, LayerNorm's gamma and beta a
    depthwise conv, the attention's 1/sqrt(d) folded into the scores' scale): between its first QuantizeLinear
    and its last DequantizeLinear the host only moves data."""
    cnn = tk.from_onnx(quantize(resnet(18, image=32, width=4, classes=10), tmp_path / "r18.onnx"))
    res = tk.run_network(cnn, _input(cnn), hw="tiny")
    _gemms_match(res)
    bert = tk.from_onnx(quantize(bert_layer(seq=8, hidden=16, heads=2, ffn=32), tmp_path / "bert.onnx"))
    batched = [l for l in bert.layers if isinstance(l, AccelLayer) and l.repeat == 2]
    assert len(batched) == 2                                            # scores and context, per head
    norm = [l.op.function for l in bert.layers if isinstance(l, AccelLayer) and l.op.KIND == "norm"]
    assert norm == ["softmax", "layernorm", "igelu", "layernorm"]
    assert [l.kind for l in bert.layers if isinstance(l, AccelLayer)].count("depthwise") == 2   # gamma, beta
    host = [l.op_type for l in bert.layers if not isinstance(l, AccelLayer)]
    assert host[0] == "QuantizeLinear" and host[-1] == "DequantizeLinear"
    assert set(host[1:-1]) == {"Reshape", "Transpose", "Identity"}
    assert _folded(bert) == {batched[0].name}                           # the scores took the Mul
    res = tk.run_network(bert, _input(bert), hw="tiny")
    _gemms_match(res, bert)
    (name,) = res.outputs
    err = res.output_error[name]
    assert res.outputs[name].shape == (1, 8, 16) and err.cosine > 0.99 and err.mean_steps < 1.5
    assert err.max_steps == pytest.approx(res.output_dev[name] / err.step)


def test_parallel_layers_give_the_serial_run(tmp_path):
    """Layers side by side (their inputs from the references) give the serial run's outputs and rows,
    batched matmuls (a layer of several repeats) included."""
    bert = tk.from_onnx(quantize(bert_layer(seq=8, hidden=16, heads=2, ffn=32), tmp_path / "bert.onnx"))
    runs = [tk.run_network(bert, _input(bert), hw="tiny", workers=w, compare=False) for w in (1, 2)]
    assert runs[0].outputs.keys() == runs[1].outputs.keys()
    assert all(np.array_equal(runs[0].outputs[k], runs[1].outputs[k]) for k in runs[0].outputs)
    assert [(r.name, r.op, r.macs) for r in runs[0].layers] == [(r.name, r.op, r.macs) for r in runs[1].layers]


def test_parallel_layers_refuse_a_backend_that_differs_from_the_reference(models, monkeypatch):
    import networks.network_parallel as parallel
    from concurrent.futures import ThreadPoolExecutor
    from dataclasses import replace

    def off_by_one(prog, inputs, backend):
        res = tk.run(prog, inputs, backend)
        return replace(res, outputs={k: v ^ 1 for k, v in res.outputs.items()})
    monkeypatch.setattr(parallel, "run_program", off_by_one)
    net = tk.from_onnx(models["QDQ"])
    with ThreadPoolExecutor(2) as pool, pytest.raises(tk.BackendError, match="layer .* differs from its op's reference"):
        tk.run_network(net, _input(net), hw="tiny", executor=pool, compare=False)


def test_allocate_shares_one_budget():
    assert allocate(10, [1.0, 1.0]) == [5, 5]
    assert allocate(3, [5.0, 0.0, 1.0]) == [1, 1, 1]
    alloc = allocate(100, [70.0, 20.0, 10.0])
    assert sum(alloc) == 100 and alloc[0] > alloc[1] > alloc[2]


@pytest.mark.slow
def test_tune_network_shares_budget_and_resumes(models, tmp_path):
    net = tk.from_onnx(models["QDQ"])
    db = tmp_path / "net.db"
    budget = len(net.tasks) + 4
    fast = dict(backend="stand-in", progress=False, workers=1, tuner="random")   # the model tuner: bench_networks
    tuning = tk.tune_network(net, "tiny", trials=budget, db=db, **fast)
    assert sum(t.trials for t in tuning.tasks) == budget
    assert sum(t.share for t in tuning.tasks) == pytest.approx(1.0)
    assert all(t.default_cycles for t in tuning.tasks)
    assert tuning.tuned_cycles <= tuning.default_cycles and tuning.speedup >= 1.0
    def records() -> int:
        with sqlite3.connect(db) as con:
            return con.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    assert records() == budget                                       # one database for every task
    again = tk.tune_network(net, "tiny", trials=budget, db=db, **fast)
    assert records() == budget                                       # the rerun resumed: it measured nothing
    assert [t.trials for t in again.tasks] == [t.trials for t in tuning.tasks]    # same allocation: a resume
    assert again.tuned_cycles == tuning.tuned_cycles
    with pytest.raises(ValueError, match="at least the number of tasks"):
        tk.tune_network(net, "tiny", trials=1, db=db, **fast)


def test_cli_net(models, tmp_path, capsys):
    from toolkit.cli import main
    csv_path, png = tmp_path / "n.csv", tmp_path / "n.png"
    assert main(["net", str(models["QOperator"]), "--config", "tiny", "--csv", str(csv_path), "--plot", str(png),
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "conv2d" in out and "depthwise" in out and "onnxruntime on this CPU" in out
    assert csv_path.exists() and png.exists()


# ---- bad models ----------------------------------------------------------------------------------
def _float_conv(dynamic: bool = False, extra: str | None = None):
    b = Builder("bad", (1, 3, 8, 8), 0)
    y = b.conv("x", 4, 3)
    if extra:
        y = b.node(extra, [y], b.shapes[y])
    m = b.model(y)
    if dynamic:
        m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
    return m


def _quantize_with(tmp_path, model, **options):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    src, dst = tmp_path / "f.onnx", tmp_path / "q.onnx"
    onnx.save(model, src)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.data = iter([{"x": np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32)}])

        def get_next(self):
            return next(self.data, None)
    extra = {"ActivationSymmetric": True, "WeightSymmetric": True, **options.pop("extra", {})}
    quantize_static(str(src), str(dst), Reader(), quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8,
                    weight_type=QuantType.QInt8, extra_options=extra, **options)
    return dst


def test_float_model_is_refused():
    with pytest.raises(ValueError, match=r"node 'conv\d+' \(Conv\): input 'x' is a float tensor.*not quantized"):
        tk.from_onnx(_float_conv())


def test_dynamic_shape_is_refused():
    with pytest.raises(ValueError, match=r"graph input 'x' has a dynamic shape \['N', 3, 8, 8\]"):
        tk.from_onnx(_float_conv(dynamic=True))


def test_unsupported_op_is_refused(tmp_path):
    path = _quantize_with(tmp_path, _float_conv(extra="Hardmax"))
    with pytest.raises(ValueError, match=r"node 'hardmax\d+' \(Hardmax\): no accelerator op and no host"):
        tk.from_onnx(path)


def test_truncated_file_is_refused(models, tmp_path):
    data = models["QDQ"].read_bytes()
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="cut"):
        tk.from_onnx(cut)


# ---- models wrong in one place, built node by node: each is refused at import in one line that names
# ---- the bad thing, never with an internal message, a numpy warning or an allocation of its size
def _const(name: str, value) -> "onnx.TensorProto":
    return onnx.numpy_helper.from_array(np.asarray(value), name)


Q = ["s", "z"]   # the scale 0.1 and zero point 0 every tensor of _qmodel is quantized with, unless named


def _qmodel(nodes, inputs: dict, out_rank: int, inits=(), dtype=None, opset: int = 13):
    """A QOperator model of ``nodes`` on int8 graph inputs (name: shape)."""
    from onnx import TensorProto, helper
    dtype = dtype or TensorProto.INT8
    graph = helper.make_graph(
        nodes, "bad", [helper.make_tensor_value_info(n, dtype, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.INT8, [f"d{i}" for i in range(out_rank)])],
        [_const("s", np.float32(0.1)), _const("z", np.int8(0)), *inits])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset),
                                                   helper.make_opsetid("com.microsoft", 1)])


def _qconv(x_shape, w_shape, bias=None, w_scale: float = 0.1, y_scale: float = 0.1, name: str = "conv"):
    from onnx import helper
    inits = [_const("w", np.ones(w_shape, np.int8)), _const("ws", np.float32(w_scale)),
             _const("ys", np.float32(y_scale))]
    ins = ["x", *Q, "w", "ws", "z", "ys", "z"]
    if bias is not None:
        inits.append(_const("b", np.ones(bias, np.int32)))
        ins.append("b")
    return _qmodel([helper.make_node("QLinearConv", ins, ["y"], name=name)], {"x": x_shape}, len(x_shape), inits)


def _duplicate_names():
    model = _qconv((1, 4, 8, 8), (4, 4, 1, 1))
    second = onnx.NodeProto()
    second.CopyFrom(model.graph.node[0])
    model.graph.node[0].output[0] = second.input[0] = "y0"
    model.graph.node.append(second)
    return model


def _float16_input():
    from onnx import TensorProto, helper
    return _qmodel([helper.make_node("QuantizeLinear", ["x", *Q], ["y"], name="quant")], {"x": [1, 4]}, 2,
                   dtype=TensorProto.FLOAT16)


def _matmul_of_activations(b_shape):
    from onnx import helper
    return _qmodel([helper.make_node("QLinearMatMul", ["a", *Q, "b", *Q, *Q], ["y"], name="mm")],
                   {"a": [1, 4, 8], "b": b_shape}, 3)


def _add_of(b_shape):
    from onnx import helper
    return _qmodel([helper.make_node("QLinearAdd", ["a", *Q, "b", *Q, *Q], ["y"], name="add",
                                     domain="com.microsoft")], {"a": [1, 4, 8, 8], "b": b_shape}, 4)


def _denormal_dequantize():
    from onnx import helper
    nodes = [helper.make_node("DequantizeLinear", ["x", "tiny", "z"], ["f"], name="dq"),
             helper.make_node("QuantizeLinear", ["f", *Q], ["y"], name="q")]
    return _qmodel(nodes, {"x": [1, 4]}, 2, [_const("tiny", np.float32(1e-45))])


def _flow(nodes, inits=()):
    """A model of ``nodes`` (name, op, inputs, output) from the int8 graph input 'x' to the last one's output."""
    from onnx import helper
    return _qmodel([helper.make_node(op, ins, [out], name=name) for name, op, ins, out in nodes], {"x": [1, 4]}, 2,
                   inits)


BAD_MODELS = {
    "cycle": (lambda: _flow([("enter", "Add", ["x", "b"], "a"), ("loop", "Relu", ["a"], "b"),
                             ("leave", "Identity", ["a"], "y")]),
              r"^model bad: node 'enter' \(Add\) reads its own output through a cycle: node 'enter' \(Add\) -> "
              r"node 'loop' \(Relu\) -> node 'enter' \(Add\)$"),
    "missing initializer": (lambda: _flow([("fc", "MatMul", ["x", "w"], "y")]),
                            r"^model bad: node 'fc' \(MatMul\): its input 'w' is no graph input, initializer or "
                            r"node output \(a missing initializer\?\)$"),
    "nodes out of order": (lambda: _flow([("second", "Neg", ["a"], "y"), ("first", "Relu", ["x"], "a")]),
                           r"^model bad: node 'second' \(Neg\) reads 'a', which node 'first' \(Relu\), listed after "
                           r"it, gives"),
    "1-D conv": (lambda: _qconv((1, 4, 8), (4, 4, 3)), r"node 'conv' \(QLinearConv\): input 'x' is \(1, 4, 8\), not "
                                                        r"N x C x H x W"),
    "3-D conv": (lambda: _qconv((1, 4, 8, 8, 8), (4, 4, 3, 3, 3)), r"node 'conv' .*input 'x' is \(1, 4, 8, 8, 8\)"),
    "weight rank": (lambda: _qconv((1, 4, 8, 8), (4, 4, 3)), r"node name: conv\).*spatial dimensions in the weight"),
    "weight channels": (lambda: _qconv((1, 4, 8, 8), (4, 3, 3, 3)),
                        r"node 'conv' .*weight \(4, 3, 3, 3\) with group=1 takes 3 input channels, the input 'x' "
                        r"has 4"),
    "bias length": (lambda: _qconv((1, 4, 8, 8), (4, 4, 3, 3), bias=(3,)),
                    r"node 'conv' .*bias is \(3,\): the conv has 4 output channels"),
    "huge input": (lambda: _qconv((1, 4, 100000, 100000), (4, 4, 3, 3)),
                   r"graph input 'x' is 1 x 4 x 100000 x 100000 int8: 40,000,000,000 bytes, more than the "
                   r"1,073,741,824"),
    "zero-size input": (lambda: _qconv((1, 4, 0, 8), (4, 4, 3, 3)), r"graph input 'x' has a zero-size dimension "
                                                                     r"\[1, 4, 0, 8\]"),
    "denormal weight scale": (lambda: _qconv((1, 4, 8, 8), (4, 4, 3, 3), w_scale=1e-45),
                              r"node 'conv' .*the scale of weight is 1.4\d*e-45, not a positive normal float32"),
    "requantization underflow": (lambda: _qconv((1, 4, 8, 8), (4, 4, 3, 3), w_scale=1e-30, y_scale=1e10),
                                 r"node 'conv' .*the requantization scale .* is \d.*e-4\d, not a positive normal"),
    "denormal dequantize scale": (_denormal_dequantize, r"node 'dq' \(DequantizeLinear\): the scale of tensor 'x'"),
    "duplicate node names": (_duplicate_names, r"onnxruntime refuses it: .*two nodes with same node name \(conv\)"),
    "float16 input": (_float16_input, r"onnxruntime refuses it: .*tensor\(float16\).* in node \(quant\)"),
    "matmul B rows": (lambda: _matmul_of_activations([1, 6, 8]), r"node name: mm\).*Incompatible dimensions"),
    "add shapes": (lambda: _add_of([1, 4, 8, 7]), r"Node \(add\) .*Incompatible dimensions"),
}


@pytest.mark.parametrize("case", BAD_MODELS)
def test_a_bad_model_is_refused_in_one_line_naming_it(case: str) -> None:
    build, message = BAD_MODELS[case]
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no numpy RuntimeWarning on the way
        with pytest.raises(ValueError, match=message) as err:
            tk.from_onnx(build())
    assert "\n" not in str(err.value).strip() and "internal" not in str(err.value)


@pytest.mark.parametrize("location, message", [("missing.bin", "missing.bin, but it is not regular file"),
                                               ("../outside.bin", "'../outside.bin' points outside the directory")])
def test_external_data_missing_or_outside_the_model_folder(tmp_path, location: str, message: str) -> None:
    from onnx.external_data_helper import set_external_data
    model = _qconv((1, 4, 8, 8), (4, 4, 3, 3))
    (weight,) = [t for t in model.graph.initializer if t.name == "w"]
    set_external_data(weight, location=location)
    weight.data_location = onnx.TensorProto.EXTERNAL
    weight.ClearField("raw_data")
    (tmp_path / "m").mkdir()
    path = tmp_path / "m" / "model.onnx"
    path.write_bytes(model.SerializeToString())
    (tmp_path / "outside.bin").write_bytes(bytes(144))     # there, but outside: never read
    with pytest.raises(ValueError, match=f"model model.onnx: cannot load its external data: .*{re.escape(message)}"):
        tk.from_onnx(path)


def test_cli_net_refuses_a_nan_input_naming_the_file(models, tmp_path, capsys) -> None:
    from toolkit.cli import main
    net = tk.from_onnx(models["QDQ"])
    (name, info), = net.inputs.items()
    arr = np.zeros(info.shape, np.float32)
    arr.flat[3] = np.nan
    np.save(tmp_path / "nan.npy", arr)
    assert main(["net", str(models["QDQ"]), "--config", "tiny", "--input", f"{name}={tmp_path}/nan.npy",
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err == (f"systolic net: error: --input {name}={tmp_path}/nan.npy: 1 of {arr.size} values are NaN or "
                   "infinite; give finite numbers\n")
