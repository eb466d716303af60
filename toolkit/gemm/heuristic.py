"""Matmul's default schedule (the toolkit's heuristic) and the gemmini-flat port of tiled_matmul_auto's sizing."""
from __future__ import annotations

import functools
import itertools

import numpy as np

from isa import HardwareConfig

from ..estimate import STEP_OVERHEAD, dma_row_cycles, pipeline_cycles, tap_cycles
from ..knobs import tile_values
from ..schedule import ScheduleError, grow_tiles
from .op import Matmul
from .schedule import MatmulSchedule, matmul_blocks


def gemmini_matmul_schedule(M: int, N: int, K: int, hw: HardwareConfig, *, double_buffer: bool = True,
                            ) -> MatmulSchedule:
    """schedule="gemmini-flat": tiled_matmul_auto's sizing as first ported (from 5x5x51, the gemmini
    preset's start, on any hardware) in our own flat load-compute-store order: grow tile_j, tile_i,
    tile_k round-robin while A and B fit half the scratchpad and C half the accumulator."""
    d, limits = hw.dim, matmul_blocks(M, N, K, hw)
    nbuf = 2 if double_buffer else 1
    sp_budget, acc_budget = hw.sp_rows // nbuf, hw.acc_rows // nbuf

    def fits(t: dict[str, int]) -> bool:
        return ((t["i"] * t["k"] + t["k"] * t["j"]) * d <= sp_budget and t["i"] * t["j"] * d <= acc_budget)

    start = {"i": min(limits["i"], 5), "j": min(limits["j"], 5), "k": min(limits["k"], 51)}
    tiles = grow_tiles(start, limits, fits, ("j", "i", "k"), f"a {M}x{N}x{K} matmul on {hw.name}")
    a_rows = nbuf * tiles["i"] * tiles["k"] * d
    b_bank = -(-a_rows // hw.sp_bank_rows)
    b_rows = nbuf * tiles["k"] * tiles["j"] * d
    if b_bank >= hw.sp_banks or b_bank * hw.sp_bank_rows + b_rows > hw.sp_rows:
        b_bank = 0  # pack B right after A
    return MatmulSchedule(tiles["i"], tiles["j"], tiles["k"], double_buffer=double_buffer,
                          mvin_blocks=hw.max_block_len, b_bank=b_bank)


def _rough_matmul_cycles(M: int, N: int, K: int, s: MatmulSchedule, hw: HardwareConfig, out_bytes: int) -> float:
    """A quick bound of :func:`pipelined_matmul_cycles`, from totals: the larger of all computes and
    all DMA (each operand loaded once per tile it is not held for), plus the steps' turn-around."""
    d, mb = hw.dim, s.mvin_blocks
    rows = [min(d, M - b * d) for b in range(-(-M // d))]
    nI, nJ, nK = (-(-n // (d * t)) for n, t in ((M, s.tile_i), (N, s.tile_j), (K, s.tile_k)))
    compute = sum(tap_cycles(sum(rows[t:t + s.tile_i]), rows[min(t + s.tile_i, len(rows)) - 1], d)
                  for t in range(0, len(rows), s.tile_i)) * -(-N // d) * -(-K // d)
    ijk = s.loop_order == "ijk"
    a_loads = 1 if nK == 1 and (ijk or nI == 1) else nJ
    b_loads = 1 if nK == 1 and (not ijk or nJ == 1) else nI
    row = lambda cols: dma_row_cycles(min(cols, mb * d), hw) * -(-cols // (mb * d))
    dma = a_loads * M * row(min(K, s.tile_k * d)) * nK + b_loads * K * row(min(N, s.tile_j * d)) * nJ
    dma += M * N * out_bytes / hw.dma_beat_bytes
    return max(compute, dma) + nI * nJ * nK * STEP_OVERHEAD * d


# Over 40 lines: most of it is the docstring, the model's assumptions beside the walk that uses them.
def pipelined_matmul_cycles(M: int, N: int, K: int, s: MatmulSchedule, hw: HardwareConfig, out_bytes: int = 1
                            ) -> float:
    """A cycle estimate of a pipelined matmul schedule (load_ahead, store_delay), used only to pick the
    default's tiles: matmul_tiles' walk (loop order, ragged last tiles, A or B resident while its tile
    repeats) through :func:`~toolkit.estimate.pipeline_cycles`. Each weight block B(k, j) streams the
    tile's rows of A (:func:`~toolkit.estimate.tap_cycles`); A and B rows move at
    :func:`~toolkit.estimate.dma_row_cycles` per mvin_blocks-wide group, a stored row a beat per
    16 bytes. The first step's loads go in among its computes in the order k needs them
    (pipeline.s.j2), so only its first k group's are not hidden. Each step adds STEP_OVERHEAD: on the
    RTL a step of many thousand cycles costs next to nothing more, but steps of ~2k cycles that reload
    both A and B lose ~4 dims each (the loads two steps ahead meet the banks the array still reads), so
    the estimate leans to large steps, the region where it was checked (14 tilings of the six Exo
    GEMMs, each within 0.7% of the RTL)."""
    d, mb = hw.dim, s.mvin_blocks

    def extents(total: int, tile: int) -> list[list[int]]:
        """Per tile, the rows (or columns) of each of its dim blocks."""
        blocks = [min(d, total - b * d) for b in range(-(-total // d))]
        return [blocks[t:t + tile] for t in range(0, len(blocks), tile)]

    def row_cycles(cols: list[int], itemsize: int = 1) -> float:
        return sum(dma_row_cycles(sum(cols[g:g + mb]) * itemsize, hw) for g in range(0, len(cols), mb))

    I, J, Kt = extents(M, s.tile_i), extents(N, s.tile_j), extents(K, s.tile_k)
    # the steps as arrays (k innermost; A or B loads where its tile differs from the previous step's);
    # each value is the same float expression per tile as a step-by-step walk would give
    outer = np.indices((len(I), len(J)) if s.loop_order == "ijk" else (len(J), len(I))).reshape(2, -1)
    i, j = (outer if s.loop_order == "ijk" else outer[::-1]).repeat(len(Kt), axis=1)
    k = np.tile(np.arange(len(Kt)), len(outer[0]))
    new_a, new_b = np.ones(len(k), bool), np.ones(len(k), bool)
    new_a[1:] = (i[1:] != i[:-1]) | (k[1:] != k[:-1])
    new_b[1:] = (k[1:] != k[:-1]) | (j[1:] != j[:-1])
    rows_i = np.array([sum(x) for x in I], dtype=float)
    # a tile's extents are those of the first unless it is the last (ragged): [last i, last j, last k]
    compute = np.array([[[len(jb) * len(kb) * tap_cycles(sum(ib), ib[-1], d) for kb in (Kt[0], Kt[-1])]
                         for jb in (J[0], J[-1])] for ib in (I[0], I[-1])])
    per_k = [(float(sum(kb)), row_cycles(kb)) for kb in Kt]
    k_rows, k_row_cycles = (np.array(x) for x in zip(*per_k))
    load = (np.where(new_a, rows_i[i] * k_row_cycles[k], 0.0)
            + np.where(new_b, k_rows[k] * np.array([row_cycles(jb) for jb in J])[j], 0.0))
    store_row = np.array([-(-sum(jb) * out_bytes // hw.dma_beat_bytes) for jb in J], dtype=float)
    store = np.where(k == len(Kt) - 1, rows_i[i] * store_row[j], 0.0)
    last = [(x == len(t) - 1).astype(int) for x, t in ((i, I), (j, J), (k, Kt))]
    steps = np.stack([compute[last[0], last[1], last[2]], load, store], axis=1)
    first_k = min(mb, len(Kt[0])) / len(Kt[0])
    return pipeline_cycles(steps, d, startup=steps[0, 1] * first_k + hw.dram_latency,
                           load_ahead=bool(s.load_ahead), store_delay=bool(s.store_delay))


def os_chains(op: Matmul, s: MatmulSchedule, hw: HardwareConfig) -> int:
    """Output-stationary chains of ``s`` (matmul_ws_computes.s.j2): one per output block and tile of k."""
    blocks = lambda n: -(-n // hw.dim)
    return blocks(op.M) * blocks(op.N) * -(-blocks(op.K) // s.tile_k)


def default_dataflow(op: Matmul, hw: HardwareConfig) -> str:
    """Weight-stationary, measured the faster on the RTL for every GEMM of
    benchmarks/bench_dataflow.py; output-stationary where the op needs it (A and B both
    transposed: WS would need the one transposer twice) or the hardware has only it."""
    if not hw.has_dataflow("ws") or (op.transpose_a and op.transpose_b):
        return "os"
    return "ws"


@functools.lru_cache(maxsize=1024)
def default_matmul_schedule(M: int, N: int, K: int, hw: HardwareConfig, out_bytes: int = 1) -> MatmulSchedule:
    """The toolkit's heuristic: the tiles :func:`pipelined_matmul_cycles` finds fastest under a software
    pipeline, among every balanced tiling (each of i, j, k the smallest tile for its number of tiles,
    so that no last tile is left ragged; tiles of at least 2 blocks of rows where M has them: a
    weight block used for one block of rows waits for a weight buffer) in either loop order.

    The next step's loads and the previous step's stores are interleaved with each
    step's computes, and the halves of every double buffer sit in different banks
    (A and B in banks of their own where the scratchpad has enough), so that DMA writes
    and the array's reads meet in no bank; B packs after A only where no tiling fits
    otherwise (sharing a bank costs up to 25% on the RTL)."""
    blocks = matmul_blocks(M, N, K, hw)
    pipelined = dict(load_ahead=1, store_delay=1, split_buffers=True, mvin_blocks=hw.max_block_len)
    placements = [dict(b_bank=1), dict(b_bank=0)] if hw.sp_banks >= 4 else [dict(b_bank=0)]
    least = min(blocks["i"], 2)
    for placement in placements:
        candidates = []
        for ti, tj, tk in itertools.product(*(tile_values(blocks[x]) for x in "ijk")):
            if ti < least or ti * tj * hw.dim > hw.acc_rows // 2:
                continue
            s = MatmulSchedule(ti, tj, tk, **pipelined, **placement)
            try:
                s.memory_plan(hw)
            except ScheduleError:
                continue
            candidates.append(s)
            if blocks["i"] > 1 and blocks["j"] > 1:
                candidates.append(s.replace(loop_order="jik"))
        if candidates:   # the walk for the dozen best by the quick bound
            candidates.sort(key=lambda s: _rough_matmul_cycles(M, N, K, s, hw, out_bytes))
            return min(candidates[:12], key=lambda s: pipelined_matmul_cycles(M, N, K, s, hw, out_bytes))
    return gemmini_matmul_schedule(M, N, K, hw)
