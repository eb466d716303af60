"""Matmul's default schedule (the toolkit's heuristic) and the gemmini-flat port of tiled_matmul_auto's sizing."""
from __future__ import annotations

import functools

from isa import HardwareConfig

from ..schedule import ScheduleError, grow_tiles
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


DMA_EFFICIENCY = 0.75


def pipelined_matmul_cycles(blocks: dict[str, int], t: dict[str, int], hw: HardwareConfig, out_bytes: int) -> float:
    """A rough cycle estimate of a pipelined tiling in loop order ijk, used only to pick the default's tiles.

    Steps overlap their DMA with their computes, so each costs the larger of the two; A stays
    resident across j when one k tile covers K, B when it is the only tile; the first step's loads
    and the last step's stores are not hidden; every step pays a short drain. The DMA moves a beat
    on about DMA_EFFICIENCY of its cycles (latency between requests; measured on the RTL)."""
    d, beat = hw.dim, hw.dma_beat_bytes * DMA_EFFICIENCY
    n = {x: -(-blocks[x] // t[x]) for x in "ijk"}
    M, N, K = (blocks[x] * d for x in "ijk")
    steps = n["i"] * n["j"] * n["k"]
    a_bytes = M * K * (1 if n["k"] == 1 else n["j"])
    b_bytes = K * N * (1 if n["k"] == 1 and n["j"] == 1 else n["i"])
    dma = (a_bytes + b_bytes + M * N * out_bytes) / beat
    compute = blocks["i"] * blocks["j"] * blocks["k"] * d
    first = (t["i"] * t["k"] + t["k"] * t["j"]) * d * d / beat
    last = t["i"] * t["j"] * d * d * out_bytes / beat
    return steps * max(compute / steps, dma / steps) + first + last + 2 * d * steps


@functools.lru_cache(maxsize=1024)
def default_matmul_schedule(M: int, N: int, K: int, hw: HardwareConfig, out_bytes: int = 1) -> MatmulSchedule:
    """The toolkit's heuristic: Gemmini's tile sizing, under a software pipeline, or a resident B or A.

    The next step's loads and the previous step's stores are interleaved with each
    step's computes, and the halves of every double buffer sit in different banks
    (A and B in banks of their own where the scratchpad has enough), so that DMA writes
    and the array's reads meet in no bank. Candidates: Gemmini's round-robin growth under
    that placement, and the tiles that keep all of B (or all of A) resident, loaded once;
    :func:`pipelined_matmul_cycles` picks among them."""
    blocks = matmul_blocks(M, N, K, hw)
    pipelined = dict(load_ahead=1, store_delay=1, split_buffers=True, mvin_blocks=hw.max_block_len)
    placements = [dict(b_bank=1), dict(b_bank=0)] if hw.sp_banks >= 4 else [dict(b_bank=0)]
    start = {"i": min(blocks["i"], 5), "j": min(blocks["j"], 5), "k": min(blocks["k"], 51)}
    what = f"a {M}x{N}x{K} matmul on {hw.name}"
    for placement in placements:
        def fits(t: dict[str, int]) -> bool:
            try:
                MatmulSchedule(t["i"], t["j"], t["k"], **pipelined, **placement).memory_plan(hw)
            except ScheduleError:
                return False
            return True
        candidates = []
        for grow, fixed in (("jik", {}), ("i", {"j": blocks["j"], "k": blocks["k"]}),
                            ("j", {"i": blocks["i"], "k": blocks["k"]})):
            first = {**{x: 1 for x in "ijk"}, **fixed} if fixed else start
            if fits(first) or not fixed:
                try:
                    candidates.append(grow_tiles(first, blocks, fits, grow, what))
                except ScheduleError:
                    pass
        if candidates:
            t = min(candidates, key=lambda t: pipelined_matmul_cycles(blocks, t, hw, out_bytes))
            return MatmulSchedule(t["i"], t["j"], t["k"], **pipelined, **placement)
    return gemmini_matmul_schedule(M, N, K, hw)
