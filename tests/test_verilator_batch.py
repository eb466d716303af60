"""Many programs through one harness process (``simulators.verilator.run_many``): each gets
exactly the cycles, counters and bits of a run of its own, and a bad program fails only itself."""
from __future__ import annotations

import concurrent.futures as cf

import numpy as np
import pytest

import toolkit as tk
from isa import ComputePreloaded, ConfigEx, GARBAGE, PRESETS, Program, layout
from isa.checker import ProgramError
from simulators import BackendError
from simulators import verilator as V
from toolkit.kinds import gemmini_flat_schedule
from tuner.measure import Measurer, run_candidate
from tuner.space import Space

TINY = PRESETS["tiny"]
MATMUL = tk.matmul(11, 9, 14, bias="row", activation="relu", scale=0.1)
CONV = tk.conv2d(1, 5, 6, 3, 5, kernel=3, stride=2, padding=1, bias="channel", scale=0.02)


def good_jobs() -> list[tuple[tk.Program, dict, tk.Op]]:
    """Programs that differ in tiling, order and placement, so state left behind would show."""
    base = gemmini_flat_schedule(MATMUL, TINY)
    schedules = [base, base.replace(tile_i=1, tile_j=1, tile_k=1), base.replace(loop_order="jik", a_bank=0, b_bank=0),
                 base.replace(tile_i=2, tile_j=2, tile_k=2, double_buffer=False, bias_strategy="after")]
    jobs = [(tk.compile(MATMUL, TINY, schedule=s), MATMUL.random_inputs(seed=i), MATMUL)
            for i, s in enumerate(schedules)]
    jobs.insert(2, (tk.compile(CONV, TINY), CONV.random_inputs(seed=7), CONV))
    return jobs + jobs[:1]   # the first again, after the others


def unpreloaded_compute() -> tuple[Program, dict]:
    bufs = layout([("A", "input", "int8", (4, 4))])
    return Program(TINY, [ConfigEx(), ComputePreloaded(0, 4, 4, GARBAGE, 4, 4)], bufs), {"A": np.zeros((4, 4), np.int8)}


def assert_same_run(got: tk.RunResult, alone: tk.RunResult, op: tk.Op, inputs: dict) -> None:
    assert isinstance(got, tk.RunResult), got
    assert (got.cycles, got.counters) == (alone.cycles, alone.counters)
    for name, want in op.reference(inputs).items():
        np.testing.assert_array_equal(got.outputs[name], want, err_msg=name)


def test_batched_runs_match_single_runs_and_bad_programs_fail_alone(tiny_model) -> None:
    good = good_jobs()
    alone = [V.run(prog, inputs, timeout=120) for prog, inputs, _ in good]
    bad_inputs = (good[0][0], {"A": np.zeros((11, 14), np.int16), "B": good[0][1]["B"], "bias": good[0][1]["bias"]})
    # every bad kind between good programs: checker error, deadlock (watchdog), a crashed harness, bad inputs
    jobs = [good[0][:2], unpreloaded_compute(), good[1][:2], good[2][:2], good[3][:2], good[4][:2],
            good[0][:2], bad_inputs, good[5][:2]]
    results = V.run_many(jobs, timeout=120, _faults={3: "drop_dma_responses", 5: "kill_harness"})
    assert len(results) == len(jobs)
    assert isinstance(results[1], ProgramError) and "without a preload" in str(results[1])
    assert isinstance(results[3], BackendError) and "deadlock" in str(results[3]) and "watchdog" in str(results[3])
    assert isinstance(results[5], BackendError) and "harness process died: killed by signal 9" in str(results[5])
    assert isinstance(results[7], ValueError) and "dtype int16" in str(results[7])
    for pos, g in [(0, 0), (2, 1), (4, 3), (6, 0), (8, 5)]:
        assert_same_run(results[pos], alone[g], good[g][2], good[g][1])
    # and a clean batch of all of them, the same again
    for res, one, (_, inputs, op) in zip(V.run_many([(p, i) for p, i, _ in good]), alone, good):
        assert_same_run(res, one, op, inputs)


def test_a_program_past_the_timeout_is_killed_and_the_rest_still_run(tiny_model) -> None:
    prog, inputs, op = good_jobs()[0]
    results = V.run_many([(prog, inputs)] * 3, timeout=1.0, watchdog=10**9, _faults={1: "drop_dma_responses"})
    assert isinstance(results[1], V.SimulationTimeout) and "within 1.0 s" in str(results[1])
    assert results[0].cycles == results[2].cycles > 0
    np.testing.assert_array_equal(results[2].outputs["C"], op.reference(inputs)["C"])


def test_run_many_checks_its_options_first() -> None:
    with pytest.raises(ValueError, match="^timeout must be a positive"):
        V.run_many([], timeout=0)
    assert V.run_many([]) == []


# ---- the tuner's measurer: one harness process per group of candidates ----------------------
def candidates() -> list[tk.MatmulSchedule]:
    space = Space(MATMUL, TINY)
    step = max(1, len(space) // 6)
    return [space[i] for i in range(0, 6 * step, step)]


def test_measurer_runs_a_group_in_one_harness_and_a_bad_candidate_fails_alone(tiny_model, monkeypatch) -> None:
    schedules = candidates()
    schedules.append(schedules[0].replace(tile_i=99, tile_j=99, tile_k=99))   # does not fit: never run
    alone = [run_candidate(MATMUL.to_dict(), TINY.as_dict(), s.to_dict(), "verilator", 120.0) for s in schedules[:6]]
    calls = []
    real = V.run_many

    def faulty(jobs, **options):
        """A checker error, a deadlock and a wrong output among good candidates."""
        jobs = list(jobs)
        calls.append(len(jobs))
        jobs[1] = unpreloaded_compute()
        outs = real(jobs, _faults={2: "drop_dma_responses"}, **options)
        outs[4].outputs["C"] = outs[4].outputs["C"] ^ np.int8(1)
        return outs

    monkeypatch.setattr(V, "run_many", faulty)
    with cf.ThreadPoolExecutor(1) as pool, Measurer("verilator", executor=pool, workers=1, timeout=120) as m:
        results = dict(m.measure(MATMUL, TINY, schedules))
    assert calls == [6]   # one group: the six that fit, in one run_many
    statuses = [results[i].status for i in range(len(schedules))]
    assert statuses == ["ok", "error", "error", "ok", "wrong", "ok", "invalid"]
    assert "without a preload" in results[1].error and "deadlock" in results[2].error
    assert "differs from the reference" in results[4].error
    for i in (0, 3, 5):
        assert (results[i].cycles, results[i].counters) == (alone[i].cycles, alone[i].counters)


def test_measurer_batched_in_worker_processes_gives_the_cycles_of_single_runs(tiny_model) -> None:
    schedules = candidates()
    alone = [run_candidate(MATMUL.to_dict(), TINY.as_dict(), s.to_dict(), "verilator", 120.0) for s in schedules]
    with Measurer("verilator", workers=2, timeout=120) as m:
        assert m._groups(MATMUL, TINY, len(schedules)) == [[0, 2, 4], [1, 3, 5]]
        results = dict(m.measure(MATMUL, TINY, schedules))
    assert all(r.ok for r in alone)
    assert [(results[i].status, results[i].cycles) for i in range(6)] == [("ok", r.cycles) for r in alone]
