"""Whole programs on the RTL (Verilator harness): bit-exact with the functional model and
the op references, cycle sanity, bank conflicts, logs and traces, and clear errors.

The tiny preset builds in about 20 s (once per run, cached); a few tests use gemmini
(about 100 s to build, once).
"""
from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

import toolkit as tk
from helpers import assert_exact, assert_like_functional
from isa import (ComputeAccumulated, ComputePreloaded, ConfigEx, ConfigLd, ConfigSt, Fence, Flush, GARBAGE, Mvin,
                 Mvout, PRESETS, Preload, Program, acc_addr, layout)
from isa.checker import ProgramError
from simulators import BackendError
from simulators.base import CycleLimit
from simulators import verilator as V
from simulators.trace import write_chrome_trace
from toolkit.kinds import gemmini_flat_schedule, ideal_cycles

TINY = PRESETS["tiny"]
GEMMINI = PRESETS["gemmini"]


@pytest.fixture(scope="session")
def gemmini_model(tiny_model):
    return V.build(GEMMINI)


def assert_rtl_reports(res: tk.RunResult) -> None:
    """A run of the RTL reports its cycles and every counter."""
    assert res.backend == "verilator" and isinstance(res.cycles, int) and res.cycles > 0
    assert set(V.COUNTERS) <= set(res.counters) and res.counters["cycles"] == res.cycles


def run_both(prog: Program, inputs: dict, **options) -> tk.RunResult:
    """A program without an op: the RTL's buffers against the functional model's."""
    res = tk.run(prog, inputs, backend="verilator", timeout=300, **options)
    assert_like_functional(prog, inputs, res)
    assert_rtl_reports(res)
    return res


def check_op(op: tk.Op, hw: tk.HardwareConfig, schedule=None, seed: int = 0) -> tk.RunResult:
    res = assert_exact(op, hw, schedule, backend="verilator", seed=seed, timeout=300).result
    assert_rtl_reports(res)
    return res


# ---- matmuls through the toolkit, every knob, shapes not multiples of dim ---------------
EPILOGUES = [
    dict(),
    dict(bias="row", activation="relu", scale=0.05),
    dict(bias="full", scale=1 / 3),
    dict(bias="row", out_dtype="int32"),
    dict(activation="relu", out_dtype="int32", bias="full"),
]
SHAPES = [(10, 7, 9), (1, 1, 1), (5, 13, 17), (16, 12, 33)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("epilogue", EPILOGUES, ids=lambda e: ",".join(f"{k}={v}" for k, v in e.items()) or "plain")
def test_matmul_default_schedule_tiny(tiny_model, shape, epilogue) -> None:
    check_op(tk.matmul(*shape, **epilogue), TINY)


KNOBS = [
    dict(loop_order="jik"),
    dict(double_buffer=False),
    dict(mvin_blocks=1),
    dict(mvin_blocks=2),
    dict(bias_strategy="after"),
    dict(tile_i=2, tile_j=2, tile_k=2, a_bank=1, b_bank=0, c_bank=1),
    dict(a_bank=0, b_bank=0),
    dict(tile_i=1, tile_j=1, tile_k=1),
    dict(tile_i=3, tile_j=2, tile_k=2, loop_order="jik", double_buffer=False, bias_strategy="after"),
    dict(tile_i=1, tile_j=2, tile_k=2, load_ahead=1, spread=0.25),
    dict(tile_i=2, tile_j=1, tile_k=2, store_delay=1, bias_strategy="after"),
    dict(tile_i=1, tile_j=1, tile_k=2, load_ahead=1, store_delay=1, split_buffers=True, b_bank=0, spread=0.5),
]


@pytest.mark.parametrize("knobs", KNOBS, ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()))
def test_matmul_every_knob_tiny(tiny_model, knobs) -> None:
    op = tk.matmul(11, 9, 14, bias="row", activation="relu", scale=0.1)
    base = gemmini_flat_schedule(op, TINY)
    sched = base.replace(**{k: v for k, v in knobs.items()})
    check_op(op, TINY, schedule=sched, seed=3)


def test_conv2d_tiny(tiny_model) -> None:
    check_op(tk.conv2d(1, 5, 6, 3, 5, kernel=3, stride=1, padding=1, bias="channel", activation="relu", scale=0.02),
             TINY)


@pytest.mark.parametrize("padding", [0, 3])
def test_conv2d_packed_taps_tiny(tiny_model, padding) -> None:
    """Packed taps on the RTL: the padding copy, its fence, and virtual pixels read from ``padded``."""
    op = tk.conv2d(2, 9, 8, 3, 5, kernel=7, stride=2, padding=padding, bias="channel", activation="relu",
                   scale=0.02)
    sched = tk.default_schedule(op, TINY)
    assert sched.pack_taps
    check_op(op, TINY, schedule=sched)



# ---- the layer ops beside the GEMMs: depthwise conv, residual add, max pooling -------------
LAYER_OPS = [
    tk.depthwise_conv2d(1, 6, 5, 6, kernel=3, stride=1, padding=1, bias="channel", activation="relu", scale=0.05),
    tk.depthwise_conv2d(2, 7, 6, 3, kernel=(3, 2), stride=2, padding=1, out_dtype="int32"),
    tk.resadd(1, 3, 5, 6, a_scale=0.5, b_scale=1.5, activation="relu", scale=0.7),
    tk.resadd(2, 2, 3, 5, activation="none", out_dtype="int32"),
    tk.resadd(1, 3, 3, 7, a_scale=64.0, b_scale=-32.0, activation="none", scale=1 / 64, bias="channel"),
    tk.maxpool2d(1, 6, 6, 5, kernel=2, stride=2),
    tk.maxpool2d(2, 5, 7, 3, kernel=3, stride=2, padding=1),
]


@pytest.mark.parametrize("op", LAYER_OPS, ids=lambda op: op.key)
def test_layer_ops_tiny(tiny_model, op) -> None:
    check_op(op, TINY)


def test_layer_ops_gemmini(gemmini_model) -> None:
    for op in (tk.depthwise_conv2d(1, 6, 6, 20, bias="channel", scale=0.04),
               tk.resadd(1, 4, 5, 24, a_scale=0.8, b_scale=0.6),
               tk.maxpool2d(1, 6, 6, 20, kernel=3, stride=2, padding=1)):
        check_op(op, GEMMINI)

# ---- hand-written programs: the ISA corners the templates may not use ---------------------
def _corner_program(hw) -> tuple[Program, dict]:
    d = hw.dim
    bufs = layout([("X", "input", "int8", (2 * d, 2 * d)), ("Y", "input", "int32", (d, 2 * d)),
                   ("O8", "output", "int8", (4 * d, d)), ("O32", "output", "int32", (2 * d, d))])
    X, Y, O8, O32 = (bufs[n].addr for n in ("X", "Y", "O8", "O32"))
    ins = [
        ConfigLd(dram_stride=2 * d, state=0, block_stride=d, scale=1.0),           # wide mvin, two blocks
        ConfigLd(dram_stride=2 * d, state=1, block_stride=3 * d, scale=0.37),      # scaled int8 into sp
        ConfigLd(dram_stride=8 * d, state=2, shrink=0, block_stride=d, scale=0.5),  # int32 into acc, scaled
        ConfigEx(activation=1, a_stride=2, acc_scale=0.11, c_stride=2),
        ConfigSt(dram_stride=d, activation=0, acc_scale=0.75),
        Mvin(X, 0, d, 2 * d, state=0),                       # sp[0..d) and sp[d..2d)
        Mvin(X + d * 2 * d, 2 * d, d, 2 * d - 1, state=1),   # scaled, cols masked in the second block
        Mvin(Y, acc_addr(0), d, 2 * d, state=2),             # acc[0..d), acc[d..2d) via block stride
        Mvin(Y, acc_addr(2 * d, accumulate=True), d - 1, d, state=2),
        Mvin(X, GARBAGE, d, d, state=0),                     # writes nothing
        Preload(0, d, d - 1, 6 * d, d, d),                   # C to the scratchpad through scale + relu
        ComputePreloaded(d, d // 2, d, 2 * d, d - 1, d),     # A strided (a_stride=2), D bias from sp
        Preload(GARBAGE, d, d, acc_addr(0, accumulate=True), d, d - 1),
        ComputeAccumulated(2 * d, d, d - 2, GARBAGE, d, d),
        Flush(),
        Preload(3 * d, d, d, acc_addr(d), d - 1, d),
        ComputePreloaded(GARBAGE, d, d, 0, d, d),            # A garbage: C = D
        Fence(),
        Mvout(O8, 6 * d, d, d),
        Mvout(O8 + d * d, acc_addr(0), d, d),
        Mvout(O8 + 2 * d * d, acc_addr(d), d, d),
        Mvout(O8 + 3 * d * d, acc_addr(2 * d), d, d),
        ConfigSt(dram_stride=4 * d, activation=1, acc_scale=1.0),
        Mvout(O32, acc_addr(0, full=True), d, d),
        Mvout(O32 + 4 * d * d, acc_addr(2 * d, full=True), d, d - 1),
    ]
    rng = np.random.default_rng(11)
    inputs = {"X": rng.integers(-128, 128, (2 * d, 2 * d), dtype=np.int8),
              "Y": rng.integers(-2**31, 2**31, (d, 2 * d), dtype=np.int64).astype(np.int32)}
    return Program(hw, ins, bufs), inputs


def test_isa_corners_tiny(tiny_model) -> None:
    prog, inputs = _corner_program(TINY)
    run_both(prog, inputs)


def test_isa_corners_gemmini(gemmini_model) -> None:
    prog, inputs = _corner_program(GEMMINI)
    run_both(prog, inputs)


def test_matmuls_gemmini(gemmini_model) -> None:
    check_op(tk.matmul(40, 50, 70, bias="row", activation="relu", scale=0.03), GEMMINI)
    res = check_op(tk.matmul(64, 64, 64), GEMMINI)
    assert res.cycles >= 4 * 4 * 4 * 16


# ---- cycle sanity -------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(8, 8, 8), (20, 12, 40), (32, 32, 64)])
def test_cycles_at_least_the_roofline(tiny_model, shape) -> None:
    op = tk.matmul(*shape, bias="row")
    res = check_op(op, TINY)
    c = res.counters
    assert res.cycles >= ideal_cycles(op, TINY)
    assert c["mesh_busy"] >= ideal_cycles(op, TINY)
    assert res.cycles >= (c["dma_bytes_read"] + c["dma_bytes_written"]) / TINY.dma_beat_bytes
    assert c["dma_bytes_read"] >= op.M * op.K + op.K * op.N
    assert c["dma_bytes_written"] == op.M * op.N
    for name in ("load_busy", "exec_busy", "store_busy", "mesh_busy"):
        assert 0 < c[name] <= res.cycles


def test_double_buffering_never_slower(tiny_model) -> None:
    op = tk.matmul(32, 32, 128)   # compute-bound on tiny: K-deep tiles
    base = gemmini_flat_schedule(op, TINY)
    single = tk.compile(op, TINY, schedule=base.replace(double_buffer=False))
    double = tk.compile(op, TINY, schedule=base.replace(double_buffer=True))
    inputs = op.random_inputs(0)
    c1 = tk.run(single, inputs, backend="verilator").cycles
    c2 = tk.run(double, inputs, backend="verilator").cycles
    assert c2 <= c1, (c1, c2)


def test_bank_placement_conflicts(tiny_model) -> None:
    op = tk.matmul(16, 16, 64)
    base = gemmini_flat_schedule(op, TINY)
    one_bank = check_op(op, TINY, schedule=base.replace(a_bank=0, b_bank=0))
    two_banks = check_op(op, TINY, schedule=base.replace(a_bank=0, b_bank=1))
    assert one_bank.counters["stall_bank_conflict"] > 0
    assert one_bank.counters["stall_bank_conflict"] > two_banks.counters["stall_bank_conflict"]


def test_software_pipeline_overlaps_loads_with_computes(tiny_model) -> None:
    """The default's pipelined stream beats Gemmini's flat order on the same tiles, measured on the RTL."""
    op = tk.matmul(64, 64, 64, scale=0.01)
    flat = gemmini_flat_schedule(op, TINY)
    piped = flat.replace(load_ahead=1, store_delay=1)
    cycles = {name: assert_exact(op, TINY, sched, backend="verilator").result.cycles
              for name, sched in (("flat", flat), ("piped", piped))}
    assert cycles["piped"] < 0.95 * cycles["flat"], cycles


def test_hazards_are_counted(tiny_model) -> None:
    res = check_op(tk.matmul(12, 12, 12, bias="row"), TINY)
    assert res.counters["stall_hazard"] > 0


# ---- log, trace, waveform ------------------------------------------------------------------
def test_log_and_chrome_trace(tiny_model, tmp_path) -> None:
    op = tk.matmul(10, 7, 9, bias="row")
    prog = tk.compile(op, TINY)
    res = tk.run(prog, op.random_inputs(0), backend="verilator", log=True)
    assert len(res.log) == len(prog.instructions)
    for entry, ins in zip(res.log, prog.instructions):
        assert entry["op"] == ins.op and entry["unit"] in ("load", "execute", "store", "dispatch")
        assert entry["issue"] is not None and entry["complete"] is not None
        assert 0 <= entry["issue"] <= entry["complete"] <= res.cycles
    assert {e["unit"] for e in res.log} >= {"load", "execute", "store"}
    path = tmp_path / "trace.json"
    write_chrome_trace(res.log, path)
    events = json.loads(path.read_text())["traceEvents"]
    names = {e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    assert {"load", "execute", "store"} <= names
    assert sum(e["ph"] == "X" for e in events) == len(prog.instructions)


@pytest.mark.parametrize("suffix", ["fst", "vcd"])
def test_waveform(tiny_model, tmp_path, suffix) -> None:
    op = tk.matmul(4, 4, 4)
    wave = tmp_path / f"run.{suffix}"
    try:
        res = tk.run(tk.compile(op, TINY), op.random_inputs(0), backend="verilator", wave=wave)
    except BackendError as exc:
        if suffix == "fst" and "lz4" in str(exc):
            pytest.skip(str(exc))
        raise
    assert res.cycles > 0 and wave.exists() and wave.stat().st_size > 1000
    if suffix == "vcd":   # the clock toggles in every cycle recorded, not only in the first
        assert vcd_changes(wave.read_text(), "clk_i") >= 2 * res.cycles


def vcd_changes(vcd: str, signal: str) -> int:
    """How many value changes of a one-bit signal a VCD file records."""
    head, _, body = vcd.partition("$enddefinitions")
    code = next(line.split()[3] for line in head.splitlines() if line.split()[4:5] == [signal])
    return sum(line[1:] == code for line in body.splitlines() if line[:1] in "01")


# ---- errors ------------------------------------------------------------------------------------
def test_malformed_program_is_rejected(tiny_model) -> None:
    bufs = layout([("A", "input", "int8", (4, 4))])
    prog = Program(TINY, [ConfigEx(), ComputePreloaded(0, 4, 4, GARBAGE, 4, 4)], bufs)
    with pytest.raises(ProgramError, match="without a preload"):
        tk.run(prog, {"A": np.zeros((4, 4), np.int8)}, backend="verilator")


def test_harness_rejects_bad_files(tiny_model, tmp_path) -> None:
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"NOTAPROGRAM")
    out = subprocess.run([str(tiny_model), str(bad), str(tmp_path / "r.bin")], capture_output=True, text=True,
                         timeout=30)
    assert out.returncode == 2 and "bad magic" in out.stderr
    op = tk.matmul(4, 4, 4)
    other = tk.compile(op, GEMMINI)
    prog_file = tmp_path / "gemmini.bin"
    other.save(prog_file, op.random_inputs(0))
    out = subprocess.run([str(tiny_model), str(prog_file), str(tmp_path / "r.bin")], capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 2 and "dim=16" in out.stderr


# a number the harness must refuse (strtoull took "abc" as 0, "-1" as 2**64 - 1, "12x" as 12), and why
BAD_NUMBERS = [("--cycle-limit", "abc", "is not a number"), ("--watchdog", "12x", "is not a number"),
               ("--watchdog", "-1", "is not a number"), ("--cycle-limit", " 5", "is not a number"),
               ("--cycle-limit", "", "is not a number"),
               ("--cycle-limit", "18446744073709551616", "does not fit in 64 bits")]


@pytest.mark.parametrize("option, text, why", BAD_NUMBERS)
def test_harness_rejects_a_bad_number_naming_the_option(tiny_model, tmp_path, option, text, why) -> None:
    out = subprocess.run([str(tiny_model), "p.bin", "r.bin", option, text], cwd=tmp_path, capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 2 and out.stderr == f'error: {option}: "{text}" {why}\n'
    out = subprocess.run([str(tiny_model), "p.bin", "r.bin", option], cwd=tmp_path, capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 2 and out.stderr == f"error: {option}: missing its value\n"


def test_a_bad_number_reaches_the_python_error(tiny_model, monkeypatch) -> None:
    # run() checks its limits itself; past that check, the harness's own refusal is what the user reads
    monkeypatch.setattr(V, "positive_limit", lambda name, value, *args: value)
    op = tk.matmul(4, 4, 4)
    prog = tk.compile(op, TINY)
    with pytest.raises(BackendError, match=r'bad harness arguments.*: --cycle-limit: "abc" is not a number$'):
        V.run(prog, op.random_inputs(0), cycle_limit="abc", timeout=60)


# mutations of accel_top.sv that the RTL's own checks must catch, and what the error says
RTL_MUTATIONS = {
    # the cycle counter counts only the execute unit's busy cycles: the harness compares it
    # with its own clock, so counters["cycles"] == res.cycles can fail
    "cycle counter": ("ctr_en[CtrCycles]            = 1'b1;", "ctr_en[CtrCycles] = ustack[EX].busy;",
                      r"RTL check.*cycle counter reads \d+ but the harness ran \d+ cycles"),
    # the store unit's accumulator reads outrank the execute unit's result writes: the
    # assertion "a result write is always granted" stops the run
    "write priority": ("localparam int ACC_EX_WR = 0, ACC_LD = 1, ACC_ST = 2;",
                       "localparam int ACC_EX_WR = 2, ACC_LD = 1, ACC_ST = 0;",
                       r"harness process died.*Assertion failed.*result write to the accumulator was not granted"),
}


@pytest.mark.parametrize("mutation", sorted(RTL_MUTATIONS))
def test_the_rtl_checks_catch_a_mutated_design(verilator_ok, mutation, tmp_path, monkeypatch) -> None:
    right, wrong, error = RTL_MUTATIONS[mutation]
    rtl = tmp_path / "rtl"
    shutil.copytree(V.RTL_DIR, rtl)
    top = rtl / "accel_top.sv"
    assert right in top.read_text()
    top.write_text(top.read_text().replace(right, wrong))
    monkeypatch.setattr(V, "RTL_DIR", rtl)
    monkeypatch.setattr(V, "HARNESS_DIR", rtl / "harness")
    monkeypatch.setenv("SYSTOLIC_QUIET", "1")   # the build key hashes the sources: the mutant is cached apart
    op = tk.matmul(32, 32, 32)
    with pytest.raises(BackendError, match=error):
        tk.run(tk.compile(op, TINY), op.random_inputs(0), backend="verilator", timeout=60)


def test_deadlock_gives_a_clear_error(tiny_model) -> None:
    op = tk.matmul(8, 8, 8)
    prog = tk.compile(op, TINY)
    with pytest.raises(BackendError, match=r"deadlock.*watchdog.*load unit has \d+ DMA reads outstanding"):
        tk.run(prog, op.random_inputs(0), backend="verilator", watchdog=2000, _fault="drop_dma_responses",
               timeout=60)


def test_cycle_limit_and_timeout(tiny_model) -> None:
    op = tk.matmul(16, 16, 16)
    prog = tk.compile(op, TINY)
    with pytest.raises(CycleLimit, match="cycle limit of 50 cycles"):   # a BackendError of its own kind
        tk.run(prog, op.random_inputs(0), backend="verilator", cycle_limit=50)
    res = tk.run(prog, op.random_inputs(0), backend="verilator", cycle_limit=10**7, timeout=60)
    assert res.cycles < 10**7
