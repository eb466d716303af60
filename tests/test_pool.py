"""Max pooling in the store unit: config_st's pooling fields, maxpool2d, conv2d(pool=...) and LOOP_CONV_WS's
pooling, bit-exact against numpy on the functional model and the RTL."""
from __future__ import annotations

import dataclasses

import pytest

import numpy as np

import toolkit as tk
from helpers import assert_exact
from isa import ConfigSt, ISAError, Mvout, decode, encode, layout, parse_program
from isa.checker import ProgramError, check
from isa.loop_words import LoopConvWs

# (batch, h, w, channels, kernel, stride, padding): padding, overlapping windows, stride > kernel, 1x1 outputs,
# a channel count past one block, a window of the whole image
POOLS = [(1, 7, 7, 5, 3, 2, 1), (1, 6, 6, 8, 2, 2, 0), (2, 9, 11, 6, 3, 1, 1), (1, 8, 8, 4, 2, 3, 1),
         (1, 1, 1, 3, 1, 1, 0), (1, 3, 3, 4, 3, 2, 1), (1, 5, 5, 9, 3, 3, 0), (1, 3, 3, 2, 3, 1, 0)]
# (batch, h, w, in_c, out_c, kernel, stride, padding, pool, activation, bias)
FUSED = [(1, 8, 8, 3, 5, 3, 1, 1, (3, 2, 1), "relu", "channel"), (1, 9, 7, 4, 6, 3, 1, 1, (2, 2, 0), "none", None),
         (2, 6, 6, 5, 4, 1, 1, 0, (2, 3, 1), "relu", "channel"), (1, 5, 5, 8, 8, 3, 2, 1, (3, 1, 1), "relu", "channel"),
         (1, 4, 4, 3, 4, 3, 1, 0, (2, 1, 0), "relu", None), (1, 16, 16, 3, 8, 3, 2, 1, (3, 2, 1), "relu", "channel")]


def _pool(case: tuple) -> tk.Op:
    b, h, w, c, k, s, p = case
    return tk.maxpool2d(b, h, w, c, kernel=k, stride=s, padding=p)


def _fused(case: tuple) -> tk.Op:
    b, h, w, ci, co, k, s, p, pool, act, bias = case
    return tk.conv2d(b, h, w, ci, co, kernel=k, stride=s, padding=p, pool=pool, activation=act, bias=bias,
                     scale=0.05)


def test_config_st_words_are_gemmini_h_s() -> None:
    """gemmini_extended2_config_st(16, RELU, 0.5, 2, 3, 56, 3, 56, 8, 112, 1, 1)'s words, and back."""
    ins = ConfigSt(16, 1, 0.5, pool_stride=2, pool_size=3, pool_out_dim=56, porows=3, pocols=56, orows=8, ocols=112,
                   upad=1, lpad=1)
    rs1 = (112 << 56) | (8 << 48) | (56 << 40) | (3 << 32) | (56 << 24) | (1 << 10) | (1 << 8) | (3 << 6) | (2 << 4) \
        | (1 << 2) | 2
    assert encode(ins) == (0, rs1, (0x3F000000 << 32) | 16)
    assert decode(*encode(ins)) == ins
    with pytest.raises(ISAError, match="reserved bits"):   # rs1[23]: a config_st_scales word, whose layout
        decode(0, rs1 | (1 << 23), 16)                       # leaves the pooling fields' bits reserved
    with pytest.raises(ISAError, match=r"ConfigSt.pool_size=4 out of range"):
        ConfigSt(pool_stride=1, pool_size=4)


@pytest.mark.parametrize("case", POOLS, ids=str)
def test_maxpool_in_the_store_unit(case: tuple) -> None:
    ran = assert_exact(_pool(case), "tiny")
    assert any(isinstance(i, ConfigSt) and i.pooling for i in ran.program.instructions)
    assert not any(i.op == "fence" for i in ran.program.instructions)   # no DRAM round trips


def test_windows_config_st_cannot_hold_keep_the_relu_lowering() -> None:
    """A 4x4 window is past config_st's 2-bit pool_size: it still runs, through the accumulator's ReLU."""
    ran = assert_exact(tk.maxpool2d(1, 8, 8, 4, kernel=4, stride=4), "tiny")
    assert not any(isinstance(i, ConfigSt) and i.pooling for i in ran.program.instructions)


@pytest.mark.parametrize("case", FUSED, ids=str)
@pytest.mark.parametrize("schedule", [None, "gemmini"])
def test_conv_with_a_fused_pool(case: tuple, schedule: str | None) -> None:
    ran = assert_exact(_fused(case), "tiny", schedule)
    loops = [i for i in ran.program.instructions if isinstance(i, LoopConvWs)]
    assert loops and all(not loop.no_pool for loop in loops)


def test_the_toolkit_s_conv_tiles_refuse_a_pool(tiny) -> None:
    op = _fused(FUSED[0])
    plain = tk.default_schedule(dataclasses.replace(op, pool=None), tiny)
    with pytest.raises(tk.ScheduleError, match="do not fuse a max pool"):
        tk.compile(op, tiny, plain)


@pytest.mark.parametrize("pool, match", [((3, 2, 2), "pool padding=2"), ((3, 0, 1), "pool stride"),
                                         ((9, 1, 0), "larger than the padded"), ((3, 2), "pool must be")])
def test_bad_pools_are_refused(pool: tuple, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        tk.conv2d(1, 6, 6, 4, 4, pool=pool)


def _pooling_program(tiny):
    prog = tk.compile(_pool(POOLS[0]), tiny)
    index = next(n for n, i in enumerate(prog.instructions) if isinstance(i, ConfigSt) and i.pooling)
    return prog, index


@pytest.mark.parametrize("change, match", [
    (dict(porows=0), "porows=0 must be at least 1"),
    (dict(pool_out_dim=1), "pool_out_dim=1 is less than pocols"),
    (dict(orows=200), "past the scratchpad"),
])
def test_bad_pooling_fields_are_checker_errors(tiny, change: dict, match: str) -> None:
    prog, index = _pooling_program(tiny)
    prog.instructions[index] = dataclasses.replace(prog.instructions[index], **change)
    with pytest.raises(ProgramError, match=match):
        check(prog)


def test_a_pooling_mvout_stores_one_block_of_int8(tiny) -> None:
    prog, index = _pooling_program(tiny)
    mvout = prog.instructions[index + 1]
    prog.instructions[index + 1] = dataclasses.replace(mvout, cols=tiny.dim + 1)
    with pytest.raises(ProgramError, match="one block of at most dim channels"):
        check(prog)
    prog.instructions[index + 1] = dataclasses.replace(mvout, local=mvout.local | (7 << 29))
    with pytest.raises(ProgramError, match="not .full"):
        check(prog)
    assert isinstance(mvout, Mvout)


@pytest.mark.parametrize("case", POOLS, ids=str)
def test_maxpool_on_the_rtl(tiny_model, case: tuple) -> None:
    assert_exact(_pool(case), "tiny", backend="verilator")


@pytest.mark.parametrize("case", FUSED[:3] + FUSED[5:], ids=str)
def test_fused_conv_pool_on_the_rtl(tiny_model, case: tuple) -> None:
    """Through LOOP_CONV_WS: LoopConv's store sequencer sends the pooling config_st words and mvouts."""
    assert_exact(_fused(case), "tiny", backend="verilator")


@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
def test_onnx_conv_relu_maxpool_fuses_into_the_conv(tmp_path, fmt: str) -> None:
    """A ResNet stem (Conv -> Relu -> MaxPool 3/2/1) imports as one conv2d whose store unit pools, and runs as
    onnxruntime does. (QOperator folds the Relu into an asymmetric output quantization, which the store unit
    cannot write: its conv writes int32 for a host epilogue, and the pool stays a layer of its own.)"""
    pytest.importorskip("onnxruntime")
    import numpy as np
    import onnxruntime as ort

    from benchmarks.onnx_models import Builder, quantize
    from networks.network import AccelLayer
    b = Builder("stem", (1, 3, 16, 16), 0)
    model = quantize(b.model(b.maxpool(b.conv("x", 8, 3, 2), 3, 2, 1)), tmp_path / "stem.onnx", fmt)
    assert all(getattr(l.op, "pool", None) is None for l in tk.from_onnx(model).layers if isinstance(l, AccelLayer))
    net = tk.from_onnx(model, fuse_pool=True)
    layers = [l.op for l in net.layers if isinstance(l, AccelLayer)]
    if fmt == "QDQ":
        assert [(op.KIND, op.pool, op.activation) for op in layers] == [("conv2d", (3, 2, 1), "relu")]
    else:
        assert all(op.pool is None for op in layers if op.KIND == "conv2d" and op.out_dtype != "int8")
    x = {name: np.random.default_rng(1).standard_normal(info.shape).astype(np.float32)
         for name, info in net.inputs.items()}
    res = tk.run_network(net, x, backend="functional", hw="tiny")
    sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    (ref,) = sess.run(None, x)
    (out,) = res.outputs.values()
    assert out.shape == ref.shape and np.abs(out - ref).max() <= 1e-6 + float(np.abs(ref).max()) / 50


@pytest.mark.parametrize("case", FUSED[:2], ids=str)
def test_fused_pool_on_the_cpu_backend(case: tuple) -> None:
    assert_exact(_fused(case), "tiny", backend="cpu")


@pytest.mark.parametrize("case", FUSED[:3], ids=str)
def test_the_exact_value_of_a_pooled_conv_is_the_window_max(case: tuple) -> None:
    """The onnxruntime comparison's tie check of a fused conv: the real number each pooled output rounds
    from is its window's largest (padding never counts), in the pooled shape."""
    import numpy as np

    from networks.ort_reference import _exact_value
    op = _fused(case)
    x = op.random_inputs(seed=1)
    value = _exact_value(op, x)
    plain = _exact_value(dataclasses.replace(op, pool=None), x)
    k, s, p = op.pool
    want = np.full(op.output_specs()["output"][0], -np.inf)
    for i in range(want.shape[1]):
        for j in range(want.shape[2]):
            rows = slice(max(0, i * s - p), i * s - p + k)
            cols = slice(max(0, j * s - p), j * s - p + k)
            want[:, i, j] = plain[:, rows, cols].max(axis=(1, 2))
    assert np.array_equal(value, want)


# Gemmini's pooling words as Gemmini means them: a padded position pools as the byte 0 (ucb-bar/gemmini
# 641fefb: StoreController makes its address garbage, whose rows read zeros; gemmini.h's conv_cpu and the
# tests' CPU pool pad with 0 too), so an all-negative edge window stores 0.
# (config_st pooling fields, image rows x cols): padding above and left, windows past the image's end, and
# windows of padding alone (the second's last column of windows starts past the 5 x 5 image).
WORD_POOLS = [(dict(pool_stride=2, pool_size=3, porows=3, pocols=3, upad=1, lpad=1), (5, 5)),
              (dict(pool_stride=3, pool_size=3, porows=3, pocols=3, upad=2, lpad=0), (5, 5)),
              (dict(pool_stride=1, pool_size=2, porows=4, pocols=3, upad=0, lpad=1), (3, 3))]


def _pool_words(dim: int, fields: dict, size: tuple[int, int], image: np.ndarray):
    """A program of Gemmini's words: the image into the scratchpad, one pooling mvout of it."""
    (orows, ocols), cols = size, image.shape[-1]
    buffers = layout([("input", "input", "int8", image.shape), ("output", "output", "int8",
                                                                 (fields["porows"], fields["pocols"], cols))])
    loads = "\n".join(f"mvin dram=input+{p * cols} local=sp[{p}] rows={min(dim, orows * ocols - p)} cols={cols}"
                      for p in range(0, orows * ocols, dim))
    pool = " ".join(f"{k}={v}" for k, v in fields.items())
    text = (f"config_ld dram_stride={cols} state=0 shrink=0 block_stride={dim} scale=1.0\n{loads}\n"
            f"config_st dram_stride={cols} activation=none acc_scale=1.0 {pool} pool_out_dim={fields['pocols']} "
            f"orows={orows} ocols={ocols}\nmvout dram=output+0 local=sp[0] rows=1 cols={cols}\n")
    return parse_program(text, tk.HardwareConfig.resolve("tiny"), buffers)


def _gemmini_pool(fields: dict, image: np.ndarray) -> np.ndarray:
    """The numpy meaning of the words: the max of each window of the image in zero padding."""
    k, s = fields["pool_size"], fields["pool_stride"]
    padded = np.zeros((fields["upad"] + image.shape[0] + 3 * k * fields["porows"],
                       fields["lpad"] + image.shape[1] + 3 * k * fields["pocols"], image.shape[2]), np.int16)
    padded[fields["upad"]:fields["upad"] + image.shape[0], fields["lpad"]:fields["lpad"] + image.shape[1]] = image
    return np.array([[padded[r * s:r * s + k, c * s:c * s + k].max(axis=(0, 1)) for c in range(fields["pocols"])]
                     for r in range(fields["porows"])], np.int8)


@pytest.mark.parametrize("backend", ["functional", pytest.param("verilator", marks=pytest.mark.rtl)])
@pytest.mark.parametrize("fields, size", WORD_POOLS, ids=str)
def test_pooling_words_pool_padding_as_zero(request, backend: str, fields: dict, size: tuple) -> None:
    if backend == "verilator":
        request.getfixturevalue("tiny_model")
    image = np.random.default_rng(3).integers(-128, 0, (*size, 3)).astype(np.int8)   # all negative
    image[1, 1, 0] = 5                                                                 # one positive pixel
    prog = _pool_words(4, fields, size, image)
    got = tk.run(prog, {"input": image}, backend=backend).outputs["output"]
    want = _gemmini_pool(fields, image)
    np.testing.assert_array_equal(got, want)
    assert (want == 0).any() and (want < 0).any()   # edge windows store 0, inner ones their negative max


def test_windows_of_padding_alone_are_legal_words(tiny) -> None:
    """Gemmini takes them (their max is the padding's 0); the checker no longer refuses them."""
    fields, size = WORD_POOLS[1]
    image = np.full((*size, 3), -7, np.int8)
    got = tk.run(_pool_words(4, fields, size, image), {"input": image}).outputs["output"]
    want = np.zeros_like(got)   # every window but one covers padding: above, past the end, or alone
    want[1, 0] = -7
    np.testing.assert_array_equal(got, want)


NEGATIVE_POOLS = [(1, 7, 7, 5, 3, 2, 1), (2, 5, 6, 20, 3, 1, 1), (1, 6, 6, 4, 2, 2, 1)]


def _negative(op: tk.Op, seed: int) -> dict:
    """All-negative input but for a few pixels: ONNX's max of an edge window is negative, Gemmini's pad 0 is not."""
    x = np.random.default_rng(seed).integers(-128, 0, op.input_specs()["input"][0]).astype(np.int8)
    x[:, 1, 1] = 3
    return {"input": x}


@pytest.mark.parametrize("hw", ["tiny", "gemmini"])
@pytest.mark.parametrize("case", NEGATIVE_POOLS, ids=str)
def test_padded_maxpool_of_negative_values_is_onnx_s(hw: str, case: tuple) -> None:
    """tk.maxpool2d keeps ONNX MaxPool's padding in the store unit: its tiles load edge copies as the padding,
    and the store unit sees none (upad = lpad = 0, every window inside its image)."""
    op = _pool(case)
    ran = assert_exact(op, hw, inputs=_negative(op, 5))
    pools = [i for i in ran.program.instructions if isinstance(i, ConfigSt) and i.pooling]
    assert pools and all(p.upad == p.lpad == 0 for p in pools)
    assert all((p.porows - 1) * p.pool_stride + p.pool_size <= p.orows for p in pools)
    assert (op.reference(_negative(op, 5))["output"] < 0).any()


@pytest.mark.parametrize("hw", ["tiny", "gemmini"])
def test_padded_maxpool_of_negative_values_on_the_rtl(tiny_model, hw: str) -> None:
    op = _pool(NEGATIVE_POOLS[1])
    assert_exact(op, hw, backend="verilator", inputs=_negative(op, 6))


UNFUSED = [(1, 5, 5, 8, 8, 3, 2, 1, (3, 1, 1), "none", "channel"), (1, 9, 7, 4, 6, 3, 1, 1, (3, 2, 1), "none", None),
           (2, 6, 6, 5, 20, 1, 1, 0, (2, 2, 1), "none", "channel")]


def _negative_conv(case: tuple) -> tuple[tk.Op, dict]:
    """The conv of ``case`` with its bias far below 0: most pre-pool values are negative, edge windows too."""
    op = _fused(case)
    x = op.random_inputs(4)
    if op.bias:
        x["bias"] = np.full_like(x["bias"], -2000)
    assert (op.reference(x)["output"] < 0).any()
    return op, x


@pytest.mark.parametrize("hw", ["tiny", "gemmini"])
@pytest.mark.parametrize("schedule", [None, "gemmini"])
@pytest.mark.parametrize("case", UNFUSED, ids=str)
def test_a_padded_pool_over_negative_values_runs_apart(hw: str, schedule: str | None, case: tuple) -> None:
    """Gemmini's store unit pools padding as 0: a conv that can store negative values (no ReLU) keeps ONNX
    MaxPool's meaning by running its pool apart: LOOP_CONV_WS without pooling into a scratch buffer, a fence,
    then the store unit's pooling of edge copies (no padding left for it to pool as 0)."""
    op, x = _negative_conv(case)
    assert not op.pool_pads_as_onnx
    ran = assert_exact(op, hw, schedule, inputs=x)
    loops = [i for i in ran.program.instructions if isinstance(i, LoopConvWs)]
    pools = [i for i in ran.program.instructions if isinstance(i, ConfigSt) and i.pooling]
    assert loops and all(loop.no_pool for loop in loops)
    assert pools and all(p.upad == p.lpad == 0 for p in pools)
    assert "conv" in ran.program.buffers


@pytest.mark.parametrize("hw", ["tiny", "gemmini"])
def test_a_padded_pool_over_negative_values_on_the_rtl(tiny_model, hw: str) -> None:
    op, x = _negative_conv(UNFUSED[1])
    assert_exact(op, hw, backend="verilator", inputs=x)


def test_which_fused_pools_keep_onnx_s_meaning() -> None:
    """The store unit's padding (0) never beats a max of bytes that cannot be below 0, nor is there any padding
    without pool padding."""
    op = _fused(UNFUSED[0])
    assert not op.pool_pads_as_onnx
    assert dataclasses.replace(op, activation="relu").pool_pads_as_onnx
    assert dataclasses.replace(op, pool=(2, 1, 0)).pool_pads_as_onnx
    assert dataclasses.replace(op, out_dtype="uint8").pool_pads_as_onnx
    assert not dataclasses.replace(op, activation="relu", out_offset=-3).pool_pads_as_onnx


@pytest.mark.parametrize("hw", ["tiny", "gemmini"])
def test_fused_pool_of_negative_values_without_padding(hw: str) -> None:
    """No padding, no difference: negative maxima pool as ONNX's in the fused store path."""
    op = tk.conv2d(1, 6, 6, 4, 8, pool=(3, 1, 0), bias="channel", scale=0.05)
    x = op.random_inputs(2)
    x["bias"] = np.full_like(x["bias"], -3000)
    assert (op.reference(x)["output"] < 0).any()
    assert_exact(op, hw, inputs=x)


def test_onnx_conv_maxpool_without_relu_keeps_its_own_pool(tmp_path) -> None:
    """Conv -> MaxPool 3/2/1 with no ReLU between: the conv can store negative values, which the store unit's
    padding (0) could beat, so fuse_pool leaves the pool a layer of its own (edge copies, ONNX's max), and the
    network matches onnxruntime (every conv bit-exact but at rounding ties)."""
    pytest.importorskip("onnxruntime")
    from benchmarks.onnx_models import Builder, quantize
    from helpers import assert_matches_onnxruntime
    from networks.network import AccelLayer
    b = Builder("stem", (1, 3, 12, 12), 0)
    model = quantize(b.model(b.maxpool(b.conv("x", 8, 3, 1, relu=False), 3, 2, 1)), tmp_path / "stem.onnx", "QDQ")
    net = tk.from_onnx(model, fuse_pool=True)
    kinds = [(l.op.KIND, getattr(l.op, "pool", None)) for l in net.layers if isinstance(l, AccelLayer)]
    assert kinds == [("conv2d", None), ("maxpool", None)]
    x = {name: np.random.default_rng(2).standard_normal(info.shape).astype(np.float32)
         for name, info in net.inputs.items()}
    assert_matches_onnxruntime(net, tk.run_network(net, x, backend="functional", hw="tiny"))


@pytest.mark.parametrize("preset", ["tiny", "gemmini"])
@pytest.mark.parametrize("out_dtype, out_offset, relu, fused", [("uint8", 100, False, True), ("int8", 5, True, True),
                                                                 ("int8", -20, True, False)])
def test_requantized_pools_fuse_where_no_stored_byte_is_below_0(preset: str, out_dtype: str, out_offset: int,
                                                                 relu: bool, fused: bool) -> None:
    """With the store unit's requantization (an extension): uint8 bytes are never below the padding's 0, nor
    ReLU's with a non-negative offset, so those pools fuse; a negative offset after ReLU can store bytes below 0,
    so that pool runs apart. All exact, with pool padding and a bias that drives most values low."""
    hw = dataclasses.replace(tk.HardwareConfig.preset(preset), store_requant=True, name=f"{preset}_requant")
    op = tk.conv2d(1, 7, 7, 4, 6, bias="channel", scale=0.05, pool=(3, 2, 1), out_dtype=out_dtype,
                   out_offset=out_offset, activation="relu" if relu else "none")
    x = op.random_inputs(3)
    x["bias"] = np.full_like(x["bias"], -1500)
    ran = assert_exact(op, hw, inputs=x)
    loops = [i for i in ran.program.instructions if isinstance(i, LoopConvWs)]
    assert op.pool_pads_as_onnx == fused and all(loop.no_pool == (not fused) for loop in loops)
