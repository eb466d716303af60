"""The analytical cycle estimate the default heuristics share to pick among candidate schedules.

Never a measurement: it exists so that a heuristic can rank its candidates without running
anything. It models the machine of ARCHITECTURE.md as the RTL builds it (rtl/execute_unit.sv,
rtl/load_unit.sv, the harness's DRAM model) at the level of one pipeline step: what the array
streams, and what the one DMA port moves, and it stays within ~2% of the RTL on the suites'
layers over the tile shapes we measured (a packed stem's padding copy aside).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from isa import HardwareConfig

WEIGHT_BUFFERS = 3   # weight buffers in the mesh (execute_unit's NBUF)
STEP_OVERHEAD = 2    # cycles per pipeline step, in dims: its turn-around (fitted on the RTL)
# cycles, in dims, that one chain of output-stationary computes adds to the weight-stationary stream of
# the same tiles. The PEs double-buffer their sums, so D shifts in and the results out during the
# steps; what a chain still costs is its results leaving a chain later (which holds its compute, and
# what waits on it, longer). Fitted on the RTL at dim 16 (gemmini-alone): 2.0-3.8 cycles a chain on
# six 1x1 convs, 7.9-8.1 on two 3x3s (benchmarks/bench_dataflow.py on MobileNetV2's and ResNet-50's);
# 2.7-3.0 on tiny's convs. With one sum a PE it was 2 dims (29.9-32.9 cycles a chain at dim 16).
OS_CHAIN_OVERHEAD = 0.25


def os_cycles(ws_cycles: float, chains: int, dim: int) -> float:
    """The estimate of an output-stationary schedule: its tiles' weight-stationary estimate, plus each
    of its ``chains`` of computes (one output block's sum built in the array) adding OS_CHAIN_OVERHEAD dims
    and a cycle."""
    return ws_cycles + chains * (OS_CHAIN_OVERHEAD * dim + 1)


def dma_row_cycles(nbytes: int, hw: HardwareConfig) -> float:
    """Port cycles per DRAM row of ``nbytes`` in a long run of them: its beats, or, for narrow rows,
    its share of the read latency over the ``dma_inflight`` requests in flight (a 16-byte row
    moves at ~40% of the port on the gemmini preset)."""
    beats = -(-nbytes // hw.dma_beat_bytes)
    return max(beats, (hw.dram_latency + beats + 2) / hw.dma_inflight)


def tap_cycles(rows: int | np.ndarray, last: int | np.ndarray, dim: int) -> float | np.ndarray:
    """Array cycles of one weight block (a preload) and the computes that stream ``rows`` rows
    through it, the last ``last`` rows long: a row a cycle; the next block's weights load (dim
    cycles) while the last compute streams; a block waits for one of the WEIGHT_BUFFERS, each
    held from its load until 2*dim+1 cycles after its last row. Element-wise over arrays."""
    return np.maximum(rows + dim - np.minimum(dim, last), (rows + 3 * dim + 1) / WEIGHT_BUFFERS)


def pipeline_cycles(steps: "Sequence[tuple[float, float, float]] | np.ndarray", dim: int,
                    startup: float | None = None, step_overhead: float = STEP_OVERHEAD, *,
                    load_ahead: bool = True, store_delay: bool = True) -> float:
    """Cycles of a software pipeline (load_ahead, store_delay) over ``steps`` of (computes, loads,
    stores[, load writes]) array, port or load-unit cycles: a step costs the larger of its computes
    and the DMA of the next step's loads and the previous step's stores, issued among them (or,
    where larger, of the load unit writing the next step's loads into local memory, a block a
    cycle). The first step's own loads come first: all of them (``startup`` None), or, where they
    go in among its computes in the order those need them, ``startup`` cycles before the first
    compute and then alongside the next step's loads. The last step's stores follow; each step adds
    ``step_overhead`` dims. Without ``load_ahead`` (``store_delay``) a step's own loads (stores) come
    in program order before (after) its computes, and the port's time for them adds to the step's."""
    table = np.asarray(steps, dtype=float)
    if not len(table):
        return 0.0
    return pipeline_columns(*table.T[:3], table[:, 3] if table.shape[1] > 3 else None, dim, startup, step_overhead,
                            load_ahead=load_ahead, store_delay=store_delay)


def pipeline_columns(compute: np.ndarray, load: np.ndarray, store: np.ndarray, writes: np.ndarray | None, dim: int,
                     startup: float | None = None, step_overhead: float = STEP_OVERHEAD, *,
                     load_ahead: bool = True, store_delay: bool = True) -> float:
    """:func:`pipeline_cycles` of its table's columns (float, at least one step; ``writes`` None: no load
    writes), without stacking them."""
    dma = np.zeros(len(compute))
    serial = 0.0
    if load_ahead:
        dma[:-1] += load[1:]      # the next step's loads
        if startup is not None:
            dma[0] += load[0]
    else:
        serial += load[1:].sum()
        startup = None
    if store_delay:
        dma[1:] += store[:-1]     # the previous step's stores
    else:
        serial += store[:-1].sum()
    if writes is not None and load_ahead:    # the load unit's writes into local memory, a block a cycle
        following = np.zeros(len(compute))
        following[:-1] = writes[1:]
        dma = np.maximum(dma, following)
    first = load[0] if startup is None else startup
    return float(first + store[-1] + 2 * dim + serial + np.maximum(compute, dma).sum()
                 + len(compute) * step_overhead * dim)
