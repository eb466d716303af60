"""The RTL's weight switch: a long weight-stationary chain of preload(new weights) + compute_preloaded costs
no more per block than a chain of compute_accumulated that keeps its weights (one row a cycle: dim cycles a
block). The execute unit loads the next block's weights into a free buffer while the block before streams
(rtl/execute_unit.sv's W stage); the programs are benchmarks/bench_weight_switch.py's, their outputs
checked against the functional model there. On the accelerator alone: on the SoC the host's cost per word
(two words a block) would bound both chains alike."""
from __future__ import annotations

import pytest

from benchmarks.bench_weight_switch import measure
from isa import PRESETS
from simulators import verilator as V

BLOCKS = 48


@pytest.fixture(scope="module")
def gemmini_model(tiny_model):
    return V.build(PRESETS["gemmini-alone"])


def assert_switch_free(name: str) -> None:
    hw = PRESETS[name]
    new = measure(hw, BLOCKS, new_weights=True)["per_block"]
    reuse = measure(hw, BLOCKS, new_weights=False)["per_block"]
    assert reuse == pytest.approx(hw.dim), (name, reuse)
    # tiny's execute queue of 4 entries costs it some (a new-weights compute holds its entry while W loads)
    assert new <= reuse + 1.0, f"{name}: {new:.2f} cycles a block with new weights, {reuse:.2f} reusing them"


def test_weight_switch_free_tiny(tiny_model) -> None:
    assert_switch_free("tiny")


def test_weight_switch_free_gemmini(gemmini_model) -> None:
    assert_switch_free("gemmini-alone")
