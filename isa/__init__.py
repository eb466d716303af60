"""Instruction set of the Gemmini-style accelerator: config, instructions, encodings, programs."""
from .config import PRESETS, ConfigError, HardwareConfig
from .encoding import decode, decode_all, encode, encode_all
from .instructions import (
    ACC_BIT, ACCUM_BIT, FULL_BIT, GARBAGE, ROW_MASK, ComputeAccumulated, ComputePreloaded, ConfigEx, ConfigLd,
    ConfigNorm, ConfigSt, ConfigStScales, Fence, Flush, Instruction, ISAError, Mvin, Mvout, Preload, acc_addr, addr_row, is_acc,
    is_garbage, sp_addr,
)
from .buffers import Buffer, layout
from .loop_words import (
    LOOP_WORD_CLASSES, LoopConvWs, LoopConvWsConfig1, LoopConvWsConfig2, LoopConvWsConfig3, LoopConvWsConfig4,
    LoopConvWsConfig5, LoopConvWsConfig6, LoopError, LoopWord, LoopWs, LoopWsConfigAddrsAB, LoopWsConfigAddrsDC,
    LoopWsConfigBounds, LoopWsConfigStridesAB, LoopWsConfigStridesDC,
)
from .program import Program, parse_program
from .assembly import InstructionParser, format_instruction

__all__ = [
    "PRESETS", "ConfigError", "HardwareConfig", "decode", "decode_all", "encode", "encode_all",
    "ACC_BIT", "ACCUM_BIT", "FULL_BIT", "GARBAGE", "ROW_MASK", "ComputeAccumulated", "ComputePreloaded",
    "ConfigEx", "ConfigLd", "ConfigNorm", "ConfigSt", "ConfigStScales", "Fence", "Flush", "Instruction", "ISAError", "Mvin", "Mvout",
    "Preload", "acc_addr", "addr_row", "is_acc", "is_garbage", "sp_addr", "Buffer", "Program", "layout",
    "InstructionParser", "format_instruction", "parse_program",
    "LOOP_WORD_CLASSES", "LoopConvWs", "LoopConvWsConfig1", "LoopConvWsConfig2", "LoopConvWsConfig3",
    "LoopConvWsConfig4", "LoopConvWsConfig5", "LoopConvWsConfig6", "LoopError", "LoopWord", "LoopWs",
    "LoopWsConfigAddrsAB", "LoopWsConfigAddrsDC", "LoopWsConfigBounds", "LoopWsConfigStridesAB",
    "LoopWsConfigStridesDC",
]
