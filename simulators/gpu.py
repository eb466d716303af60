"""GPU baseline: the op a program was lowered from, computed with PyTorch on a CUDA device.

Like the cpu backend it reads ``program.meta["op"]`` and runs no instructions.
int8 GEMMs use a real int8 GEMM, ``torch._int_mm`` (cuBLASLt, int32 accumulation),
with operands zero-padded to the shapes it accepts (M > 16, K and N multiples of 8,
at least 16), which leaves the product unchanged. Where ``_int_mm`` is missing or
refuses, the GEMM falls back to float64 (exact, see the cpu backend) and the
``path`` counter says so. Times come from CUDA events after one warm-up run:
``wall_s`` is the best of ``repeats`` kernel runs (device int8 inputs to device
outputs); host<->device copies are counted apart as ``h2d_s`` and ``d2h_s``.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Mapping

import numpy as np

from isa import Program

from .base import BackendError, RunResult
from .cpu import conv_geometry, kernel_for, op_params

Tensor = Any   # torch.Tensor; torch is imported only when the backend runs


def _torch(device: str) -> Any:
    try:
        import torch
    except ImportError:
        raise BackendError("no CUDA device available to the gpu backend: it needs PyTorch with CUDA, "
                           "and torch is not installed") from None
    if not torch.cuda.is_available():
        raise BackendError(f"no CUDA device: torch {torch.__version__} sees no GPU "
                           "(torch.cuda.is_available() is False)")
    try:
        torch.device(device)
        torch.empty(0, device=device)
    except (RuntimeError, AssertionError) as exc:
        raise BackendError(f"no CUDA device {device!r}: {exc}") from None
    return torch


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


class Engine:
    """The GEMM, bias and epilogue steps on one device; remembers the GEMM path it took."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.int_mm = hasattr(torch, "_int_mm")
        self.path = ""

    def gemm(self, a: Tensor, b: Tensor) -> Tensor:
        """Exact int8 (m, k) @ (k, n) -> int32 or int64 (the float64 path) accumulators."""
        torch, F = self.torch, self.torch.nn.functional
        (m, k), n = a.shape, b.shape[1]
        if self.int_mm:
            mp, kp, np_ = max(m, 17), max(_round_up(k, 8), 16), max(_round_up(n, 8), 16)
            try:
                out = torch._int_mm(F.pad(a, (0, kp - k, 0, mp - m)), F.pad(b, (0, np_ - n, 0, kp - k)))
                self.path = "torch._int_mm"
                return out[:m, :n]
            except RuntimeError:
                self.int_mm = False   # this torch/GPU refuses; the warm-up run settles the path
        self.path = "torch-float64"
        return (a.double() @ b.double()).long()

    def accumulate(self, acc: Tensor, bias: Tensor | None) -> Tensor:
        if bias is not None:
            acc = acc + bias   # int32 wraps like the hardware; int64 wraps at the cast below
        return acc.to(self.torch.int32)

    def epilogue(self, acc: Tensor, p: Mapping[str, Any]) -> Tensor:
        if p["activation"] not in ("none", "relu"):
            raise BackendError(f"the gpu backend has no {p['activation']!r} epilogue (the normalization unit's "
                               "integer kernels run on the functional, verilator and cpu backends)")
        relu = p["activation"] == "relu"
        if p["out_dtype"] == "int32":
            return acc.clamp_min(0) if relu else acc
        # float32(acc) * float32(scale), exact to float32 rounding; torch.round is half-to-even
        x = acc.to(self.torch.float32).mul_(float(np.float32(p["scale"]))).round_()
        return x.clamp_(0 if relu else -128, 127).to(self.torch.int8)


def matmul(e: Engine, p: Mapping[str, Any], x: Mapping[str, Tensor]) -> dict[str, Tensor]:
    a, b = x["A"], x["B"]   # given K x M / N x K when transposed
    a, b = (a.t().contiguous() if p.get("transpose_a") else a), (b.t().contiguous() if p.get("transpose_b") else b)
    return {"C": e.epilogue(e.accumulate(e.gemm(a, b), x["bias"] if p["bias"] else None), p)}


def conv2d(e: Engine, p: Mapping[str, Any], x: Mapping[str, Tensor]) -> dict[str, Tensor]:
    inp, weight = x["input"], x["weight"]
    n, h, w, c = inp.shape
    kh, kw, sh, sw, ph, pw, oh, ow = conv_geometry(p, h, w)
    xp = e.torch.nn.functional.pad(inp, (0, 0, pw, pw, ph, ph)).contiguous()
    s0, s1, s2, s3 = xp.stride()
    cols = xp.as_strided((n, oh, ow, kh, kw, c), (s0, s1 * sh, s2 * sw, s1, s2, s3)).reshape(n * oh * ow, -1)
    acc = e.accumulate(e.gemm(cols, weight.reshape(-1, weight.shape[-1])), x["bias"] if p["bias"] else None)
    e.path = "im2col+" + e.path
    return {"output": e.epilogue(acc, p).reshape(n, oh, ow, -1)}


def depthwise(e: Engine, p: Mapping[str, Any], x: Mapping[str, Tensor]) -> dict[str, Tensor]:
    torch, inp = e.torch, x["input"]
    weight = x["weight"].to(torch.int32)
    n, h, w, c = inp.shape
    kh, kw, sh, sw, ph, pw, oh, ow = conv_geometry(p, h, w)
    xp = torch.nn.functional.pad(inp, (0, 0, pw, pw, ph, ph)).to(torch.int32)
    acc = torch.zeros((n, oh, ow, c), dtype=torch.int32, device=inp.device)
    for i in range(kh):
        for j in range(kw):
            acc += xp[:, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw] * weight[i, j]
    e.path = "torch-int32-taps"
    return {"output": e.epilogue(e.accumulate(acc, x["bias"] if p["bias"] else None), p)}


KERNELS: dict[str, Callable[[Engine, Mapping[str, Any], Mapping[str, Tensor]], dict[str, Tensor]]] = {
    "matmul": matmul, "conv2d": conv2d, "depthwise": depthwise}


def _macs(p: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> int:
    if p["kind"] == "matmul":
        return p["M"] * p["N"] * p["K"]
    n, h, w, c = inputs["input"].shape
    kh, kw, _, _, _, _, oh, ow = conv_geometry(p, h, w)
    return n * oh * ow * kh * kw * c * (inputs["weight"].shape[-1] if p["kind"] == "conv2d" else 1)


def run(program: Program, inputs: Mapping[str, np.ndarray], *, repeats: int = 10, device: str = "cuda"
        ) -> RunResult:
    """Compute ``program``'s op on a CUDA device; ``wall_s`` is the best of ``repeats`` event-timed runs."""
    params = op_params(program, "gpu")
    kernel = kernel_for(KERNELS, params["kind"], "gpu")
    program.check_inputs(inputs)
    torch = _torch(device)
    engine = Engine(torch)
    with torch.cuda.device(device):
        start = time.perf_counter()
        dev = {b.name: torch.from_numpy(np.ascontiguousarray(inputs[b.name])).to(device)
               for b in program.buffers.values() if b.role == "input"}
        torch.cuda.synchronize()
        h2d_s = time.perf_counter() - start

        kernel(engine, params, dev)   # warm-up: cuBLAS handles, kernel selection, the GEMM path
        torch.cuda.synchronize()
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for _ in range(max(1, repeats)):
            begin.record()
            out = kernel(engine, params, dev)
            end.record()
            end.synchronize()
            times.append(begin.elapsed_time(end) / 1e3)

    start = time.perf_counter()
    outputs = {name: t.cpu().numpy() for name, t in out.items()}
    d2h_s = time.perf_counter() - start
    best = min(times)
    macs = _macs(params, inputs)
    counters = {"kernel_s": best, "repeats": len(times), "path": engine.path, "macs": macs,
                "gmacs_per_s": macs / best / 1e9 if best > 0 else float("inf"), "h2d_s": h2d_s, "d2h_s": d2h_s,
                "device": torch.cuda.get_device_name(device)}
    return RunResult(outputs, None, counters, "gpu", best)
