"""Gemmini's arithmetic, bit-exact: one definition that references and simulators share."""
from __future__ import annotations

import numpy as np

INT8_MIN, INT8_MAX = -128, 127
UINT8_MIN, UINT8_MAX = 0, 255
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def scale_rne(values: np.ndarray, scale: float) -> np.ndarray:
    """float32(float32(x) * float32(scale)) rounded half-to-even, as float64 (exact)."""
    prod = values.astype(np.float32) * np.float32(scale)
    return np.rint(prod).astype(np.float64)


Scale = float | np.ndarray   # one scale, or one per column (the last axis): the column-scale extension's


def acc_to_int8(acc: np.ndarray, scale: Scale, relu: bool) -> np.ndarray:
    """The store epilogue: clip(rne(float32(float32(acc) * scale)), -128, 127), then ReLU.

    Computed in place in float32: the product is rounded to float32 once, as the
    hardware does, and ReLU after saturation is a lower clip bound of 0. A vector ``scale``
    scales column j by its entry j, each lane as one scale would."""
    x = np.asarray(acc).astype(np.float32)
    x *= np.asarray(scale, dtype=np.float32)
    np.rint(x, out=x)
    np.clip(x, 0 if relu else INT8_MIN, INT8_MAX, out=x)
    return x.astype(np.int8)


def acc_requantize(acc: np.ndarray, scale: Scale, relu: bool, offset: int, uint8: bool) -> np.ndarray:
    """The store epilogue with the requantization extension (config_st's out_offset and out_uint8):
    ``clip(relu?(rne(float32(float32(acc) * scale))) + offset, qmin, qmax)``, [qmin, qmax] = [0, 255] as
    uint8 or [-128, 127] as int8. With ReLU before the offset it equals onnxruntime's ReLU on the quantized
    output, max(q, zero point). A vector ``scale`` scales column j by its entry j."""
    x = np.asarray(acc).astype(np.float32)
    x *= np.asarray(scale, dtype=np.float32)
    np.rint(x, out=x)
    if relu:
        np.maximum(x, 0, out=x)
    x += np.float32(offset)   # exact below 2^24; above it the clip saturates either way
    lo, hi = (UINT8_MIN, UINT8_MAX) if uint8 else (INT8_MIN, INT8_MAX)
    np.clip(x, lo, hi, out=x)
    return x.astype(np.uint8 if uint8 else np.int8)


def store_epilogue(acc: np.ndarray, scale: Scale, relu: bool, out_dtype: str, offset: int = 0) -> np.ndarray:
    """An accumulator's output as the store unit writes it for ``out_dtype`` ("int8", "uint8" or "int32"):
    the full int32, Gemmini's int8, or with an offset or uint8 the requantization extension's."""
    if out_dtype == "int32":
        return acc_to_int32(acc, relu)
    if offset or out_dtype == "uint8":
        return acc_requantize(acc, scale, relu, offset, out_dtype == "uint8")
    return acc_to_int8(acc, scale, relu)


def acc_to_int32(acc: np.ndarray, relu: bool) -> np.ndarray:
    """Full-width accumulator read: no scale, ReLU still applies."""
    acc = acc.astype(np.int32)
    return np.maximum(acc, 0) if relu else acc


def rshift_rne(values: np.ndarray, shift: int) -> np.ndarray:
    """Arithmetic right shift by ``shift`` bits, rounding half to even (int64 in, int64 out)."""
    values = np.asarray(values, dtype=np.int64)
    if shift == 0:
        return values
    floor = values >> shift
    rem = values - (floor << shift)
    half = 1 << (shift - 1)
    return floor + ((rem > half) | ((rem == half) & (floor & 1 == 1)))


def mvin_scale(values: np.ndarray, scale: float, to_int8: bool) -> np.ndarray:
    """The load scale: identity at 1.0, else rne(float32 product) saturated to the destination type."""
    if scale == 1.0:
        return values.astype(np.int8 if to_int8 else np.int32)
    lo, hi = (INT8_MIN, INT8_MAX) if to_int8 else (INT32_MIN, INT32_MAX)
    return np.clip(scale_rne(values, scale), lo, hi).astype(np.int8 if to_int8 else np.int32)
