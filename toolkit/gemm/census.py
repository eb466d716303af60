"""Matmul's instruction census (see toolkit/census.py): matmul_tiles' walk over arrays of steps, and
the words matmul_ws.s.j2 / matmul_ws_computes.s.j2 emit for one step of each class."""
from __future__ import annotations

import numpy as np

from isa import GARBAGE, Buffer, HardwareConfig
from isa.opcodes import Funct

from ..census import Census, Words, acc, classes, frame, join, operand
from ..lowering import Block, blocks, op_buffers
from .op import Matmul
from .schedule import MatmulSchedule


def _steps(op: Matmul, s: MatmulSchedule, hw: HardwareConfig) -> dict[str, np.ndarray]:
    """matmul_tiles' steps as arrays: tile indices, which operands load, and the buffer each uses."""
    d = hw.dim
    nI, nJ, nK = (-(-n // (d * t)) for n, t in ((op.M, s.tile_i), (op.N, s.tile_j), (op.K, s.tile_k)))
    i, j, k = (a.ravel() for a in np.meshgrid(np.arange(nI), np.arange(nJ), np.arange(nK), indexing="ij"))
    if s.loop_order == "jik":
        order = np.lexsort((k, i, j))
        i, j, k = i[order], j[order], k[order]
    new_a, new_b = np.ones(len(i), bool), np.ones(len(i), bool)
    new_a[1:] = (i[1:] != i[:-1]) | (k[1:] != k[:-1])
    new_b[1:] = (k[1:] != k[:-1]) | (j[1:] != j[:-1])
    return dict(i=i, j=j, k=k, new_a=new_a, new_b=new_b, last_k=k == nK - 1, first_k=k == 0,
                a_buf=(np.cumsum(new_a) - 1) % s.nbuf, b_buf=(np.cumsum(new_b) - 1) % s.nbuf,
                c_buf=(np.arange(len(i)) // nK) % s.nbuf, ragged=np.stack([i == nI - 1, j == nJ - 1, k == nK - 1]))


def _grid(outer: list[Block], inner: list[Block]) -> tuple[np.ndarray, ...]:
    """(outer idx, outer start, outer size, inner idx, inner start, inner size) over every pair."""
    o, n = np.meshgrid(np.arange(len(outer)), np.arange(len(inner)), indexing="ij")
    col = lambda bl, at, f: np.array([getattr(b, f) for b in bl], dtype=np.int64)[at.ravel()]   # noqa: E731
    fields = ("idx", "start", "size")
    return (*(col(outer, o, f) for f in fields), *(col(inner, n, f) for f in fields))


class _MatmulCensus:
    """The words of one step of each class, for one matmul under one schedule."""

    def __init__(self, op: Matmul, s: MatmulSchedule, hw: HardwareConfig, buffers: dict[str, Buffer]) -> None:
        self.op, self.s, self.d, self.buf = op, s, hw.dim, buffers
        self.plan = s.memory_plan(hw)
        self.int32 = op.out_dtype == "int32"

    def blocks(self, t: int, tile: int, extent: int, group: int = 1) -> list[Block]:
        return blocks(t, tile, extent, self.d, group)

    def acc_moves(self, w: Words, i: int, j: int, c: int, *, bias: bool, accumulate: bool = False) -> None:
        """The bias mvins (``bias``) or the mvouts of output tile (i, j) from accumulator base ``c``."""
        op, s, d = self.op, self.s, self.d
        group = 1 if self.int32 and not bias else s.mvin_blocks
        ii, i0, im, jj, j0, jn = _grid(self.blocks(i, s.tile_i, op.M), self.blocks(j, s.tile_j, op.N, group))
        local = acc(c + (ii * s.tile_j + jj) * d, accumulate, full=self.int32 and not bias)
        if bias:
            dram = self.buf["bias"].addr + (i0 * op.N * 4 if op.bias == "full" else 0) + j0 * 4
            w.add(Funct.MVIN3, dram, operand(local, im, jn), d)
        else:
            out_bytes = 4 if self.int32 else 1
            w.add(Funct.MVOUT, self.buf["C"].addr + i0 * op.N * out_bytes + j0 * out_bytes, operand(local, im, jn))

    def loads(self, w: Words, outer: tuple[int, int, int], inner: tuple[int, int, int], name: str, state: int,
              base: int, stride_blocks: int, extent: int) -> None:
        """mvins of operand ``name`` (A: i x k groups; B: k x j groups) of a tile into ``base``."""
        d = self.d
        o, t_o, ext_o = outer
        n, t_n, ext_n = inner
        oo, o0, om, nn, n0, nsz = _grid(self.blocks(o, t_o, ext_o), self.blocks(n, t_n, ext_n, self.s.mvin_blocks))
        local = base + (oo * stride_blocks + nn) * d
        w.add((Funct.MVIN, Funct.MVIN2)[state], self.buf[name].addr + o0 * extent + n0, operand(local, om, nsz), d)

    def computes(self, w: Words, i: int, j: int, k: int, a: int, b: int, c: int, accumulate: bool) -> None:
        """matmul_ws_computes.s.j2: weight-stationary, for each (k, j, i) a preload (B once per (k, j))
        and a compute; output-stationary, for each (j, i, k) a preload (C on the last k) and a compute
        of A and B."""
        op, s, d = self.op, self.s, self.d
        sizes = [np.array([x.size for x in self.blocks(t, tile, ext)]) for t, tile, ext in
                 ((k, s.tile_k, op.K), (j, s.tile_j, op.N), (i, s.tile_i, op.M))]
        kk, jj, ii = np.meshgrid(*(np.arange(len(x)) for x in sizes), indexing="ij")
        kn, jn, im = sizes[0][kk], sizes[1][jj], sizes[2][ii]
        if s.dataflow == "os":
            c_addr = np.where(kk == len(sizes[0]) - 1, acc(c + (ii * s.tile_j + jj) * d, accumulate), GARBAGE)
            w.add(Funct.PRELOAD, operand(GARBAGE, im, jn), operand(c_addr, im, jn))
            w.add(np.where(kk == 0, Funct.COMPUTE_PRELOADED, Funct.COMPUTE_ACCUMULATED),
                  operand(a + (ii * s.tile_k + kk) * d, im, kn), operand(b + (kk * s.tile_j + jj) * d, kn, jn))
            return
        first = ii == 0
        w.add(Funct.PRELOAD, operand(np.where(first, b + (kk * s.tile_j + jj) * d, GARBAGE), kn, jn),
              operand(acc(c + (ii * s.tile_j + jj) * d, accumulate or kk > 0), im, jn))
        w.add(np.where(first, Funct.COMPUTE_PRELOADED, Funct.COMPUTE_ACCUMULATED),
              operand(a + (ii * s.tile_k + kk) * d, im, kn), operand(GARBAGE, im, jn))


def matmul_census(op: Matmul, s: MatmulSchedule, hw: HardwareConfig) -> tuple[Census, dict[str, Buffer]]:
    """The census of ``lower_matmul(op, s, hw)``'s stream, and its buffers."""
    buffers = op_buffers(op)
    m = _MatmulCensus(op, s, hw, buffers)
    st = _steps(op, s, hw)
    plan, ragged = m.plan, st["ragged"].astype(np.int64)
    i, j, k = st["i"], st["j"], st["k"]
    a_base, b_base, c_base = plan.a.base(st["a_buf"]), plan.b.base(st["b_buf"]), plan.c.base(st["c_buf"])
    ri, rj, rk = ragged
    before, after = bool(op.bias) and s.bias_strategy == "before", bool(op.bias) and s.bias_strategy == "after"
    accumulate = ~st["first_k"] | before
    parts = [frame(3 if op.bias else 2)]

    def each(keys: list[np.ndarray], active: np.ndarray, emit) -> None:   # noqa: ANN001
        for n, count in zip(*classes(keys, active)):
            w = Words()
            emit(w, int(n))
            parts.append(w.census(int(count)))

    if before:
        each([ri, rj, st["c_buf"]], st["first_k"], lambda w, n: m.acc_moves(w, i[n], j[n], c_base[n], bias=True))
    each([ri, rk, st["a_buf"]], st["new_a"], lambda w, n: m.loads(
        w, (i[n], s.tile_i, op.M), (k[n], s.tile_k, op.K), "A", 0, a_base[n], s.tile_k, op.K))
    each([rk, rj, st["b_buf"]], st["new_b"], lambda w, n: m.loads(
        w, (k[n], s.tile_k, op.K), (j[n], s.tile_j, op.N), "B", 1, b_base[n], s.tile_j, op.N))
    each([ri, rj, rk, st["a_buf"], st["b_buf"], st["c_buf"], accumulate], np.ones(len(i), bool),
         lambda w, n: m.computes(w, i[n], j[n], k[n], a_base[n], b_base[n], c_base[n], bool(accumulate[n])))
    if after:
        each([ri, rj, st["c_buf"]], st["last_k"],
             lambda w, n: m.acc_moves(w, i[n], j[n], c_base[n], bias=True, accumulate=True))
    each([ri, rj, st["c_buf"]], st["last_k"], lambda w, n: m.acc_moves(w, i[n], j[n], c_base[n], bias=False))
    return join(parts), buffers
