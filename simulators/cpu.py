"""CPU baseline: the op a program was lowered from, on the host's fastest exact path.

The instructions are not run. ``program.meta["op"]`` (the op's ``to_dict()``) names
the workload and a kernel per op kind computes it, bit-exact with the numeric
semantics. numpy's integer matmul has no BLAS behind it, so int8 GEMMs go through
float BLAS, which is exact while every partial sum is an integer the float type
holds: float32 while K * 128 * 128 < 2**24, float64 beyond (sums stay far below
2**53). ``wall_s`` is the kernel time (best of ``repeats``), int8 inputs to outputs.

Adding an op is one entry in :data:`KERNELS`: a function (op params, inputs) ->
(outputs, info) built from :func:`gemm`, :func:`accumulate` and :func:`epilogue`.
"""
from __future__ import annotations

import time
from contextlib import nullcontext
from typing import Any, Callable, ContextManager, Mapping

import numpy as np
from numpy.lib.stride_tricks import as_strided

from isa import Program
from isa.norm import igelu_consts, igelu_rows, layernorm_rows, row_function, softmax_consts, softmax_rows
from isa.numerics import INT8_MIN, mvin_scale, store_epilogue

from .base import BackendError, RunResult

Params = Mapping[str, Any]
Info = dict[str, Any]
Kernel = Callable[[Params, Mapping[str, np.ndarray]], tuple[dict[str, np.ndarray], Info]]

FLOAT32_EXACT = 1 << 24   # integers float32 holds exactly
INT8_PRODUCT_MAX = 128 * 128


# ---- shared with the gpu backend ----------------------------------------------------
def op_params(program: Program, backend: str) -> dict[str, Any]:
    """The op dict a program was lowered from, or a BackendError saying why there is none."""
    op = program.meta.get("op") if isinstance(program.meta, Mapping) else None
    if not isinstance(op, Mapping) or "kind" not in op:
        raise BackendError(
            f"the {backend} backend computes the op a program was lowered from (program.meta['op']), and this "
            "program has none (programs loaded from assembly or program files lose it); run it on the "
            "'functional' or 'verilator' backend, or compile it with tk.compile")
    return dict(op)


def kernel_for(kernels: Mapping[str, Any], kind: str, backend: str) -> Any:
    if kind not in kernels:
        raise BackendError(f"the {backend} backend has no kernel for op kind {kind!r} "
                           f"(it has: {', '.join(sorted(kernels))})")
    return kernels[kind]


def pair(value: int | tuple[int, int] | list[int]) -> tuple[int, int]:
    """An int or an (h, w) pair, as conv parameters are given."""
    if isinstance(value, (int, np.integer)):
        return int(value), int(value)
    h, w = value
    return int(h), int(w)


def conv_geometry(p: Params, in_h: int, in_w: int) -> tuple[int, int, int, int, int, int, int, int]:
    """(kh, kw, sh, sw, ph, pw, out_h, out_w) of a windowed (conv2d, depthwise) op dict."""
    (kh, kw), (sh, sw), (ph, pw) = pair(p["kernel"]), pair(p["stride"]), pair(p["padding"])
    return kh, kw, sh, sw, ph, pw, (in_h + 2 * ph - kh) // sh + 1, (in_w + 2 * pw - kw) // sw + 1


def float32_exact(k: int) -> bool:
    """Whether a K-long int8 dot product is exact in float32."""
    return k * INT8_PRODUCT_MAX < FLOAT32_EXACT


# ---- numpy building blocks ------------------------------------------------------------
def gemm(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, Info]:
    """Exact int8 (m, k) @ (k, n) through float BLAS; the product holds integers."""
    (m, k), n = a.shape, b.shape[1]
    dtype = np.float32 if float32_exact(k) else np.float64
    prod = a.astype(dtype) @ b.astype(dtype)
    return prod, {"path": f"{np.dtype(dtype).name}-blas", "macs": m * n * k}


def accumulate(prod: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """int32 accumulators: exact products plus a broadcast bias, wrapping like the hardware."""
    # float64 products may exceed int32 and wrap only at the final cast; the others fit int32
    acc: np.ndarray = prod.astype(np.int64 if prod.dtype == np.float64 else np.int32)
    if bias is not None:
        acc += bias
    return acc.astype(np.int32, copy=False)


def epilogue(acc: np.ndarray, p: Params) -> np.ndarray:
    """The store epilogue of isa.numerics (or the normalization unit's I-GELU, isa.norm), per the op dict."""
    if p["activation"] == "igelu":
        return igelu_rows(acc, igelu_consts(p["input_scale"]), p["scale"])
    if p["activation"] == "layernorm":
        return layernorm_rows(acc, p["scale"])
    if p["activation"] == "softmax":
        return softmax_rows(acc, softmax_consts(p["input_scale"]), p["scale"])
    return store_epilogue(acc, p["scale"], p["activation"] == "relu", p["out_dtype"], p.get("out_offset", 0))


def im2col(x: np.ndarray, kh: int, kw: int, sh: int, sw: int, ph: int, pw: int, oh: int, ow: int) -> np.ndarray:
    """NHWC (n, h, w, c) -> (n * oh * ow, kh * kw * c) patches, zero padded, in HWC order."""
    n, _, _, c = x.shape
    xp = np.pad(x, ((0, 0), (ph, ph), (pw, pw), (0, 0)))
    s0, s1, s2, s3 = xp.strides
    patches = as_strided(xp, (n, oh, ow, kh, kw, c), (s0, s1 * sh, s2 * sw, s1, s2, s3), writeable=False)
    return patches.reshape(n * oh * ow, kh * kw * c)


# ---- kernels --------------------------------------------------------------------------------
def matmul(p: Params, x: Mapping[str, np.ndarray]) -> tuple[dict[str, np.ndarray], Info]:
    a, b = x["A"], x["B"]   # given K x M / N x K when transposed
    prod, info = gemm(a.T if p.get("transpose_a") else a, b.T if p.get("transpose_b") else b)
    return {"C": epilogue(accumulate(prod, x["bias"] if p["bias"] else None), p)}, info


def conv2d(p: Params, x: Mapping[str, np.ndarray]) -> tuple[dict[str, np.ndarray], Info]:
    inp, weight = x["input"], x["weight"]
    n, h, w, _ = inp.shape
    kh, kw, sh, sw, ph, pw, oh, ow = geo = conv_geometry(p, h, w)
    prod, info = gemm(im2col(inp, *geo), weight.reshape(-1, weight.shape[-1]))
    out = epilogue(accumulate(prod, x["bias"] if p["bias"] else None), p).reshape(n, oh, ow, -1)
    if p.get("pool"):   # a fused max pool (kernel, stride, padding)
        k, stride, padding = p["pool"]
        out = window_max(out, conv_geometry(dict(kernel=k, stride=stride, padding=padding), oh, ow))
    return {"output": out}, {**info, "path": "im2col+" + info["path"]}


def depthwise(p: Params, x: Mapping[str, np.ndarray]) -> tuple[dict[str, np.ndarray], Info]:
    """One int32 multiply-add per kernel tap over strided views: no reduction for BLAS to speed up."""
    inp, weight = x["input"], x["weight"].astype(np.int32)
    n, h, w, c = inp.shape
    kh, kw, sh, sw, ph, pw, oh, ow = conv_geometry(p, h, w)
    xp = np.pad(inp, ((0, 0), (ph, ph), (pw, pw), (0, 0))).astype(np.int32)
    acc = np.zeros((n, oh, ow, c), np.int32)
    for i in range(kh):
        for j in range(kw):
            acc += xp[:, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw] * weight[i, j]
    out = epilogue(accumulate(acc, x["bias"] if p["bias"] else None), p)
    return {"output": out}, {"path": "int32-taps", "macs": n * oh * ow * c * kh * kw}


def resadd(p: Params, x: Mapping[str, np.ndarray]) -> tuple[dict[str, np.ndarray], Info]:
    """Each input through its load scale into int32, summed with wrap-around, then the epilogue."""
    acc = mvin_scale(x["A"], p["a_scale"], to_int8=False).astype(np.int64)
    acc += mvin_scale(x["B"], p["b_scale"], to_int8=False)
    if p.get("bias"):
        acc += x["bias"]
    acc = acc.astype(np.int32)   # two's-complement wrap, like the accumulator
    return {"C": epilogue(acc, p)}, {"path": "int32-elementwise", "macs": 0}


def window_max(inp: np.ndarray, geometry: tuple[int, ...]) -> np.ndarray:
    """Running maximum of NHWC int8 (or uint8) over strided tap views; padding holds a value below int8 so it
    never wins."""
    n, _, _, c = inp.shape
    kh, kw, sh, sw, ph, pw, oh, ow = geometry
    xp = np.pad(inp.astype(np.int16), ((0, 0), (ph, ph), (pw, pw), (0, 0)), constant_values=INT8_MIN - 1)
    out = np.full((n, oh, ow, c), INT8_MIN - 1, np.int16)
    for i in range(kh):
        for j in range(kw):
            np.maximum(out, xp[:, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw], out=out)
    return out.astype(inp.dtype)


def maxpool(p: Params, x: Mapping[str, np.ndarray]) -> tuple[dict[str, np.ndarray], Info]:
    inp = x["input"]
    return {"output": window_max(inp, conv_geometry(p, *inp.shape[1:3]))}, {"path": "int16-taps", "macs": 0}


def norm(p: Params, x: Mapping[str, np.ndarray]) -> tuple[dict[str, np.ndarray], Info]:
    """The normalization unit's integer LayerNorm, softmax or I-GELU (isa.norm), row by row."""
    return {"Y": row_function(p["function"], x["X"], p["scale"], p["input_scale"])}, {"path": "int-rows", "macs": 0}


KERNELS: dict[str, Kernel] = {"matmul": matmul, "conv2d": conv2d, "depthwise": depthwise, "resadd": resadd,
                              "maxpool": maxpool, "norm": norm}


def _blas_threads(threads: int | None) -> ContextManager[object]:
    """Limit BLAS to ``threads`` (None: as configured). On a loaded machine, or beside a process pool,
    fewer threads than cores can be many times faster than oversubscribed spinning ones."""
    if threads is None:
        return nullcontext()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        raise BackendError("cpu backend: threads= needs the threadpoolctl package") from None
    return threadpool_limits(limits=threads, user_api="blas")


def run(program: Program, inputs: Mapping[str, np.ndarray], *, repeats: int = 3, threads: int | None = None
        ) -> RunResult:
    """Compute ``program``'s op on ``inputs``; ``wall_s`` is the best of ``repeats`` kernel runs.

    With ``threads`` None both all BLAS threads and one thread are timed and the faster
    counts: on a loaded machine oversubscribed BLAS threads can be many times slower."""
    params = op_params(program, "cpu")
    kernel = kernel_for(KERNELS, params["kind"], "cpu")
    program.check_inputs(inputs)
    arrays = {b.name: np.asarray(inputs[b.name]) for b in program.buffers.values() if b.role == "input"}
    best, best_threads = float("inf"), threads
    for limit in ([None, 1] if threads is None else [threads]):
        with _blas_threads(limit):
            for _ in range(max(1, repeats)):
                start = time.perf_counter()
                outputs, info = kernel(params, arrays)
                elapsed = time.perf_counter() - start
                if elapsed < best:
                    best, best_threads = elapsed, limit
    counters = {"kernel_s": best, "repeats": max(1, repeats), "threads": best_threads or "all", **info,
                "gmacs_per_s": info["macs"] / best / 1e9 if best > 0 else float("inf")}
    return RunResult(outputs, None, counters, "cpu", best)
