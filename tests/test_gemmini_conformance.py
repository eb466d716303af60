"""Our binary encoding is Gemmini's: the (funct, rs1, rs2) words gemmini.h emits for its calls.

The words are written out by hand from gemmini.h's macros (DIM = 16, GARBAGE_ADDR =
0xFFFFFFFF, WEIGHT_STATIONARY = 1, RELU = 1, float fields as their float32 bits), never
computed with our encoder. Each is checked both ways: ``encode(ins) == word`` and
``decode(*word) == ins``. The second table holds the calls we leave out (docs/fidelity.md,
"Departures from Gemmini"): our decoder rejects their words with a clear error.
"""
from __future__ import annotations

import pytest

from isa import (
    GARBAGE, ComputeAccumulated, ComputePreloaded, ConfigEx, ConfigLd, ConfigNorm, ConfigSt, Fence, Flush, ISAError, Mvin,
    Mvout, Preload, decode, encode,
)

# gemmini.h call -> ((funct, rs1, rs2), our instruction)
CONFORMING = {
    # config_ld: every form but extended5 writes pixel_repeats = 1 at rs1[15:8], block_mvin_stride = DIM
    "gemmini_config_ld(64)":
        ((0, 0x3F800000_00100101, 0x40), ConfigLd(64, state=0, shrink=0, block_stride=16, scale=1.0)),
    "gemmini_extended_config_ld(1000, -1.0)":
        ((0, 0xBF800000_00100101, 0x3E8), ConfigLd(1000, state=0, shrink=0, block_stride=16, scale=-1.0)),
    "gemmini_extended3_config_ld(32, 0.5, true, 1)":
        ((0, 0x3F000000_0010010D, 0x20), ConfigLd(32, state=1, shrink=1, block_stride=16, scale=0.5)),
    "gemmini_extended4_config_ld(128, 2.0, false, 48, 2)":
        ((0, 0x40000000_00300111, 0x80), ConfigLd(128, state=2, shrink=0, block_stride=48, scale=2.0)),
    "gemmini_extended5_config_ld(64, 1.0, false, 16, 1, 0)":
        ((0, 0x3F800000_00100101, 0x40), ConfigLd(64, state=0, shrink=0, block_stride=16, scale=1.0)),
    "gemmini_extended5_config_ld(64, 1.0, false, 16, 3, 0)":   # pixel_repeats at rs1[15:8]
        ((0, 0x3F800000_00100301, 0x40), ConfigLd(64, state=0, shrink=0, block_stride=16, scale=1.0,
                                                  pixel_repeats=3)),
    # config_ex: acc_scale bits at rs1[63:32], A stride [31:16], transposes [9:8], act [4:3], dataflow [2]
    "gemmini_config_ex(WEIGHT_STATIONARY, NO_ACTIVATION, 0)":
        ((0, 0x3F800000_00010004, 0x0001_0000_0000_0000),
         ConfigEx(dataflow=1, activation=0, a_stride=1, acc_scale=1.0, c_stride=1)),
    "gemmini_extended3_config_ex(WEIGHT_STATIONARY, RELU, 0, 0.25, 2, 3, true, false, false)":
        ((0, 0x3E800000_0003010C, 0x0002_0000_0000_0000),
         ConfigEx(dataflow=1, activation=1, a_transpose=1, b_transpose=0, a_stride=3, acc_scale=0.25, c_stride=2)),
    # config_st: rs1 = act << 2 | CONFIG_ST; rs2 = acc_scale bits << 32 | stride
    "gemmini_config_st(64)":
        ((0, 0x2, 0x3F800000_00000040), ConfigSt(dram_stride=64, activation=0, acc_scale=1.0)),
    "gemmini_extended_config_st(32, RELU, 0.125)":
        ((0, 0x6, 0x3E000000_00000020), ConfigSt(dram_stride=32, activation=1, acc_scale=0.125)),
    # with pooling: rs1 = ocols << 56 | orows << 48 | pocols << 40 | porows << 32 | pool_out_dim << 24 | lpad << 10
    #   | upad << 8 | pool_size << 6 | pool_stride << 4 | act << 2 | CONFIG_ST
    "gemmini_extended2_config_st(16, NO_ACTIVATION, 1.0, 2, 2, 8, 4, 4, 8, 8, 0, 0)":
        ((0, 0x0808_0404_0800_00A2, 0x3F800000_00000010),
         ConfigSt(16, 0, 1.0, pool_stride=2, pool_size=2, pool_out_dim=8, porows=4, pocols=4, orows=8, ocols=8)),
    # moves: rs1 = DRAM address, rs2 = rows << 48 | cols << 32 | local address
    "gemmini_mvin(0x1000, 0x20)":
        ((2, 0x1000, 0x0010_0010_0000_0020), Mvin(0x1000, 0x20, rows=16, cols=16, state=0)),
    "gemmini_extended_mvin(0x1000, 0x20, 7, 3)":
        ((2, 0x1000, 0x0003_0007_0000_0020), Mvin(0x1000, 0x20, rows=3, cols=7, state=0)),
    "gemmini_extended_mvin2(0x2040, 0x80000000, 4, 16)":
        ((1, 0x2040, 0x0010_0004_8000_0000), Mvin(0x2040, 0x80000000, rows=16, cols=4, state=1)),
    "gemmini_extended_mvin3(0x40, 0xC0000010, 64, 16)":
        ((14, 0x40, 0x0010_0040_C000_0010), Mvin(0x40, 0xC0000010, rows=16, cols=64, state=2)),
    "gemmini_mvout(0x3000, 0x80000100)":
        ((3, 0x3000, 0x0010_0010_8000_0100), Mvout(0x3000, 0x80000100, rows=16, cols=16)),
    "gemmini_extended_mvout(0x3000, 0xA0000000, 16, 16)":
        ((3, 0x3000, 0x0010_0010_A000_0000), Mvout(0x3000, 0xA0000000, rows=16, cols=16)),
    # preload and computes: rows << 48 | cols << 32 | address in both words
    "gemmini_extended_preload(0x100, 0xC0000000, 16, 16, 16, 16)":
        ((6, 0x0010_0010_0000_0100, 0x0010_0010_C000_0000), Preload(0x100, 16, 16, 0xC0000000, 16, 16)),
    "gemmini_extended_preload(0x100, 0x300, 5, 9, 6, 10)":
        ((6, 0x0009_0005_0000_0100, 0x000A_0006_0000_0300), Preload(0x100, 9, 5, 0x300, 10, 6)),
    "gemmini_preload_zeros(0x80000040)":
        ((6, 0x0010_0010_FFFF_FFFF, 0x0010_0010_8000_0040), Preload(GARBAGE, 16, 16, 0x80000040, 16, 16)),
    "gemmini_extended_compute_preloaded(0x200, GARBAGE_ADDR, 16, 12, 16, 16)":
        ((4, 0x000C_0010_0000_0200, 0x0010_0010_FFFF_FFFF), ComputePreloaded(0x200, 12, 16, GARBAGE, 16, 16)),
    "gemmini_compute_accumulated(0x210, GARBAGE_ADDR)":
        ((5, 0x0010_0010_0000_0210, 0x0010_0010_FFFF_FFFF), ComputeAccumulated(0x210, 16, 16, GARBAGE, 16, 16)),
    "gemmini_flush(0)": ((7, 0x0, 0x0), Flush()),
    # config_norm (CONFIG_BERT): q_const << 32 | q_const_type << 18 | set_stats_id_only << 17 | act_msb << 16 |
    # stat_id << 8 | 3; rs2 = (uint32) qc << 32 | (uint32) qb. tiled_matmul_outer's SOFTMAX and IGELU words, and
    # sp_tiled_norm's stat id word
    "gemmini_config_norm(13, 0, 0, 1, 0, 27, 383)":
        ((0, 0x0000_000D_0001_0003, 0x0000_017F_0000_001B), ConfigNorm(act_msb=1, q_const=13, qb=27, qc=383)),
    "gemmini_config_norm(0, 0, 0, 0, 0, -125, -17313)":
        ((0, 0x3, 0xFFFF_BC5F_FFFF_FF83), ConfigNorm(qb=-125, qc=-17313)),
    "gemmini_config_norm(0, 0, 1, 0, 2, 0, 0)": ((0, 0x2_0203, 0x0), ConfigNorm(stat_id=2, set_stats_id_only=1)),
    # a normalizing mvout: sp_tiled_norm's C_sp_addr_start (accumulator, accumulate) | norm_cmd << 26
    "gemmini_extended_mvout(0x3000, 0xC0000000 | 2 << 26 | 5, 16, 1)":
        ((3, 0x3000, 0x0001_0010_C800_0005), Mvout(0x3000, 0xC8000005, rows=1, cols=16)),
}

# gemmini.h call -> ((funct, rs1, rs2), what our decoder says)
LEFT_OUT = {
    "gemmini_counter_access(...) (k_COUNTER)": ((126, 0x0, 0x0), "unknown funct 126"),
}


@pytest.mark.parametrize("call", CONFORMING)
def test_encode_gives_gemminis_words(call: str) -> None:
    word, ins = CONFORMING[call]
    assert encode(ins) == word


@pytest.mark.parametrize("call", CONFORMING)
def test_decode_reads_gemminis_words(call: str) -> None:
    word, ins = CONFORMING[call]
    assert decode(*word) == ins


@pytest.mark.parametrize("call", LEFT_OUT)
def test_left_out_calls_are_rejected_by_name(call: str) -> None:
    word, message = LEFT_OUT[call]
    with pytest.raises(ISAError, match=message):
        decode(*word)


def test_fence_is_a_program_file_pseudo_instruction() -> None:
    """gemmini_fence() is the RISC-V fence, not a RoCC word; our program files write it as funct 127."""
    assert encode(Fence()) == (127, 0, 0) and decode(127, 0, 0) == Fence()
