"""Hypothesis strategies for whole programs on the tiny preset: a fixed buffer table and
random instructions whose fields mostly land in range, so that the static checker accepts
many of them and rejects the rest for every reason it has. Steps include LOOP_WS loops."""
from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import strategies as st

from isa import (
    GARBAGE, PRESETS, ComputeAccumulated, ComputePreloaded, ConfigEx, ConfigLd, ConfigSt, Fence, Flush, Instruction,
    Mvin, Mvout, Preload, Program, acc_addr, layout,
)
from isa.loop_words import (
    LoopWs, LoopWsConfigAddrsAB, LoopWsConfigAddrsDC, LoopWsConfigBounds, LoopWsConfigStridesAB,
    LoopWsConfigStridesDC,
)

HW = PRESETS["tiny"]                       # dim 4, 1024 scratchpad rows, 64 accumulator rows, blocks of 2
BUFFERS = layout([("X", "input", "int8", (8, 8)), ("Y", "input", "int32", (4, 8)),
                  ("O", "output", "int8", (8, 8)), ("P", "output", "int32", (4, 8))])
DRAM_SIZE = max(b.end for b in BUFFERS.values())

SCALES = st.sampled_from([1.0, 0.5, 0.37, 2.0, -1.25, 0.011])
SP = st.integers(0, 24)
ACC = st.integers(0, 16)
SMALL = st.integers(1, 4)
DRAM = st.integers(0, DRAM_SIZE - 1)
SP_OR_GARBAGE = st.one_of(SP, st.just(GARBAGE))
WRITE_LOCAL = st.one_of(SP, st.just(GARBAGE),
                        st.builds(lambda r, a: acc_addr(r, accumulate=a), ACC, st.booleans()))
READ_LOCAL = st.one_of(SP, st.builds(lambda r, f: acc_addr(r, full=f), ACC, st.booleans()))

CONFIG_LD = st.builds(ConfigLd, dram_stride=st.sampled_from([0, 4, 8, 16, 32]), state=st.integers(0, 2),
                      shrink=st.integers(0, 1), block_stride=st.integers(0, 10), scale=SCALES,
                      pixel_repeats=st.sampled_from([1, 1, 1, 2, 3]))
CONFIG_EX = st.builds(ConfigEx, activation=st.integers(0, 1), a_stride=st.integers(0, 3), acc_scale=SCALES,
                      c_stride=st.integers(0, 2))
CONFIG_ST = st.builds(ConfigSt, dram_stride=st.sampled_from([4, 8, 16, 32]), activation=st.integers(0, 1),
                      acc_scale=SCALES)
MVIN = st.builds(Mvin, dram=st.one_of(DRAM, st.just(0)), local=WRITE_LOCAL, rows=SMALL, cols=st.integers(1, 8),
                 state=st.integers(0, 2))   # DRAM 0 loads zeros
# wider: block mvout. Not DRAM address 0: an mvin reads zeros there, but an mvout writes it, and a C program
# (test_cosim_words) cannot relocate 0 into its image, so it would write the process's address 0
MVOUT = st.builds(Mvout, dram=st.integers(1, DRAM_SIZE - 1), local=READ_LOCAL, rows=SMALL, cols=st.integers(1, 8))
PRELOAD = st.builds(Preload, b=SP_OR_GARBAGE, b_rows=SMALL, b_cols=SMALL, c=WRITE_LOCAL, c_rows=SMALL, c_cols=SMALL)
COMPUTE = st.builds(lambda cls, *args: cls(*args), st.sampled_from([ComputePreloaded, ComputeAccumulated]),
                    SP_OR_GARBAGE, SMALL, SMALL, SP_OR_GARBAGE, SMALL, SMALL)


@st.composite
def loop_ws(draw: st.DrawFn) -> list[Instruction]:
    """One LOOP_WS over the buffers (A, B from X; D from Y or none; C into O, P or nowhere), usually with
    the config_ld/config_st its strides need; bounds, pads, flags and spad ids at random."""
    i, j, k = (draw(st.integers(1, 2)) for _ in range(3))
    pads = [draw(st.integers(0, 3)) for _ in range(3)]
    full_c, low_d = draw(st.integers(0, 1)), draw(st.integers(0, 1))
    d = draw(st.sampled_from([0, BUFFERS["Y"].addr, BUFFERS["X"].addr]))
    c = draw(st.sampled_from([0, BUFFERS["P" if full_c else "O"].addr]))
    d_stride = draw(st.sampled_from([0, 8]))
    configs = [ConfigLd(8, 0, block_stride=4), ConfigLd(8, 1, block_stride=4),
               ConfigLd(d_stride * (1 if low_d else 4), 2, shrink=low_d, block_stride=4),
               ConfigSt(32 if full_c else 8, activation=draw(st.integers(0, 1)), acc_scale=draw(SCALES))]
    words = [LoopWsConfigBounds(*pads, i, j, k),
             LoopWsConfigAddrsAB(*(draw(st.sampled_from([0, BUFFERS["X"].addr])) for _ in "ab")),
             LoopWsConfigAddrsDC(d, c), LoopWsConfigStridesAB(8, 8), LoopWsConfigStridesDC(d_stride, 8),
             LoopWs(ex_accumulate=draw(st.integers(0, 1)), full_c=full_c, low_d=low_d,
                    a_spad_id=draw(st.integers(0, 2)), b_spad_id=draw(st.integers(0, 2)),
                    is_resadd=draw(st.sampled_from([0, 0, 0, 1])))]
    return (configs if draw(st.integers(0, 3)) else []) + words


# a preload and its compute usually come together; a lone one tests the sequencing rules
STEP = st.one_of(MVIN.map(lambda i: [i]), MVOUT.map(lambda i: [i]), st.tuples(PRELOAD, COMPUTE).map(list),
                 st.sampled_from([[Fence()], [Flush()]]), st.one_of(CONFIG_LD, CONFIG_EX, CONFIG_ST).map(lambda i: [i]),
                 st.one_of(PRELOAD, COMPUTE).map(lambda i: [i]), loop_ws())


@st.composite
def programs(draw: st.DrawFn, max_steps: int = 16) -> Program:
    """A config preamble (so most later instructions have their config) and random steps."""
    preamble = [dataclasses.replace(draw(CONFIG_LD), state=s) for s in range(3)]
    preamble += [ConfigEx(), draw(CONFIG_ST)]
    steps = draw(st.lists(STEP, min_size=1, max_size=max_steps))
    return Program(HW, preamble + [ins for step in steps for ins in step], dict(BUFFERS))


def inputs_for(prog: Program, seed: int = 0) -> dict[str, np.ndarray]:
    """Random data for every input buffer of ``prog``, over the whole range of its dtype."""
    rng = np.random.default_rng(seed)
    info = {"int8": np.iinfo(np.int8), "int32": np.iinfo(np.int32)}
    return {b.name: rng.integers(info[b.dtype].min, info[b.dtype].max, b.shape, dtype=np.int64,
                                 endpoint=True).astype(b.dtype)
            for b in prog.buffers.values() if b.role == "input"}
