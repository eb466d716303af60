"""Matmul's lowering: Python walks the tile loops and residency; matmul_ws.s.j2 renders each tile."""
from __future__ import annotations

import functools
from typing import NamedTuple

from isa import HardwareConfig, Program, parse_program
from isa.assembly import clear_parse_cache

from ..lowering import blocks, clear_unit_caches, norm_config, op_buffers, render, requant_fields
from ..schedule import ScheduleError
from .op import Matmul
from .schedule import MatmulSchedule


class Tile(NamedTuple):
    a: int
    b: int
    c: int
    load_a: bool
    load_b: bool
    bias_before: bool
    bias_after: bool
    accumulate: bool
    store: bool
    i_blocks: list
    j_blocks: list
    k_blocks: list
    k_groups: list
    j_groups: list


def matmul_tiles(op: Matmul, s: MatmulSchedule, hw: HardwareConfig) -> list[Tile]:
    plan = s.memory_plan(hw, op)   # also: the dataflow suits the hardware and the op's transposes
    d = hw.dim
    nI = -(-op.M // (d * s.tile_i))
    nJ = -(-op.N // (d * s.tile_j))
    nK = -(-op.K // (d * s.tile_k))
    outer = [(i, j) for i in range(nI) for j in range(nJ)] if s.loop_order == "ijk" else \
        [(i, j) for j in range(nJ) for i in range(nI)]
    tiles = []
    held_a = held_b = None
    loads_a = loads_b = stores = 0
    for ti, tj in outer:
        for tk in range(nK):
            load_a, load_b = held_a != (ti, tk), held_b != (tk, tj)
            loads_a += load_a
            loads_b += load_b
            held_a, held_b = (ti, tk), (tk, tj)
            tiles.append(Tile(
                a=plan.a.base(loads_a - 1), b=plan.b.base(loads_b - 1), c=plan.c.base(stores),
                load_a=load_a, load_b=load_b,
                bias_before=bool(op.bias) and s.bias_strategy == "before" and tk == 0,
                bias_after=bool(op.bias) and s.bias_strategy == "after" and tk == nK - 1,
                accumulate=tk > 0 or (bool(op.bias) and s.bias_strategy == "before"),
                store=tk == nK - 1,
                i_blocks=blocks(ti, s.tile_i, op.M, d),
                j_blocks=blocks(tj, s.tile_j, op.N, d),
                k_blocks=blocks(tk, s.tile_k, op.K, d),
                k_groups=blocks(tk, s.tile_k, op.K, d, s.mvin_blocks),
                j_groups=blocks(tj, s.tile_j, op.N, d, s.mvin_blocks)))
        stores += 1
    return tiles


class Flow(NamedTuple):
    """How the array runs: its dataflow and which operands are stored transposed (0/1, as config_ex)."""
    dataflow: str
    ta: int
    tb: int


@functools.lru_cache(maxsize=4096)
def _matmul_computes(dim: int, TJ: int, TK: int, a: int, b: int, c: int, accumulate: bool,
                     i_sizes: tuple[int, ...], j_sizes: tuple[int, ...], k_sizes: tuple[int, ...],
                     flow: Flow) -> str:
    """One tile's preloads and computes. They name local addresses only, so tiles of equal
    shape and bases share this text, within a program and across the tuner's candidates."""
    return render("matmul_ws_computes.s.j2", dim=dim, TJ=TJ, TK=TK, a=a, b=b, c=c, accumulate=accumulate,
                  i_sizes=i_sizes, j_sizes=j_sizes, k_sizes=k_sizes, **flow._asdict())


def lower_matmul(op: Matmul, s: MatmulSchedule, hw: HardwareConfig) -> Program:
    if op.activation in ("layernorm", "softmax"):
        raise ScheduleError(f"activation={op.activation!r}: the toolkit's own matmul tiles do not hold whole rows for "
                            "the normalization unit; schedule='gemmini' (tiled_matmul_auto) does")
    flow = Flow(s.dataflow, int(op.transpose_a), int(op.transpose_b))
    buffers = op_buffers(op)
    out_bytes = 4 if op.out_dtype == "int32" else 1
    text = render(
        "matmul_ws.s.j2", M=op.M, N=op.N, K=op.K, bias=op.bias, activation=op.activation, scale=op.store_scale,
        out_dtype=op.out_dtype, out_bytes=out_bytes, requant=requant_fields(op), norm=norm_config(op),
        schedule=s.to_dict(), pipe=s,
        dim=hw.dim,
        TJ=s.tile_j, TK=s.tile_k, **flow._asdict(), bias_stride=op.N * 4 if op.bias == "full" else 0, bias_row_bytes=op.N * 4,
        tiles=matmul_tiles(op, s, hw),
        computes=lambda t: _matmul_computes(
            hw.dim, s.tile_j, s.tile_k, t.a, t.b, t.c, t.accumulate, tuple(b.size for b in t.i_blocks),
            tuple(b.size for b in t.j_blocks), tuple(b.size for b in t.k_blocks), flow))
    return parse_program(text, hw, buffers)


def clear_caches() -> None:
    """Forget rendered tile sections and parsed lines (for cold-start measurements)."""
    _matmul_computes.cache_clear()
    clear_unit_caches()
    clear_parse_cache()
