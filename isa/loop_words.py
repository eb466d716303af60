"""Gemmini's CISC loop words: LOOP_WS (funct 8, configs 9-13) and LOOP_CONV_WS (funct 15, configs 16-21).

Each word's bit layout is written once, in ``LAYOUTS``: the encoder, the decoder, the
assembly text and the RTL's generated decode all read it. The layouts are exactly what
``gemmini_loop_ws`` and ``gemmini_loop_conv_ws`` in gemmini.h (ucb-bar/gemmini-rocc-tests
180c468) write, and what LoopMatmul / LoopConv (ucb-bar/gemmini 641fefb) read.

A DRAM address of 0 in a loop word means "skip this phase" (the operand is already
resident, there is no bias, or the output is not stored yet), as in Gemmini.
"""
from __future__ import annotations

from dataclasses import dataclass

from .instructions import Instruction, ISAError
from .opcodes import Funct


@dataclass(frozen=True, slots=True)
class Field:
    """``width`` bits of ``word`` ("rs1" or "rs2") from bit ``lo``; ``dram`` fields are byte addresses."""

    name: str
    word: str
    lo: int
    width: int
    dram: bool = False

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1


def _f(word: str, spec: str) -> tuple[Field, ...]:
    """'name:lo:width ...' -> fields of one word (a trailing '@' marks a DRAM address)."""
    out = []
    for item in spec.split():
        name, lo, width = item.rstrip("@").split(":")
        out.append(Field(name, word, int(lo), int(width), item.endswith("@")))
    return tuple(out)


# The operand word of mvin, mvout, preload and the computes: a local address, columns, rows.
OPERAND: tuple[Field, ...] = _f("rs", "addr:0:32 cols:32:16 rows:48:16")

# funct -> the fields of (rs1, rs2), low bits first.
LAYOUTS: dict[int, tuple[Field, ...]] = {
    Funct.LOOP_WS_CONFIG_BOUNDS: _f("rs1", "pad_i:0:16 pad_j:16:16 pad_k:32:16")
    + _f("rs2", "i:0:16 j:16:16 k:32:16"),
    Funct.LOOP_WS_CONFIG_ADDRS_AB: _f("rs1", "a:0:64@") + _f("rs2", "b:0:64@"),
    Funct.LOOP_WS_CONFIG_ADDRS_DC: _f("rs1", "d:0:64@") + _f("rs2", "c:0:64@"),
    Funct.LOOP_WS_CONFIG_STRIDES_AB: _f("rs1", "a_stride:0:64") + _f("rs2", "b_stride:0:64"),
    Funct.LOOP_WS_CONFIG_STRIDES_DC: _f("rs1", "d_stride:0:64") + _f("rs2", "c_stride:0:64"),
    Funct.LOOP_WS: _f("rs1", "ex_accumulate:0:1 full_c:1:1 low_d:2:1 act:8:3 b_spad_id:16:2 a_spad_id:18:2")
    + _f("rs2", "a_transpose:0:1 b_transpose:1:1 is_resadd:2:1"),
    Funct.LOOP_CONV_WS_CONFIG_1: _f("rs1", "batch_size:0:16 in_row_dim:16:16 in_channels:32:16 out_channels:48:16")
    + _f("rs2", "out_row_dim:0:16 pool_out_row_dim:16:16 out_col_dim:32:16 stride:48:8 padding:56:8"),
    Funct.LOOP_CONV_WS_CONFIG_2: _f("rs1", "pool_padding:0:8 pool_stride:8:8 pool_size:16:16 pool_out_col_dim:32:16 "
                                          "kernel_dim:48:16")
    + _f("rs2", "pochs:0:16 pocols:16:16 porows:32:16 batches:48:16"),
    Funct.LOOP_CONV_WS_CONFIG_3: _f("rs1", "lpad:0:16 kchs:16:16 kcols:32:16 krows:48:16")
    + _f("rs2", "in_col_dim:0:16 plpad:16:8 dpad:24:8 upad:32:16 rpad:48:16"),
    Funct.LOOP_CONV_WS_CONFIG_4: _f("rs1", "kernel_dilation:0:10 pdpad:10:11 pupad:21:11 prpad:32:16 orows:48:16")
    + _f("rs2", "ocols:0:16 out_stride:16:16 weight_stride:32:16 in_stride:48:16"),
    Funct.LOOP_CONV_WS_CONFIG_5: _f("rs1", "weights_addr:0:64@") + _f("rs2", "output_addr:0:64@"),
    Funct.LOOP_CONV_WS_CONFIG_6: _f("rs1", "bias_addr:0:64@") + _f("rs2", "input_addr:0:64@"),
    Funct.LOOP_CONV_WS: _f("rs1", "no_bias:0:1 wrot180:1:1 trans_output_1203:2:1 trans_weight_1203:3:1 "
                                  "trans_weight_0132:4:1 trans_input_3120:5:1 dw:6:1 max_pixels_per_row:8:8 "
                                  "b_spad_id:16:2 a_spad_id:18:2")
    + _f("rs2", "no_pool:0:1 downsample:1:1 input_dilated:2:1 activation:3:2"),
}


@dataclass(frozen=True, slots=True)
class LoopWord(Instruction):
    """Base of the loop words: fields, range checks and encoding come from ``LAYOUTS``."""

    def __post_init__(self) -> None:
        name = type(self).__name__
        for f in LAYOUTS[self.FUNCT]:
            value = getattr(self, f.name)
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= f.mask:
                raise ISAError(f"{name}.{f.name}={value!r} out of range (unsigned {f.width}-bit)")

    def words(self) -> tuple[int, int]:
        rs = {"rs1": 0, "rs2": 0}
        for f in LAYOUTS[self.FUNCT]:
            rs[f.word] |= getattr(self, f.name) << f.lo
        return rs["rs1"], rs["rs2"]

    @classmethod
    def from_words(cls, rs1: int, rs2: int) -> "LoopWord":
        layout = LAYOUTS[cls.FUNCT]
        for word, value in (("rs1", rs1), ("rs2", rs2)):
            used = sum(f.mask << f.lo for f in layout if f.word == word)
            if value & ~used:
                raise ISAError(f"{cls.OP}: reserved bits {value & ~used:#x} set in {word}")
        return cls(**{f.name: ((rs1 if f.word == "rs1" else rs2) >> f.lo) & f.mask for f in layout})


def _word(cls_name: str, op: str, funct: Funct) -> type[LoopWord]:
    """A frozen dataclass with one int field (default 0) per field of ``funct``'s layout."""
    ns = {"__annotations__": {f.name: int for f in LAYOUTS[funct]}, **{f.name: 0 for f in LAYOUTS[funct]},
          "OP": op, "FUNCT": funct, "__module__": __name__,
          "__doc__": f"gemmini.h's {funct.name} word (funct {int(funct)})."}
    return dataclass(frozen=True, slots=True)(type(cls_name, (LoopWord,), ns))


LoopWsConfigBounds = _word("LoopWsConfigBounds", "loop_ws_bounds", Funct.LOOP_WS_CONFIG_BOUNDS)
LoopWsConfigAddrsAB = _word("LoopWsConfigAddrsAB", "loop_ws_addrs_ab", Funct.LOOP_WS_CONFIG_ADDRS_AB)
LoopWsConfigAddrsDC = _word("LoopWsConfigAddrsDC", "loop_ws_addrs_dc", Funct.LOOP_WS_CONFIG_ADDRS_DC)
LoopWsConfigStridesAB = _word("LoopWsConfigStridesAB", "loop_ws_strides_ab", Funct.LOOP_WS_CONFIG_STRIDES_AB)
LoopWsConfigStridesDC = _word("LoopWsConfigStridesDC", "loop_ws_strides_dc", Funct.LOOP_WS_CONFIG_STRIDES_DC)
LoopWs = _word("LoopWs", "loop_ws", Funct.LOOP_WS)
LoopConvWsConfig1 = _word("LoopConvWsConfig1", "loop_conv_ws_config1", Funct.LOOP_CONV_WS_CONFIG_1)
LoopConvWsConfig2 = _word("LoopConvWsConfig2", "loop_conv_ws_config2", Funct.LOOP_CONV_WS_CONFIG_2)
LoopConvWsConfig3 = _word("LoopConvWsConfig3", "loop_conv_ws_config3", Funct.LOOP_CONV_WS_CONFIG_3)
LoopConvWsConfig4 = _word("LoopConvWsConfig4", "loop_conv_ws_config4", Funct.LOOP_CONV_WS_CONFIG_4)
LoopConvWsConfig5 = _word("LoopConvWsConfig5", "loop_conv_ws_config5", Funct.LOOP_CONV_WS_CONFIG_5)
LoopConvWsConfig6 = _word("LoopConvWsConfig6", "loop_conv_ws_config6", Funct.LOOP_CONV_WS_CONFIG_6)
LoopConvWs = _word("LoopConvWs", "loop_conv_ws", Funct.LOOP_CONV_WS)

LOOP_WS_WORDS = (LoopWsConfigBounds, LoopWsConfigAddrsAB, LoopWsConfigAddrsDC, LoopWsConfigStridesAB,
                 LoopWsConfigStridesDC, LoopWs)
LOOP_CONV_WORDS = (LoopConvWsConfig1, LoopConvWsConfig2, LoopConvWsConfig3, LoopConvWsConfig4,
                   LoopConvWsConfig5, LoopConvWsConfig6, LoopConvWs)
LOOP_WORD_CLASSES: tuple[type[LoopWord], ...] = LOOP_WS_WORDS + LOOP_CONV_WORDS
BY_FUNCT: dict[int, type[LoopWord]] = {cls.FUNCT: cls for cls in LOOP_WORD_CLASSES}


def dram_fields(cls: type[LoopWord]) -> tuple[str, ...]:
    return tuple(f.name for f in LAYOUTS[cls.FUNCT] if f.dram)


class LoopError(ISAError):
    """A loop this hardware cannot unroll: a bad bound, a field not implemented, a config word missing."""


def dram_at(base: int, offset: int) -> int:
    """``base`` plus a byte offset cast to 32 bits, as LoopMatmul/LoopConv.castDramOffset do."""
    return (base + (offset & 0xFFFFFFFF)) & ((1 << 64) - 1)


# config_ld (funct 0, rs1[1:0] = 1), as Gemmini's ConfigMvinRs1 lays it out: isa.encoding writes
# the same bits; the RTL's loop unrollers build the config_ld words they issue from this table.
CONFIG_LD: tuple[Field, ...] = _f("rs1", "kind:0:2 shrink:2:1 state:3:2 pixel_repeats:8:8 block_stride:16:16 "
                                         "scale:32:32") + _f("rs2", "dram_stride:0:64")

# config_ex (funct 0, rs1[1:0] = 0), as gemmini.h's gemmini_extended3_config_ex lays it out (activation
# 2 bits wide, as Gemmini's; ours has 0 and 1): isa.encoding writes these bits; the RTL's execute unit
# and the conv unroller's config_ex (set_only_strides: only the strides change) use the structs
# generated from this table.
CONFIG_EX: tuple[Field, ...] = _f("rs1", "kind:0:2 dataflow:2:1 activation:3:2 set_only_strides:7:1 a_transpose:8:1 "
                                         "b_transpose:9:1 a_stride:16:16 acc_scale:32:32") \
    + _f("rs2", "in_shift:0:32 c_stride:48:16")

# config_st (funct 0, rs1[1:0] = 2), as Gemmini's ConfigMvoutRs1/Rs2 lay it out (gemmini.h's
# gemmini_extended2_config_st): pooling is on when pool_stride is not 0. isa.encoding writes these bits;
# the RTL's store unit and dispatch read them through the structs generated from this table.
# out_offset (9-bit two's complement) and out_uint8 are the store-unit requantization extension
# (HardwareConfig.store_requant), which Gemmini lacks: they sit in bits its ConfigMvoutRs1 leaves unused.
CONFIG_ST: tuple[Field, ...] = _f("rs1", "kind:0:2 activation:2:2 pool_stride:4:2 pool_size:6:2 upad:8:2 lpad:10:2 "
                                         "out_offset:12:9 out_uint8:21:1 col_scales:22:1 "
                                         "pool_out_dim:24:8 porows:32:8 pocols:40:8 orows:48:8 ocols:56:8") \
    + _f("rs2", "dram_stride:0:32 scale:32:32")

# config_norm (funct 0, rs1[1:0] = 3), as gemmini.h's gemmini_config_norm writes it and Gemmini's
# ConfigNormRs1/Rs2 read it: the normalization unit's stat id, the activation's high bit (act_msb: SOFTMAX,
# 4, is config_st's activation 0 with it), I-exp's q_ln2 (q_const_type 0) or q_ln2_inv (1) in q_const, I-GELU's
# qb and qc; with set_stats_id_only only the stat id changes.
CONFIG_NORM: tuple[Field, ...] = _f("rs1", "kind:0:2 stat_id:8:8 act_msb:16:1 set_stats_id_only:17:1 q_const_type:18:1 "
                                           "q_const:32:32") + _f("rs2", "qb:0:32 qc:32:32")

# The column-scale extension (HardwareConfig.store_col_scales), which Gemmini lacks: a config_st with
# col_scales set scales lane i of the accumulator rows its mvouts store by entry i of the store unit's
# dim-entry scale vector, not by its own scale. A config_st word with rs1[23] (load_scales) set is not a
# store config but writes two entries of that vector, col and col + 1, from rs2's two float32 halves, so
# that dim / 2 words load a column block's scales (see isa.instructions.ConfigStScales).
CONFIG_ST_SCALES: tuple[Field, ...] = _f("rs1", "kind:0:2 load_scales:23:1 col:32:16") \
    + _f("rs2", "scale0:0:32 scale1:32:32")
