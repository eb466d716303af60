"""cocotb test of fp_scale: bit-exact against numpy float32 (run by test_rtl_units.py)."""
from __future__ import annotations

import numpy as np

import cocotb
from cocotb.triggers import Timer


def _u32(x) -> int:
    return int(np.asarray(x).astype(np.int64)) & 0xFFFFFFFF


def _i32(x: int) -> int:
    return x - (1 << 32) if x & 0x80000000 else x


def _values(rng: np.random.Generator) -> list[tuple[int, int]]:
    """(x, scale bits) pairs: random, ties, saturation, denormal scales, large x."""
    xs = np.concatenate([
        rng.integers(-2**31, 2**31, 1500, dtype=np.int64),
        rng.integers(-300, 300, 600, dtype=np.int64),
        np.array([0, 1, -1, 2**31 - 1, -2**31, 2**24 + 1, 2**24 + 3, -(2**24 + 1), 16777217, 2**30 + 65,
                  127, 128, -128, -129, 255, 256, 3, 5, 7, -3, -5]),
        rng.integers(2**24, 2**31, 300, dtype=np.int64) * rng.choice([-1, 1], 300),
    ])
    f = lambda v: np.float32(v).view(np.uint32).item()
    special = [f(0.5), f(0.25), f(1.0), f(-1.0), f(1 / 3), f(0.05), f(2.0), f(1e-6), f(-0.5), f(0.0),
               f(3.0e38), f(1e-38), 0x00000001, 0x007FFFFF, 0x00400000, 0x80000003, f(65536.0), f(1.5)]
    scales = np.concatenate([
        rng.integers(0, 2**32, 400, dtype=np.int64),                      # any bits (finite ones kept)
        np.array([f(v) for v in rng.uniform(-4, 4, 300)]),
        np.array([f(v) for v in np.exp2(rng.uniform(-140, 10, 300))]),   # tiny to moderate, denormals
        np.array(special * 10),
    ])
    scales = [int(s) for s in scales if (int(s) >> 23) & 0xFF != 0xFF]   # finite scales only
    pairs = [(int(x), scales[i % len(scales)]) for i, x in enumerate(xs)]
    pairs += [(int(x), s) for s in special for x in (1, 3, 5, -3, 255, -255, 2**31 - 1, -2**31)]
    return pairs


@cocotb.test()
async def scale_matches_numpy(dut) -> None:
    rng = np.random.default_rng(1)
    errors = []
    for x, sbits in _values(rng):
        to_int8 = x & 1
        relu = (x >> 1) & 1
        dut.x_i.value = x & 0xFFFFFFFF
        dut.scale_i.value = sbits
        dut.to_int8_i.value = to_int8
        dut.relu_i.value = relu
        await Timer(1, "ns")
        xf = np.float32(np.int32(x))
        with np.errstate(over="ignore"):
            prod = np.float32(xf * np.uint32(sbits).view(np.float32))
        r = np.rint(np.float64(prod))
        lo, hi = (-128, 127) if to_int8 else (-2**31, 2**31 - 1)
        want = int(np.clip(r, lo, hi)) if np.isfinite(r) else (hi if r > 0 else lo)
        if relu:
            want = max(want, 0)
        got_xf = int(dut.x_f32_o.value)
        got_prod = int(dut.prod_f32_o.value)
        got = _i32(int(dut.y_o.value))
        if got_xf != _u32(xf.view(np.uint32)) or got_prod != _u32(prod.view(np.uint32)) or got != want:
            errors.append((x, hex(sbits), hex(got_xf), hex(got_prod), got, want, hex(_u32(prod.view(np.uint32)))))
    assert not errors, f"{len(errors)} mismatches, first: {errors[:5]}"
