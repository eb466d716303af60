"""simulators/functional.py: each semantic of its docstring on hand-written programs (tiny: dim 4),
and the static checker's errors."""
from __future__ import annotations

import numpy as np
import pytest

from isa import PRESETS, layout, parse_program
from isa.checker import ProgramError
from isa.numerics import INT32_MAX, INT32_MIN
from simulators import functional

HW = PRESETS["tiny"]     # dim 4, mvins up to 8 columns, 1024 scratchpad rows, 64 accumulator rows


def ld(state: int = 0, stride: int = 4, block: int = 0, scale: float = 1.0, shrink: int = 0) -> str:
    return f"config_ld dram_stride={stride} state={state} shrink={shrink} block_stride={block} scale={scale}"


def st_(stride: int = 4, act: str = "none", scale: float = 1.0) -> str:
    return f"config_st dram_stride={stride} activation={act} acc_scale={scale}"


def ex(act: str = "none", scale: float = 1.0) -> str:
    return f"config_ex dataflow=ws activation={act} a_transpose=0 b_transpose=0 a_stride=1 acc_scale={scale} c_stride=1"


def run(lines: list[str], inputs: dict[str, np.ndarray], outputs: dict[str, tuple[str, tuple[int, ...]]]
        ) -> dict[str, np.ndarray]:
    """Run assembly ``lines`` on tiny with DRAM buffers for ``inputs`` and ``outputs`` (name -> dtype, shape)."""
    specs = [(n, "input", str(a.dtype), a.shape) for n, a in inputs.items()]
    specs += [(n, "output", dtype, shape) for n, (dtype, shape) in outputs.items()]
    prog = parse_program("\n".join(lines), HW, layout(specs))
    return functional.run(prog, inputs).outputs


def i8(rows) -> np.ndarray:
    return np.array(rows, dtype=np.int8)


def i32(rows) -> np.ndarray:
    return np.array(rows, dtype=np.int32)


RNG = np.random.default_rng(7)
X = RNG.integers(-128, 128, (4, 8)).astype(np.int8)
Y = RNG.integers(-128, 128, (4, 8)).astype(np.int8)
P = RNG.integers(-10**6, 10**6, (4, 4)).astype(np.int32)


# ---- writes and mvin ----------------------------------------------------------------------------------
def test_mvin_writes_are_column_masked() -> None:
    out = run([ld(0, 8), ld(1, 8), st_(), "mvin dram=X local=sp[0] rows=4 cols=4",
               "mvin2 dram=Y local=sp[0] rows=3 cols=2", "mvout dram=C local=sp[0] rows=4 cols=4"],
              {"X": X, "Y": Y}, {"C": ("int8", (4, 4))})
    expected = X[:, :4].copy()
    expected[:3, :2] = Y[:3, :2]
    np.testing.assert_array_equal(out["C"], expected)


@pytest.mark.parametrize("dest", ["sp", "acc"])
@pytest.mark.parametrize("cols", [8, 6])
def test_block_mvin(dest: str, cols: int) -> None:
    """Block b of a wide mvin lands at base + b * block_stride; a short last block writes its columns only."""
    src = X if dest == "sp" else P.repeat(2, axis=1)
    itemsize, out_dtype = (1, "int8") if dest == "sp" else (4, "int32")
    full = "" if dest == "sp" else ".full"
    out = run([ld(0, 8 * itemsize, block=10), st_(4 * itemsize),
               f"mvin dram=S local={dest}[1] rows=3 cols={cols}",
               f"mvout dram=B0 local={dest}[0]{full} rows=4 cols=4",
               f"mvout dram=B1 local={dest}[10]{full} rows=4 cols=4"],
              {"S": src}, {"B0": (out_dtype, (4, 4)), "B1": (out_dtype, (4, 4))})
    b0 = np.zeros((4, 4), src.dtype)
    b1 = np.zeros((4, 4), src.dtype)
    b0[1:4] = src[:3, :4]
    b1[1:4, :cols - 4] = src[:3, 4:cols]
    np.testing.assert_array_equal(out["B0"], b0)
    np.testing.assert_array_equal(out["B1"], b1)


@pytest.mark.parametrize("dest, shrink, scale, values, expected", [
    # scratchpad: rne ties to even, int8 saturation
    ("sp", 0, 0.5, [[1, 3, -1, -3], [5, -5, 127, -128], [0, 2, 7, 9]], [[0, 2, 0, -2], [2, -2, 64, -64], [0, 1, 4, 4]]),
    ("sp", 0, 3.0, [[1, 100, -100, -43]], [[3, 127, -128, -128]]),
    # accumulator: int32 rows, int32 saturation
    ("acc", 0, 0.5, [[1, 3, -5, 2**30 + 1]], [[0, 2, -2, 2**29]]),
    ("acc", 0, 4.0, [[2**30, -2**30, 7, -1]], [[INT32_MAX, INT32_MIN, 28, -4]]),
    # shrink: int8 from DRAM, sign-extended; the scale saturates to int32, not int8
    ("acc", 1, 1.0, [[-1, -128, 127, 5]], [[-1, -128, 127, 5]]),
    ("acc", 1, 2.0, [[100, -100, 3, -3]], [[200, -200, 6, -6]]),
])
def test_mvin_scale(dest: str, shrink: int, scale: float, values: list, expected: list) -> None:
    src = (i8 if dest == "sp" or shrink else i32)(values)
    rows = src.shape[0]
    out_dtype, full = ("int8", "") if dest == "sp" else ("int32", ".full")
    out = run([ld(0, 4 * src.itemsize, scale=scale, shrink=shrink), st_(4 * (1 if dest == "sp" else 4)),
               f"mvin dram=S local={dest}[0] rows={rows} cols=4",
               f"mvout dram=C local={dest}[0]{full} rows={rows} cols=4"],
              {"S": src}, {"C": (out_dtype, (rows, 4))})
    np.testing.assert_array_equal(out["C"], np.array(expected, dtype=out_dtype))


def test_accumulating_mvin_wraps_like_int32() -> None:
    out = run([ld(0, 16), st_(16), "mvin dram=P local=acc[0] rows=1 cols=4",
               "mvin dram=Q local=acc[0].accum rows=1 cols=4", "mvout dram=C local=acc[0].full rows=1 cols=4"],
              {"P": i32([[INT32_MAX, 5, -7, 0]]), "Q": i32([[1, 10, 7, 3]])}, {"C": ("int32", (1, 4))})
    np.testing.assert_array_equal(out["C"], i32([[INT32_MIN, 15, 0, 3]]))


def test_mvin_from_dram_address_zero_loads_zeros() -> None:
    """Gemmini's zero writer: nothing is read, whatever the stride (no buffer lives at address 0)."""
    out = run([ld(0, 8, block=4), ld(1, 64), st_(8), "mvin dram=X local=sp[0] rows=4 cols=8",
               "mvin2 dram=0 local=sp[1] rows=2 cols=3", "mvout dram=C local=sp[0] rows=4 cols=8"],
              {"X": X}, {"C": ("int8", (4, 8))})
    expected = X.copy()
    expected[1:3, :3] = 0
    np.testing.assert_array_equal(out["C"], expected)


@pytest.mark.parametrize("base, repeats", [(1, 2), (0, 3), (513, 3)])   # 512: the scratchpad's second half
def test_pixel_repeats(base: int, repeats: int) -> None:
    """Row r of a mvin also lands in rows base + r - t (t < repeats) at columns t*cols.., within its half."""
    cols = 1 if repeats == 3 else 2
    out = run([ld(0, 8, block=4), st_(8), "mvin dram=X local=sp[0] rows=4 cols=8",
               "mvin dram=X local=sp[512] rows=4 cols=8",
               f"config_ld dram_stride=8 state=1 shrink=0 block_stride=0 scale=1.0 pixel_repeats={repeats}",
               f"mvin2 dram=Y local=sp[{base}] rows=3 cols={cols}",
               f"mvout dram=C local=sp[{base & ~511}] rows=4 cols=8"],
              {"X": X, "Y": Y}, {"C": ("int8", (4, 8))})
    expected = X.copy()
    row0 = base & 511
    for r in range(3):
        for t in range(repeats):
            if row0 + r - t >= 0 and t * cols < 4:
                expected[row0 + r - t, t * cols:t * cols + cols] = Y[r, :cols]
    np.testing.assert_array_equal(out["C"], expected)


def test_block_mvout() -> None:
    """A mvout wider than dim reads block b from local rows base + b * dim, its columns side by side."""
    wide = RNG.integers(-128, 128, (4, 6)).astype(np.int8)
    out = run([ld(0, 6, block=4), st_(6), "mvin dram=S local=sp[2] rows=4 cols=6",
               "mvout dram=C local=sp[2] rows=4 cols=6"], {"S": wide}, {"C": ("int8", (4, 6))})
    np.testing.assert_array_equal(out["C"], wide)


# ---- compute ------------------------------------------------------------------------------------------
def _matmul_program(preload: str, compute: str, *, prefill: bool = True) -> list[str]:
    """A at sp[0], W at sp[4], D at sp[8], P (int32) prefilled into acc[0]; C = acc[0] rows, raw."""
    return [ex(), ld(0, 8), ld(1, 16), st_(16),
            "mvin dram=A local=sp[0] rows=4 cols=4", "mvin dram=W local=sp[4] rows=4 cols=4",
            "mvin dram=D local=sp[8] rows=4 cols=4",
            *(["mvin2 dram=P local=acc[0] rows=4 cols=4"] if prefill else []),
            preload, compute, "mvout dram=C local=acc[0].full rows=4 cols=4"]


def _compute(lines: list[str]) -> np.ndarray:
    return run(lines, {"A": X, "W": Y, "D": X[:, ::-1].copy(), "P": P}, {"C": ("int32", (4, 4))})["C"]


A4, W4, D4 = (X[:, :4].astype(np.int64), Y[:, :4].astype(np.int64), X[:, ::-1][:, :4].astype(np.int64))


@pytest.mark.parametrize("a_rows, a_cols, b_rows, b_cols, c_rows, c_cols", [
    (4, 4, 4, 4, 4, 4), (3, 2, 4, 4, 4, 4), (4, 4, 2, 3, 4, 4), (4, 4, 4, 4, 3, 2), (1, 1, 1, 1, 1, 1),
])
def test_compute_shapes_and_column_masked_writes(a_rows, a_cols, b_rows, b_cols, c_rows, c_cols) -> None:
    """A and W are zero beyond their rows/cols; C writes only c_rows x c_cols."""
    out = _compute(_matmul_program(
        f"preload b=sp[4] b_rows={b_rows} b_cols={b_cols} c=acc[0] c_rows={c_rows} c_cols={c_cols}",
        f"compute_preloaded a=sp[0] a_rows={a_rows} a_cols={a_cols} d=garbage d_rows=4 d_cols=4"))
    a, w = np.zeros((4, 4), np.int64), np.zeros((4, 4), np.int64)
    a[:a_rows, :a_cols] = A4[:a_rows, :a_cols]
    w[:b_rows, :b_cols] = W4[:b_rows, :b_cols]
    expected = P.astype(np.int64)
    expected[:c_rows, :c_cols] = (a @ w)[:c_rows, :c_cols]
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("b, c, a, d, expected", [
    ("sp[4]", "acc[0]", "sp[0]", "garbage", A4 @ W4),                # D garbage reads zeros
    ("sp[4]", "acc[0]", "sp[0]", "sp[8]", A4 @ W4 + D4),
    ("sp[4]", "acc[0].accum", "sp[0]", "sp[8]", P + A4 @ W4 + D4),   # .accum adds, plain overwrites
    ("sp[4]", "acc[0]", "garbage", "sp[8]", D4),                     # A garbage reads zeros
    ("garbage", "acc[0]", "sp[0]", "sp[8]", D4),                     # garbage weights are zeros
    ("sp[4]", "garbage", "sp[0]", "sp[8]", P),                       # C garbage writes nothing
])
def test_compute_operands(b: str, c: str, a: str, d: str, expected: np.ndarray) -> None:
    out = _compute(_matmul_program(f"preload b={b} b_rows=4 b_cols=4 c={c} c_rows=4 c_cols=4",
                                   f"compute_preloaded a={a} a_rows=4 a_cols=4 d={d} d_rows=4 d_cols=4"))
    np.testing.assert_array_equal(out, expected)


def test_garbage_mvin_writes_nothing() -> None:
    out = _compute(_matmul_program("preload b=sp[4] b_rows=4 b_cols=4 c=acc[0].accum c_rows=4 c_cols=4",
                                   "mvin dram=A local=garbage rows=4 cols=4"))
    np.testing.assert_array_equal(out, P)


def test_compute_accumulated_keeps_the_weights() -> None:
    """The second preload's b is ignored: compute_accumulated multiplies by the weights already loaded."""
    lines = _matmul_program("preload b=sp[4] b_rows=4 b_cols=4 c=acc[4] c_rows=4 c_cols=4",
                            "compute_preloaded a=sp[8] a_rows=4 a_cols=4 d=garbage d_rows=4 d_cols=4")
    lines[-1:-1] = ["preload b=sp[8] b_rows=4 b_cols=4 c=acc[0] c_rows=4 c_cols=4",
                    "compute_accumulated a=sp[0] a_rows=4 a_cols=4 d=garbage d_rows=4 d_cols=4"]
    np.testing.assert_array_equal(_compute(lines), A4 @ W4)


@pytest.mark.parametrize("a_stride, c_stride", [(2, 1), (1, 2), (3, 2)])
def test_compute_strides(a_stride: int, c_stride: int) -> None:
    """config_ex's a_stride spaces the A rows read, c_stride the C rows written."""
    src = RNG.integers(-128, 128, (4 * a_stride, 4)).astype(np.int8)
    lines = [ex().replace("a_stride=1", f"a_stride={a_stride}").replace("c_stride=1", f"c_stride={c_stride}"),
             ld(0, 4), ld(1, 16), st_(16), "mvin dram=S local=sp[0] rows=4 cols=4"]
    lines += [f"mvin dram=S+{16 * r} local=sp[{4 * r}] rows=4 cols=4" for r in range(1, a_stride)]
    lines += ["mvin dram=W local=sp[64] rows=4 cols=4", "mvin2 dram=P local=acc[0] rows=4 cols=4",
              "mvin2 dram=P local=acc[4] rows=4 cols=4",
              "preload b=sp[64] b_rows=4 b_cols=4 c=acc[0] c_rows=4 c_cols=4",
              "compute_preloaded a=sp[0] a_rows=4 a_cols=4 d=garbage d_rows=4 d_cols=4",
              "mvout dram=C local=acc[0].full rows=4 cols=4", "mvout dram=C+64 local=acc[4].full rows=4 cols=4"]
    out = run(lines, {"S": src, "W": Y[:, :4].copy(), "P": P}, {"C": ("int32", (8, 4))})["C"]
    expected = np.concatenate([P, P]).astype(np.int64)
    expected[0:4 * c_stride:c_stride] = src[0:4 * a_stride:a_stride].astype(np.int64) @ W4
    np.testing.assert_array_equal(out, expected)


# ---- the store epilogue ---------------------------------------------------------------------------------
TIES = [1, 3, 5, -1, -3, -5, 254, 255, 256, -257, -258, 0]


@pytest.mark.parametrize("full, relu, scale, acc, expected", [
    (False, False, 0.5, TIES, [0, 2, 2, 0, -2, -2, 127, 127, 127, -128, -128, 0]),
    (False, True, 0.5, TIES, [0, 2, 2, 0, 0, 0, 127, 127, 127, 0, 0, 0]),
    # float32(acc) rounds first: 25165823 -> 25165824, * 2^-24 = 1.5 -> 2 (exact arithmetic gives 1)
    (False, False, 2.0**-24, [25165823, -25165823, 8388608, 2**31 - 1], [2, -2, 0, 127]),
    (True, False, 0.5, [300, -300, 3, INT32_MIN], [300, -300, 3, INT32_MIN]),   # .full: raw, unscaled
    (True, True, 0.5, [300, -300, 3, INT32_MIN], [300, 0, 3, 0]),               # ReLU still applies
])
def test_mvout_epilogue(full: bool, relu: bool, scale: float, acc: list, expected: list) -> None:
    rows = len(acc) // 4
    out_dtype, itemsize = ("int32", 4) if full else ("int8", 1)
    out = run([ld(0, 16), st_(4 * itemsize, "relu" if relu else "none", scale),
               f"mvin dram=P local=acc[0] rows={rows} cols=4",
               f"mvout dram=C local=acc[0]{'.full' if full else ''} rows={rows} cols=4"],
              {"P": i32(acc).reshape(rows, 4)}, {"C": (out_dtype, (rows, 4))})
    np.testing.assert_array_equal(out["C"].ravel(), np.array(expected, dtype=out_dtype))


@pytest.mark.parametrize("relu, scale, expected", [
    (False, 0.25, [[0, 2, -2, 64], [-64, 2, 0, 0]]),
    (True, 0.25, [[0, 2, 0, 64], [0, 2, 0, 0]]),
    (False, 1.0, [[2, 6, -6, 127], [-128, 10, -2, 0]]),
])
def test_compute_to_scratchpad_scales_saturates_and_relus(relu: bool, scale: float, expected: list) -> None:
    """C written to the scratchpad goes through config_ex's scale and activation (here C = 2 W)."""
    a = i8(np.diag([2, 2, 0, 0]))
    w = i8([[1, 3, -3, 127], [-128, 5, -1, 0], [9, 9, 9, 9], [9, 9, 9, 9]])
    out = run([ex("relu" if relu else "none", scale), ld(0, 4), st_(4),
               "mvin dram=A local=sp[0] rows=4 cols=4", "mvin dram=W local=sp[4] rows=4 cols=4",
               "preload b=sp[4] b_rows=4 b_cols=4 c=sp[16] c_rows=2 c_cols=4",
               "compute_preloaded a=sp[0] a_rows=4 a_cols=4 d=garbage d_rows=4 d_cols=4",
               "mvout dram=C local=sp[16] rows=2 cols=4"],
              {"A": a, "W": w}, {"C": ("int8", (2, 4))})
    np.testing.assert_array_equal(out["C"], i8(expected))


# ---- the static checker ------------------------------------------------------------------------------------
@pytest.mark.parametrize("lines, reason", [
    (["mvin dram=A local=sp[0] rows=4 cols=4"], "no config_ld for state 0"),
    ([ld(), "mvin2 dram=A local=sp[0] rows=4 cols=4"], "no config_ld for state 1"),
    ([ld(), "mvin dram=A local=sp[1022] rows=4 cols=4"], "row 1025 is past the scratchpad (1024 rows)"),
    ([ld(), "mvin dram=A+8 local=sp[0] rows=4 cols=4"], "DRAM bytes 72..87 run past the end of DRAM (80 bytes)"),
    ([ld(), "mvin dram=A local=sp[0] rows=5 cols=4"], "rows=5 must be between 1 and 4"),
    ([ld(stride=4, block=2), "mvin dram=A local=sp[0] rows=4 cols=8"], "would overlap blocks"),
    ([st_(), "mvout dram=A local=acc[62] rows=4 cols=4"], "row 65 is past the accumulator (64 rows)"),
    (["mvout dram=A local=acc[0] rows=4 cols=4"], "no config_st before this mvout"),
    ([ex(), "compute_preloaded a=sp[0] a_rows=4 a_cols=4 d=garbage d_rows=4 d_cols=4"], "compute without a preload"),
    (["preload b=sp[0] b_rows=4 b_cols=4 c=acc[0] c_rows=4 c_cols=4",
      "compute_preloaded a=sp[0] a_rows=4 a_cols=4 d=garbage d_rows=4 d_cols=4"], "no config_ex before this compute"),
    ([ex(), "preload b=sp[0] b_rows=4 b_cols=4 c=acc[0] c_rows=4 c_cols=4",
      "compute_accumulated a=sp[0] a_rows=4 a_cols=4 d=garbage d_rows=4 d_cols=4"], "no weights in the array"),
    ([ex(), "preload b=sp[0] b_rows=4 b_cols=4 c=acc[0] c_rows=4 c_cols=4",
      "preload b=sp[0] b_rows=4 b_cols=4 c=acc[0] c_rows=4 c_cols=4"], "still waits for its compute"),
    (["preload b=acc[0] b_rows=4 b_cols=4 c=acc[0] c_rows=4 c_cols=4"], "weights come from the scratchpad"),
    ([ex(), "preload b=sp[0] b_rows=4 b_cols=4 c=acc[0].full c_rows=4 c_cols=4"], ".full flag applies to reads"),
    ([ex().replace("b_transpose=0", "b_transpose=1").replace("a_transpose=0", "a_transpose=1") + " in_shift=0"],
     "both A and the weights would need the one transposer"),
    ([st_(), "mvout dram=A local=acc[0].full rows=1 cols=8"], "cols=8 must be between 1 and 4 (int32 rows"),
    ([ld() + " pixel_repeats=2", "mvin dram=A local=acc[0] rows=1 cols=4"], "pixel_repeats=2 of state 0 applies"),
])
def test_checker_names_the_instruction(lines: list[str], reason: str) -> None:
    prog = parse_program("\n".join(lines), HW, layout([("A", "input", "int8", (4, 4))]))
    with pytest.raises(ProgramError) as info:
        functional.run(prog, {"A": X[:, :4].copy()})
    err = info.value
    index = len(lines) - 1
    assert (err.index, err.text) == (index, lines[-1])
    assert reason in err.reason and str(err).startswith(f"instruction {index} `{lines[-1]}`: ")
