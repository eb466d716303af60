"""cocotb test of the conv loop unroller (loop_conv) alone: LOOP_CONV_WS programs in, words out.

Each program (tests/rtl/conv_words.py: the words gemmini.h's tiled_conv issues, one or more loops)
is fed with other instructions before and after it; LoopConv's training flags (wrot180,
input_dilated, the trans_* layouts) among them. The words that come out are sorted by the
sequencer that sends them (bias: mvin3 and its config_ld, input: mvin, weights: mvin2, execute:
preload/compute, store: mvout) and each stream is compared, in order, with the reference
unroller's (isa.loop_unroll); instructions that are not loop words come out as they went in,
after the loops before them. The consumer takes a word at random, and the queues of dispatch
have room at random."""
from __future__ import annotations

import random

import cocotb

from conv_words import FLAG_CONVS, loop_words
from isa import ConfigEx, ConfigSt, Fence, HardwareConfig, Mvin, encode
from isa.encoding import decode
from isa.loop_unroll import Unroller
from unit_bench import INSN, insn_word, next_cycle, reset, settle, unpack

BUFS = {"input": 0x1000, "weight": 0x20000, "bias": 0x30000, "output": 0x40000}

CONVS = {   # tiles sized to the tiny preset: a loop's outputs fit half the accumulator (32 rows)
    "3x3 pad 1, odd channels": dict(batch=1, in_h=5, in_w=5, in_c=3, out_c=5, k=3, stride=1, pad=1, pochs=4),
    "stride 2, channel tiles": dict(batch=1, in_h=7, in_w=6, in_c=6, out_c=7, k=3, stride=2, pad=1,
                                    pochs=4, kchs=4),
    "pixel repeats, no bias": dict(batch=1, in_h=6, in_w=6, in_c=2, out_c=4, k=3, stride=1, pad=1, bias=False,
                                   porows=3),
    "depthwise": dict(batch=1, in_h=5, in_w=5, in_c=3, out_c=3, k=3, stride=1, pad=1, dw=True),
    "downsample, 2 images": dict(batch=2, in_h=8, in_w=8, in_c=5, out_c=6, k=1, stride=2, pad=0, pochs=4),
    "row tiles, reuse": dict(batch=2, in_h=6, in_w=5, in_c=4, out_c=3, k=2, stride=1, pad=0, porows=2,
                             reuse=True),
    "dilation 2": dict(batch=1, in_h=7, in_w=7, in_c=3, out_c=2, k=3, stride=1, pad=2, dilation=2, porows=4),
    "kernel tiles": dict(batch=1, in_h=6, in_w=7, in_c=5, out_c=9, k=3, stride=1, pad=1, krows=2, kcols=2,
                         kchs=3, pochs=8, porows=3, pocols=4),
}


def unit_of(funct: int, rs1: int) -> str:
    """The sequencer of an unrolled word (config_ld by its state; execute's config_ex sets only strides)."""
    if funct == 0 and rs1 & 3 == 1:
        return ("input", "weights", "bias")[(rs1 >> 3) & 3]
    if funct == 0 and rs1 & 3 == 0 and decode(funct, rs1, 0).set_only_strides:
        return "ex"
    return {2: "input", 1: "weights", 14: "bias", 6: "ex", 4: "ex", 5: "ex", 3: "st"}.get(funct, "pass")


def expected(program: list, unroller: Unroller) -> tuple[dict[str, list], list]:
    """Per sequencer, the words of all loops in order; and the program's other words, each with the
    number of unrolled words before it (those of the loops fed before it). The unroller carries
    the slots and accumulator halves from program to program, as the RTL does."""
    streams, passed, words = {}, [], 0
    for ins in program:
        prims = unroller.feed(ins)
        if prims is None:
            passed.append((tuple(int(w) for w in encode(ins)), words))
            continue
        for prim in prims:
            word = tuple(int(w) for w in encode(prim))
            streams.setdefault(unit_of(word[0], word[1]), []).append(word)
            words += 1
    return streams, passed


async def run_program(dut, program: list, unroller: Unroller, rng: random.Random) -> None:
    want, want_passed = expected(program, unroller)
    got: dict[str, list] = {}
    got_passed, words, pc = [], 0, 0
    for _ in range(200_000):
        offer = pc < len(program)
        dut.cmd_valid_i.value = int(offer)
        if offer:
            dut.cmd_i.value = insn_word(program[pc])
        # the next stage (LoopMatmul) takes a command whenever it is free: an unrolled command
        # then always (the unroller offers it only while its queue has room)
        free = int(rng.random() < 0.75)
        dut.out_free_i.value = free
        dut.out_ready_i.value = free
        dut.room_i.value = sum(int(rng.random() < 0.8) << u for u in range(3))
        await settle()
        if offer and int(dut.cmd_ready_o.value):
            pc += 1
        if int(dut.out_valid_o.value) and int(dut.out_ready_i.value):
            w = unpack(INSN, int(dut.out_o.value))
            word = (w["funct"], w["rs1"], w["rs2"])
            if int(dut.busy_o.value):   # a loop runs: its words
                got.setdefault(unit_of(word[0], word[1]), []).append(word)
                words += 1
            else:
                got_passed.append((word, words))
        await next_cycle(dut)
        if pc == len(program) and not int(dut.busy_o.value) and not int(dut.out_valid_o.value):
            break
    assert pc == len(program), f"took {pc} of {len(program)} instructions"
    for unit in sorted(set(want) | set(got)):
        w, g = want.get(unit, []), got.get(unit, [])
        for i, (a, b) in enumerate(zip(w, g)):
            assert a == b, f"{unit} word {i}: got {b}, want {a}"
        assert len(w) == len(g), f"{unit}: got {len(g)} words, want {len(w)}"
    # other instructions: as they went in, in order, each after all words of the loops before it
    assert got_passed == want_passed, f"passed through: {got_passed}, want {want_passed}"


@cocotb.test()
async def conv_loops_unroll_as_gemmini(dut) -> None:
    dim, sp_rows, acc_rows = int(dut.DIM.value), int(dut.SP_ROWS.value), int(dut.ACC_ROWS.value)
    hw = HardwareConfig(name="bench", dim=dim, sp_kib=sp_rows * dim // 1024, sp_banks=2,
                        acc_kib=acc_rows * dim * 4 // 1024, acc_banks=2,
                        max_block_len=int(dut.MAX_BLOCK_LEN.value), dma_beat_bytes=4)
    rng, unroller = random.Random(5), Unroller(hw)
    await reset(dut, "cmd_valid_i", "out_ready_i", "out_free_i")
    for name, conv in (CONVS | FLAG_CONVS).items():
        dut._log.info("conv: %s", name)
        program = [ConfigSt(dram_stride=conv["out_c"]), ConfigEx(a_stride=conv["stride"]),
                   *loop_words(conv, hw, BUFS), Mvin(0x1000, 3, 1, 1), Fence()]
        await run_program(dut, program, unroller, rng)
