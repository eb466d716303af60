"""Limits and sizes: config fields fit the harness's integer widths, ops past the size limits
are refused up front (with an override), run limits are positive, the watchdog grows with
the DRAM latency, and a failure of the measurement itself is never a candidate's record."""
from __future__ import annotations

import concurrent.futures as cf
import pickle
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import toolkit as tk
from toolkit.kinds import flat_schedule
from isa import PRESETS, ConfigError, HardwareConfig
from isa.config import LIMITS
from simulators import BackendError, ToolchainError
from simulators import verilator as V
from toolkit import limits
from tuner.api import tune
from tuner.database import Database
from tuner.measure import Measurer
from simulators.stand_in import run as stand_in_run

TINY = PRESETS["tiny"]
OP = tk.matmul(8, 8, 16, bias="row")


# ---- hardware configs --------------------------------------------------------------------------
@pytest.mark.parametrize("field", sorted(LIMITS))
def test_every_config_field_has_an_upper_bound(field: str) -> None:
    with pytest.raises(ConfigError, match=rf"HardwareConfig\.{field}=\d+ is above its limit of {LIMITS[field]}"):
        replace(PRESETS["gemmini"], **{field: LIMITS[field] * 2})


def test_limits_fit_the_program_file_and_the_rtl_parameters() -> None:
    assert all(limit < 1 << 31 for limit in LIMITS.values())               # u32 fields, 32-bit int parameters
    assert LIMITS["dim"] * LIMITS["max_block_len"] < 1 << 16              # an mvin's 16-bit cols field
    big = HardwareConfig(name="slow", dram_latency=LIMITS["dram_latency"])
    assert len(tk.Program(big, [], {}).to_bytes()) > 0                     # packs without a struct.error


def test_watchdog_grows_with_the_dram_latency() -> None:
    slow = replace(TINY, dram_latency=LIMITS["dram_latency"])
    assert slow.watchdog_cycles > 2 * slow.dram_latency
    assert TINY.watchdog_cycles >= 100_000


# ---- op sizes ----------------------------------------------------------------------------------
def test_huge_ops_are_refused_with_the_numbers_before_lowering() -> None:
    with pytest.raises(limits.SizeError, match=r"needs at least [\d,]+ instructions \(limit 10,000,000\) and "
                                            r"2,700,000,000 bytes of DRAM .*allow_large=True"):
        tk.compile(tk.matmul(30000, 30000, 30000), "gemmini")
    with pytest.raises(limits.SizeError, match="more than a program's address space"):
        tk.compile(tk.matmul(10**9, 64, 64), "gemmini", allow_large=True)   # no override past the address space


def test_allow_large_lifts_the_soft_limits(monkeypatch) -> None:
    monkeypatch.setattr(limits, "MAX_INSTRUCTIONS", 10)
    with pytest.raises(limits.SizeError, match=r"at least \d+ instructions \(limit 10\)"):
        tk.compile(OP, TINY)
    with pytest.raises(limits.SizeError, match="limit 10"):
        tune(OP, TINY, trials=1, backend="stand-in", progress=False)
    prog = tk.compile(OP, TINY, allow_large=True)
    assert len(prog) > 10


@pytest.mark.parametrize("op", [tk.matmul(37, 20, 70), tk.conv2d(1, 6, 6, 5, 7, stride=2),
                                tk.depthwise_conv2d(1, 6, 6, 5), tk.resadd(1, 4, 4, 6), tk.maxpool2d(1, 6, 6, 4)])
@pytest.mark.parametrize("hw", [TINY, PRESETS["gemmini"]])
def test_size_estimate_is_a_lower_bound(op, hw: HardwareConfig) -> None:
    est = op.size_estimate(hw)
    prog = tk.compile(op, hw, flat_schedule(op, hw))   # a bound of flat streams (Gemmini's loops issue fewer words)
    assert 0 < est.instructions <= len(prog)
    assert est.dram_bytes <= prog.dram_size


# ---- run limits -------------------------------------------------------------------------------
@pytest.mark.parametrize("option, value", [("cycle_limit", 0), ("cycle_limit", -5), ("watchdog", 0),
                                           ("watchdog", 2.5), ("timeout", 0), ("timeout", -1.0),
                                           ("timeout", float("nan")), ("cycle_limit", True)])
def test_run_limits_must_be_positive(option: str, value) -> None:
    prog = tk.compile(OP, TINY)
    with pytest.raises(ValueError, match=rf"^{option} must be a positive"):
        V.run(prog, OP.random_inputs(0), **{option: value})   # before any build or run


def test_a_timeout_past_the_os_timers_is_refused() -> None:
    """1e300 s overflowed select() in the harness and setitimer() in the tuner's measurer."""
    prog = tk.compile(OP, TINY)
    with pytest.raises(ValueError, match=r"^timeout must be at most 1e\+07, got 1e\+300"):
        V.run(prog, OP.random_inputs(0), timeout=1e300)
    with pytest.raises(ValueError, match=r"^timeout must be at most"):
        tune(OP, TINY, trials=4, backend="stand-in", progress=False, timeout=1e300)


def test_a_slow_memory_is_not_a_deadlock(verilator_ok: None) -> None:
    """A DMA read waits dram_latency cycles; the derived watchdog lets it, the old fixed one did not."""
    slow = replace(TINY, name="slow_dram", dram_latency=150_000)
    try:
        V.build(slow)
    except BackendError as exc:
        pytest.skip(f"verilator backend unavailable: {exc}")
    op = tk.matmul(4, 4, 4)
    prog, inputs = tk.compile(op, slow), op.random_inputs(0)
    res = V.run(prog, inputs, timeout=120)
    np.testing.assert_array_equal(res.outputs["C"], op.reference(inputs)["C"])
    assert res.cycles > 150_000
    with pytest.raises(BackendError, match="deadlock, or slower than the watchdog of 100000 cycles allows"):
        V.run(prog, inputs, watchdog=100_000, timeout=120)


# ---- tuning: bad options, and failures that are not the candidate's ----------------------------
@pytest.mark.parametrize("option, value", [("timeout", -1), ("timeout", 0), ("batch_size", -3), ("workers", 0)])
def test_tune_options_must_be_positive(option: str, value) -> None:
    with pytest.raises(ValueError, match=rf"^{option} must be a positive"):
        tune(OP, TINY, trials=4, backend="stand-in", progress=False, **{option: value})


def test_a_scheduler_without_dask_is_one_clear_error(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "dask.distributed", None)   # what an install without dask sees
    with pytest.raises(RuntimeError, match=r"Dask scheduler 'tcp://127.0.0.1:1' needs dask.distributed"):
        Measurer("stand-in", scheduler="tcp://127.0.0.1:1")


def no_toolchain(program, inputs, **_):
    raise ToolchainError("verilator backend needs g++ on PATH")


class UnpicklableResults(cf.ThreadPoolExecutor):
    """An executor whose every future fails the way a result that cannot be pickled back does."""

    def submit(self, fn, *args, **kwargs):
        fut: cf.Future = cf.Future()
        fut.set_exception(pickle.PicklingError("Can't pickle <function <lambda>>"))
        return fut


@pytest.mark.parametrize("setup, message", [
    (dict(backend=no_toolchain), "needs g\\+\\+"),
    (dict(backend=stand_in_run, executor="unpicklable"), "Can't pickle"),
])
def test_measurement_failures_stop_tuning_and_record_nothing(tmp_path: Path, setup: dict, message: str) -> None:
    db = tmp_path / "t.db"
    executor = UnpicklableResults(1) if setup.get("executor") else cf.ThreadPoolExecutor(1)
    with executor, pytest.raises((ToolchainError, pickle.PicklingError), match=message):
        tune(OP, TINY, trials=4, tuner="random", backend=setup["backend"], db=db, executor=executor, progress=False)
    assert len(Database(db)) == 0


def test_candidate_faults_are_still_recorded(tmp_path: Path) -> None:
    def broken(program, inputs, **_):
        raise RuntimeError("a fault of this candidate")
    db = tmp_path / "t.db"
    with cf.ThreadPoolExecutor(1) as executor:
        result = tune(OP, TINY, trials=3, tuner="random", backend=broken, db=db, executor=executor, progress=False)
    assert [t.status for t in result.history] == ["error"] * 3
    assert len(Database(db)) == 3
