"""Networks from quantized ONNX models: import (QDQ and QOperator), whole runs against onnxruntime, reports,
network tuning, and a clear error for each kind of bad model. Models are small, built with onnx.helper."""
from __future__ import annotations

import sqlite3

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import toolkit as tk  # noqa: E402
from benchmarks.onnx_models import Builder, bert_layer, quantize, resnet  # noqa: E402
from toolkit.network import AccelLayer  # noqa: E402
from toolkit.network_tune import allocate  # noqa: E402

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


def _gemms_match(res) -> None:
    """conv/matmul layers equal onnxruntime's, except at rounding ties of the float32 requantization."""
    rows = [r for r in res.layers if r.kind in GEMMS]
    assert rows and all(r.dev is not None for r in rows)
    for r in rows:
        assert r.dev <= 1 and r.mismatches == (r.ties or 0), (r.name, r.dev, r.mismatches, r.ties)


@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
def test_small_cnn_maps_to_toolkit_ops_and_matches_onnxruntime(models, fmt):
    net = tk.from_onnx(models[fmt])
    kinds = [l.kind for l in net.layers if isinstance(l, AccelLayer)]
    assert sorted(set(kinds)) == ["conv2d", "depthwise", "matmul", "maxpool", "resadd"]
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
    _gemms_match(res)
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


def test_verilator_network_cycles_and_report(models, tmp_path):
    from toolkit.network_report import format_table, plot, write_csv
    net = tk.from_onnx(models["QDQ"])
    res = tk.run_network(net, _input(net), backend="verilator", hw="tiny")
    accel = [r for r in res.layers if r.bound != "host"]
    assert res.cycles == sum(r.cycles for r in accel) > 0
    assert sum(r.share for r in accel) == pytest.approx(1.0)
    assert all(r.host_s is not None and r.cycles is None for r in res.layers if r.bound == "host")
    assert all(0 < r.utilization <= 1 for r in accel if r.macs)
    _gemms_match(res)
    text = format_table(res)
    assert f"{res.cycles:,} cycles" in text and "onnxruntime on this CPU" in text
    write_csv(res, tmp_path / "n.csv")
    plot(res, tmp_path / "n.png")
    assert len((tmp_path / "n.csv").read_text().splitlines()) == len(res.layers) + 1
    assert (tmp_path / "n.png").stat().st_size > 0


def test_resnet_blocks_and_bert_layer_run_whole(tmp_path):
    """A narrow ResNet-18 (downsample projections, 7x7 stem, max pool) and a small BERT layer (batched
    matmuls per head, softmax, layernorm, GELU on the host)."""
    cnn = tk.from_onnx(quantize(resnet(18, image=32, width=4, classes=10), tmp_path / "r18.onnx"))
    res = tk.run_network(cnn, _input(cnn), hw="tiny")
    _gemms_match(res)
    bert = tk.from_onnx(quantize(bert_layer(seq=8, hidden=16, heads=2, ffn=32), tmp_path / "bert.onnx"))
    batched = [l for l in bert.layers if isinstance(l, AccelLayer) and l.repeat == 2]
    assert len(batched) == 2                                            # scores and context, per head
    assert {"Softmax", "LayerNormalization", "Gelu"} <= {getattr(l, "op_type", "") for l in bert.layers}
    res = tk.run_network(bert, _input(bert), hw="tiny")
    _gemms_match(res)
    (name,) = res.outputs
    assert res.outputs[name].shape == (1, 8, 16) and res.output_dev[name] < 0.5


def test_allocate_shares_one_budget():
    assert allocate(10, [1.0, 1.0]) == [5, 5]
    assert allocate(3, [5.0, 0.0, 1.0]) == [1, 1, 1]
    alloc = allocate(100, [70.0, 20.0, 10.0])
    assert sum(alloc) == 100 and alloc[0] > alloc[1] > alloc[2]


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


def test_asymmetric_zero_points_are_refused(tmp_path):
    path = _quantize_with(tmp_path, _float_conv(), extra={"ActivationSymmetric": False})
    with pytest.raises(ValueError, match=r"node '.*' \(\w+\): .*zero point .*asymmetric"):
        tk.from_onnx(path)


def test_per_channel_scales_are_refused(tmp_path):
    path = _quantize_with(tmp_path, _float_conv(), per_channel=True)
    with pytest.raises(ValueError, match=r"node '.*' \(DequantizeLinear\): .*per-channel scales \(4 different"):
        tk.from_onnx(path)


def test_truncated_file_is_refused(models, tmp_path):
    data = models["QDQ"].read_bytes()
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="cut"):
        tk.from_onnx(cut)
