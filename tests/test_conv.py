"""conv2d and depthwise conv2d: references, schedules, lowering, bit-exact runs on the functional model."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import toolkit as tk
from helpers import assert_exact
from isa import ConfigLd, Fence, Mvin, Mvout
from toolkit.conv.heuristic import (default_conv_schedule, forget_tile_costs, gemmini_conv_schedule,
                                    kept_conv_cycles, pipelined_conv_cycles)
from toolkit.conv.schedule import ConvSchedule, DepthwiseSchedule
from toolkit.conv.tiles import axis_layout
from toolkit.kinds import from_dict
from toolkit.schedule import ScheduleError


def run_exact_if_fits(op: tk.Op, hw, schedule) -> None:
    """A drawn schedule that does not fit is not an example (hypothesis draws another); one that
    fits must run bit-exact."""
    try:
        schedule.memory_plan(hw, op)
    except ScheduleError:
        assume(False)
    assert_exact(op, hw, schedule)


def test_keys_list_the_sizes_first_then_the_shared_fields() -> None:
    """Tuning records are stored under op.key: the shared keyword-only fields of ConvOp must not move
    ahead of the sizes, or every existing record would be orphaned."""
    conv = tk.conv2d(1, 8, 8, 16, 8, kernel=1, padding=0, bias="channel")
    assert conv.key == ("conv2d(batch=1,in_h=8,in_w=8,in_c=16,out_c=8,kernel=(1, 1),stride=1,padding=0,"
                        "bias=channel,activation=none,scale=1.0,out_dtype=int8)")
    dw = tk.depthwise_conv2d(2, 9, 9, 8, stride=2)
    assert dw.key == ("depthwise(batch=2,in_h=9,in_w=9,channels=8,kernel=(3, 3),stride=2,padding=1,"
                      "bias=None,activation=none,scale=1.0,out_dtype=int8)")
    assert from_dict(json.loads(json.dumps(conv.to_dict()))) == conv
    assert (conv.macs, dw.macs) == (8 * 8 * 16 * 8, 2 * 5 * 5 * 9 * 8)


def mvin_spans(prog: tk.Program) -> list[tuple[int, int, int]]:
    """(first byte, last byte, state) each mvin reads in DRAM, following the config_ld state."""
    ld: dict[int, ConfigLd] = {}
    spans = []
    for ins in prog.instructions:
        if isinstance(ins, ConfigLd):
            ld[ins.state] = ins
        elif isinstance(ins, Mvin):
            cfg = ld[ins.state]
            itemsize = 4 if (ins.local >> 31) & 1 and not cfg.shrink else 1
            spans.append((ins.dram, ins.dram + (ins.rows - 1) * cfg.dram_stride + ins.cols * itemsize - 1, ins.state))
    return spans


@st.composite
def conv_ops(draw, depthwise: bool = False):
    kh, kw = draw(st.sampled_from([1, 2, 3, 4, 7])), draw(st.sampled_from([1, 2, 3, 5]))
    padding = draw(st.integers(0, 3))
    stride = draw(st.integers(1, 3))
    h = draw(st.integers(max(1, kh - 2 * padding), 9))
    w = draw(st.integers(max(1, kw - 2 * padding), 9))
    batch = draw(st.integers(1, 2))
    epi = dict(bias=draw(st.sampled_from([None, "channel"])), kernel=(kh, kw), stride=stride, padding=padding)
    out_dtype = draw(st.sampled_from(["int8", "int32"]))
    epi.update(out_dtype=out_dtype, activation=draw(st.sampled_from(["none", "relu"])),
               scale=1.0 if out_dtype == "int32" else draw(st.sampled_from([1.0, 0.37, 0.002])))
    if depthwise:
        return tk.depthwise_conv2d(batch, h, w, draw(st.integers(1, 10)), **epi)
    return tk.conv2d(batch, h, w, draw(st.integers(1, 10)), draw(st.integers(1, 10)), **epi)


# ---- references -----------------------------------------------------------------------------
def test_conv2d_reference_is_a_direct_convolution() -> None:
    op = tk.conv2d(2, 5, 6, 3, 4, kernel=(3, 2), stride=2, padding=1, bias="channel")
    x = op.random_inputs(3)
    xp = np.pad(x["input"].astype(np.int64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    want = np.zeros((2, op.out_h, op.out_w, 4), dtype=np.int64)
    for n, oh, ow, k in np.ndindex(want.shape):
        patch = xp[n, oh * 2:oh * 2 + 3, ow * 2:ow * 2 + 2, :]
        want[n, oh, ow, k] = (patch * x["weight"][..., k]).sum() + x["bias"][k]
    np.testing.assert_array_equal(op.accumulate(x), want)
    assert op.output_specs()["output"][0] == (2, 3, 4, 4)


def test_depthwise_reference_is_per_channel() -> None:
    op = tk.depthwise_conv2d(1, 4, 4, 3, kernel=3, stride=1, padding=1)
    x = op.random_inputs(1)
    for c in range(3):
        single = tk.conv2d(1, 4, 4, 1, 1, kernel=3, stride=1, padding=1)
        got = single.accumulate({"input": x["input"][..., c:c + 1], "weight": x["weight"][..., c:c + 1, None]})
        np.testing.assert_array_equal(op.accumulate(x)[..., c], got[..., 0])


# ---- bit-exact runs -------------------------------------------------------------------------------
@given(conv_ops())
def test_conv2d_bit_exact(op) -> None:
    assert_exact(op, "tiny")


@given(conv_ops(depthwise=True))
def test_depthwise_bit_exact(op) -> None:
    assert_exact(op, "tiny")


@pytest.mark.parametrize("op", [
    tk.conv2d(1, 8, 8, 6, 6, kernel=1, stride=2, padding=0),                      # downsample 1x1
    tk.conv2d(1, 11, 9, 3, 5, kernel=7, stride=2, padding=3, bias="channel"),     # ResNet stem shape
    tk.conv2d(3, 5, 5, 9, 7, kernel=3, stride=1, padding=1, activation="relu", scale=0.01),
    tk.conv2d(1, 4, 4, 5, 6, kernel=3, stride=1, padding=3),                      # outputs from padding only
    tk.conv2d(2, 6, 6, 4, 4, kernel=1, stride=1, padding=0),                      # runs merge across rows
], ids=lambda op: op.key)
def test_conv2d_shapes(tiny, op) -> None:
    assert_exact(op, tiny)


@pytest.mark.slow
@given(op=conv_ops(), data=st.data())
def test_conv2d_any_schedule(tiny, op, data) -> None:
    d = tiny.dim
    knobs = dict(tile_b=data.draw(st.integers(1, op.batch)), tile_oh=data.draw(st.integers(1, op.out_h)),
                 tile_ow=data.draw(st.integers(1, op.out_w)), tile_k=data.draw(st.integers(1, -(-op.out_c // d))),
                 tile_kh=data.draw(st.integers(1, op.kernel[0])), tile_kw=data.draw(st.integers(1, op.kernel[1])),
                 tile_c=data.draw(st.integers(1, -(-op.in_c // d))),
                 loop_order="".join(data.draw(st.permutations("bhwk"))),
                 double_buffer=data.draw(st.booleans()), mvin_blocks=data.draw(st.integers(1, 2)),
                 in_bank=data.draw(st.integers(0, 1)), w_bank=data.draw(st.integers(0, 1)),
                 acc_bank=data.draw(st.integers(0, 1)))
    sched = ConvSchedule(**knobs)
    run_exact_if_fits(op, tiny, sched)


@pytest.mark.slow
@given(op=conv_ops(depthwise=True), data=st.data())
def test_depthwise_any_schedule(tiny, op, data) -> None:
    knobs = dict(tile_b=data.draw(st.integers(1, op.batch)), tile_oh=data.draw(st.integers(1, op.out_h)),
                 tile_ow=data.draw(st.integers(1, op.out_w)), tile_c=data.draw(st.integers(1, -(-op.channels // 4))),
                 tile_kh=data.draw(st.integers(1, op.kernel[0])), tile_kw=data.draw(st.integers(1, op.kernel[1])),
                 loop_order="".join(data.draw(st.permutations("bhwc"))), double_buffer=data.draw(st.booleans()))
    sched = DepthwiseSchedule(**knobs)
    run_exact_if_fits(op, tiny, sched)


def test_conv2d_on_gemmini(gemmini) -> None:
    assert_exact(tk.conv2d(1, 14, 14, 40, 36, kernel=3, stride=1, padding=1, bias="channel", scale=0.001), gemmini)
    assert_exact(tk.depthwise_conv2d(1, 9, 9, 20, kernel=3, stride=2, padding=1), gemmini)


# ---- what the lowering emits ------------------------------------------------------------------------
@pytest.mark.parametrize("op", [
    tk.conv2d(2, 7, 7, 5, 3, kernel=3, stride=2, padding=3, bias="channel"),
    tk.conv2d(1, 5, 6, 3, 3, kernel=7, stride=1, padding=3),
    tk.depthwise_conv2d(1, 6, 6, 6, kernel=3, stride=1, padding=2),
], ids=lambda op: op.key)
def test_direct_conv_reads_only_inside_its_buffers(tiny, op) -> None:
    """No im2col buffer in DRAM, and padding is never read: every mvin stays within the buffer it names."""
    schedule = default_conv_schedule(op, tiny, pack_taps=False) if op.KIND == "conv2d" else None
    prog = assert_exact(op, tiny, schedule).program
    assert {b.name for b in prog.buffers.values()} == set(op.input_specs()) | set(op.output_specs())
    names = {0: "input", 1: "weight", 2: "bias"}
    for first, last, state in mvin_spans(prog):
        buf = prog.buffers[names[state]]
        assert buf.addr <= first and last < buf.end, (first, last, names[state])


def test_strided_mvins_gather_every_stride_th_pixel(tiny) -> None:
    op = tk.conv2d(1, 8, 8, 4, 4, kernel=1, stride=2, padding=0)
    prog = assert_exact(op, tiny).program
    loads = [i for i in prog.instructions if isinstance(i, ConfigLd) and i.state == 0]
    assert loads[0].dram_stride == op.stride * op.in_c
    # a 1x1 stride-2 conv loads only the pixels it uses: 16 of the 64
    assert sum(i.rows for i in prog.instructions if isinstance(i, Mvin) and i.state == 0) == 16


def test_axis_layout_phases() -> None:
    offset, index = axis_layout(0, 3, 0, 3, 2, 1)   # 3 outputs, kernel 3, stride 2, padding 1
    # phase 1 holds -1, 1, 3, 5; phase 0 holds 0, 2, 4: every input the taps read, once
    assert index.tolist() == [0, 2, 4, -1, 1, 3, 5]
    for k in range(3):
        assert [index[o + offset[k]] for o in range(3)] == [o * 2 + k - 1 for o in range(3)]


# ---- schedules -------------------------------------------------------------------------------------------
def test_gemmini_schedule_follows_tiled_conv_auto(gemmini, tiny) -> None:
    small = tk.conv2d(1, 8, 8, 16, 16)
    s = gemmini_conv_schedule(small, gemmini)
    assert (s.tile_b, s.tile_oh, s.tile_ow, s.tile_k, s.tile_kh, s.tile_kw, s.tile_c) == (1, 8, 8, 1, 3, 3, 1)
    big = tk.conv2d(1, 56, 56, 64, 64)
    s = gemmini_conv_schedule(big, gemmini)
    plan = s.memory_plan(gemmini, big)
    assert plan.c.rows * 2 <= gemmini.acc_rows and (plan.a.rows + plan.b.rows) * 2 <= gemmini.sp_rows
    # greedy growth stopped: no single tile grows by one and still fits
    for name in ("tile_b", "tile_oh", "tile_ow", "tile_k", "tile_kh", "tile_kw", "tile_c"):
        grown = s.replace(**{name: getattr(s, name) + 1})
        limit = {"tile_b": 1, "tile_oh": 56, "tile_ow": 56, "tile_k": 4, "tile_kh": 3, "tile_kw": 3, "tile_c": 4}
        if getattr(grown, name) <= limit[name]:
            with pytest.raises(ScheduleError):
                grown.memory_plan(gemmini, big)
    assert tk.default_schedule(tk.depthwise_conv2d(1, 9, 9, 20), tiny).OP == "depthwise"


def test_default_pipelines_gemmini_sizing_with_split_buffers(gemmini) -> None:
    big = tk.conv2d(1, 56, 56, 64, 64)
    s = default_conv_schedule(big, gemmini)
    assert (s.load_ahead, s.store_delay, s.split_buffers, s.in_bank, s.w_bank) == (1, 1, True, 0, 1)
    plan = s.memory_plan(gemmini, big)
    half = gemmini.sp_rows // 2
    assert plan.a.base(1) - plan.a.base(0) == half == plan.b.base(1) - plan.b.base(0)
    assert plan.a.rows <= gemmini.sp_bank_rows and plan.b.start == gemmini.sp_bank_rows


def test_schedule_that_does_not_fit_raises_before_lowering(tiny) -> None:
    op = tk.conv2d(1, 12, 12, 16, 16)
    sched = ConvSchedule(1, 12, 12, 4, 3, 3, 4)
    with pytest.raises(ScheduleError, match="does not fit"):
        tk.compile(op, tiny, sched)
    with pytest.raises(ScheduleError, match="loop_order"):
        ConvSchedule(1, 1, 1, 1, 1, 1, 1, loop_order="bhw")
    with pytest.raises(ScheduleError, match="tile_oh"):
        ConvSchedule(1, 0, 1, 1, 1, 1, 1)
    with pytest.raises(ScheduleError, match="mvin_blocks"):
        ConvSchedule(1, 1, 1, 1, 1, 1, 1, mvin_blocks=3).memory_plan(tiny, op)
    assert tk.compile(op, tiny, ConvSchedule(1, 2, 4, 1, 3, 3, 1).to_dict())


# ---- packed taps --------------------------------------------------------------------------------------------
@pytest.mark.slow
@given(op=conv_ops(), data=st.data())
def test_conv2d_packed_taps_any_schedule(tiny, op, data) -> None:
    """Any packed schedule (kernel (KH, 1) over KW * in_c channels) is bit-exact, fits or not."""
    packed_blocks = -(-op.kernel[1] * op.in_c // tiny.dim)
    sched = ConvSchedule(tile_b=data.draw(st.integers(1, op.batch)), tile_oh=data.draw(st.integers(1, op.out_h)),
                         tile_ow=data.draw(st.integers(1, op.out_w)),
                         tile_k=data.draw(st.integers(1, -(-op.out_c // tiny.dim))),
                         tile_kh=data.draw(st.integers(1, op.kernel[0])), tile_kw=1,
                         tile_c=data.draw(st.integers(1, packed_blocks)),
                         loop_order="".join(data.draw(st.permutations("bhwk"))),
                         mvin_blocks=data.draw(st.integers(1, 2)), load_ahead=data.draw(st.integers(0, 1)),
                         store_delay=data.draw(st.integers(0, 1)), split_buffers=data.draw(st.booleans()),
                         pack_taps=True)
    run_exact_if_fits(op, tiny, sched)


def test_packed_taps_copy_the_padding_then_fence(tiny) -> None:
    """The copy fills ``padded`` (a scratch buffer) before a fence; the conv's input loads read only
    ``padded``, each a strided mvin of KW * in_c bytes per virtual pixel, all inside its buffer."""
    op = tk.conv2d(2, 7, 6, 3, 5, kernel=7, stride=2, padding=3, bias="channel")
    sched = default_conv_schedule(op, tiny)
    assert sched.pack_taps and sched.tile_kw == 1 and sched.tile_c <= -(-7 * 3 // tiny.dim)
    prog = assert_exact(op, tiny, sched).program
    padded = prog.buffers["padded"]
    assert padded.role == "scratch" and padded.shape == (2, 7, 6 + 2 * 3, 3)
    fence = next(i for i, ins in enumerate(prog.instructions) if isinstance(ins, Fence))
    stores = [ins for ins in prog.instructions[:fence] if isinstance(ins, Mvout)]
    assert stores and all(padded.addr <= ins.dram < padded.end for ins in stores)
    assert sum(ins.rows * ins.cols for ins in stores) == op.batch * op.in_h * op.in_w * op.in_c
    names = {0: "padded", 1: "weight", 2: "bias"}
    conv_loads = mvin_spans(tk.Program(prog.hw, prog.instructions[fence:], prog.buffers))
    for first, last, state in conv_loads:
        buf = prog.buffers[names[state]]
        assert buf.addr <= first and last < buf.end, (first, last, names[state])
    strides = [ins.dram_stride for ins in prog.instructions[fence:] if isinstance(ins, ConfigLd) and ins.state == 0]
    assert strides == [op.stride * op.in_c]


def test_packed_taps_without_padding_read_the_input(tiny) -> None:
    op = tk.conv2d(1, 9, 9, 2, 3, kernel=5, stride=1, padding=0)
    prog = assert_exact(op, tiny, default_conv_schedule(op, tiny, pack_taps=True)).program
    assert "padded" not in prog.buffers
    assert [i for i, ins in enumerate(prog.instructions) if isinstance(ins, Fence)] == [len(prog.instructions) - 1]


def test_default_packs_taps_where_that_saves_weight_blocks(tiny, gemmini) -> None:
    conv1 = tk.conv2d(1, 224, 224, 3, 64, kernel=7, stride=2, padding=3, bias="channel", activation="relu")
    assert default_conv_schedule(conv1, gemmini).pack_taps
    assert not gemmini_conv_schedule(conv1, gemmini).pack_taps       # the faithful port stays as it is
    assert not default_conv_schedule(tk.conv2d(1, 14, 14, 64, 64), gemmini).pack_taps
    assert not default_conv_schedule(tk.conv2d(1, 6, 6, 3, 5), tiny).pack_taps      # 9 channels: 3 blocks either way
    assert not default_conv_schedule(tk.conv2d(1, 8, 8, 6, 9, stride=2), tiny).pack_taps   # in_c >= dim


def test_packed_taps_tiles_follow_the_packed_kernel(tiny) -> None:
    op = tk.conv2d(1, 8, 8, 3, 4, kernel=3)
    with pytest.raises(ScheduleError, match="tile_kw=3 .*pack_taps"):
        ConvSchedule(1, 2, 2, 1, 3, 3, 1, pack_taps=True).memory_plan(tiny, op)
    with pytest.raises(ScheduleError, match="tile_c=2"):
        ConvSchedule(1, 2, 2, 1, 3, 3, 2).memory_plan(tiny, op)
    assert ConvSchedule(1, 2, 2, 1, 3, 1, 3, pack_taps=True).memory_plan(tiny, op)
    with pytest.raises(ScheduleError, match="pack_taps"):
        ConvSchedule(1, 2, 2, 1, 3, 1, 3, pack_taps=1)


def test_memory_plan_without_op_is_stride_safe(tiny) -> None:
    sched = ConvSchedule(1, 4, 4, 1, 3, 3, 1)
    worst = sched.memory_plan(tiny).a.rows
    for stride in (1, 2, 3, 4):
        assert sched.memory_plan(tiny, tk.conv2d(1, 16, 16, 4, 4, stride=stride)).a.rows <= worst


# ---- arguments --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("make, name", [
    (lambda: tk.conv2d(1, 2, 2, 3, 3, kernel=5, padding=1), "kernel"),
    (lambda: tk.conv2d(1, 4, 4, 3, 3, stride=0), "stride"),
    (lambda: tk.conv2d(1, 4, 4, 3, 3, padding=-1), "padding"),
    (lambda: tk.conv2d(1, 4, 4, 3, 3, kernel=(3, 0)), "kernel"),
    (lambda: tk.conv2d(0, 4, 4, 3, 3), "batch"),
    (lambda: tk.conv2d(1, 4, 4, 0, 3), "in_c"),
    (lambda: tk.conv2d(1, 4, 4, 3, 3, bias="row"), "bias"),
    (lambda: tk.conv2d(1, 4, 4, 3, 3, out_dtype="int32", scale=0.5), "scale"),
    (lambda: tk.depthwise_conv2d(1, 2, 2, 3, kernel=(1, 7)), "kernel"),
    (lambda: tk.depthwise_conv2d(1, 4, 4, 3, stride=0), "stride"),
])
def test_bad_arguments_name_the_argument(make, name) -> None:
    with pytest.raises(ValueError, match=name):
        make()


def test_wrong_input_shapes(tiny) -> None:
    op = tk.conv2d(1, 5, 5, 3, 4)
    inputs = op.random_inputs(0)
    inputs["input"] = inputs["input"][:, :4]
    with pytest.raises(ValueError, match="input"):
        op.reference(inputs)
    with pytest.raises(ValueError, match="input"):
        tk.run(tk.compile(op, tiny), inputs)
    inputs = op.random_inputs(0)
    inputs["weight"] = inputs["weight"].astype(np.int32)
    with pytest.raises(ValueError, match="weight"):
        op.reference(inputs)


@pytest.mark.parametrize("op", [tk.conv2d(2, 9, 7, 3, 5, kernel=(3, 1), stride=2, padding=1, bias="channel"),
                                tk.depthwise_conv2d(1, 5, 5, 8, kernel=5, stride=1, padding=2, activation="relu")])
def test_ops_round_trip_through_dicts(tiny, op) -> None:
    assert from_dict(op.to_dict()) == op
    assert from_dict(json.loads(json.dumps(op.to_dict()))) == op
    assert tk.compile(op, tiny).meta["op"] == op.to_dict()


# (hardware preset, conv2d arguments, tiles (b, oh, ow, k, kh, kw, c), loop order, load_ahead, store_delay,
# mvin_blocks, pack_taps, the estimate's float as the per-tile-broadcast walk of 28ce682 gave it)
PRIOR_CASES = [
    ("gemmini", dict(batch=1, in_h=56, in_w=56, in_c=64, out_c=64),
     (1, 14, 5, 4, 3, 1, 1), "bwhk", 0, 1, 1, False, "0x1.7a81a00000000p+19"),
    ("gemmini", dict(batch=1, in_h=56, in_w=56, in_c=64, out_c=64),
     (1, 8, 56, 2, 1, 3, 2), "hkwb", 1, 1, 2, False, "0x1.b31b400000000p+18"),
    ("gemmini", dict(batch=1, in_h=56, in_w=56, in_c=64, out_c=64),
     (1, 3, 7, 3, 2, 2, 3), "kbhw", 1, 0, 1, False, "0x1.3596235555555p+20"),
    ("gemmini", dict(batch=1, in_h=56, in_w=56, in_c=64, out_c=64),
     (1, 7, 8, 1, 3, 3, 4), "wkhb", 1, 1, 4, False, "0x1.f6d7000000000p+18"),
    ("gemmini", dict(batch=1, in_h=56, in_w=56, in_c=64, out_c=64),
     (1, 4, 14, 2, 3, 3, 4), "bhwk", 0, 0, 1, False, "0x1.7e1ee00000000p+19"),
    ("gemmini", dict(batch=1, in_h=224, in_w=224, in_c=3, out_c=64, kernel=7, stride=2, padding=3),
     (1, 4, 16, 4, 7, 1, 2), "bhwk", 1, 1, 1, True, "0x1.587e180000000p+19"),
    ("gemmini", dict(batch=1, in_h=224, in_w=224, in_c=3, out_c=64, kernel=7, stride=2, padding=3),
     (1, 9, 28, 2, 3, 2, 1), "hwbk", 1, 0, 1, False, "0x1.523e100000000p+21"),
    ("gemmini", dict(batch=2, in_h=14, in_w=14, in_c=64, out_c=96, bias="channel", out_dtype="int32"),
     (1, 5, 14, 6, 3, 3, 4), "kwhb", 1, 1, 4, False, "0x1.4eb8000000000p+16"),
    ("gemmini", dict(batch=2, in_h=14, in_w=14, in_c=64, out_c=96, bias="channel", out_dtype="int32"),
     (2, 3, 4, 5, 1, 2, 3), "bkhw", 0, 1, 2, False, "0x1.ff9c800000000p+17"),
    ("gemmini", dict(batch=1, in_h=56, in_w=56, in_c=128, out_c=128, stride=2),
     (1, 6, 28, 8, 2, 3, 5), "whbk", 1, 1, 4, False, "0x1.b77da00000000p+18"),
    ("gemmini", dict(batch=1, in_h=14, in_w=14, in_c=1024, out_c=256, kernel=1, padding=0),
     (1, 14, 14, 4, 1, 1, 16), "bhwk", 1, 1, 4, False, "0x1.92b8000000000p+17"),
    ("gemmini", dict(batch=1, in_h=56, in_w=56, in_c=64, out_c=64),
     (1, 1, 2, 1, 1, 1, 1), "hwkb", 1, 1, 1, False, "0x1.dc06880000000p+23"),
    ("gemmini", dict(batch=1, in_h=28, in_w=28, in_c=40, out_c=24),
     (1, 2, 1, 2, 3, 1, 1), "bhwk", 1, 1, 2, False, "0x1.df920aaaaaaaap+18"),
    ("gemmini", dict(batch=1, in_h=28, in_w=28, in_c=40, out_c=24),
     (1, 1, 3, 1, 2, 3, 2), "kwhb", 0, 1, 1, False, "0x1.7d31700000000p+19"),
    ("tiny", dict(batch=3, in_h=9, in_w=7, in_c=10, out_c=6, kernel=(3, 2), stride=2, padding=1, bias="channel"),
     (2, 2, 3, 1, 2, 1, 2), "hbkw", 1, 1, 1, False, "0x1.5910000000000p+12"),
]


@pytest.mark.parametrize("preset, conv, tiles, order, load_ahead, store_delay, mvin_blocks, pack_taps, cycles",
                         PRIOR_CASES)
def test_pipelined_conv_cycles_keep_their_floats(preset, conv, tiles, order, load_ahead, store_delay, mvin_blocks,
                                                 pack_taps, cycles) -> None:
    """The closed-form prior walks per-axis caches and writes its walks in step order; every float stays what
    the walk of each tile's costs gave (ragged, strided, packed, biased, int32, single-reduction-tile tilings,
    each loop order and pipeline), and a limit under its computes still gives infinity."""
    hw, op = tk.HardwareConfig.preset(preset), tk.conv2d(**conv)
    b, oh, ow, k, kh, kw, c = tiles
    s = ConvSchedule(tile_b=b, tile_oh=oh, tile_ow=ow, tile_k=k, tile_kh=kh, tile_kw=kw, tile_c=c, loop_order=order,
                     load_ahead=load_ahead, store_delay=store_delay, mvin_blocks=mvin_blocks, pack_taps=pack_taps)
    forget_tile_costs()
    assert pipelined_conv_cycles(op, s, hw) == float.fromhex(cycles)
    assert kept_conv_cycles(op, s, hw) == float.fromhex(cycles)   # from the kept tile costs
    assert pipelined_conv_cycles(op, s, hw, limit=1.0) == math.inf
