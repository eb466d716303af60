"""schedule="gemmini" is Gemmini's own library: the words gemmini.h's tiled_*_auto calls issue.

Each case is one gemmini.h call (ucb-bar/gemmini-rocc-tests 180c468, include/gemmini.h) on one of
our ops. Its tiles and words are written out by hand from gemmini.h's arithmetic (the derivations
are in the comments), never computed with toolkit/library: the config words in full, the tile
count, and several tiles' loop words. A word is (funct, rs1, rs2) as gemmini.h's macros pack it
(float fields as their float32 bits: 1.0 = 0x3F800000); a DRAM address is "buffer+offset" (checked
against the program's buffers) or a plain integer (0 = NULL). Then the functional model runs
schedule="gemmini" programs bit-exact against ``op.reference``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest

import toolkit as tk
from isa import encode
from toolkit.kinds import gemmini_flat_schedule
from toolkit.library import LibraryConv, LibraryDepthwise, LibraryMatmul, LibraryResAdd, LibrarySchedule
from toolkit.ops import Op
from toolkit.gemm import MatmulSchedule
from toolkit.schedule import ScheduleError

Word = tuple   # (funct, rs1, rs2); rs1 / rs2 an int, or "buffer+offset" for a DRAM address
FENCE = (127, 0, 0)
ONE = 0x3F800000   # float32 1.0: the identity scales


@dataclass(frozen=True)
class Call:
    op: Op
    hw: str
    schedule: LibrarySchedule
    config: tuple[Word, ...]             # the words before the first tile
    tiles: int
    loops: dict[int, tuple[Word, ...]]   # tile number -> its loop words


def config_ld(stride: int, state: int, dim: int, scale: int = ONE, shrunk: int = 0) -> Word:
    """gemmini_extended4_config_ld(stride, scale, shrunk, DIM, state): pixel_repeats 1 at rs1[15:8]."""
    return 0, scale << 32 | dim << 16 | 1 << 8 | state << 3 | shrunk << 2 | 0x1, stride


def matmul_lds(a: int, b: int, d: int, dim: int) -> tuple[Word, ...]:
    """tiled_matmul_outer's config_ld of A, B and D (ids 0, 1, 2), DRAM strides in bytes."""
    return config_ld(a, 0, dim), config_ld(b, 1, dim), config_ld(d, 2, dim)


def ws(bounds: Word, ab: Word, dc: Word, strides_ab: Word, strides_dc: Word, loop: Word) -> tuple[Word, ...]:
    """gemmini_loop_ws's words: funct 9 (bounds), 10, 11 (addresses), 12, 13 (strides), 8 (the loop)."""
    return ((9, *bounds), (10, *ab), (11, *dc), (12, *strides_ab), (13, *strides_dc), (8, *loop))


def conv_ws(shared: tuple[Word, Word, Word], c3: Word, weights_output: Word, bias_input: Word,
            loop: Word) -> tuple[Word, ...]:
    """gemmini_loop_conv_ws's words: funct 16-21 (configs 1-6), 15 (the loop); ``shared`` holds configs
    1, 2 and 4, which the tiles of these calls have in common."""
    c1, c2, c4 = shared
    return ((16, *c1), (17, *c2), (18, *c3), (19, *c4), (20, *weights_output), (21, *bias_input), (15, *loop))


# configs 1, 2 and 4 of the conv calls' tiles (below), packed as gemmini_loop_conv_ws packs them:
# 1: out_channels << 48 | in_channels << 32 | in_row_dim << 16 | batch_size,
#    padding << 56 | stride << 48 | out_col_dim << 32 | pool_out_row_dim << 16 | out_row_dim;
# 2: kernel_dim << 48 | pool_out_col_dim << 32 | pool_size << 16 | pool_stride << 8 | pool_padding,
#    batches << 48 | porows << 32 | pocols << 16 | pochs;
# 4: orows << 48 | prpad << 32 | pupad << 21 | pdpad << 10 | kernel_dilation,
#    in_stride << 48 | weight_stride << 32 | out_stride << 16 | ocols.
# Config 3 (per tile): krows << 48 | kcols << 32 | kchs << 16 | lpad,
#    rpad << 48 | upad << 32 | dpad << 24 | plpad << 16 | in_col_dim.
CONV14 = ((0x0100_0100_000E_0001, 0x0101_000E_000E_000E), (0x0003_000E_0001_0100, 0x0001_000E_000E_0020),
          (0x000E_0000_0000_0001, 0x0100_0100_0100_000E))
CONV16S2 = ((0x0040_0100_0010_0001, 0x0102_0008_0008_0008), (0x0003_0008_0001_0100, 0x0001_0008_0008_0040),
            (0x0008_0000_0000_0001, 0x0100_0040_0040_0008))
CONV1X1 = ((0x0020_0020_0008_0001, 0x0002_0004_0004_0004), (0x0001_0004_0001_0100, 0x0001_0004_0004_0020),
           (0x0004_0000_0000_0001, 0x0020_0020_0020_0004))
CONV_PACKED = ((0x0004_0002_0004_0001, 0x0101_0004_0004_0004), (0x0003_0004_0001_0100, 0x0001_0004_0004_0004),
               (0x0004_0000_0000_0001, 0x0002_0004_0004_0004))
DW = ((0x0003_0003_0005_0001, 0x0101_0005_0005_0005), (0x0003_0005_0001_0100, 0x0001_0005_0005_0001),
      (0x0005_0000_0000_0001, 0x0003_0001_0003_0005))


CALLS: dict[str, Call] = {
    # dim 16: db_max_tile_i_j = isqrt((1024 / 2) / 16) = 5, db_max_tile_k = (16384 / 4 / 16) / 5 = 51; from
    # 5x5x32 (K has 32 blocks), J -> 6 (C: 30 * 16 = 480 <= 512 rows), I -> 6 fails (576), K is whole; J -> 7
    # fails (560): 5x6x32. I0 = 7 (last 2), J0 = 6 (last 2), K0 = 1: 42 tiles, no reuse (I0 * K0 > 2).
    "tiled_matmul_auto(512, 512, 512)": Call(
        tk.matmul(512, 512, 512), "gemmini", LibraryMatmul(5, 6, 32),
        config=((0, ONE << 32 | 1 << 16 | 1 << 2, 1 << 48),    # config_ex: WS, A_stride 1, C_stride 1
                (0, 0x2, ONE << 32 | 512),                     # config_st: stride_C * 1 bytes
                *matmul_lds(512, 512, 2048, 16)),   # D: stride_D * 4 bytes (no bias: not repeating)
        tiles=42,
        loops={0: ws((0, 32 << 32 | 6 << 16 | 5), ("A+0", "B+0"), (0, "C+0"), (512, 512), (512, 512),
                     (0, 0)),          # no bias: the first (only) k0 overwrites, ex_accumulate = 0
               1: ws((0, 32 << 32 | 6 << 16 | 5), ("A+0", "B+96"), (0, "C+96"), (512, 512), (512, 512), (0, 0)),
               41: ws((0, 32 << 32 | 2 << 16 | 2), ("A+245760", "B+480"), (0, "C+246240"), (512, 512), (512, 512),
                      (0, 0))}),   # i0 = 6: A + 6 * 80 * 512; j0 = 5: B + 480; C + 245760 + 480
    # 112x48x304 padded: 7x3x19 blocks; from 5x3x19, J stays (48 is 3 blocks), I -> 6 -> 7: one tile, pads 12,
    # 11, 4; a_reuse and b_reuse (one tile), both ids 1. Row bias: repeating_bias, D stride 0.
    "tiled_matmul_auto(100, 37, 300), row bias, relu (gemmini)": Call(
        tk.matmul(100, 37, 300, bias="row", activation="relu", scale=0.05), "gemmini", LibraryMatmul(7, 3, 19),
        config=((0, ONE << 32 | 1 << 16 | 1 << 3 | 1 << 2, 1 << 48),   # config_ex act RELU
                (0, 1 << 2 | 0x2, 0x3D4CCCCD << 32 | 37),              # config_st RELU, scale 0.05
                *matmul_lds(300, 37, 0, 16)),
        tiles=1,
        loops={0: ws((4 << 32 | 11 << 16 | 12, 19 << 32 | 3 << 16 | 7), ("A+0", "B+0"), ("bias+0", "C+0"),
                     (300, 37), (0, 37), (1 << 18 | 1 << 16 | 1 << 8 | 1, 0))}),
    # dim 4: db_max_tile_i_j = isqrt((64 / 2) / 4) = 2, db_max_tile_k = (1024 / 4 / 4) / 2 = 32; 25x10x75 blocks;
    # 2x2x32 fills the 512 rows, nothing grows. I0 = 13 (last 1), J0 = 5 (last 2), K0 = 3 (last 11); pads 0, 3, 0.
    "tiled_matmul_auto(100, 37, 300), row bias, relu (tiny)": Call(
        tk.matmul(100, 37, 300, bias="row", activation="relu", scale=0.05), "tiny", LibraryMatmul(2, 2, 32),
        config=((0, ONE << 32 | 1 << 16 | 1 << 3 | 1 << 2, 1 << 48),
                (0, 1 << 2 | 0x2, 0x3D4CCCCD << 32 | 37),
                *matmul_lds(300, 37, 0, 4)),
        tiles=195,
        loops={0: ws((0, 32 << 32 | 2 << 16 | 2), ("A+0", "B+0"), ("bias+0", 0), (300, 37), (0, 37), (0x101, 0)),
               1: ws((0, 32 << 32 | 2 << 16 | 2), ("A+128", "B+4736"), (0, 0), (300, 37), (0, 37), (0x101, 0)),
               2: ws((0, 11 << 32 | 2 << 16 | 2), ("A+256", "B+9472"), (0, "C+0"), (300, 37), (0, 37), (0x101, 0)),
               192: ws((3 << 16, 32 << 32 | 2 << 16 | 1), ("A+28800", "B+32"), ("bias+128", 0), (300, 37), (0, 37),
                       (0x101, 0)),   # i0 = 12: A + 12 * 8 * 300; j0 = 4: bias + 16 * 4
               194: ws((3 << 16, 11 << 32 | 2 << 16 | 1), ("A+29056", "B+9504"), (0, "C+3584"), (300, 37), (0, 37),
                       (0x101, 0))}),
    # 16x8x24 padded: 4x2x6 blocks; from 2x2x6, I -> 3 (24 acc rows) -> 4 (32 <= 32): one tile, pads 3, 3, 3.
    # full_C: C rows are int32, config_st stride 5 * 4; full bias: D stride 5 (elements), 20 bytes.
    "tiled_matmul_auto(13, 5, 21), full bias, int32 out (tiny)": Call(
        tk.matmul(13, 5, 21, bias="full", out_dtype="int32"), "tiny", LibraryMatmul(4, 2, 6),
        config=((0, ONE << 32 | 1 << 16 | 1 << 2, 1 << 48),
                (0, 0x2, ONE << 32 | 20),
                *matmul_lds(21, 5, 20, 4)),
        tiles=1,
        loops={0: ws((3 << 32 | 3 << 16 | 3, 6 << 32 | 2 << 16 | 4), ("A+0", "B+0"), ("bias+0", "C+0"), (21, 5),
                     (5, 5), (1 << 18 | 1 << 16 | 1 << 1 | 1, 0))}),
    # args {1, 14, 14, 256, 3, 3, 256}; ocols stays (14 <= 16, 14 rows); the channels are the largest, pochs first
    # on ties, each down a block: (256, 256) -> (240, 256) -> (240, 240) -> ... -> (48, 48) -> (32, 48), where the
    # acc fits (2 * 196 = 392 <= 512) and the spad too (3 * 16 * 16 + 2 * 9 * 48 = 1632). Growing: pochs 33 needs
    # 588 acc rows; kchs grows one a round to 240 (15 * 256 + 2 * 9 * 240 = 8160 <= 8192; 241: 8434). So 240 + 16
    # input channels, 8 x 32 output channels: 16 tiles. a_reuse (2 kernel tiles): input loaded with poch = 0 only.
    "tiled_conv_auto 14x14, 256 -> 256, 3x3, bias, relu": Call(
        tk.conv2d(1, 14, 14, 256, 256, bias="channel", activation="relu", scale=0.01), "gemmini",
        LibraryConv(1, 14, 14, 32, 3, 3, 240),
        config=((0, 1 << 2 | 0x2, 0x3C23D70A << 32 | 256),   # config_st RELU, scale 0.01, out_stride 256
                (0, 1 << 16 | 1 << 2, 1 << 48)),                # config_ex WS, acc_scale 0, A_stride 1, C_stride 1
        tiles=16,
        loops={0: conv_ws(CONV14, (0x0003_0003_00F0_0001, 0x0001_0001_0100_000E),
                          ("weight+0", 0), ("bias+0", "input+0"), (1 << 18 | 1 << 8, 1 << 3 | 1)),
               1: conv_ws(CONV14, (0x0003_0003_0010_0001, 0x0001_0001_0100_000E),
                          ("weight+61440", "output+0"), (0, "input+240"), (2 << 18 | 1 << 8, 1 << 3 | 1)),
               2: conv_ws(CONV14, (0x0003_0003_00F0_0001, 0x0001_0001_0100_000E),
                          ("weight+32", 0), ("bias+128", 0), (1 << 18 | 1 << 8, 1 << 3 | 1)),
               15: conv_ws(CONV14, (0x0003_0003_0010_0001, 0x0001_0001_0100_000E),
                           ("weight+61664", "output+224"), (0, 0), (2 << 18 | 1 << 8, 1 << 3 | 1))}),
    # args {1, 8, 8, 64, 3, 3, 256}, irows = 2 * porows + 2: spad 16 * 18 * 18 + 4 * 9 * 256 = 14400; kchs falls a
    # block at a time to 144 (9 * 324 + 4 * 9 * 144 = 8100 <= 8192); 145 needs 8460. So 144 + 112: two tiles, and
    # both reuse flags (two kernel tiles), ids 1 then 2. No bias: no_bias, and the bias word is the dummy
    # pointer (acc_t*)1 + poch on the first kernel tile.
    "tiled_conv_auto 16x16, 256 -> 64, 3x3 stride 2, no bias": Call(
        tk.conv2d(1, 16, 16, 256, 64, stride=2), "gemmini", LibraryConv(1, 8, 8, 64, 3, 3, 144),
        config=((0, 0x2, ONE << 32 | 64), (0, 2 << 16 | 1 << 2, 1 << 48)),   # config_ex A_stride = stride 2
        tiles=2,
        loops={0: conv_ws(CONV16S2, (0x0003_0003_0090_0001, 0x0001_0001_0100_0010),
                          ("weight+0", 0), (1, "input+0"), (1 << 18 | 1 << 16 | 1 << 8 | 1, 1)),
               1: conv_ws(CONV16S2, (0x0003_0003_0070_0001, 0x0001_0001_0100_0010),
                          ("weight+9216", "output+0"), (0, "input+144"), (2 << 18 | 2 << 16 | 1 << 8 | 1, 1))}),
    # A 1x1 kernel at stride 2 over an even, unpadded input: downsample (A_stride 2 >> 1 = 1, input rows and
    # columns halved in the row count: 2 * 4 * 4 + 2 * 32 = 96 spad rows). Everything fits: one tile.
    "tiled_conv_auto 8x8, 32 -> 32, 1x1 stride 2 (downsample)": Call(
        tk.conv2d(1, 8, 8, 32, 32, kernel=1, stride=2, padding=0, bias="channel", activation="relu", scale=0.5),
        "gemmini", LibraryConv(1, 4, 4, 32, 1, 1, 32),
        config=((0, 1 << 2 | 0x2, 0x3F000000 << 32 | 32), (0, 1 << 16 | 1 << 2, 1 << 48)),
        tiles=1,
        loops={0: conv_ws(CONV1X1, (0x0001_0001_0020_0000, 0x8),
                          ("weight+0", "output+0"), ("bias+0", "input+0"),
                          (1 << 18 | 1 << 16 | 1 << 8, 1 << 3 | 1 << 1 | 1))}),
    # Two input channels on dim 4: HAS_FIRST_LAYER_OPTIMIZATIONS packs DIM / 2 = 2 kernel columns per row
    # (max_pixels_per_row 2). 1 * 6 * 6 + 9 * 2 = 54 spad rows, 16 acc rows: one tile.
    "tiled_conv_auto 4x4, 2 -> 4, 3x3 (first-layer packing, tiny)": Call(
        tk.conv2d(1, 4, 4, 2, 4), "tiny", LibraryConv(1, 4, 4, 4, 3, 3, 2),
        config=((0, 0x2, ONE << 32 | 4), (0, 1 << 16 | 1 << 2, 1 << 48)),
        tiles=1,
        loops={0: conv_ws(CONV_PACKED, (0x0003_0003_0002_0001, 0x0001_0001_0100_0004),
                          ("weight+0", "output+0"), (1, "input+0"), (1 << 18 | 1 << 16 | 2 << 8 | 1, 1))}),
    # Depthwise, 5x5x3 on tiny: {1, 5, 5, 1, 1, 1, 1} fits (25 + 1 spad rows, 25 acc rows). tiled_conv_dw loops
    # channel by channel; our (KH, KW, C) weights make it tap by tap too (see toolkit/library/depthwise.py):
    # tile = ch * 9 + krow * 3 + kcol, weights at weight + (krow * 3 + kcol) * 3 + ch, the bias with the first
    # tap, the output with the last. dw, in_stride = out_stride = 3, weight_stride 1, one pixel per row.
    "tiled_conv_dw_auto 5x5x3, 3x3, bias, relu (tiny)": Call(
        tk.depthwise_conv2d(1, 5, 5, 3, bias="channel", activation="relu", scale=0.05), "tiny",
        LibraryDepthwise(1, 5, 5),
        config=((0, 1 << 2 | 0x2, 0x3D4CCCCD << 32 | 3), (0, 1 << 16 | 1 << 2, 1 << 48)),
        tiles=27,
        loops={0: conv_ws(DW, (0x0001_0001_0001_0001, 0x0000_0001_0000_0005),
                          ("weight+0", 0), ("bias+0", "input+0"), (1 << 8 | 1 << 6, 1 << 3 | 1)),
               8: conv_ws(DW, (0x0001_0001_0001_0000, 0x0001_0000_0100_0005),
                          ("weight+24", "output+0"), (0, "input+18"), (1 << 8 | 1 << 6, 1 << 3 | 1)),
               22: conv_ws(DW, (0x0001_0001_0001_0000, 0x5),
                           ("weight+14", 0), (0, "input+2"), (1 << 8 | 1 << 6, 1 << 3 | 1))}),
    # I = 196 pixels, J = 256 channels: 13 * 16 * 16 = 3328 acc rows > 512. J drops a block while narrower rows are
    # more (240 ... 192), then I halves (98), J drops to 96, I halves (49): 4 * 16 * 6 = 384 rows. Tiles: rows 0,
    # 49, 98, 147 x columns 0, 96 (96 wide), 192 (64 wide): 12. Each: ceil(49 / 16) = 4 blocks, pad 15.
    "tiled_resadd_auto(196, 256)": Call(
        tk.resadd(1, 14, 14, 256, a_scale=0.5, b_scale=0.25, scale=0.75), "gemmini", LibraryResAdd(49, 96),
        config=((0, 1 << 2 | 0x2, 0x3F400000 << 32 | 256),   # config_st RELU, scale 0.75
                (0, ONE << 32 | 1 << 16 | 1 << 2, 1 << 48),   # gemmini_config_ex(WS, 0, 0)
                config_ld(256, 0, 16, 0x3F000000, shrunk=1), config_ld(256, 1, 16, 0x3E800000, shrunk=1)),  # 0.5, 0.25
        tiles=12,
        loops={0: ws((15, 6 << 16 | 4), ("A+0", "B+0"), (0, "C+0"), (256, 256), (0, 256), (1 << 8, 1 << 2)),
               11: ws((15, 4 << 16 | 4), ("A+37824", "B+37824"), (0, "C+37824"), (256, 256), (0, 256),
                      (1 << 8, 1 << 2))}),
}


def program_words(prog: tk.Program) -> list[tuple[int, int, int]]:
    return [encode(ins) for ins in prog.instructions]


def resolve(word: Word, prog: tk.Program) -> tuple[int, int, int]:
    """A table word with its "buffer+offset" fields as this program's DRAM addresses."""
    def value(v: int | str) -> int:
        if isinstance(v, int):
            return v
        name, offset = v.split("+")
        return prog.buffers[name].addr + int(offset)
    return word[0], value(word[1]), value(word[2])


@pytest.mark.parametrize("name", CALLS)
def test_tiles_are_gemmini_hs(name: str) -> None:
    call = CALLS[name]
    assert tk.gemmini_schedule(call.op, tk.HardwareConfig.preset(call.hw)) == call.schedule


@pytest.mark.parametrize("name", CALLS)
def test_words_are_gemmini_hs(name: str) -> None:
    call = CALLS[name]
    prog = tk.compile(call.op, call.hw, "gemmini")
    got = program_words(prog)
    per_tile = len(next(iter(call.loops.values())))
    assert len(got) == len(call.config) + call.tiles * per_tile + 1
    assert got[:len(call.config)] == list(call.config)
    for n, loop in call.loops.items():
        first = len(call.config) + n * per_tile
        assert got[first:first + per_tile] == [resolve(w, prog) for w in loop], f"tile {n}"
    assert got[-1] == FENCE   # gemmini_fence(): tiled_matmul_outer's and tiled_resadd's own, the conv callers'


def test_the_six_exo_gemms_tile_as_tiled_matmul_auto() -> None:
    """M x K x N; tk.matmul(M, N, K). The acc's 512 rows bound I x J at 30 blocks (5 x 6) but where N is
    64 (J = 4 blocks: I grows to 8); K then takes what the scratchpad's half leaves, up to the whole."""
    hw = tk.HardwareConfig.preset("gemmini")
    tiles = {(512, 512, 512): (5, 6, 32), (12544, 64, 256): (5, 6, 4), (12544, 256, 64): (8, 4, 16),
             (3136, 128, 512): (5, 6, 8), (3136, 512, 128): (5, 6, 32), (784, 256, 1024): (5, 6, 16)}
    for (M, K, N), tile in tiles.items():
        assert tk.gemmini_schedule(tk.matmul(M, N, K), hw) == LibraryMatmul(*tile), (M, K, N)


# ---- running them ---------------------------------------------------------------------------------------
RUNS = {
    "matmul odd, row bias, relu": tk.matmul(30, 13, 70, bias="row", activation="relu", scale=0.05),
    "matmul several k0, no bias": tk.matmul(12, 20, 200, scale=0.01),
    "matmul int32, full bias": tk.matmul(13, 5, 21, bias="full", out_dtype="int32"),
    "conv 3x3 split channels": tk.conv2d(1, 6, 6, 33, 6, bias="channel", activation="relu", scale=0.02),
    "conv 3x3 stride 2": tk.conv2d(2, 7, 8, 6, 9, stride=2, scale=0.02),
    "conv 1x1 downsample": tk.conv2d(1, 8, 8, 5, 7, kernel=1, stride=2, padding=0, bias="channel", scale=0.1),
    "conv first-layer packing": tk.conv2d(1, 5, 5, 2, 4, bias="channel", scale=0.05),
    "depthwise 3x3": tk.depthwise_conv2d(1, 6, 5, 3, bias="channel", activation="relu", scale=0.05),
    "depthwise stride 2": tk.depthwise_conv2d(1, 7, 7, 2, stride=2, scale=0.1),
    "resadd": tk.resadd(1, 5, 7, 6, a_scale=0.5, b_scale=2.0, activation="none", scale=0.5),
}


@pytest.mark.parametrize("name", RUNS)
def test_library_programs_are_bit_exact_on_the_functional_model(name: str) -> None:
    op = RUNS[name]
    prog = tk.compile(op, "tiny", "gemmini")
    inputs = op.random_inputs(seed=3)
    res = tk.run(prog, inputs, backend="functional")
    for out, want in op.reference(inputs).items():
        np.testing.assert_array_equal(res.outputs[out], want)


# ---- the schedule objects -------------------------------------------------------------------------------
def test_a_library_schedule_round_trips_through_its_dict(tmp_path) -> None:
    op, hw = tk.conv2d(1, 6, 6, 8, 4, stride=2), tk.HardwareConfig.preset("tiny")
    prog = tk.compile(op, hw, "gemmini")
    assert prog.meta["schedule"]["call"] == "tiled_conv_auto" and prog.meta["template"] == "conv_library.s.j2"
    (tmp_path / "s.json").write_text(json.dumps(prog.meta["schedule"]))
    for spec in (prog.meta["schedule"], tmp_path / "s.json", tk.gemmini_schedule(op, hw)):
        assert tk.compile(op, hw, spec).instructions == prog.instructions


def test_gemmini_flat_is_the_old_port_with_its_knobs() -> None:
    op, hw = tk.matmul(11, 9, 14, bias="row"), tk.HardwareConfig.preset("tiny")
    flat = gemmini_flat_schedule(op, hw)
    assert isinstance(flat, MatmulSchedule)
    assert tk.compile(op, hw, "gemmini-flat").meta["schedule"] == flat.to_dict()
    assert not any(i.op.startswith("loop_") for i in tk.compile(op, hw, "gemmini-flat").instructions)


@pytest.mark.parametrize("op, schedule, message", [
    (tk.conv2d(1, 6, 6, 4, 4, out_dtype="int32"), "gemmini", "tiled_conv_auto writes 8-bit outputs only"),
    (tk.conv2d(1, 6, 6, 4, 4, kernel=(3, 1)), "gemmini", "one kernel_dim"),
    (tk.depthwise_conv2d(1, 6, 6, 4, kernel=(1, 3)), "gemmini", "tiled_conv_dw_auto takes one kernel_dim"),
    (tk.resadd(1, 4, 4, 4, out_dtype="int32"), "gemmini", "tiled_resadd_auto writes int8 outputs only"),
    # what tiled_matmul's and tiled_conv's assertions refuse
    (tk.matmul(64, 64, 64), LibraryMatmul(2, 2, 17), "larger than"),               # K has 16 blocks
    (tk.matmul(64, 64, 64), LibraryMatmul(4, 4, 16), "does not fit tiny"),         # 128 acc rows of 32
    (tk.conv2d(1, 8, 8, 4, 4), LibraryConv(1, 8, 8, 4, 3, 3, 4), "does not fit tiny"),   # 64 acc rows
    (tk.resadd(1, 4, 4, 4), dict(call="tiled_matmul_auto", tile_i=1, tile_j=1, tile_k=1), "call for a matmul"),
])
def test_what_gemmini_h_refuses_is_named(op: Op, schedule: object, message: str) -> None:
    with pytest.raises(ScheduleError, match=message):
        tk.compile(op, "tiny", schedule)
