"""Residual add and max pooling: references, lowering, bit-exact runs on the functional model."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import toolkit as tk
from helpers import assert_exact
from isa import Fence
from toolkit.kinds import from_dict
from toolkit.maxpool import MaxPoolSchedule
from toolkit.resadd import ResAddSchedule
from toolkit.schedule import ScheduleError


# ---- residual add --------------------------------------------------------------------------------
scales = st.sampled_from([1.0, 0.5, 0.37, -1.25, 3.0, 1e-3, 2e9])


@given(batch=st.integers(1, 2), h=st.integers(1, 5), w=st.integers(1, 5), c=st.integers(1, 11),
       a_scale=scales, b_scale=scales, activation=st.sampled_from(["none", "relu"]),
       out=st.sampled_from([("int8", 1.0), ("int8", 0.3), ("int32", 1.0)]), bias=st.sampled_from([None, "channel"]))
def test_resadd_bit_exact(tiny, batch, h, w, c, a_scale, b_scale, activation, out, bias) -> None:
    op = tk.resadd(batch, h, w, c, a_scale=a_scale, b_scale=b_scale, activation=activation,
                   scale=out[1], out_dtype=out[0], bias=bias)
    assert_exact(op, tiny)


def test_resadd_bias_adds_in_the_accumulator(tiny) -> None:
    """bias='channel': one int32 a channel, added by a third accumulating mvin (DRAM stride 0) before the store
    scale; gemmini.h's tiled_resadd has none."""
    op = tk.resadd(1, 1, 2, 3, a_scale=0.5, b_scale=2.0, activation="none", scale=0.25, bias="channel")
    x = {"A": np.full((1, 1, 2, 3), 4, np.int8), "B": np.full((1, 1, 2, 3), 1, np.int8),
         "bias": np.array([10, -6, 2**31 - 1], np.int32)}
    np.testing.assert_array_equal(op.accumulate(x)[0, 0, 0], [14, -2, -2**31 + 3])   # 2 + 2 + bias, wrapped
    np.testing.assert_array_equal(op.reference(x)["C"][0, 0, 0], [4, 0, -128])      # rne(3.5), rne(-0.5)
    prog = assert_exact(op, tiny, seed=2).program
    assert "mvin3" in {i.op for i in prog.instructions}
    with pytest.raises(ScheduleError, match="adds no bias"):
        tk.compile(op, tiny, schedule="gemmini")
    with pytest.raises(ValueError, match="bias='row' must be None or 'channel'"):
        tk.resadd(1, 1, 1, 1, bias="row")


def test_resadd_reference_is_what_the_accumulator_does() -> None:
    op = tk.resadd(1, 1, 1, 4, a_scale=0.5, b_scale=1.5, activation="none")
    x = {"A": np.array([1, 3, -3, 127], np.int8).reshape(1, 1, 1, 4),
         "B": np.array([1, 1, -1, 127], np.int8).reshape(1, 1, 1, 4)}
    # rne(0.5)=0, rne(1.5)=2, rne(-1.5)=-2, rne(-1.5)=-2 ... each input rounded on its own, then summed
    np.testing.assert_array_equal(op.accumulate(x).ravel(), [0 + 2, 2 + 2, -2 - 2, 64 + 190])
    np.testing.assert_array_equal(op.reference(x)["C"].ravel(), [2, 4, -4, 127])
    relu = tk.resadd(1, 1, 1, 4, a_scale=0.5, b_scale=1.5)
    np.testing.assert_array_equal(relu.reference(x)["C"].ravel(), [2, 4, 0, 127])


def test_resadd_accumulates_with_wraparound(tiny) -> None:
    op = tk.resadd(1, 2, 2, 3, a_scale=2e9, b_scale=2e9, activation="none", out_dtype="int32")
    prog = assert_exact(op, tiny, seed=4).program
    assert {i.op for i in prog.instructions} == {"config_ld", "config_st", "mvin", "mvin2", "mvout", "fence"}


def test_resadd_schedules(tiny) -> None:
    op = tk.resadd(2, 5, 5, 9, scale=0.5)
    for sched in (ResAddSchedule(1, 1, double_buffer=False), ResAddSchedule(3, 2, mvin_blocks=2),
                  ResAddSchedule(2, 2, double_buffer=False, acc_bank=1)):
        assert_exact(op, tiny, sched)
    with pytest.raises(ScheduleError, match="do not fit"):
        ResAddSchedule(16, 3).memory_plan(tiny)
    with pytest.raises(ScheduleError, match="mvin_blocks"):
        ResAddSchedule(1, 1, mvin_blocks=3).memory_plan(tiny)


# ---- max pooling ------------------------------------------------------------------------------------
@pytest.mark.parametrize("kernel", [2, 3])
@pytest.mark.parametrize("stride", [1, 2])
def test_maxpool_kernels_and_strides(tiny, kernel, stride) -> None:
    for padding in range(kernel // 2 + 1):
        assert_exact(tk.maxpool2d(2, 7, 6, 5, kernel=kernel, stride=stride, padding=padding), tiny)


@given(batch=st.integers(1, 2), h=st.integers(3, 7), w=st.integers(3, 7), c=st.integers(1, 9),
       kernel=st.sampled_from([2, 3, (2, 3)]), stride=st.integers(1, 2), padding=st.integers(0, 1),
       slots=st.integers(1, 4))
def test_maxpool_bit_exact(tiny, batch, h, w, c, kernel, stride, padding, slots) -> None:
    assert_exact(tk.maxpool2d(batch, h, w, c, kernel=kernel, stride=stride, padding=padding), tiny,
              MaxPoolSchedule(slots=slots))


def test_maxpool_extremes(tiny) -> None:
    op = tk.maxpool2d(1, 4, 4, 4, kernel=3, stride=1, padding=1)
    x = {"input": np.full((1, 4, 4, 4), -128, np.int8)}
    x["input"][0, 0, 0, 0] = 127
    res = assert_exact(op, tiny, inputs=x).result
    assert res.outputs["output"][0, 1, 1, 0] == 127 and res.outputs["output"][0, 3, 3, 0] == -128


def test_maxpool_reference_ignores_padding() -> None:
    op = tk.maxpool2d(1, 2, 2, 1, kernel=2, stride=1, padding=1)
    x = {"input": np.array([[-5, -6], [-7, -8]], np.int8).reshape(1, 2, 2, 1)}
    np.testing.assert_array_equal(op.reference(x)["output"][0, ..., 0], [[-5, -5, -6], [-5, -5, -6], [-7, -7, -8]])


def test_maxpool_past_config_st_fences_each_dram_round_trip(tiny) -> None:
    """A 4x4 window is past config_st's pooling fields: the ReLU lowering, with its DRAM round trips."""
    prog = tk.compile(tk.maxpool2d(1, 6, 6, 4, kernel=4, stride=2, padding=1), tiny)
    # one after the first tap, then two per further tap
    assert sum(isinstance(i, Fence) for i in prog.instructions) == 1 + 2 * 15
    assert prog.buffers["diff"].role == "scratch"


# ---- arguments -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("make, name", [
    (lambda: tk.maxpool2d(1, 4, 4, 2, kernel=2, padding=2), "padding"),
    (lambda: tk.maxpool2d(1, 4, 4, 2, stride=0), "stride"),
    (lambda: tk.maxpool2d(1, 1, 1, 2, kernel=3, padding=0), "kernel"),
    (lambda: tk.maxpool2d(1, 4, 0, 2), "in_w"),
    (lambda: tk.resadd(1, 2, 2, 0), "channels"),
    (lambda: tk.resadd(1, 2, 2, 2, a_scale=float("inf")), "a_scale"),
    (lambda: tk.resadd(1, 2, 2, 2, b_scale="x"), "b_scale"),
    (lambda: tk.resadd(1, 2, 2, 2, activation="gelu"), "activation"),
    (lambda: tk.resadd(1, 2, 2, 2, out_dtype="int32", scale=2.0), "scale"),
])
def test_bad_arguments_name_the_argument(make, name) -> None:
    with pytest.raises(ValueError, match=name):
        make()


def test_wrong_input_shapes(tiny) -> None:
    op = tk.resadd(1, 2, 3, 4)
    x = op.random_inputs(0)
    x["B"] = x["B"].reshape(1, 3, 2, 4)
    with pytest.raises(ValueError, match="'B'"):
        op.reference(x)
    with pytest.raises(ValueError, match="'B'"):
        tk.run(tk.compile(op, tiny), x)


@pytest.mark.parametrize("op", [tk.resadd(1, 2, 3, 4, a_scale=0.25, activation="none"),
                                tk.maxpool2d(2, 5, 5, 3, kernel=(3, 2), stride=1, padding=1)])
def test_ops_round_trip_through_dicts(tiny, op) -> None:
    assert from_dict(json.loads(json.dumps(op.to_dict()))) == op
    assert tk.compile(op, tiny).meta["op"] == op.to_dict()
