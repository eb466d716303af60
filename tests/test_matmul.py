"""Matmul lowering end to end: tk.compile + tk.run (functional) bit-exact against op.reference."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import toolkit as tk
from toolkit.kinds import flat_schedule
import toolkit.gemm.lowering
from helpers import assert_exact
from isa import PRESETS
from isa.numerics import INT32_MAX

TINY = PRESETS["tiny"]
# scales whose products land on .5 for many accumulators, and a few that do not
SCALES = [1.0, 0.5, 0.25, 0.125, 2.0**-7, 1 / 3, 0.05, 1.5, 3.0]


def inputs_for(op: tk.Matmul, seed: int, magnitude: int = 128) -> dict[str, np.ndarray]:
    """Random inputs; a small ``magnitude`` keeps accumulators near the rounding ties instead of saturating."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, (shape, dtype) in op.input_specs().items():
        bound = magnitude if dtype == "int8" else 4 * magnitude
        out[name] = rng.integers(-bound, bound, shape).astype(dtype)
    return out


def check(op: tk.Matmul, schedule: Any = None, hw: Any = TINY, seed: int = 0, magnitude: int = 128) -> None:
    """assert_exact on inputs of ``magnitude``; the functional model counts exactly the op's MACs."""
    res = assert_exact(op, hw, schedule, inputs=inputs_for(op, seed, magnitude)).result
    assert res.counters["macs"] == op.macs


EPILOGUES = st.one_of(
    st.builds(dict, bias=st.sampled_from([None, "row", "full"]), activation=st.sampled_from(["none", "relu"]),
              scale=st.one_of(st.sampled_from(SCALES), st.floats(1e-4, 4.0))),
    st.builds(dict, bias=st.sampled_from([None, "row", "full"]), activation=st.sampled_from(["none", "relu"]),
              out_dtype=st.just("int32")))


@settings(max_examples=settings.default.max_examples * 4)
@given(M=st.integers(1, 30), N=st.integers(1, 30), K=st.integers(1, 40), epilogue=EPILOGUES,
       seed=st.integers(0, 2**16), magnitude=st.sampled_from([2, 8, 128]))
@pytest.mark.slow
def test_random_shapes(M: int, N: int, K: int, epilogue: dict, seed: int, magnitude: int) -> None:
    check(tk.matmul(M, N, K, **epilogue), seed=seed, magnitude=magnitude)


@pytest.mark.parametrize("shape", [(1, 1, 1), (1, 1, 300), (5, 1, 1), (1, 7, 3), (4, 4, 4), (17, 9, 13), (16, 16, 300)])
@pytest.mark.parametrize("bias", [None, "row", "full"])
def test_edge_shapes(shape: tuple[int, int, int], bias: str | None) -> None:
    check(tk.matmul(*shape, bias=bias, activation="relu", scale=0.125), magnitude=8)


def test_k_spans_several_scratchpad_tiles() -> None:
    op = tk.matmul(9, 6, 300, bias="row")
    sched = tk.default_schedule(op, TINY)
    assert sched.tile_k * TINY.dim < op.K
    check(op, magnitude=128)


@pytest.mark.parametrize("out_dtype, scale", [("int32", 1.0), ("int8", 1.0), ("int8", 0.5)])
def test_bias_wraps_like_int32(out_dtype: str, scale: float) -> None:
    op = tk.matmul(6, 5, 9, bias="full", out_dtype=out_dtype, scale=scale)
    inputs = inputs_for(op, 3)
    inputs["bias"][:] = INT32_MAX - 3   # + a positive product overflows
    assert_exact(op, TINY, inputs=inputs)


# ---- every schedule knob value ----------------------------------------------------------------------------------
BASE = dict(tile_i=2, tile_j=2, tile_k=2)
KNOB_VALUES = [("tile_i", v) for v in (1, 2, 3)] + [("tile_j", v) for v in (1, 2, 3)] \
    + [("tile_k", v) for v in (1, 2, 3)] + [("loop_order", v) for v in ("ijk", "jik")] \
    + [("double_buffer", v) for v in (True, False)] + [("mvin_blocks", v) for v in (1, 2)] \
    + [("bias_strategy", v) for v in ("before", "after")] \
    + [(bank, v) for bank in ("a_bank", "b_bank", "c_bank") for v in (0, 1)]


@pytest.mark.parametrize("knob, value", KNOB_VALUES, ids=[f"{k}={v}" for k, v in KNOB_VALUES])
@pytest.mark.parametrize("bias", [None, "row", "full"])
def test_schedule_knob(knob: str, value: Any, bias: str | None) -> None:
    op = tk.matmul(19, 14, 23, bias=bias, activation="relu", scale=0.25)
    check(op, {**BASE, knob: value}, magnitude=16)


SCHEDULES = st.fixed_dictionaries(dict(
    tile_i=st.integers(1, 4), tile_j=st.integers(1, 4), tile_k=st.integers(1, 8),
    loop_order=st.sampled_from(["ijk", "jik"]), double_buffer=st.booleans(), mvin_blocks=st.integers(1, 2),
    bias_strategy=st.sampled_from(["before", "after"]), a_bank=st.integers(0, 1), b_bank=st.integers(0, 1),
    c_bank=st.integers(0, 1)))


@pytest.mark.slow
@settings(max_examples=settings.default.max_examples * 4)
@given(schedule=SCHEDULES, M=st.integers(1, 24), N=st.integers(1, 24), K=st.integers(1, 40), epilogue=EPILOGUES)
def test_random_schedules(schedule: dict, M: int, N: int, K: int, epilogue: dict) -> None:
    try:
        tk.MatmulSchedule(**schedule).memory_plan(TINY)
    except tk.ScheduleError:
        assume(False)
    check(tk.matmul(M, N, K, **epilogue), schedule, magnitude=8)


# ---- the default schedule and schedules that do not fit ---------------------------------------------------------
@pytest.mark.parametrize("size, tiles", [(512, (4, 7, 32)), (64, (2, 4, 4))])   # faster on the RTL than Gemmini's 5x6x32, 4x4x4
def test_default_schedule_on_gemmini(size: int, tiles: tuple[int, int, int]) -> None:
    s = flat_schedule(tk.matmul(size, size, size), PRESETS["gemmini"])   # (the SoC's default takes loops)
    assert (s.tile_i, s.tile_j, s.tile_k) == tiles


def test_default_schedule_runs_on_gemmini() -> None:
    check(tk.matmul(40, 70, 50, bias="row", activation="relu", scale=0.01), hw="gemmini")


@pytest.mark.parametrize("schedule, message", [
    (dict(tile_i=40, tile_j=1, tile_k=40), "does not fit: A"),
    (dict(tile_i=1, tile_j=40, tile_k=40), "does not fit: B"),
    (dict(tile_i=4, tile_j=4, tile_k=1), "does not fit: C"),
    (dict(tile_i=1, tile_j=1, tile_k=1, a_bank=1, b_bank=1, c_bank=2), "c_bank=2"),
    (dict(tile_i=1, tile_j=1, tile_k=1, mvin_blocks=3), "mvin_blocks=3"),
    (dict(tile_i=1, tile_j=1, tile_k=200, a_bank=0, b_bank=1), "does not fit: A"),
])
def test_schedule_that_does_not_fit(monkeypatch, schedule: dict, message: str) -> None:
    rendered = []
    monkeypatch.setattr(toolkit.gemm.lowering, "render", lambda *a, **k: rendered.append(a) or "")
    with pytest.raises(tk.ScheduleError, match=message):
        tk.compile(tk.matmul(64, 64, 64, bias="row"), TINY, schedule)
    assert rendered == []
