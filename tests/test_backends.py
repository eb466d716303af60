"""The comparison backends: cpu (always) and gpu (skipped without CUDA), bit-exact against the references."""
from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolkit as tk
from helpers import assert_exact
from isa import PRESETS, Program, layout
from isa.numerics import acc_to_int8, acc_to_int32
from simulators import BackendError, cpu, gpu


def _cuda_available() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch
    return torch.cuda.is_available()


HAS_CUDA = _cuda_available()
BACKENDS = ["cpu", pytest.param("gpu", marks=pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device"))]
EPILOGUE = st.one_of(
    st.builds(dict, bias=st.sampled_from([None, "row", "full"]), activation=st.sampled_from(["none", "relu"]),
              scale=st.one_of(st.sampled_from([1.0, 0.5, 0.25, 1 / 3]), st.floats(1e-6, 2.0))),
    st.builds(dict, bias=st.sampled_from([None, "row", "full"]), activation=st.sampled_from(["none", "relu"]),
              out_dtype=st.just("int32")))


def check_matmul(op: tk.Matmul, backend: str, inputs: dict[str, np.ndarray] | None = None) -> tk.RunResult:
    """assert_exact on a comparison backend, which reports no cycles but its kernel's time and MACs."""
    res = assert_exact(op, "gemmini", backend=backend, inputs=inputs).result
    assert res.backend == backend and res.cycles is None
    assert res.wall_s == res.counters["kernel_s"] > 0 and res.counters["macs"] == op.macs
    return res


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=settings.default.max_examples * 2)
@given(M=st.integers(1, 70), N=st.integers(1, 70), K=st.integers(1, 1500), epilogue=EPILOGUE)
def test_matmul_bit_exact(backend: str, M: int, N: int, K: int, epilogue: dict) -> None:
    check_matmul(tk.matmul(M, N, K, **epilogue), backend)


def test_cpu_threads_option() -> None:
    pytest.importorskip("threadpoolctl")
    op = tk.matmul(64, 48, 80, bias="row")
    res = assert_exact(op, "gemmini", backend="cpu", seed=2, threads=1).result
    assert res.counters["threads"] == 1


@pytest.mark.parametrize("K, path", [(1023, "float32-blas"), (1024, "float64-blas")])
def test_cpu_gemm_path_at_the_float32_limit(K: int, path: str) -> None:
    """All -128 operands give the largest sums: K * 2^14, exact in float32 only below 2^24."""
    op = tk.matmul(3, 2, K, out_dtype="int32")
    inputs = {"A": np.full((3, K), -128, np.int8), "B": np.full((K, 2), -128, np.int8)}
    res = check_matmul(op, "cpu", inputs)
    assert res.counters["path"] == path and res.outputs["C"][0, 0] == K * 128 * 128


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("out_dtype", ["int32", "int8"])
def test_bias_wraps_like_int32(backend: str, out_dtype: str) -> None:
    op = tk.matmul(4, 3, 5, bias="full", out_dtype=out_dtype)
    inputs = op.random_inputs(1)
    inputs["bias"][:] = np.iinfo(np.int32).max - 2
    check_matmul(op, backend, inputs)


@pytest.mark.parametrize("backend", ["cpu", "gpu"])
def test_program_without_op(backend: str) -> None:
    prog = tk.compile(tk.matmul(4, 4, 4), "tiny")
    loaded = Program.from_asm(prog.to_asm())
    with pytest.raises(BackendError, match=r"program\.meta\['op'\].*'functional'"):
        tk.run(loaded, tk.matmul(4, 4, 4).random_inputs(0), backend=backend)


@pytest.mark.parametrize("backend", ["cpu", "gpu"])
def test_op_kind_without_a_kernel(backend: str) -> None:
    prog = Program(PRESETS["tiny"], [], layout([("A", "input", "int8", (4,))]), meta={"op": {"kind": "softmax"}})
    with pytest.raises(BackendError, match=f"the {backend} backend has no kernel for op kind 'softmax'"):
        tk.run(prog, {"A": np.zeros(4, np.int8)}, backend=backend)


def test_cpu_kernels_are_registered() -> None:
    assert set(cpu.KERNELS) >= set(gpu.KERNELS) >= {"matmul", "conv2d", "depthwise"}
    assert set(cpu.KERNELS) == set(tk.kinds.KINDS)   # every op has a CPU baseline


# ---- windowed ops, ahead of their tk lowerings: op dicts follow tk.conv2d's signature (toolkit/conv/ops.py) -----------------
def window_program(p: dict[str, Any]) -> Program:
    kh, kw = cpu.pair(p["kernel"])
    oh, ow = cpu.conv_geometry(p, p["in_h"], p["in_w"])[6:]
    depthwise = p["kind"] == "depthwise"
    c_in, c_out = (p["channels"], p["channels"]) if depthwise else (p["in_c"], p["out_c"])
    specs = [("input", "input", "int8", (p["batch"], p["in_h"], p["in_w"], c_in)),
             ("weight", "input", "int8", (kh, kw, c_in) if depthwise else (kh, kw, c_in, c_out))]
    specs += [("bias", "input", "int32", (c_out,))] if p["bias"] else []
    specs += [("output", "output", p["out_dtype"], (p["batch"], oh, ow, c_out))]
    return Program(PRESETS["gemmini"], [], layout(specs), meta={"op": p})


def window_reference(p: dict[str, Any], x: dict[str, np.ndarray]) -> np.ndarray:
    """Direct convolution: a sum over kernel taps of strided NHWC slices."""
    (kh, kw), (sh, sw), (ph, pw) = cpu.pair(p["kernel"]), cpu.pair(p["stride"]), cpu.pair(p["padding"])
    oh, ow = cpu.conv_geometry(p, p["in_h"], p["in_w"])[6:]
    xp = np.pad(x["input"].astype(np.int64), ((0, 0), (ph, ph), (pw, pw), (0, 0)))
    acc: Any = 0
    for i in range(kh):
        for j in range(kw):
            view = xp[:, i:i + sh * oh:sh, j:j + sw * ow:sw]
            acc = acc + (view * x["weight"][i, j] if p["kind"] == "depthwise"
                         else np.einsum("nhwc,ck->nhwk", view, x["weight"][i, j].astype(np.int64)))
    if p["bias"]:
        acc = acc + x["bias"]
    acc = acc.astype(np.int32)
    relu = p["activation"] == "relu"
    return acc_to_int32(acc, relu) if p["out_dtype"] == "int32" else acc_to_int8(acc, p["scale"], relu)


GEOMETRY = dict(batch=st.integers(1, 2), in_h=st.integers(3, 9), in_w=st.integers(3, 9),
                kernel=st.sampled_from([1, 3, (3, 3), (1, 3), (3, 2)]), stride=st.sampled_from([1, 2, (2, 1)]),
                padding=st.sampled_from([0, 1, (1, 0)]), bias=st.sampled_from([None, "channel"]),
                activation=st.sampled_from(["none", "relu"]))
WINDOW_EPILOGUE = st.one_of(
    st.fixed_dictionaries(dict(scale=st.sampled_from([1.0, 0.5, 0.01]), out_dtype=st.just("int8"))),
    st.just(dict(scale=1.0, out_dtype="int32")))
WINDOW_OPS = st.builds(lambda geometry, epilogue: {**geometry, **epilogue}, st.one_of(
    st.fixed_dictionaries(dict(kind=st.just("conv2d"), in_c=st.integers(1, 40), out_c=st.integers(1, 20),
                               **GEOMETRY)),
    st.fixed_dictionaries(dict(kind=st.just("depthwise"), channels=st.integers(1, 40), **GEOMETRY))),
    WINDOW_EPILOGUE)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=settings.default.max_examples * 2)
@given(p=WINDOW_OPS, seed=st.integers(0, 100))
def test_windowed_ops_bit_exact(backend: str, p: dict[str, Any], seed: int) -> None:
    prog = window_program(p)
    rng = np.random.default_rng(seed)
    inputs = {b.name: rng.integers(-128, 128, b.shape).astype(b.dtype) for b in prog.buffers.values()
              if b.role == "input"}
    res = tk.run(prog, inputs, backend=backend)
    np.testing.assert_array_equal(res.outputs["output"], window_reference(p, inputs))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", [
    tk.conv2d(2, 7, 6, 5, 9, kernel=3, stride=2, padding=1, bias="channel", activation="relu", scale=0.05),
    tk.conv2d(1, 5, 5, 3, 4, kernel=(1, 3), padding=0, out_dtype="int32"),
    tk.depthwise_conv2d(2, 6, 7, 11, kernel=3, stride=2, bias="channel", scale=0.1),
    tk.resadd(1, 5, 7, 20, a_scale=0.5, b_scale=1.5, scale=0.7),
    tk.maxpool2d(2, 9, 9, 5, kernel=3, stride=2, padding=1),
], ids=["conv2d", "conv2d-int32", "depthwise", "resadd", "maxpool"])
def test_layer_ops_match_toolkit_references(backend: str, op: tk.Op) -> None:
    """toolkit's own layer ops, compiled, on the baseline backends against their references."""
    if op.KIND not in (cpu.KERNELS if backend == "cpu" else gpu.KERNELS):
        pytest.skip(f"the {backend} backend has no {op.KIND} kernel")
    assert_exact(op, "gemmini", backend=backend)


@pytest.mark.parametrize("in_c, path", [(113, "im2col+float32-blas"), (114, "im2col+float64-blas")])
def test_cpu_conv2d_path_at_the_float32_limit(in_c: int, path: str) -> None:
    """3x3 taps over in_c channels reduce 9 * in_c products: float32 is exact up to 1023 of them."""
    p = dict(kind="conv2d", batch=1, in_h=3, in_w=3, in_c=in_c, out_c=2, kernel=3, stride=1, padding=0, bias=None,
             activation="none", scale=1.0, out_dtype="int32")
    inputs = {"input": np.full((1, 3, 3, in_c), -128, np.int8), "weight": np.full((3, 3, in_c, 2), -128, np.int8)}
    res = tk.run(window_program(p), inputs, backend="cpu")
    assert res.counters["path"] == path
    np.testing.assert_array_equal(res.outputs["output"], np.full((1, 1, 1, 2), 9 * in_c * 128 * 128, np.int32))


# ---- gpu without a device ------------------------------------------------------------------------------------------
@pytest.mark.skipif(HAS_CUDA, reason="a CUDA device is present")
def test_gpu_without_cuda_is_a_clear_backend_error() -> None:
    op = tk.matmul(8, 8, 8)
    with pytest.raises(BackendError, match=r"no CUDA device"):
        tk.run(tk.compile(op, "tiny"), op.random_inputs(0), backend="gpu")
