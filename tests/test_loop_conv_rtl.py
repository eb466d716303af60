"""LOOP_CONV_WS on the RTL: hand-built programs, the words gemmini.h's tiled_conv / tiled_conv_dw issue
(tests/rtl/conv_words.py), unrolled by rtl/loop_conv.sv and run through the whole accelerator on the
tiny preset, bit-exact with a numpy conv and with the functional model (which unrolls with
isa.loop_unroll). Its unit bench, word for word against isa.loop_unroll: tests/rtl/cocotb_loop_conv.py.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from isa import PRESETS
from simulators import base

sys.path.insert(0, str(Path(__file__).resolve().parent / "rtl"))
from conv_words import FLAG_CONVS, program, random_inputs, reference  # noqa: E402  (tests/rtl on sys.path)

TINY = PRESETS["tiny"]

# tiles sized to the tiny preset: a loop's outputs fit half the accumulator (32 rows)
CONVS = {
    "stride1_pad1_odd_channels": dict(batch=1, in_h=5, in_w=5, in_c=3, out_c=5, k=3, stride=1, pad=1, pochs=4,
                                      relu=True, scale=0.05),
    "stride2_channel_tiles": dict(batch=1, in_h=7, in_w=6, in_c=6, out_c=7, k=3, stride=2, pad=1, pochs=4, kchs=4,
                                  scale=0.03),
    "no_bias_relu_pixel_repeats": dict(batch=1, in_h=6, in_w=6, in_c=2, out_c=4, k=3, stride=1, pad=1,
                                       bias=False, relu=True, porows=3, scale=0.1),
    "first_layer_stride2_batch2": dict(batch=2, in_h=7, in_w=7, in_c=1, out_c=4, k=3, stride=2, pad=1, scale=0.2),
    "depthwise": dict(batch=1, in_h=5, in_w=5, in_c=3, out_c=3, k=3, stride=1, pad=1, dw=True, scale=0.1),
    "depthwise_stride2_no_bias": dict(batch=1, in_h=7, in_w=6, in_c=2, out_c=2, k=3, stride=2, pad=1, dw=True,
                                      bias=False, relu=True, scale=0.1),
    "downsample_batch2": dict(batch=2, in_h=8, in_w=8, in_c=5, out_c=6, k=1, stride=2, pad=0, pochs=4,
                              scale=0.05),
    "row_tiles_spad_reuse": dict(batch=2, in_h=6, in_w=5, in_c=4, out_c=3, k=2, stride=1, pad=0, porows=2,
                                 reuse=True, scale=0.05),
    "kernel_dilation2": dict(batch=1, in_h=7, in_w=7, in_c=3, out_c=2, k=3, stride=1, pad=2, dilation=2,
                             porows=4, scale=0.05),
    "kernel_and_channel_tiles": dict(batch=1, in_h=6, in_w=7, in_c=5, out_c=9, k=3, stride=1, pad=1, krows=2,
                                     kcols=2, kchs=3, pochs=8, porows=3, pocols=4, relu=True, scale=0.02),
    "no_first_layer_opt": dict(batch=1, in_h=6, in_w=6, in_c=2, out_c=3, k=3, stride=1, pad=1, porows=3,
                               first_layer=False, scale=0.1),
}


@pytest.mark.parametrize("name", list(FLAG_CONVS))
def test_conv_flags_functional(name: str) -> None:
    """The functional engine runs isa.loop_unroll's expansion of each flag (the checker checks every
    primitive), bit-exact with the numpy conv the flag means."""
    conv = FLAG_CONVS[name]
    inputs = random_inputs(conv, seed=len(name))
    res = base.run(program(conv, TINY), inputs, "functional")
    np.testing.assert_array_equal(res.outputs["output"], reference(conv, inputs))


@pytest.mark.parametrize("name", list(FLAG_CONVS))
def test_conv_flags_rtl(tiny_model, name: str) -> None:
    """The same convs unrolled by rtl/loop_conv.sv and run through the whole accelerator: the execute
    unit's transposes and strides (config_ex's set_only_strides among them) as the flags need them."""
    conv = FLAG_CONVS[name]
    inputs = random_inputs(conv, seed=len(name))
    want = reference(conv, inputs)
    res = base.run(program(conv, TINY), inputs, "verilator")
    np.testing.assert_array_equal(res.outputs["output"], want)
    assert res.counters["dma_bytes_written"] == want.size


@pytest.mark.parametrize("name", list(CONVS))
def test_conv_loop_bit_exact(tiny_model, name: str) -> None:
    conv = CONVS[name]
    prog = program(conv, TINY)
    inputs = random_inputs(conv, seed=len(name))
    want = reference(conv, inputs)
    res = base.run(prog, inputs, "verilator")
    np.testing.assert_array_equal(res.outputs["output"], want)
    np.testing.assert_array_equal(base.run(prog, inputs, "functional").outputs["output"], want)
    assert res.cycles > 0 and res.counters["dma_bytes_written"] == want.size
