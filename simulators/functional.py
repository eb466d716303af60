"""Bit-exact numpy model of the ISA (weight- and output-stationary dataflows).

Semantics, shared with the RTL:

* Writes are column-masked: an mvin or compute writes the columns it names and
  leaves the rest of each row as it was.
* mvin: ``cols`` may span up to ``max_block_len`` dim-wide blocks; block b goes to
  local row base + b * block_stride. Scratchpad rows take int8; accumulator rows
  take int32 (or int8 sign-extended with shrink). The load scale, when not 1.0,
  is rne(float32 product), saturated to the destination type. DRAM address 0
  loads zeros (Gemmini's zero writer); config_ld pixel_repeats: see ``_repeat_pixels``.
* preload names weights B (zero beyond b_rows x b_cols) and the destination C of
  the next compute. compute_preloaded loads those weights; compute_accumulated
  keeps the array's. C = A @ W + D over c_rows x c_cols, A and D zero beyond
  their rows/cols (garbage reads zeros). To the accumulator C overwrites or, with
  ``.accum``, adds (int32, wrapping); to the scratchpad it goes through
  config_ex's scale and activation to int8.
* Output-stationary (config_ex dataflow=os): preload names D (zero beyond its
  rows/cols) and C; compute names A and B (zero beyond theirs). compute_preloaded
  sets the array's results to D + A @ B, compute_accumulated adds A @ B to them.
  When C is not garbage the results leave the array rounding-shifted right by
  config_ex's in_shift (half to even) and are written to C as above; zeros shift
  in behind them, so a compute_accumulated after it starts from zero.
* config_ex's transposes: an operand with its bit set is stored transposed (its
  rows/cols fields count the stored rows/cols); b_transpose applies to the
  weights (WS) or to B (OS).
* mvout from the accumulator: config_st's float32 scale, rne, int8 saturation,
  ReLU; with ``.full`` the raw int32 rows (ReLU still applies). From the
  scratchpad: the int8 rows as they are. A wider mvout reads block b of its
  columns from local rows base + b * dim (Gemmini's block mvout; not with ``.full``).
  With config_st's pooling on, an mvout writes the max of each window of its local image after
  scale and activation; a padded position pools as the byte 0, as on Gemmini (its garbage rows
  read zeros), so an all-negative edge window stores 0.
  With config_st's col_scales (the column-scale extension), lane i of each dim-wide block is scaled
  by entry i of the scale vector that config_st_scales words load, not by config_st's scale.
* The normalization unit (isa.norm): config_norm sets its stat id, constants and the activation's
  high bit; an accumulator mvout with a norm command, or under LAYERNORM, IGELU or SOFTMAX, goes
  through isa.norm.NormUnit.store; every other accumulator mvout clears the current stat's running
  sum, count and max, as its RESET blocks do in Gemmini.
* LOOP_WS / LOOP_CONV_WS run as the primitives isa.loop_unroll expands them to.
"""
from __future__ import annotations

import time
from typing import Mapping

import numpy as np
from numpy.lib.stride_tricks import as_strided

from isa import (
    ACC_BIT, ACCUM_BIT, FULL_BIT, GARBAGE, ROW_MASK, ComputeAccumulated, ComputePreloaded, ConfigEx, ConfigLd,
    ConfigNorm, ConfigSt, ConfigStScales, Fence, Flush, HardwareConfig, Mvin, Mvout, Preload, Program,
)
from isa.instructions import norm_cmd
from isa.norm import NORM_ACTS, Act, NormUnit
from isa.checker import check
from isa.loop_unroll import primitives
from isa.numerics import INT8_MIN, acc_to_int8, acc_to_int32, mvin_scale, rshift_rne, store_epilogue

from .base import RunResult


class FunctionalModel:
    """Architectural state and one method per instruction."""

    def __init__(self, hw: HardwareConfig, dram: np.ndarray | None) -> None:
        self.dim = hw.dim
        self.dram = dram
        self.sp = np.zeros((hw.sp_rows, hw.dim), dtype=np.int8)
        self.acc = np.zeros((hw.acc_rows, hw.dim), dtype=np.int32)
        self.weights = np.zeros((hw.dim, hw.dim), dtype=np.float64)
        self.held = np.zeros((hw.dim, hw.dim), dtype=np.float64)   # the output-stationary results in the array
        self.ld: dict[int, ConfigLd] = {}
        self.st = ConfigSt()
        self.col_scales = np.ones(hw.dim, dtype=np.float32)   # the column-scale extension's vector
        self.ex = ConfigEx()
        self.norm = NormUnit(hw.norm_stats)
        self.pending: Preload | None = None
        self.macs = 0

    # ---- DRAM access ----------------------------------------------------------
    def _dram_rows(self, addr: int, rows: int, stride: int, nbytes: int) -> np.ndarray:
        return as_strided(self.dram[addr:], shape=(rows, nbytes), strides=(stride, 1), writeable=False)

    def _dram_write(self, addr: int, stride: int, data: np.ndarray) -> None:
        raw = np.ascontiguousarray(data).view(np.uint8).reshape(data.shape[0], -1)
        for i, row in enumerate(raw):
            self.dram[addr + i * stride: addr + i * stride + row.size] = row

    # ---- local memories ----------------------------------------------------------
    def _read_sp(self, addr: int, rows: int, cols: int, stride: int = 1) -> np.ndarray:
        out = np.zeros((self.dim, self.dim), dtype=np.float64)
        if addr != GARBAGE:
            start = addr & ROW_MASK
            out[:rows, :cols] = self.sp[start:start + (rows - 1) * stride + 1:stride, :cols]
        return out

    def _write_local(self, addr: int, values: np.ndarray, stride: int, scale: float, relu: bool) -> None:
        """Write int32 ``values`` (rows x cols) at ``addr``, column-masked."""
        if addr == GARBAGE:
            return
        rows, cols = values.shape
        start = addr & ROW_MASK
        sel = slice(start, start + (rows - 1) * stride + 1, stride)
        if addr & ACC_BIT:
            if addr & ACCUM_BIT:
                self.acc[sel, :cols] += values.astype(np.int32)
            else:
                self.acc[sel, :cols] = values
        else:
            self.sp[sel, :cols] = acc_to_int8(values, scale, relu)

    # ---- instructions -------------------------------------------------------------
    def config_ex(self, ins: ConfigEx) -> None:
        self.ex = ins.applied_to(self.ex)

    def config_ld(self, ins: ConfigLd) -> None:
        self.ld[ins.state] = ins

    def config_st(self, ins: ConfigSt) -> None:
        self.st = ins
        self.norm.act_msb = 0   # config_st's two activation bits replace all three

    def config_norm(self, ins: ConfigNorm) -> None:
        self.norm.config(ins)

    def config_st_scales(self, ins: ConfigStScales) -> None:
        self.col_scales[ins.col:ins.col + 2] = (ins.scale0, ins.scale1)[:self.dim - ins.col]

    def mvin(self, ins: Mvin) -> None:
        if ins.local == GARBAGE:
            return
        cfg = self.ld[ins.state]
        to_acc = bool(ins.local & ACC_BIT)
        itemsize = 4 if to_acc and not cfg.shrink else 1
        if ins.dram == 0:
            values = np.zeros((ins.rows, ins.cols), dtype=np.int32 if to_acc else np.int8)
        else:
            raw = self._dram_rows(ins.dram, ins.rows, cfg.dram_stride, ins.cols * itemsize)
            values = np.ascontiguousarray(raw).view("<i4" if itemsize == 4 else np.int8)
            values = mvin_scale(values, cfg.scale, to_int8=not to_acc)
        base = ins.local & ROW_MASK
        mem = self.acc if to_acc else self.sp
        accumulate = to_acc and ins.local & ACCUM_BIT
        for b, c0 in enumerate(range(0, ins.cols, self.dim)):
            block = values[:, c0:c0 + self.dim]
            row = base + b * cfg.block_stride
            if accumulate:
                mem[row:row + ins.rows, :block.shape[1]] += block
            elif cfg.pixel_repeats > 1:
                self._repeat_pixels(row, block, cfg.pixel_repeats)
            else:
                mem[row:row + ins.rows, :block.shape[1]] = block

    # Gemmini's PixelRepeater (config_ld pixel_repeats P > 1, scratchpad mvins only): DRAM row r of a
    # block (its n = cols <= dim values) is written P times, for t = 0 .. P-1, into local row
    # base + r - t at columns t*n .. t*n + n - 1; columns past dim are dropped, rows below the first
    # row of the scratchpad half that base + r lies in are skipped, and the other columns of a row keep
    # their values. So row q ends up holding the pixels of rows q .. q + P - 1 side by side (im2col).
    def _repeat_pixels(self, base: int, block: np.ndarray, repeats: int) -> None:
        n = block.shape[1]
        half = self.sp.shape[0] // 2
        rows = base + np.arange(block.shape[0])
        floor = np.where(rows >= half, half, 0)
        for t in range(min(repeats, -(-self.dim // n))):
            keep = rows - t >= floor
            cols = min(n, self.dim - t * n)
            self.sp[rows[keep] - t, t * n:t * n + cols] = block[keep, :cols]

    def mvout(self, ins: Mvout) -> None:
        row = ins.local & ROW_MASK
        act = self.st.activation | self.norm.act_msb << 2
        relu = act == Act.RELU
        if ins.local & ACC_BIT and (norm_cmd(ins.local) or act in NORM_ACTS) and not ins.local & FULL_BIT:
            self._normalized_mvout(ins, act)
            return
        if ins.local & ACC_BIT:
            self.norm.plain_store()
        if self.st.pooling:
            self._pooled_mvout(ins, relu)
            return
        if ins.local & ACC_BIT and ins.local & FULL_BIT:
            data = acc_to_int32(self.acc[row:row + ins.rows, :ins.cols], relu).astype("<i4")
        else:
            mem = self.acc if ins.local & ACC_BIT else self.sp
            data = np.concatenate(self._blocks(mem, ins), axis=1)
            if ins.local & ACC_BIT:
                data = self._store_bytes(data, relu)
        self._dram_write(ins.dram, self.st.dram_stride, data)

    def _blocks(self, mem: np.ndarray, ins: Mvout) -> list[np.ndarray]:
        """The mvout's dim-wide column blocks: block b from the local rows b * dim after its address."""
        row = ins.local & ROW_MASK
        return [mem[row + b * self.dim:row + b * self.dim + ins.rows, :min(self.dim, ins.cols - c0)]
                for b, c0 in enumerate(range(0, ins.cols, self.dim))]

    def _normalized_mvout(self, ins: Mvout, act: int) -> None:
        data = self.norm.store(self._blocks(self.acc, ins), norm_cmd(ins.local), act, self.st.acc_scale)
        if data is not None:
            self._dram_write(ins.dram, self.st.dram_stride, data)

    def _store_bytes(self, acc: np.ndarray, relu: bool) -> np.ndarray:
        """Accumulator values as the store unit writes them: 8-bit, requantized when config_st asks."""
        st = self.st
        # lane i of every dim-wide block takes the vector's entry i
        scale = np.resize(self.col_scales, acc.shape[-1]) if st.col_scales else st.acc_scale
        return store_epilogue(acc, scale, relu, "uint8" if st.out_uint8 else "int8", st.out_offset)

    def _pooled_mvout(self, ins: Mvout, relu: bool) -> None:
        """Max over each window of config_st's image, after scale and activation; padding pools as 0.

        Gemmini (ucb-bar/gemmini 641fefb): StoreController makes a padded pixel's address garbage, the
        Scratchpad sends a garbage row as zeros, and the DMA writer's maxOf pools it (gemmini.h's conv_cpu
        and the tests' CPU pool pad with 0 too). Under out_uint8 the 0 is the unsigned byte, the least."""
        st, row = self.st, ins.local & ROW_MASK
        image = (self.acc if ins.local & ACC_BIT else self.sp)[row:row + st.orows * st.ocols, :ins.cols]
        if ins.local & ACC_BIT:
            image = self._store_bytes(image, relu)
        span_r, span_c = (st.porows - 1) * st.pool_stride + 1, (st.pocols - 1) * st.pool_stride + 1
        # the image in its zero padding (int16 holds int8 and uint8 bytes alike)
        padded = np.zeros((max(st.upad + st.orows, span_r + st.pool_size - 1),
                           max(st.lpad + st.ocols, span_c + st.pool_size - 1), ins.cols), dtype=np.int16)
        padded[st.upad:st.upad + st.orows, st.lpad:st.lpad + st.ocols] = image.reshape(st.orows, st.ocols, -1)
        out = np.full((st.porows, st.pocols, ins.cols), INT8_MIN - 1, dtype=np.int16)
        for wr in range(st.pool_size):
            for wc in range(st.pool_size):
                np.maximum(out, padded[wr:wr + span_r:st.pool_stride, wc:wc + span_c:st.pool_stride], out=out)
        for porow in range(st.porows):
            self._dram_write(ins.dram + porow * st.pool_out_dim * st.dram_stride, st.dram_stride,
                             out[porow].astype(np.int8))

    def preload(self, ins: Preload) -> None:
        self.pending = ins

    def _operand(self, addr: int, rows: int, cols: int, transpose: int, stride: int = 1) -> np.ndarray:
        """A stored operand as the array sees it (dim x dim, zero-padded)."""
        block = self._read_sp(addr, rows, cols, stride)
        return block.T if transpose else block

    def compute(self, ins: ComputePreloaded) -> None:
        pre, ex = self.pending, self.ex
        self.pending = None
        a = self._operand(ins.a, ins.a_rows, ins.a_cols, ex.a_transpose, ex.a_stride)
        self.macs += ins.a_rows * ins.a_cols * pre.c_cols
        if ex.dataflow == 0:
            self._compute_os(ins, pre, a)
            return
        if type(ins) is ComputePreloaded:
            self.weights = self._operand(pre.b, pre.b_rows, pre.b_cols, ex.b_transpose)
        out = a @ self.weights   # float64 is exact: |sum| <= dim * 2^14 << 2^53
        if ins.d != GARBAGE:
            out += self._read_sp(ins.d, ins.d_rows, ins.d_cols)
        self._write_local(pre.c, out[:pre.c_rows, :pre.c_cols].astype(np.int32), ex.c_stride,
                          ex.acc_scale, ex.activation == 1)

    def _compute_os(self, ins: ComputePreloaded, pre: Preload, a: np.ndarray) -> None:
        ex = self.ex
        if type(ins) is ComputePreloaded:
            self.held = self._read_sp(pre.b, pre.b_rows, pre.b_cols)
        self.held = self.held + a @ self._operand(ins.d, ins.d_rows, ins.d_cols, ex.b_transpose)
        if pre.c == GARBAGE:
            return
        out = rshift_rne(self.held[:pre.c_rows, :pre.c_cols].astype(np.int64), ex.in_shift)
        self._write_local(pre.c, out.astype(np.int32), ex.c_stride, ex.acc_scale, ex.activation == 1)
        self.held = np.zeros_like(self.held)

    def step(self, ins) -> None:
        _DISPATCH[type(ins)](self, ins)


_DISPATCH = {
    ConfigEx: FunctionalModel.config_ex, ConfigLd: FunctionalModel.config_ld, ConfigSt: FunctionalModel.config_st,
    ConfigStScales: FunctionalModel.config_st_scales, ConfigNorm: FunctionalModel.config_norm,
    Mvin: FunctionalModel.mvin, Mvout: FunctionalModel.mvout, Preload: FunctionalModel.preload,
    ComputePreloaded: FunctionalModel.compute, ComputeAccumulated: FunctionalModel.compute,
    Flush: lambda self, ins: None, Fence: lambda self, ins: None,
}


def run(program: Program, inputs: Mapping[str, np.ndarray]) -> RunResult:
    """Run ``program`` on ``inputs``; cycles are None (this model has no timing)."""
    start = time.perf_counter()
    check(program)
    dram = program.dram_image(inputs)
    model = FunctionalModel(program.hw, dram)
    dispatch = _DISPATCH
    for ins in primitives(program.instructions, program.hw):
        dispatch[type(ins)](model, ins)
    counters = {f"instr_{op}": n for op, n in sorted(program.counts().items())}
    counters["macs"] = model.macs
    return RunResult(program.read_outputs(dram), None, counters, "functional", time.perf_counter() - start)
