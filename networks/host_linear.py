"""Conv, MatMul and Gemm in float on the host: the ops of a float island (a DequantizeLinear -> op ->
QuantizeLinear chain whose types the accelerator does not compute on, such as 16-bit activations), as
onnxruntime's QDQ path runs them. They sum in float64 and round once to float32, the correctly rounded
result that onnxruntime's float32 kernels approach within a few ulps; so a QuantizeLinear after them can
differ from onnxruntime's by one step only where the value lies that close to a rounding tie."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def _optional(inputs: Sequence[np.ndarray | None], i: int) -> np.ndarray | None:
    return inputs[i] if len(inputs) > i and inputs[i] is not None else None


def conv(inputs: Sequence[np.ndarray], attrs: dict[str, Any]) -> list[np.ndarray]:
    """ONNX Conv (2-D, explicit pads): N x C x H x W input, K x C/group x KH x KW weights, optional bias."""
    x, w, bias = np.asarray(inputs[0], np.float64), np.asarray(inputs[1], np.float64), _optional(inputs, 2)
    if x.ndim != 4 or attrs.get("auto_pad", "NOTSET") not in ("NOTSET", b"NOTSET", "VALID", b"VALID"):
        raise ValueError(f"host Conv takes 2-D convs with explicit pads, got input {x.shape}, "
                         f"auto_pad={attrs.get('auto_pad')!r}")
    group, (sh, sw) = attrs.get("group", 1), attrs.get("strides", (1, 1))
    (dh, dw), (t, l, b, r) = attrs.get("dilations", (1, 1)), attrs.get("pads", (0, 0, 0, 0))
    k, cg, kh, kw = w.shape
    x = np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)))
    win = sliding_window_view(x, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), axis=(2, 3))[..., ::dh, ::dw]
    win = win[:, :, ::sh, ::sw]                                   # N x C x OH x OW x KH x KW
    kg = k // group
    out = np.concatenate([np.einsum("ncyxij,kcij->nkyx", win[:, g * cg:(g + 1) * cg], w[g * kg:(g + 1) * kg])
                          for g in range(group)], axis=1)
    if bias is not None:
        out = out + np.asarray(bias, np.float64).reshape(1, -1, 1, 1)
    return [out.astype(np.float32)]


def matmul(inputs: Sequence[np.ndarray], attrs: dict[str, Any]) -> list[np.ndarray]:
    return [np.matmul(np.asarray(inputs[0], np.float64), np.asarray(inputs[1], np.float64)).astype(np.float32)]


def gemm(inputs: Sequence[np.ndarray], attrs: dict[str, Any]) -> list[np.ndarray]:
    """alpha * A' B' + beta * C, A' and B' transposed where transA / transB say."""
    a, b, c = np.asarray(inputs[0], np.float64), np.asarray(inputs[1], np.float64), _optional(inputs, 2)
    a, b = (a.T if attrs.get("transA", 0) else a), (b.T if attrs.get("transB", 0) else b)
    y = attrs.get("alpha", 1.0) * (a @ b)
    if c is not None:
        y = y + attrs.get("beta", 1.0) * np.asarray(c, np.float64)
    return [y.astype(np.float32)]
