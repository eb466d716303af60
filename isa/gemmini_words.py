"""The words gemmini.h's tiled_matmul_outer sends for LOOP_WS: its config words (``ws_configs``) and
gemmini_loop_ws's six (``ws_loop``), from its arguments. Hand-built loop programs use them: the RTL's
LoopMatmul tests and the profile-guided build's training run (simulators/pgo.py)."""
from __future__ import annotations

from .instructions import ConfigEx, ConfigLd, ConfigSt, Instruction
from .loop_words import (LoopWs, LoopWsConfigAddrsAB, LoopWsConfigAddrsDC, LoopWsConfigBounds, LoopWsConfigStridesAB,
                         LoopWsConfigStridesDC)


def ws_loop(I: int, J: int, K: int, pad_I: int, pad_J: int, pad_K: int, A: int, B: int, D: int, C: int,
            A_stride: int, B_stride: int, D_stride: int, C_stride: int, *, full_C: int = 0, low_D: int = 0,
            ex_accumulate: int = 0, act: int = 0, a_spad_id: int = 0, b_spad_id: int = 0,
            is_resadd: int = 0, a_transpose: int = 0, b_transpose: int = 0) -> list[Instruction]:
    """gemmini_loop_ws: bounds and pads in blocks, addresses in bytes (0: skip), strides in elements."""
    return [LoopWsConfigBounds(pad_i=pad_I, pad_j=pad_J, pad_k=pad_K, i=I, j=J, k=K),
            LoopWsConfigAddrsAB(a=A, b=B), LoopWsConfigAddrsDC(d=D, c=C),
            LoopWsConfigStridesAB(a_stride=A_stride, b_stride=B_stride),
            LoopWsConfigStridesDC(d_stride=D_stride, c_stride=C_stride),
            LoopWs(ex_accumulate=ex_accumulate, full_c=full_C, low_d=low_D, act=act, a_spad_id=a_spad_id,
                   b_spad_id=b_spad_id, a_transpose=a_transpose, b_transpose=b_transpose, is_resadd=is_resadd)]


def ws_configs(dim: int, A_stride: int, B_stride: int, D_stride: int, C_stride: int, *, low_D: bool = False,
               full_C: bool = False, relu: bool = False, scale: float = 1.0, a_scale: float = 1.0,
               b_scale: float = 1.0, shrink_ab: bool = False, transpose: str | None = None) -> list[Instruction]:
    """config_ex (its transpose bit for ``transpose`` "a" or "b") and config_ld of states 0-2 (A, B, D;
    blocks dim rows apart) and config_st, strides in elements (the DRAM row strides in bytes follow
    from the element sizes)."""
    return [ConfigEx(activation=0, a_transpose=int(transpose == "a"), b_transpose=int(transpose == "b")),
            ConfigLd(dram_stride=A_stride, state=0, shrink=int(shrink_ab), block_stride=dim, scale=a_scale),
            ConfigLd(dram_stride=B_stride, state=1, shrink=int(shrink_ab), block_stride=dim, scale=b_scale),
            ConfigLd(dram_stride=D_stride * (1 if low_D else 4), state=2, shrink=int(low_D), block_stride=dim),
            ConfigSt(dram_stride=C_stride * (4 if full_C else 1), activation=int(relu), acc_scale=scale)]
