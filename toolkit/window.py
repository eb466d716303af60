"""Geometry of the windowed ops (convs and pooling): kernel, stride, padding, output size, taps."""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from .ops import positive_int


def kernel_pair(value: Any) -> tuple[int, int]:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (value, value)
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ValueError(f"kernel must be an int or a (kh, kw) pair, got {value!r}")
    return positive_int("kernel[0]", value[0]), positive_int("kernel[1]", value[1])


def check_window(op: Any, channels_name: str) -> None:
    """Validate and normalise the sizes, kernel, stride and padding of a windowed op."""
    for name in ("batch", "in_h", "in_w", channels_name):
        object.__setattr__(op, name, positive_int(name, getattr(op, name)))
    object.__setattr__(op, "kernel", kernel_pair(op.kernel))
    object.__setattr__(op, "stride", positive_int("stride", op.stride))
    if isinstance(op.padding, bool) or not isinstance(op.padding, (int, np.integer)) or op.padding < 0:
        raise ValueError(f"padding must be a non-negative integer, got {op.padding!r}")
    object.__setattr__(op, "padding", int(op.padding))
    kh, kw = op.kernel
    if kh > op.in_h + 2 * op.padding or kw > op.in_w + 2 * op.padding:
        raise ValueError(f"kernel={op.kernel} is larger than the padded input "
                         f"({op.in_h + 2 * op.padding}x{op.in_w + 2 * op.padding} with padding={op.padding})")


def out_size(extent: int, kernel: int, stride: int, padding: int) -> int:
    return (extent + 2 * padding - kernel) // stride + 1


def taps(x: np.ndarray, kernel: tuple[int, int], stride: int, padding: int, fill: int = 0
         ) -> Iterable[tuple[int, int, np.ndarray]]:
    """(kh, kw, view) per kernel tap: the (N, OH, OW, C) input pixels that tap reads, padded with ``fill``."""
    n, h, w, c = x.shape
    oh, ow = out_size(h, kernel[0], stride, padding), out_size(w, kernel[1], stride, padding)
    xp = np.pad(x, ((0, 0), (padding, padding), (padding, padding), (0, 0)), constant_values=fill)
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            yield i, j, xp[:, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride, :]


def window_max(x: np.ndarray, kernel: tuple[int, int], stride: int, padding: int, fill: float) -> np.ndarray:
    """The max over each window of ``x`` (N, H, W, C), padded with ``fill``: a value below every input, so
    that a padded position never wins (ONNX MaxPool)."""
    views = taps(x, kernel, stride, padding, fill=fill)
    out = next(views)[2].copy()
    for _, _, view in views:
        np.maximum(out, view, out=out)
    return out


class Window:
    """Output geometry shared by the windowed ops (fields batch, in_h, in_w, kernel, stride, padding)."""

    batch: int
    in_h: int
    in_w: int
    kernel: tuple[int, int]
    stride: int
    padding: int

    @property
    def out_h(self) -> int:
        return out_size(self.in_h, self.kernel[0], self.stride, self.padding)

    @property
    def out_w(self) -> int:
        return out_size(self.in_w, self.kernel[1], self.stride, self.padding)
