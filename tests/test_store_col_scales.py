"""The store unit's column-scale extension (HardwareConfig.store_col_scales, which Gemmini lacks): a vector of dim
float32 scales, loaded by config_st_scales words, that scales each output column (channel) by its own scale.
Functional model, cpu backend and RTL bit-exact against numpy; hardware without it refuses it; the importer
uses it for per-channel weight scales instead of a host requantization."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import toolkit as tk
from isa import PRESETS, ConfigSt, ConfigStScales, HardwareConfig, Program, decode, encode
from isa.checker import ProgramError, check
from toolkit.schedule import ScheduleError
from helpers import assert_matches_onnxruntime, tie_inputs

TINY_CS = dataclasses.replace(PRESETS["tiny"], store_col_scales=True, name="tiny_colscales")
TINY_BOTH = dataclasses.replace(TINY_CS, store_requant=True, name="tiny_colscales_requant")


def _scales(n: int, seed: int) -> tuple[float, ...]:
    """Scales of varied magnitude with ties among them (0.5 and 1.5 on odd sums round half to even)."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.002, 0.06, n)
    base[::3], base[1::5] = 0.5, 1.5
    return tuple(base.tolist())


# odd shapes, N across a column block boundary (tiny: dim 4), with and without offset / uint8 / ReLU
OPS = {
    "matmul_9": (tk.matmul(7, 9, 13, bias="row", scale=_scales(9, 0)), TINY_CS),
    "matmul_4_relu": (tk.matmul(5, 4, 6, activation="relu", scale=_scales(4, 1)), TINY_CS),
    "matmul_uint8": (tk.matmul(6, 11, 5, scale=_scales(11, 2), out_dtype="uint8", out_offset=100), TINY_BOTH),
    "matmul_offset_relu": (tk.matmul(9, 6, 7, bias="full", activation="relu", scale=_scales(6, 3),
                                     out_offset=-20), TINY_BOTH),
    "conv_7": (tk.conv2d(1, 5, 6, 3, 7, bias="channel", scale=_scales(7, 4)), TINY_CS),
    "conv_s2_uint8": (tk.conv2d(2, 7, 5, 4, 6, stride=2, scale=_scales(6, 5), out_dtype="uint8", out_offset=3),
                      TINY_BOTH),
    "depthwise_5": (tk.depthwise_conv2d(1, 5, 6, 5, scale=_scales(5, 6), activation="relu"), TINY_CS),
}


@pytest.mark.parametrize("ties", [False, True], ids=["random", "ties"])
@pytest.mark.parametrize("name", OPS)
def test_functional_and_cpu_equal_the_reference(name: str, ties: bool) -> None:
    op, hw = OPS[name]
    inputs = op.random_inputs(seed=3)
    inputs = tie_inputs(op, inputs) if ties else inputs
    prog = tk.compile(op, hw)
    assert prog.counts()["config_st_scales"] >= hw.dim // 2
    want = op.reference(inputs)
    for backend in ("functional", "cpu"):
        got = tk.run(prog, inputs, backend=backend).outputs
        for key, value in want.items():
            assert got[key].dtype == value.dtype
            np.testing.assert_array_equal(got[key], value)


def test_the_reference_scales_each_column_as_one_scale_would() -> None:
    op = OPS["matmul_9"][0]
    inputs = op.random_inputs(seed=1)
    got = op.reference(inputs)["C"]
    for j, s in enumerate(op.scale):
        one = tk.matmul(op.M, op.N, op.K, bias="row", scale=s).reference(inputs)["C"]
        np.testing.assert_array_equal(got[:, j], one[:, j])


def test_equal_scales_give_the_scalar_results_bit_for_bit() -> None:
    vec, one = tk.matmul(7, 9, 13, scale=[0.037] * 9), tk.matmul(7, 9, 13, scale=0.037)
    inputs = vec.random_inputs(seed=2)
    got = tk.run(tk.compile(vec, TINY_CS), inputs, backend="functional").outputs["C"]
    np.testing.assert_array_equal(got, tk.run(tk.compile(one, "tiny"), inputs, backend="functional").outputs["C"])


def test_refusals_name_the_argument() -> None:
    op = OPS["matmul_9"][0]
    with pytest.raises(ValueError, match="scale: 9 per-channel scales, but hardware tiny has no store-unit column "
                                         "scales"):
        tk.compile(op, "tiny")
    with pytest.raises(ScheduleError, match="scale: per-channel scales need the toolkit's own schedules"):
        tk.compile(op, TINY_CS, schedule="gemmini")
    with pytest.raises(ValueError, match=r"scale has 3 entries, expected one per output channel \(9\)"):
        tk.matmul(4, 9, 4, scale=[0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match=r"scale\[1\] must be a positive finite float32"):
        tk.conv2d(1, 4, 4, 2, 2, scale=[0.1, -1.0])
    with pytest.raises(ValueError, match="scale must be 1.0 when out_dtype='int32'"):
        tk.matmul(4, 2, 4, scale=[0.1, 0.2], out_dtype="int32")
    moved = dataclasses.replace(tk.compile(op, TINY_CS), hw=PRESETS["tiny"])
    with pytest.raises(ProgramError, match="hardware tiny has no store-unit column scales"):
        check(moved)


def test_isa_words_round_trip_and_the_config_field() -> None:
    word = ConfigStScales(2, 0.5, 0.037)
    assert decode(*encode(word)) == word
    assert decode(*encode(ConfigSt(8, acc_scale=0.5, col_scales=1))).col_scales == 1
    with pytest.raises(ValueError, match="ConfigStScales.col=3 must be even"):
        ConfigStScales(3)
    assert PRESETS["tiny"].config_hash() == "a5bf430300c8d5c4"   # the field stays out of the hash when off
    assert TINY_CS.config_hash() != PRESETS["tiny"].config_hash()
    assert not PRESETS["gemmini"].store_col_scales
    assert HardwareConfig.from_hardware_fields(TINY_CS.name, TINY_CS.hardware_fields()) == TINY_CS
    prog = tk.compile(OPS["conv_s2_uint8"][0], TINY_BOTH)
    assert Program.from_asm(prog.to_asm()) == prog
    assert Program.from_bytes(prog.to_bytes())[0] == prog
    assert "config_st_scales col=0 scale0=" in prog.to_asm()


@pytest.mark.parametrize("name", ["matmul_9", "matmul_uint8", "conv_7", "conv_s2_uint8", "depthwise_5"])
def test_rtl_equals_the_reference(name: str, verilator_ok) -> None:
    op, hw = OPS[name]
    inputs = tie_inputs(op, op.random_inputs(seed=5))
    res = tk.run(tk.compile(op, hw), inputs, backend="verilator")
    for key, value in op.reference(inputs).items():
        np.testing.assert_array_equal(res.outputs[key], value)
    assert res.cycles > 0


# ---- the importer: per-channel weight scales in the store unit ------------------------------------------------
@pytest.fixture(scope="module")
def per_channel_models(tmp_path_factory):
    pytest.importorskip("onnxruntime")
    from benchmarks.onnx_models import quantize
    from test_onnx_quant_forms import residual_cnn
    d, model = tmp_path_factory.mktemp("cs_forms"), residual_cnn()
    return {"symmetric": quantize(model, d / "sym.onnx", "QDQ", per_channel=True,
                                  extra_options={"ActivationSymmetric": True}),
            "asymmetric": quantize(model, d / "asym.onnx", "QDQ", per_channel=True, extra_options={})}


def _host_requantize(res) -> list[str]:
    return [r.name for r in res.layers if r.kind == "host:Requantize"]


@pytest.mark.parametrize("form, hw", [("symmetric", TINY_CS), ("asymmetric", TINY_BOTH)])
def test_importer_scales_per_channel_in_the_store_unit(per_channel_models, form: str, hw) -> None:
    x = {"x": np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)}
    base = dataclasses.replace(hw, store_col_scales=False, name="no_colscales")
    host = tk.run_network(tk.from_onnx(per_channel_models[form], hw=base), x, hw=base, compare=False)
    net = tk.from_onnx(per_channel_models[form], hw=hw)
    res = tk.run_network(net, x, hw=hw)
    assert_matches_onnxruntime(net, res)
    assert len(_host_requantize(res)) < len(_host_requantize(host))
    assert any(getattr(getattr(layer, "op", None), "col_scaled", False) for layer in net.layers)


def test_importer_on_the_rtl(per_channel_models, verilator_ok) -> None:
    net = tk.from_onnx(per_channel_models["asymmetric"], hw=TINY_BOTH)
    x = {"x": np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)}
    res = tk.run_network(net, x, backend="verilator", hw=TINY_BOTH)
    assert res.cycles > 0
    assert_matches_onnxruntime(net, res)
