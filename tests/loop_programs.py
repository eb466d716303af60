"""Hand-built LOOP_WS programs and their numpy results, for the RTL's LoopMatmul tests.

``LoopProgram`` collects cases into one program: each case declares its buffers (inputs with
their data, outputs with the values numpy expects) and the words it issues once the buffers
are placed; ``build()`` lays out DRAM and returns the program. The words are those
gemmini.h's ``gemmini_loop_ws`` writes (``ws_loop``), after the config words that
``tiled_matmul_outer`` sends (``ws_configs``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from isa import HardwareConfig, Instruction, Program, layout
from isa.gemmini_words import ws_configs, ws_loop
from isa.numerics import acc_to_int8, acc_to_int32, mvin_scale

Words = Callable[[dict[str, int]], list[Instruction]]


def blocks(n: int, dim: int) -> tuple[int, int]:
    """(blocks, pad) of n elements in dim-wide blocks."""
    count = -(-n // dim)
    return count, count * dim - n


@dataclass
class LoopProgram:
    hw: HardwareConfig
    specs: list[tuple[str, str, str, tuple[int, ...]]] = field(default_factory=list)
    inputs: dict[str, np.ndarray] = field(default_factory=dict)
    expected: dict[str, np.ndarray] = field(default_factory=dict)
    parts: list[Words] = field(default_factory=list)

    def input(self, name: str, data: np.ndarray) -> None:
        self.specs.append((name, "input", str(data.dtype), data.shape))
        self.inputs[name] = data

    def output(self, name: str, want: np.ndarray) -> None:
        self.specs.append((name, "output", str(want.dtype), want.shape))
        self.expected[name] = want

    def then(self, words: Words) -> None:
        self.parts.append(words)

    def build(self) -> Program:
        bufs = layout(self.specs)
        addr = {name: buf.addr for name, buf in bufs.items()}
        return Program(self.hw, [w for part in self.parts for w in part(addr)], bufs)


def _epilogue(acc: np.ndarray, full_c: bool, relu: bool, scale: float) -> np.ndarray:
    return acc_to_int32(acc, relu) if full_c else acc_to_int8(acc, scale, relu)


# Over 40 lines: its operands, their reference and the loop nest share the names and sizes set here.
def add_matmul(lp: LoopProgram, tag: str, M: int, N: int, K: int, *, tile: tuple[int, int, int] | None = None,
               bias: str | None = None, low_d: bool = False, full_c: bool = False, relu: bool = False,
               scale: float = 1.0, transpose: str | None = None, seed: int = 0) -> None:
    """C = epilogue(A @ B + bias) as LOOP_WS loops over tiles of (tile_i, tile_j, tile_k) blocks (default:
    one loop), i0, j0, k0 nested as tiled_matmul_outer does: the bias loads with k0 = 0 (then the loop
    accumulates onto it), C is stored by the last k0 only (earlier loops have C = 0 and keep the
    accumulator half). bias: None, "row" (one row for every i: D stride 0) or "full" (M x N);
    low_d: an int8 bias; full_c: int32 C; transpose "a" or "b": that operand is stored transposed
    (K x M, N x K) and the loops set its transpose bit, as tiled_matmul_auto does."""
    d = lp.hw.dim
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (M, K), dtype=np.int8)
    b = rng.integers(-128, 128, (K, N), dtype=np.int8)
    acc = a.astype(np.int32) @ b.astype(np.int32)
    names = {x: f"{x}_{tag}" for x in "ABDC"}
    ta, tb = transpose == "a", transpose == "b"
    lp.input(names["A"], np.ascontiguousarray(a.T) if ta else a)
    lp.input(names["B"], np.ascontiguousarray(b.T) if tb else b)
    d_type = np.int8 if low_d else np.int32
    if bias is not None:
        lim = 128 if low_d else 1 << 20
        dv = rng.integers(-lim, lim, (1 if bias == "row" else M, N)).astype(d_type)
        lp.input(names["D"], dv)
        acc = acc + dv.astype(np.int32)
    lp.output(names["C"], _epilogue(acc, full_c, relu, scale).astype(np.int32 if full_c else np.int8))
    (I, pad_i), (J, pad_j), (Kb, pad_k) = blocks(M, d), blocks(N, d), blocks(K, d)
    ti, tj, tk = tile or (I, J, Kb)
    d_stride = 0 if bias == "row" else N
    c_item, d_item = (4 if full_c else 1), (1 if low_d else 4)

    def words(addr: dict[str, int]) -> list[Instruction]:
        out = ws_configs(d, M if ta else K, K if tb else N, d_stride, N, low_D=low_d, full_C=full_c, relu=relu,
                         scale=scale, transpose=transpose)
        k_tiles = range(0, Kb, tk)
        for i0 in range(0, I, ti):
            for j0 in range(0, J, tj):
                for k0 in k_tiles:
                    ni, nj, nk = min(ti, I - i0), min(tj, J - j0), min(tk, Kb - k0)
                    first, last = k0 == 0, k0 == k_tiles[-1]
                    has_d = first and bias is not None
                    d_row = 0 if bias == "row" else i0 * d
                    out += ws_loop(
                        ni, nj, nk, pad_i if i0 + ni == I else 0, pad_j if j0 + nj == J else 0,
                        pad_k if k0 + nk == Kb else 0,
                        addr[names["A"]] + ((k0 * M + i0) if ta else (i0 * K + k0)) * d,
                        addr[names["B"]] + ((j0 * K + k0) if tb else (k0 * N + j0)) * d,
                        addr[names["D"]] + (d_row * N + j0 * d) * d_item if has_d else 0,
                        addr[names["C"]] + (i0 * N + j0) * d * c_item if last else 0,
                        M if ta else K, K if tb else N, d_stride, N, full_C=int(full_c), low_D=int(low_d),
                        ex_accumulate=int(has_d or not first), a_transpose=int(ta), b_transpose=int(tb))
        return out
    lp.then(words)


def add_reuse(lp: LoopProgram, tag: str, M: int, N: int, K: int, seed: int = 0) -> None:
    """Three loops on one A and two Bs, loaded once each (a zero address and a scratchpad half id reuse
    what an earlier loop loaded): C1 = A @ B1 (loop 0 loads A into half 0 from its bottom and B1 below
    half 0's top); C2 = A @ B1 + bias (loop 1 loads nothing); C3 = A @ B2 (loop 2 reuses A and loads B2
    below half 1's top, away from what loop 1 reads)."""
    d = lp.hw.dim
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (M, K), dtype=np.int8)
    b1, b2 = (rng.integers(-128, 128, (K, N), dtype=np.int8) for _ in range(2))
    bias = rng.integers(-1000, 1000, (1, N)).astype(np.int32)
    ab1 = a.astype(np.int32) @ b1.astype(np.int32)
    for name, data in (("A", a), ("B1", b1), ("B2", b2), ("D", bias)):
        lp.input(f"{name}_{tag}", data)
    lp.output(f"C1_{tag}", acc_to_int8(ab1, 1.0, False))
    lp.output(f"C2_{tag}", acc_to_int8(ab1 + bias, 1.0, False))
    lp.output(f"C3_{tag}", acc_to_int8(a.astype(np.int32) @ b2.astype(np.int32), 1.0, False))
    (I, pi), (J, pj), (Kb, pk) = blocks(M, d), blocks(N, d), blocks(K, d)

    def words(addr: dict[str, int]) -> list[Instruction]:
        A, B1, B2, D = (addr[f"{n}_{tag}"] for n in ("A", "B1", "B2", "D"))
        return (ws_configs(d, K, N, 0, N)
                + ws_loop(I, J, Kb, pi, pj, pk, A, B1, 0, addr[f"C1_{tag}"], K, N, 0, N, a_spad_id=1, b_spad_id=1)
                + ws_loop(I, J, Kb, pi, pj, pk, 0, 0, D, addr[f"C2_{tag}"], K, N, 0, N, ex_accumulate=1,
                          a_spad_id=1, b_spad_id=1)
                + ws_loop(I, J, Kb, pi, pj, pk, 0, B2, 0, addr[f"C3_{tag}"], K, N, 0, N, a_spad_id=1,
                          b_spad_id=2))
    lp.then(words)


def add_resadd(lp: LoopProgram, tag: str, M: int, N: int, *, a_scale: float = 1.0, b_scale: float = 1.0,
               scale: float = 1.0, relu: bool = False, tile_rows: int | None = None, seed: int = 0) -> None:
    """C = epilogue(mvin_scale(A) + mvin_scale(B)), int8 M x N, as resadd loops (is_resadd, K = 0) of
    tile_rows block rows each: A loads into the accumulator, B accumulates onto it, C is stored."""
    d = lp.hw.dim
    rng = np.random.default_rng(seed)
    a, b = (rng.integers(-128, 128, (M, N), dtype=np.int8) for _ in range(2))
    acc = mvin_scale(a, a_scale, to_int8=False) + mvin_scale(b, b_scale, to_int8=False)
    lp.input(f"A_{tag}", a)
    lp.input(f"B_{tag}", b)
    lp.output(f"C_{tag}", acc_to_int8(acc, scale, relu))
    (I, pad_i), (J, pad_j) = blocks(M, d), blocks(N, d)
    ti = tile_rows or I

    def words(addr: dict[str, int]) -> list[Instruction]:
        out = ws_configs(d, N, N, 0, N, relu=relu, scale=scale, a_scale=a_scale, b_scale=b_scale,
                         shrink_ab=True)
        for i0 in range(0, I, ti):
            ni = min(ti, I - i0)
            off = i0 * d * N
            out += ws_loop(ni, J, 0, pad_i if i0 + ni == I else 0, pad_j, 0, addr[f"A_{tag}"] + off,
                           addr[f"B_{tag}"] + off, 0, addr[f"C_{tag}"] + off, N, N, 0, N, is_resadd=1)
        return out
    lp.then(words)
