"""Gemmini's CISC loops: the words (isa/loop_words.py), their unrolling (isa/loop_unroll*.py) on the
functional model against numpy, and the static checker's refusals. Programs are built as gemmini.h
builds them (tiled_matmul_outer, tiled_resadd, tiled_conv's loop words), mostly on tiny (dim 4)."""
from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from isa import (
    PRESETS, ConfigEx, ConfigLd, ConfigSt, Fence, ISAError, Program, decode, encode, layout, parse_program,
)
from isa.checker import ProgramError, check
from isa.loop_words import (
    LAYOUTS, LOOP_WORD_CLASSES, LoopConvWs, LoopConvWsConfig1, LoopConvWsConfig2, LoopConvWsConfig3,
    LoopConvWsConfig4, LoopConvWsConfig5, LoopConvWsConfig6, LoopWs, LoopWsConfigAddrsAB, LoopWsConfigAddrsDC,
    LoopWsConfigBounds, LoopWsConfigStridesAB, LoopWsConfigStridesDC,
)
from isa.numerics import acc_to_int8, acc_to_int32, mvin_scale
from loop_programs import LoopProgram, add_matmul
from simulators import functional

TINY = PRESETS["tiny"]   # dim 4, blocks of 2, 1024 scratchpad rows, 64 accumulator rows
RNG = np.random.default_rng(3)


def _rand(shape: tuple[int, ...], dtype: str = "int8", bound: int = 128) -> np.ndarray:
    return RNG.integers(-bound, bound, shape).astype(dtype)


# ---- the words: round trips, reserved bits, gemmini.h's own words ---------------------------------------
@st.composite
def loop_words(draw: st.DrawFn):
    cls = draw(st.sampled_from(LOOP_WORD_CLASSES))
    buffers = layout([("A", "input", "int8", (64,)), ("B", "output", "int32", (8,))])
    values = {}
    for f in LAYOUTS[cls.FUNCT]:
        small = st.integers(0, 200) if f.dram else st.integers(0, min(f.mask, 9))
        values[f.name] = draw(st.one_of(small, st.integers(0, f.mask)))
    return cls(**values), buffers


@given(loop_words())
def test_loop_words_round_trip(word_and_buffers) -> None:
    word, buffers = word_and_buffers
    assert decode(*encode(word)) == word
    prog = Program(TINY, [word, Fence()], buffers)
    assert parse_program(prog.to_asm()) == prog


@given(st.sampled_from(LOOP_WORD_CLASSES), st.sampled_from(["rs1", "rs2"]), st.integers(0, 63))
def test_loop_words_reject_reserved_bits(cls, word: str, bit: int) -> None:
    used = sum(f.mask << f.lo for f in LAYOUTS[cls.FUNCT] if f.word == word)
    if used >> bit & 1:
        return
    funct, rs1, rs2 = encode(cls())
    with pytest.raises(ISAError, match=f"{cls.OP}: reserved bits .* in {word}"):
        decode(funct, rs1 | (1 << bit) * (word == "rs1"), rs2 | (1 << bit) * (word == "rs2"))


def test_loop_word_assembly_text() -> None:
    buffers = layout([("A", "input", "int8", (8, 8))])
    a = buffers["A"].addr
    prog = Program(TINY, [LoopWsConfigBounds(i=4, j=4, k=2, pad_k=3), LoopWsConfigAddrsAB(a=a + 8, b=0)], buffers)
    lines = prog.to_asm().splitlines()[-2:]
    assert lines == ["loop_ws_bounds pad_i=0 pad_j=0 pad_k=3 i=4 j=4 k=2", "loop_ws_addrs_ab a=A+8 b=0"]


def test_gemmini_h_loop_ws_words() -> None:
    """gemmini_loop_ws(3, 2, 5, 1, 0, 2, A=0x1000, B=0x2000, D=0, C=0x3000, 40, 24, 0, 24, false, false,
    full_C=true, low_D=false, ex_accumulate=true, act=1, a_spad_id=2, b_spad_id=1, is_resadd=false), by hand."""
    words = [(9, 0x0002_0000_0001, 0x0005_0002_0003), (10, 0x1000, 0x2000), (11, 0, 0x3000), (12, 40, 24),
             (13, 0, 24), (8, (2 << 18) | (1 << 16) | (1 << 8) | 0b011, 0)]
    ours = [LoopWsConfigBounds(pad_i=1, pad_j=0, pad_k=2, i=3, j=2, k=5), LoopWsConfigAddrsAB(a=0x1000, b=0x2000),
            LoopWsConfigAddrsDC(d=0, c=0x3000), LoopWsConfigStridesAB(a_stride=40, b_stride=24),
            LoopWsConfigStridesDC(d_stride=0, c_stride=24),
            LoopWs(ex_accumulate=1, full_c=1, act=1, a_spad_id=2, b_spad_id=1)]
    assert [encode(w) for w in ours] == words and [decode(*w) for w in words] == ours


# ---- LOOP_WS: tiled_matmul_outer's loops against numpy --------------------------------------------------
# Over 40 lines: gemmini.h's tiled_matmul_outer written out as it is there, to compare with it.
def tiled_matmul(hw, m: int, n: int, k: int, tiles: tuple[int, int, int], *, bias: str | None = None,
                 full_c: bool = False, low_d: bool = False, relu: bool = False, scale: float = 1.0
                 ) -> tuple[Program, dict[str, np.ndarray], np.ndarray]:
    """gemmini.h's tiled_matmul_outer (WS, no transposes): its configs, then per tile the six loop words,
    with its bias, accumulate and operand-reuse rules. Returns the program, its inputs and numpy's C."""
    d = hw.dim
    size_d, size_c = (1 if low_d else 4), (4 if full_c else 1)
    specs = [("A", "input", "int8", (m, k)), ("B", "input", "int8", (k, n))]
    if bias:
        specs.append(("D", "input", "int8" if low_d else "int32", (n,) if bias == "row" else (m, n)))
    specs.append(("C", "output", "int32" if full_c else "int8", (m, n)))
    buffers = layout(specs)
    inputs = {"A": _rand((m, k)), "B": _rand((k, n))}
    if bias:
        inputs["D"] = _rand(buffers["D"].shape, buffers["D"].dtype, 128 if low_d else 5000)
    acc = inputs["A"].astype(np.int64) @ inputs["B"] + (inputs["D"] if bias else 0)
    ref = acc_to_int32(acc, relu) if full_c else acc_to_int8(acc, scale, relu)

    blocks = [-(-x // d) for x in (m, n, k)]
    pads = [b * d - x for b, x in zip(blocks, (m, n, k))]
    counts = [-(-b // t) for b, t in zip(blocks, tiles)]
    repeating = bias == "row"
    addr = {name: buf.addr for name, buf in buffers.items()}
    prog = [ConfigEx(), ConfigSt(n * size_c, activation=int(relu), acc_scale=scale),
            ConfigLd(k, state=0, block_stride=d), ConfigLd(n, state=1, block_stride=d),
            ConfigLd(0 if repeating else n * size_d, state=2, shrink=int(low_d), block_stride=d)]
    a_reuse, b_reuse = counts[0] * counts[2] <= 2, counts[1] * counts[2] <= 2
    for i0 in range(counts[0]):
        for j0 in range(counts[1]):
            for k0 in range(counts[2]):
                ti, tj, tk = (min(t, b - c * t) for t, b, c in zip(tiles, blocks, (i0, j0, k0)))
                last = [c == n_ - 1 for c, n_ in zip((i0, j0, k0), counts)]
                a = 0 if a_reuse and j0 else addr["A"] + i0 * tiles[0] * d * k + k0 * tiles[2] * d
                b = 0 if b_reuse and i0 else addr["B"] + k0 * tiles[2] * d * n + j0 * tiles[1] * d
                dd = addr["D"] + ((0 if repeating else i0 * tiles[0] * d * n) + j0 * tiles[1] * d) * size_d \
                    if bias and k0 == 0 else 0
                c = addr["C"] + (i0 * tiles[0] * d * n + j0 * tiles[1] * d) * size_c if last[2] else 0
                prog += [LoopWsConfigBounds(*(p if l else 0 for p, l in zip(pads, last)), ti, tj, tk),
                         LoopWsConfigAddrsAB(a, b), LoopWsConfigAddrsDC(dd, c), LoopWsConfigStridesAB(k, n),
                         LoopWsConfigStridesDC(0 if repeating else n, n),
                         LoopWs(ex_accumulate=int(bool(bias) or k0 > 0), full_c=int(full_c), low_d=int(low_d),
                                act=int(relu), a_spad_id=(1 if i0 + k0 == 0 else 2) if a_reuse else 0,
                                b_spad_id=(1 if j0 + k0 == 0 else 2) if b_reuse else 0)]
    return Program(hw, prog + [Fence()], buffers), inputs, ref


MATMULS = {   # name -> (M, N, K, tiles in blocks, options)
    "one tile, odd pads": (7, 9, 11, (2, 3, 3), {}),
    "bias row (D stride 0), relu, scale": (9, 10, 6, (3, 3, 2), dict(bias="row", relu=True, scale=0.03)),
    "full bias, K split over three loops": (8, 8, 24, (2, 2, 2), dict(bias="full", scale=0.01)),
    "full_C": (5, 11, 9, (2, 3, 3), dict(bias="row", full_c=True, relu=True)),
    "low_D": (6, 6, 5, (2, 2, 2), dict(bias="full", low_d=True, scale=0.1)),
    "A reused (a_spad_id, A=0)": (4, 24, 8, (1, 2, 1), dict(scale=0.02)),
    "B reused (b_spad_id, B=0)": (24, 7, 4, (2, 2, 1), dict(bias="row", scale=0.02)),
    "many tiles in flight": (17, 13, 10, (2, 2, 1), dict(bias="row", scale=0.02, relu=True)),
}


@pytest.mark.parametrize("name", MATMULS)
def test_loop_ws_matches_numpy(name: str) -> None:
    m, n, k, tiles, options = MATMULS[name]
    prog, inputs, ref = tiled_matmul(TINY, m, n, k, tiles, **options)
    assert parse_program(prog.to_asm()) == prog
    np.testing.assert_array_equal(functional.run(prog, inputs).outputs["C"], ref)


def test_loop_ws_on_gemmini_preset() -> None:
    prog, inputs, ref = tiled_matmul(PRESETS["gemmini"], 40, 70, 50, (2, 3, 4), bias="row", scale=0.005)
    np.testing.assert_array_equal(functional.run(prog, inputs).outputs["C"], ref)


TRANSPOSED = {   # name -> (hw, (M, N, K), tile, options): int32 C or a small scale, so that no result saturates
    "tiny one loop": (TINY, (10, 7, 9), None, dict(bias="row", full_c=True)),
    "tiny tiled": (TINY, (13, 9, 22), (2, 1, 2), dict(scale=0.01)),
    "gemmini": (PRESETS["gemmini"], (60, 30, 50), None, dict(bias="row", full_c=True)),
}


@pytest.mark.parametrize("name", TRANSPOSED)
@pytest.mark.parametrize("transpose", ["a", "b"])
def test_loop_ws_transposed_operand(name: str, transpose: str) -> None:
    """a_transpose / b_transpose (tiled_matmul_auto's): the operand stored transposed, loaded as LoopMatmul
    walks it and read through config_ex's transpose bit; the odd sizes make the edge blocks' rows and
    columns differ, so a block read with its untransposed sizes gives other results."""
    hw, shape, tile, options = TRANSPOSED[name]
    lp = LoopProgram(hw)
    add_matmul(lp, "m", *shape, tile=tile, transpose=transpose, seed=sum(shape), **options)
    out = functional.run(lp.build(), lp.inputs).outputs
    for name, want in lp.expected.items():
        np.testing.assert_array_equal(out[name], want, err_msg=name)


def test_loop_ws_resadd() -> None:
    """tiled_resadd: C = MVIN_SCALE(A, a) + MVIN_SCALE(B, b) in the accumulator, stored with scale c and ReLU."""
    rows, cols, tile = 10, 13, (2, 2)
    buffers = layout([("A", "input", "int8", (rows, cols)), ("B", "input", "int8", (rows, cols)),
                      ("C", "output", "int8", (rows, cols))])
    inputs = {"A": _rand((rows, cols)), "B": _rand((rows, cols))}
    prog = [ConfigSt(cols, activation=1, acc_scale=0.7), ConfigEx(),
            ConfigLd(cols, state=0, shrink=1, block_stride=4, scale=0.5),
            ConfigLd(cols, state=1, shrink=1, block_stride=4, scale=2.0)]
    for i in range(0, rows, tile[0] * 4):
        for j in range(0, cols, tile[1] * 4):
            ti, tj = min(tile[0] * 4, rows - i), min(tile[1] * 4, cols - j)
            off = i * cols + j
            prog += [LoopWsConfigBounds(-ti % 4, -tj % 4, 0, -(-ti // 4), -(-tj // 4), 0),
                     LoopWsConfigAddrsAB(buffers["A"].addr + off, buffers["B"].addr + off),
                     LoopWsConfigAddrsDC(0, buffers["C"].addr + off), LoopWsConfigStridesAB(cols, cols),
                     LoopWsConfigStridesDC(0, cols), LoopWs(act=1, is_resadd=1)]
    out = functional.run(Program(TINY, prog, buffers), inputs).outputs["C"]
    acc = mvin_scale(inputs["A"], 0.5, to_int8=False) + mvin_scale(inputs["B"], 2.0, to_int8=False)
    np.testing.assert_array_equal(out, acc_to_int8(acc, 0.7, True))


# ---- LOOP_CONV_WS: one loop per tile against a numpy conv -----------------------------------------------------
def conv_reference(x: np.ndarray, w: np.ndarray, bias: np.ndarray, stride: int, pad: int) -> np.ndarray:
    """int64 NHWC conv with HWIO weights, zero padding."""
    n, h, wd, c = x.shape
    kh, kw = w.shape[:2]
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    xp = np.zeros((n, h + 2 * pad, wd + 2 * pad, c), np.int64)
    xp[:, pad:pad + h, pad:pad + wd] = x
    out = np.zeros((n, oh, ow, w.shape[3]), np.int64)
    for r in range(kh):
        for s in range(kw):
            out += xp[:, r:r + stride * oh:stride, s:s + stride * ow:stride] @ w[r, s]
    return out + bias


def conv_words(x, out, *, kernel: int, stride: int, pad: int, chs: tuple[int, int], addrs: dict[str, int],
               in_stride: int, weight_stride: int, out_stride: int, dw: int = 0, pixels: int = 1,
               no_bias: int = 0, tile_chs: tuple[int, int] | None = None, downsample: int = 0,
               dilation: int = 1) -> list:
    """The seven words sp_tiled_conv writes for a tile of all pixels and ``tile_chs`` (kchs, pochs) of the
    ``chs`` (in, out) channels (by default all)."""
    n, h, wd = x.shape[:3]
    oh, ow = out.shape[1:3]
    span = (kernel - 1) * dilation + 1
    irows, icols = oh * stride + span - 1, ow * stride + span - 1
    kchs, ochs = tile_chs or chs
    return [LoopConvWsConfig1(batch_size=n, in_row_dim=h, in_channels=chs[0], out_channels=chs[1], out_row_dim=oh,
                              pool_out_row_dim=oh, out_col_dim=ow, stride=stride, padding=pad),
            LoopConvWsConfig2(pool_stride=1, pool_size=1, pool_out_col_dim=ow, kernel_dim=kernel, pochs=ochs,
                              pocols=ow, porows=oh, batches=n),
            LoopConvWsConfig3(lpad=pad, kchs=kchs, kcols=kernel, krows=kernel, in_col_dim=wd, upad=pad,
                              dpad=irows - pad - h, rpad=icols - pad - wd),
            LoopConvWsConfig4(kernel_dilation=dilation, orows=oh, ocols=ow, out_stride=out_stride,
                              weight_stride=weight_stride, in_stride=in_stride),
            LoopConvWsConfig5(weights_addr=addrs["w"], output_addr=addrs["out"]),
            LoopConvWsConfig6(bias_addr=addrs["bias"], input_addr=addrs["x"]),
            LoopConvWs(no_bias=no_bias, no_pool=1, dw=dw, max_pixels_per_row=pixels, downsample=downsample)]


CONVS = {   # name -> (N, H, W, C, K, kernel, stride, padding, conv_words options)
    "3x3, padding 1": (1, 5, 6, 3, 5, 3, 1, 1, {}),
    "stride 2, padding 1, two images": (2, 7, 6, 4, 3, 3, 2, 1, {}),
    "more channels than dim, 1x1": (1, 3, 5, 6, 9, 1, 1, 0, {}),
    "pixel repeats (first layer)": (1, 5, 6, 2, 4, 3, 1, 1, dict(pixels=2)),
    "1x1 stride 2, downsampled": (1, 8, 12, 4, 3, 1, 2, 0, dict(downsample=1)),
    "kernel dilation 2": (1, 7, 6, 3, 4, 3, 1, 2, dict(dilation=2)),
}


@pytest.mark.parametrize("name", CONVS)
def test_loop_conv_ws_matches_numpy(name: str) -> None:
    n, h, w, c, k, kernel, stride, pad, options = CONVS[name]
    dilation = options.get("dilation", 1)
    span = (kernel - 1) * dilation + 1
    oh, ow = (h + 2 * pad - span) // stride + 1, (w + 2 * pad - span) // stride + 1
    buffers = layout([("x", "input", "int8", (n, h, w, c)), ("w", "input", "int8", (kernel, kernel, c, k)),
                      ("bias", "input", "int32", (k,)), ("out", "output", "int8", (n, oh, ow, k))])
    inputs = {"x": _rand((n, h, w, c)), "w": _rand((kernel, kernel, c, k)), "bias": _rand((k,), "int32", 3000)}
    words = conv_words(inputs["x"], np.empty((n, oh, ow, k)), kernel=kernel, stride=stride, pad=pad, chs=(c, k),
                       addrs={b: buffers[b].addr for b in buffers}, in_stride=c, weight_stride=k, out_stride=k,
                       **options)
    a_stride = stride >> options.get("downsample", 0)
    prog = Program(TINY, [ConfigEx(a_stride=a_stride), ConfigSt(k, acc_scale=0.02), *words], buffers)
    assert parse_program(prog.to_asm()) == prog
    dilated = np.zeros((span, span, c, k), np.int64)
    dilated[::dilation, ::dilation] = inputs["w"]
    ref = acc_to_int8(conv_reference(inputs["x"], dilated, inputs["bias"], stride, pad), 0.02, False)
    np.testing.assert_array_equal(functional.run(prog, inputs).outputs["out"], ref)


def test_loop_conv_ws_depthwise() -> None:
    """tiled_conv_dw: one dw loop per channel (kchs = pochs = 1, the kernel row as repeated pixels), the
    loops back to back in the two slots; no_bias loads zeros."""
    n, h, w, c, kernel, pad = 1, 6, 5, 3, 3, 1
    buffers = layout([("x", "input", "int8", (n, h, w, c)), ("w", "input", "int8", (c, kernel, kernel)),
                      ("out", "output", "int8", (n, h, w, c))])
    inputs = {"x": _rand((n, h, w, c)), "w": _rand((c, kernel, kernel))}
    prog = [ConfigEx(a_stride=1), ConfigSt(c, acc_scale=0.05)]
    for ch in range(c):
        addrs = {"x": buffers["x"].addr + ch, "w": buffers["w"].addr + ch * kernel * kernel,
                 "out": buffers["out"].addr + ch, "bias": 1}   # no_bias with a non-zero address: zeros
        prog += conv_words(inputs["x"], np.empty((n, h, w, 1)), kernel=kernel, stride=1, pad=pad, chs=(c, c),
                           addrs=addrs, in_stride=c, weight_stride=1, out_stride=c, dw=1, pixels=kernel, no_bias=1,
                           tile_chs=(1, 1))
    out = functional.run(Program(TINY, prog, buffers), inputs).outputs["out"]
    weights = np.zeros((kernel, kernel, c, c), np.int64)
    for ch in range(c):
        weights[:, :, ch, ch] = inputs["w"][ch]
    ref = acc_to_int8(conv_reference(inputs["x"], weights, 0, 1, pad), 0.05, False)
    np.testing.assert_array_equal(out, ref)


# ---- the checker: loop fields not implemented, bad bounds, racing loops ------------------------------------------
def _one_tile(**loop) -> Program:
    prog, _, _ = tiled_matmul(TINY, 8, 8, 8, (2, 2, 2))
    return Program(TINY, [*prog.instructions[:-2], dataclasses.replace(prog.instructions[-2], **loop)],
                   prog.buffers)


@pytest.mark.parametrize("loop, reason", [
    (dict(act=5), "loop_ws.act=5 names no activation"),
    (dict(act=2, full_c=1), "loop_ws.act=2 (LAYERNORM) normalizes int8 rows: not with full_c"),
    (dict(a_transpose=1, b_transpose=1), "loop_ws.a_transpose=1 with b_transpose=1"),
    (dict(a_spad_id=3), "loop_ws.a_spad_id=3 must be 0"),
])
def test_checker_refuses_loop_ws_fields(loop: dict, reason: str) -> None:
    with pytest.raises(ProgramError, match=r"instruction 10 `loop_ws .*`: " + re.escape(reason)):
        check(_one_tile(**loop))


def test_checker_loop_ws_bounds_and_missing_words() -> None:
    prog = _one_tile()
    ins = prog.instructions
    bad_pad = [*ins[:5], dataclasses.replace(ins[5], pad_k=4), *ins[6:]]
    with pytest.raises(ProgramError, match=r"instruction 10 `loop_ws .*`: loop_ws_bounds.pad_k=4 must be below dim"):
        check(Program(TINY, bad_pad, prog.buffers))
    with pytest.raises(ProgramError, match=r"instruction 9 `loop_ws .*no loop_ws_strides_ab since the previous"):
        check(Program(TINY, [*ins[:8], *ins[9:]], prog.buffers))
    wide_stride = [*ins[:8], LoopWsConfigStridesAB(9, 8), *ins[9:]]   # A's rows run off its buffer
    with pytest.raises(ProgramError, match=r"instruction 10 .*expanded mvin .*not inside one buffer"):
        check(Program(TINY, wide_stride, prog.buffers))


def test_checker_refuses_racing_loops() -> None:
    """Two loops back to back run at once on Gemmini: the second may not load rows the first still reads."""
    prog, _, _ = tiled_matmul(TINY, 8, 4, 8, (1, 1, 2))
    loops = [i for i, w in enumerate(prog.instructions) if isinstance(w, LoopWs)]
    same_half = [dataclasses.replace(w, a_spad_id=1) if isinstance(w, LoopWs) else w for w in prog.instructions]
    check(prog)
    with pytest.raises(ProgramError, match=rf"instruction {loops[1]} .*its loads write scratchpad row 0, which the "
                                           rf"loop at instruction {loops[0]} may still use"):
        check(Program(TINY, same_half, prog.buffers))
    apart = [*prog.instructions[:loops[0] + 1], Fence(), *prog.instructions[loops[0] + 1:]]
    check(Program(TINY, [dataclasses.replace(w, a_spad_id=1) if isinstance(w, LoopWs) else w for w in apart],
                  prog.buffers))


@pytest.mark.parametrize("flags, stride, reason", [
    (dict(trans_input_3120=1, trans_weight_0132=1), 1,
     "loop_conv_ws.trans_input_3120=1 with trans_weight_0132=1: weight-stationary has one transposer"),
    (dict(trans_weight_1203=1, trans_weight_0132=1), 1,
     "loop_conv_ws.trans_weight_1203=1 with trans_weight_0132=1: the weights take one layout"),
    (dict(trans_output_1203=1, no_pool=0), 1, "loop_conv_ws.trans_output_1203=1 with no_pool=0: a transposed "
                                               "output is not pooled"),
    (dict(input_dilated=1), 2, "loop_conv_ws.input_dilated=1 with stride=2: input dilation needs stride 1"),
])
def test_checker_refuses_loop_conv_flags(flags: dict, stride: int, reason: str) -> None:
    """The flags LoopConv cannot honour together (gemmini.h refuses them too) are errors that name them."""
    x = np.zeros((1, 4, 4, 4), np.int8)
    buffers = layout([("x", "input", "int8", x.shape), ("w", "input", "int8", (4, 4)),
                      ("bias", "input", "int32", (4,)), ("out", "output", "int8", x.shape)])
    words = conv_words(x, x, kernel=1, stride=1, pad=0, chs=(4, 4), addrs={b: buffers[b].addr for b in buffers},
                       in_stride=4, weight_stride=4, out_stride=4)
    words[0] = dataclasses.replace(words[0], stride=stride)
    words[-1] = dataclasses.replace(words[-1], **flags)
    with pytest.raises(ProgramError, match=r"instruction 8 `loop_conv_ws .*`: " + reason):
        check(Program(TINY, [ConfigEx(), ConfigSt(4), *words], buffers))


def test_checker_refuses_a_loop_conv_pool_config_st_cannot_hold() -> None:
    """A 4x4 pooling window is past config_st's 2-bit pool_size."""
    x = np.zeros((1, 4, 4, 4), np.int8)
    buffers = layout([("x", "input", "int8", x.shape), ("w", "input", "int8", (4, 4)),
                      ("bias", "input", "int32", (4,)), ("out", "output", "int8", (1, 1, 1, 4))])
    words = conv_words(x, x, kernel=1, stride=1, pad=0, chs=(4, 4), addrs={b: buffers[b].addr for b in buffers},
                       in_stride=4, weight_stride=4, out_stride=4)
    words = [dataclasses.replace(w, pool_size=4, pool_stride=1, porows=1, pocols=1, pool_out_col_dim=1)
             if isinstance(w, LoopConvWsConfig2) else w for w in words]
    words[-1] = dataclasses.replace(words[-1], no_pool=0)
    with pytest.raises(ProgramError, match=r"loop_conv_ws pooling: ConfigSt.pool_size=4 out of range"):
        check(Program(TINY, [ConfigEx(), ConfigSt(4), *words], buffers))
