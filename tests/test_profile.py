"""Cycle stacks: every cycle of each unit in exactly one category, the bound, ``systolic profile``."""
from __future__ import annotations

import json

import numpy as np
import pytest

import toolkit as tk
from isa.opcodes import COUNTERS, STACK, STACK_UNITS, stack_counter
from toolkit.cli import main
from toolkit.profile import BOUNDS, bound, cycle_stacks, format_stacks
from networks.suite import STACK_COUNTERS, LayerResult, plot
from simulators.stand_in import estimate

TINY = tk.HardwareConfig.preset("tiny")
PROGRAMS = {
    "matmul": tk.matmul(13, 10, 21, bias="row", activation="relu", scale=0.1),
    "conv2d": tk.conv2d(1, 6, 6, 3, 5, bias="channel"),
    "resadd": tk.resadd(1, 4, 4, 8, a_scale=0.5, b_scale=2.0),
    "compute_bound": tk.matmul(64, 64, 64),    # each operand block feeds many computes
    "dma_bound": tk.matmul(4, 4, 1024),        # one column block: 2 bytes read per MAC row
}


@pytest.fixture(scope="module")
def runs(verilator_ok: None) -> dict[str, tk.RunResult]:
    out = {}
    for name, op in PROGRAMS.items():
        inputs = op.random_inputs(0)
        out[name] = tk.run(tk.compile(op, TINY), inputs, backend="verilator", timeout=300)
        for key, ref in op.reference(inputs).items():
            np.testing.assert_array_equal(out[name].outputs[key], ref, err_msg=f"{name}: {key}")
    return out


def test_counter_schema_has_one_stack_per_unit() -> None:
    assert STACK[-1] == "idle" and len(set(STACK)) == len(STACK)
    assert set(STACK_COUNTERS) <= set(COUNTERS)
    first = COUNTERS.index(stack_counter(STACK_UNITS[0], STACK[0]))
    assert COUNTERS[first:first + len(STACK_COUNTERS)] == STACK_COUNTERS   # contiguous, as the RTL indexes them


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_each_unit_stack_sums_to_the_cycles(runs, name) -> None:
    res = runs[name]
    stacks = cycle_stacks(res.counters)
    for unit, stack in stacks.items():
        assert sum(stack.values()) == res.cycles, f"{unit}: {stack} does not sum to {res.cycles}"
    # the stacks only observe: the older counters agree with them
    assert stacks["exec"]["busy"] + stacks["exec"]["bank"] == res.counters["exec_busy"]
    assert stacks["load"]["busy"] <= res.counters["load_busy"]


def test_stand_in_stacks_sum_to_its_cycles() -> None:
    for op in PROGRAMS.values():
        cycles, counters = estimate(tk.compile(op, TINY))
        assert all(sum(s.values()) == cycles for s in cycle_stacks(counters).values())


def test_bound_names_compute_and_dma(runs) -> None:
    compute = bound(runs["compute_bound"].counters, TINY)
    assert compute.name == "compute", compute
    dma = bound(runs["dma_bound"].counters, TINY)
    assert dma.name == "DMA read", dma
    assert dma.scores["DMA read"] > dma.scores["compute"] and "DMA port" in dma.reason
    stacks = cycle_stacks(runs["dma_bound"].counters)
    assert stacks["load"]["busy"] + stacks["load"]["dma"] > stacks["exec"]["busy"]   # the loads hold the run


def test_stacks_need_the_counters() -> None:
    with pytest.raises(ValueError, match="no cycle stacks"):
        cycle_stacks({"cycles": 10})
    table = format_stacks({u: dict.fromkeys(STACK, 0) | {"busy": 5, "idle": 5} for u in STACK_UNITS}, 10)
    assert "execute" in table and "5 (50.0%)" in table


def test_profile_command(runs, capsys) -> None:
    argv = ["profile", "matmul", "--m", "13", "--n", "10", "--k", "21", "--bias", "row", "--relu", "--scale",
            "0.1", "--config", "tiny"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"{runs['matmul'].cycles} cycles, bit-exact: yes" in out and "bound: " in out
    assert all(unit in out for unit in ("load", "execute", "store"))
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cycles"] == runs["matmul"].cycles and data["exact"] is True
    assert data["stacks"] == cycle_stacks(runs["matmul"].counters) and data["bound"] in BOUNDS


def test_bench_plot_draws_the_stacks(runs, tmp_path) -> None:
    def layer(name: str, res: tk.RunResult, stacks: bool) -> LayerResult:
        return LayerResult(name, "matmul", 1, 1, 1, 1, res.cycles, 1, 1, 0.5, 0.5, 0.0, 0.0, None, True,
                           stacks={k: res.counters[k] for k in STACK_COUNTERS} if stacks else None)

    with_stacks, without = tmp_path / "with.png", tmp_path / "without.png"
    plot([layer(n, runs[n], True) for n in ("matmul", "resadd")], with_stacks)
    plot([layer(n, runs[n], False) for n in ("matmul", "resadd")], without)
    from matplotlib.image import imread
    assert imread(with_stacks).shape[0] > 1.5 * imread(without).shape[0]   # the second subplot
