"""The store unit's requantization extension (HardwareConfig.store_requant, which Gemmini lacks): config_st's
output offset and uint8 clip, ``clip(relu?(rne(acc * scale)) + offset, qmin, qmax)``, on the functional model,
the cpu backend and the RTL, bit-exact against numpy; hardware without it refuses the fields."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import toolkit as tk
from isa import PRESETS, ConfigSt, HardwareConfig, Program
from isa.checker import ProgramError, check
from isa.numerics import acc_requantize
from helpers import assert_matches_onnxruntime, tie_inputs

TINY_RQ = dataclasses.replace(PRESETS["tiny"], store_requant=True, name="tiny_requant")

# odd shapes, offsets at the ends of each range, int8 and uint8, ReLU, pooling, both schedule families
OPS = {
    "matmul_int8_relu_low": tk.matmul(7, 9, 13, bias="row", activation="relu", scale=0.013, out_offset=-128),
    "matmul_uint8_top": tk.matmul(5, 11, 6, scale=0.02, out_dtype="uint8", out_offset=255),
    "matmul_int8_min_offset": tk.matmul(9, 5, 7, bias="full", scale=0.05, out_offset=-256),
    "conv_uint8_relu": tk.conv2d(1, 5, 6, 3, 7, bias="channel", activation="relu", scale=0.02, out_dtype="uint8",
                                 out_offset=100),
    "conv_int8_s2": tk.conv2d(2, 7, 5, 4, 6, stride=2, scale=0.03, out_offset=127),
    "conv_pool_uint8": tk.conv2d(1, 6, 6, 3, 5, bias="channel", scale=0.02, out_dtype="uint8", out_offset=128,
                                 pool=(2, 2, 0)),
    "depthwise_int8": tk.depthwise_conv2d(1, 5, 6, 5, scale=0.05, out_offset=-7),
}


@pytest.mark.parametrize("schedule", [None, "gemmini"])
@pytest.mark.parametrize("name", OPS)
def test_functional_and_cpu_equal_the_reference(name: str, schedule) -> None:
    op = OPS[name]
    prog = tk.compile(op, TINY_RQ, schedule=schedule)
    inputs = op.random_inputs(seed=3)
    want = op.reference(inputs)
    for backend in ("functional", "cpu"):
        got = tk.run(prog, inputs, backend=backend).outputs
        for key, value in want.items():
            assert got[key].dtype == value.dtype == np.dtype(op.out_dtype)
            np.testing.assert_array_equal(got[key], value)


def test_ties_round_half_to_even_before_the_offset() -> None:
    op = tk.matmul(8, 4, 4, scale=0.5, out_offset=3)
    inputs = tie_inputs(op, op.random_inputs(seed=0))
    acc = inputs["A"].astype(np.int32) @ inputs["B"].astype(np.int32)
    assert np.any(acc % 2 == 1)   # x.5 after the scale: ties
    got = tk.run(tk.compile(op, TINY_RQ), inputs, backend="functional").outputs["C"]
    np.testing.assert_array_equal(got, np.clip(np.rint(acc * 0.5) + 3, -128, 127).astype(np.int8))


def test_requantize_matches_onnxruntime_formula() -> None:
    """clip(rne(float32(acc) * scale) + zy, qmin, qmax), ReLU as max(q, zy): the host epilogue's formula."""
    acc = np.random.default_rng(0).integers(-5000, 5000, 4000).astype(np.int32)
    for scale, zy, uint8, relu in [(0.0371, 0, False, False), (0.05, -100, False, True), (0.021, 200, True, True),
                                   (0.5, 128, True, False)]:
        lo, hi = (0, 255) if uint8 else (-128, 127)
        q = np.clip(np.rint(acc.astype(np.float32) * np.float32(scale)) + zy, max(lo, zy) if relu else lo, hi)
        np.testing.assert_array_equal(acc_requantize(acc, scale, relu, zy, uint8), q.astype(np.uint8 if uint8
                                                                                             else np.int8))


def test_hardware_without_the_extension_refuses_it() -> None:
    with pytest.raises(ValueError, match="out_offset=5, out_dtype='int8': hardware tiny has no store-unit "
                                         "requantization"):
        tk.compile(tk.matmul(4, 4, 4, out_offset=5), "tiny")
    with pytest.raises(ValueError, match="out_dtype='uint8'"):
        tk.compile(tk.matmul(4, 4, 4, out_dtype="uint8"), "gemmini")
    prog = tk.compile(tk.matmul(4, 4, 4, out_offset=5), TINY_RQ)
    moved = dataclasses.replace(prog, hw=PRESETS["tiny"])
    with pytest.raises(ProgramError, match="out_offset=5, out_uint8=0: hardware tiny has no store-unit"):
        check(moved)


@pytest.mark.parametrize("kwargs, message", [
    (dict(out_offset=256), "out_offset must be an integer from -256 to 255, got 256"),
    (dict(out_offset=1.5), "out_offset must be an integer"),
    (dict(out_offset=True), "out_offset must be an integer"),
    (dict(out_offset=3, out_dtype="int32"), "out_offset must be 0 when out_dtype='int32'"),
    (dict(out_dtype="uint16"), "out_dtype='uint16' is not one of"),
])
def test_bad_offsets_name_the_argument(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        tk.matmul(4, 4, 4, **kwargs)


def test_config_field_keeps_old_hashes_and_round_trips(tmp_path) -> None:
    # the presets' hashes (tuning records, RTL tables, builds) are those from before the field
    assert PRESETS["gemmini-alone"].config_hash() == "40ff860238b17544"
    assert PRESETS["tiny"].config_hash() == "a5bf430300c8d5c4"
    assert TINY_RQ.config_hash() != PRESETS["tiny"].config_hash()
    assert not PRESETS["gemmini"].store_requant
    assert HardwareConfig.from_hardware_fields("tiny_requant", TINY_RQ.hardware_fields()) == TINY_RQ
    TINY_RQ.save(tmp_path / "rq.toml")
    assert HardwareConfig.load(tmp_path / "rq.toml") == TINY_RQ
    with pytest.raises(ValueError, match="store_requant must be true or false, got 1"):
        dataclasses.replace(TINY_RQ, store_requant=1)
    prog = tk.compile(OPS["conv_uint8_relu"], TINY_RQ)
    assert Program.from_asm(prog.to_asm()) == prog
    assert Program.from_bytes(prog.to_bytes())[0] == prog


def test_assembly_writes_the_fields_only_when_set() -> None:
    from isa.assembly import format_instruction
    assert format_instruction(ConfigSt(8, acc_scale=0.5)) == "config_st dram_stride=8 activation=none acc_scale=0.5"
    assert format_instruction(ConfigSt(8, out_offset=-3, out_uint8=1)).endswith("out_offset=-3 out_uint8=1")


@pytest.mark.parametrize("name", ["matmul_int8_relu_low", "matmul_uint8_top", "conv_uint8_relu", "conv_pool_uint8",
                                  "depthwise_int8"])
def test_rtl_equals_the_reference(name: str, verilator_ok) -> None:
    op = OPS[name]
    inputs = op.random_inputs(seed=5)
    for schedule in (None, "gemmini"):
        res = tk.run(tk.compile(op, TINY_RQ, schedule=schedule), inputs, backend="verilator")
        for key, value in op.reference(inputs).items():
            np.testing.assert_array_equal(res.outputs[key], value)
        assert res.cycles > 0


def test_rtltie_inputs(verilator_ok) -> None:
    op = tk.matmul(8, 4, 4, scale=0.5, out_offset=-3, out_dtype="int8")
    inputs = tie_inputs(op, op.random_inputs(seed=0))
    res = tk.run(tk.compile(op, TINY_RQ), inputs, backend="verilator")
    np.testing.assert_array_equal(res.outputs["C"], op.reference(inputs)["C"])


# ---- the importer: the extension instead of the host epilogue ------------------------------------------------
ASYMMETRIC_FORMS = ("qdq-defaults", "qdq-uint8", "qoperator-defaults")


@pytest.fixture(scope="module")
def asymmetric_models(tmp_path_factory):
    pytest.importorskip("onnxruntime")
    from benchmarks.onnx_models import quant_forms, quantize
    from test_onnx_quant_forms import residual_cnn
    d, model, forms = tmp_path_factory.mktemp("rq_forms"), residual_cnn(), quant_forms()
    return {name: quantize(model, d / f"{name}.onnx", *forms[name][:1], **forms[name][1]) for name in ASYMMETRIC_FORMS}


@pytest.mark.parametrize("form", ASYMMETRIC_FORMS)
def test_importer_requantizes_in_the_store_unit(asymmetric_models, form: str) -> None:
    """With hw that has the extension, the layers whose outputs have zero points (one scale) requantize in
    the store unit: fewer host:Requantize rows, outputs as onnxruntime's (bit-exact but at ties)."""
    x = {"x": np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)}
    host = tk.from_onnx(asymmetric_models[form], hw="tiny")
    ext = tk.from_onnx(asymmetric_models[form], hw=TINY_RQ)
    res = tk.run_network(ext, x, hw=TINY_RQ)
    assert_matches_onnxruntime(ext, res)
    host_rows = [r.name for r in tk.run_network(host, x, hw="tiny", compare=False).layers
                 if r.kind == "host:Requantize"]
    ext_rows = [r.name for r in res.layers if r.kind == "host:Requantize"]
    assert len(ext_rows) < len(host_rows)
    stored = [layer.op for layer in ext.layers if hasattr(layer, "op") and getattr(layer.op, "requantizes", False)]
    assert stored and all(op.out_dtype == ("uint8" if form == "qdq-uint8" else "int8") for op in stored)
    with pytest.raises(ValueError, match="has no store-unit requantization"):
        tk.run_network(ext, x, hw="tiny", compare=False)


def test_importer_on_the_rtl(asymmetric_models, verilator_ok) -> None:
    net = tk.from_onnx(asymmetric_models["qdq-uint8"], hw=TINY_RQ)
    x = {"x": np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)}
    res = tk.run_network(net, x, backend="verilator", hw=TINY_RQ)
    assert res.cycles > 0
    assert_matches_onnxruntime(net, res)


def test_cli_net_uses_the_extension_of_its_config(asymmetric_models, tmp_path, capsys) -> None:
    from toolkit.cli import main
    TINY_RQ.save(tmp_path / "rq.toml")
    assert main(["net", str(asymmetric_models["qdq-defaults"]), "--config", str(tmp_path / "rq.toml"),
                 "--backend", "functional", "--quiet", "--no-compare"]) == 0
    with_ext = capsys.readouterr().out.count("Requantize")
    assert main(["net", str(asymmetric_models["qdq-defaults"]), "--config", "tiny", "--backend", "functional",
                 "--quiet", "--no-compare"]) == 0
    assert with_ext < capsys.readouterr().out.count("Requantize")
