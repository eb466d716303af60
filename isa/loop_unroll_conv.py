"""LOOP_CONV_WS unrolled as LoopConv (ucb-bar/gemmini 641fefb) does it.

One loop is a tile of a conv: ``batches`` images, ``orows`` x ``ocols`` output pixels,
``pochs`` output and ``kchs`` input channels, a ``krows`` x ``kcols`` kernel window. Its
primitives, in a valid sequential order:

* bias (if bias_addr): config_ld of state 2 (block stride = one channel block of outputs,
  DRAM stride 0: every row reads the bias vector), then one mvin3 per run of ``dim`` output
  pixels and channel blocks, into the accumulator; with no_bias they load zeros (DRAM 0).
* input (if input_addr): config_ld of state 0 (pixel_repeats = max_pixels_per_row), then one
  mvin per run of input pixels of a row, padding included: pixels outside the image load
  zeros (DRAM 0), as LoopConv's is_zeros does. downsample keeps every other row and column.
* weights (if weights_addr): config_ld of state 1, one mvin2 per kernel tap and channel block.
* execute: per output-channel block, kernel tap and input-channel block, a preload and a
  compute per run of ``dim`` output pixels; the weights are preloaded for the first run only.
  The A stride (the conv stride) is the program's config_ex's, as with gemmini.h.
* output (if output_addr): one mvout per run of output pixels and channel block, under the
  program's config_st. With pooling (no_pool = 0), as LoopConvSt: a config_st with the pooling
  fields (the loop's activation, out_stride, the program's scale kept), one pooling mvout per
  image and channel block, and a config_st that turns pooling off again.

LoopConv's training flags:

* wrot180: the kernel read rotated 180 degrees (execute's B rows of kernel pixel krows-1-krow,
  kcols-1-kcol).
* input_dilated: the input as if a zero sat between its pixels (a transposed conv's gradient).
  The scratchpad holds the undilated pixels (and undilated padding); execute skips each
  (kernel pixel, output pixel) that would meet a zero and covers every other output column, C's
  rows ``c_stride`` = 2 apart (the program's config_ex, as gemmini.h sets it).
* trans_weight_1203: the weights in DRAM as [kch][krow][kcol][och]; the scratchpad's as usual.
* trans_weight_0132: the weights as [krow][kcol][och][kch]; the scratchpad holds them stored
  transposed (a row per output channel) and execute's preload reads them with the program's
  config_ex b_transpose.
* trans_input_3120: the input as [ich][row][col][batch]; the scratchpad holds a row per input
  channel and pixel, a column per image; execute sets config_ex's strides only (A's rows one
  image of channels apart, C's one image of outputs apart) and computes a block of images per
  pixel, A read with the program's a_transpose.
* trans_output_1203: the output stored as [row][col][batch][och] (the program's config_st
  stride is batch_size x out_channels).

The A tile sits at the bottom of a scratchpad half (the loop's slot, or a_spad_id), the B
tile ends at the top of one (b_spad_id), the accumulator half toggles after each loop whose
output address is not zero.
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Hashable

import numpy as np

from .config import HardwareConfig
from .encoding import FRESH, KEPT, encode_pairs, pair_instructions, pair_rows
from .instructions import GARBAGE, ConfigEx, ConfigLd, ConfigSt, Instruction, ISAError, Mvin, Mvout, acc_addr
from .loop_shared import Phase, Placed, cached_by_identity, shape_number, unrolled
from .loop_words import LoopConvWs, LoopConvWsConfig5, LoopConvWsConfig6, LoopError, LoopWord, dram_at

_EXCLUSIVE = (   # flags LoopConv cannot honour together, and why (gemmini.h refuses them too)
    ("trans_weight_1203", "trans_weight_0132", "the weights take one layout"),
    ("trans_input_3120", "trans_weight_0132", "weight-stationary has one transposer for A or B"),
    ("trans_output_1203", "no_pool", "a transposed output is not pooled"),
)
_DRAM = ("bias_addr", "input_addr", "weights_addr", "output_addr")   # the phases' bases: no part of a shape
_POSITIVE = ("batches", "orows", "ocols", "pochs", "krows", "kcols", "kchs", "stride", "kernel_dilation",
             "in_row_dim", "in_col_dim")


def _fields(words: dict[type, LoopWord], loop: LoopConvWs) -> SimpleNamespace:
    """Every field of the six config words and the loop, by name (the names are distinct)."""
    return SimpleNamespace(**{name: getattr(w, name) for w in (*words.values(), loop)
                              for name in w.__dataclass_fields__})


def _check(p: SimpleNamespace) -> None:
    for a, b, why in _EXCLUSIVE:
        if getattr(p, a) and getattr(p, b) != (b == "no_pool"):
            raise LoopError(f"loop_conv_ws.{a}=1 with {b}={int(b != 'no_pool')}: {why}")
    if p.input_dilated and p.stride != 1:
        raise LoopError(f"loop_conv_ws.input_dilated=1 with stride={p.stride}: input dilation needs stride 1")
    for name in _POSITIVE:
        if getattr(p, name) < 1:
            raise LoopError(f"loop_conv_ws {name}={getattr(p, name)} must be at least 1")
    for name in ("a_spad_id", "b_spad_id"):
        if getattr(p, name) > 2:
            raise LoopError(f"loop_conv_ws.{name}={getattr(p, name)} must be 0 (the loop's slot), 1 or 2")


class ConvLoop:
    """One LOOP_CONV_WS with LoopConv's derived parameters; each phase is a method."""

    # Over 40 lines: LoopConv's derived parameters and the checks of the tiles' fit, in one pass.
    def __init__(self, p: SimpleNamespace, hw: HardwareConfig, a_start: int, b_end: int, acc_start: int,
                 st: ConfigSt = ConfigSt()) -> None:
        _check(p)
        self.p, self.dim, self.block_len, self.st = p, hw.dim, hw.max_block_len, st
        self.a_start, self.acc_start = a_start, acc_start
        self.pixels = p.max_pixels_per_row or 1   # Gemmini reads 0 as 1
        self.ds, self.dil = p.downsample, p.input_dilated
        dilated_krows = p.krows + (p.kernel_dilation - 1) * (p.krows - 1)
        dilated_kcols = p.kcols + (p.kernel_dilation - 1) * (p.kcols - 1)
        irows = p.orows * p.stride + dilated_krows - 1   # input rows and columns, padding included
        icols = p.ocols * p.stride + dilated_kcols - 1
        if irows - p.upad - p.dpad < 0 or icols - p.lpad - p.rpad < 0:
            raise LoopError(f"loop_conv_ws: padding (up {p.upad}, down {p.dpad}, left {p.lpad}, right {p.rpad}) is "
                            f"larger than the tile's {irows}x{icols} input pixels")
        # with input dilation, the pixels the scratchpad holds: the undilated ones and padding
        self.upad, self.dpad, self.lpad, self.rpad = (self._undilated(x) for x in (p.upad, p.dpad, p.lpad, p.rpad))
        self.irows_unpadded = self._undilated(irows - p.upad - p.dpad)
        self.icols_unpadded = self._undilated(icols - p.lpad - p.rpad)
        self.irows = self.irows_unpadded + self.upad + self.dpad
        self.icols = self.icols_unpadded + self.lpad + self.rpad
        self.in_rows, self.in_cols = self.irows >> self.ds, self.icols >> self.ds   # as the scratchpad holds them
        self.out_pixels = p.batches * p.orows * p.ocols              # accumulator rows of one channel block
        # scratchpad rows of one block of channels (trans_input_3120: of images)
        self.input_stride = (p.kchs if p.trans_input_3120 else p.batches) * self.in_rows * self.in_cols
        # weight rows of one block of output channels (trans_weight_0132: of input channels)
        self.weight_stride = p.krows * p.kcols * (p.pochs if p.trans_weight_0132 else p.kchs)
        blocks = -(-(p.kchs if p.trans_weight_0132 else p.pochs) // self.dim)
        self.b_start = b_end - blocks * self.weight_stride
        if self.b_start < 0:
            raise LoopError(f"loop_conv_ws: the weights ({b_end - self.b_start} rows) do not fit below scratchpad "
                            f"row {b_end}")
        in_blocks = -(-(p.batches if p.trans_input_3120 else p.kchs) // self.dim)
        for what, start, rows, limit in (("input", a_start, self.input_stride * in_blocks, hw.sp_rows),
                                         ("output", acc_start, self.out_pixels * -(-p.pochs // self.dim), hw.acc_rows)):
            if start + rows > limit:   # (this also bounds the expansion of a malformed loop)
                raise LoopError(f"loop_conv_ws: the {what} tile ({rows} rows from row {start}) runs past the "
                                f"{'scratchpad' if what == 'input' else 'accumulator'} ({limit} rows)")
        for what, stride in (("bias", self.out_pixels), ("input", self.input_stride), ("weight", self.weight_stride)):
            if stride > 0xFFFF:
                raise LoopError(f"loop_conv_ws: the {what} tile's block stride ({stride} rows) is past config_ld's "
                                "16-bit field")

    def _undilated(self, x: int) -> int:
        """Pixels of ``x`` dilated ones that the scratchpad holds (LoopConv's undilated)."""
        return (x + self.dil) >> self.dil

    def _c_row(self, och: int, b: int, orow: int, ocol: int) -> int:
        p = self.p
        return self.acc_start + (och // self.dim) * self.out_pixels + (b * p.orows + orow) * p.ocols + ocol

    def _pixel_runs(self) -> list[tuple[int, int, int]]:
        """(b, orow, ocol) of each run of up to ``dim`` output pixels, in LoopConv's order."""
        p = self.p
        return [(b, orow, ocol) for b in range(p.batches) for orow in range(p.orows)
                for ocol in range(0, p.ocols, self.dim)]

    def bias(self) -> list[Instruction]:
        p, d = self.p, self.dim
        step = min(p.pochs, max(1, self.block_len // 4) * d)
        out: list[Instruction] = [ConfigLd(0, state=2, block_stride=self.out_pixels)]
        for b, orow, ocol in self._pixel_runs():
            for och in range(0, p.pochs, step):
                dram = 0 if p.no_bias else dram_at(p.bias_addr, och * 4)
                out.append(Mvin(dram, acc_addr(self._c_row(och, b, orow, ocol)), min(d, p.ocols - ocol),
                                min(step, p.pochs - och), 2))
        return out

    def _input_width(self, icol: int) -> int:
        """Input pixels one mvin covers from column ``icol`` (before downsampling): up to the padding's edge."""
        d = self.dim
        if icol < 0:
            return min(d, -icol)
        if icol >= self.icols_unpadded:
            return min(d, self.icols_unpadded + self.rpad - icol)
        return min(d << self.ds, self.icols_unpadded - icol)

    def _a_row(self, b: int, ch: int, prow: int, pcol: int) -> int:
        """Scratchpad row of image ``b``, input channel ``ch`` and padded pixel (prow, pcol) before
        downsampling; channel ``ch`` counts from its block's first when trans_input_3120."""
        p, d = self.p, self.dim
        pixel = (prow >> self.ds) * self.in_cols + (pcol >> self.ds)
        if p.trans_input_3120:
            return self.a_start + (b // d) * self.input_stride + ch * self.in_rows * self.in_cols + pixel
        return self.a_start + (ch // d) * self.input_stride + b * self.in_rows * self.in_cols + pixel

    def _input_dram(self, b: int, ich: int, irow: int, icol: int) -> int:
        p = self.p
        if p.trans_input_3120:   # LoopConv multiplies by the tile's batches; the layout's is batch_size
            return dram_at(p.input_addr, ((ich * p.in_row_dim + irow) * p.in_col_dim + icol) * p.batch_size + b)
        return dram_at(p.input_addr, ((b * p.in_row_dim + irow) * p.in_col_dim + icol) * p.in_stride + ich)

    def inputs(self) -> list[Instruction]:
        p, tr = self.p, self.p.trans_input_3120
        step = min(p.batches if tr else p.kchs, self.block_len * self.dim)   # images or channels a mvin
        out: list[Instruction] = [ConfigLd((p.batch_size if tr else p.in_stride) << self.ds, state=0,
                                           block_stride=self.input_stride, pixel_repeats=self.pixels)]
        for b in range(0, p.batches, step if tr else 1):
            for irow in range(-self.upad, self.irows_unpadded + self.dpad, 1 << self.ds):
                icol = -self.lpad
                while icol < self.icols_unpadded + self.rpad:
                    width = self._input_width(icol)
                    zeros = not (0 <= irow < self.irows_unpadded and 0 <= icol < self.icols_unpadded)
                    for ich in range(0, p.kchs, 1 if tr else step):
                        cols = min(step, p.batches - b) if tr else min(step, p.kchs - ich)
                        dram = 0 if zeros else self._input_dram(b, ich, irow, icol)
                        row = self._a_row(b, ich, irow + self.upad, icol + self.lpad)
                        out.append(Mvin(dram, row, width >> self.ds, cols, 0))
                    icol += width
        return out

    def _b_row(self, och: int, krow: int, kcol: int, kch: int) -> int:
        p = self.p
        if p.trans_weight_0132:   # a block of input channels, a row per output channel
            return self.b_start + (kch // self.dim) * self.weight_stride + (krow * p.kcols + kcol) * p.pochs + och
        return self.b_start + (och // self.dim) * self.weight_stride + (krow * p.kcols + kcol) * p.kchs + kch

    def _weight_offset(self, och: int, krow: int, kcol: int, kch: int) -> int:
        """DRAM element of the weights' (och, krow, kcol, kch) in the loop's layout."""
        p, kd = self.p, self.p.kernel_dim
        if p.dw:
            return krow * kd + kcol
        if p.trans_weight_1203:
            return ((kch * kd + krow) * kd + kcol) * p.out_channels + och
        if p.trans_weight_0132:
            return ((krow * kd + kcol) * p.out_channels + och) * p.in_channels + kch
        return ((krow * kd + kcol) * p.in_channels + kch) * p.weight_stride + och

    def weights(self) -> list[Instruction]:
        p, d, tr = self.p, self.dim, self.p.trans_weight_0132
        step = min(p.kchs if tr else p.pochs, self.block_len * d)   # channels a mvin2: input ones if tr
        dram_stride = (1 if p.dw else p.kernel_dim * p.kernel_dim * p.out_channels if p.trans_weight_1203
                       else p.in_channels if tr else p.weight_stride)
        out: list[Instruction] = [ConfigLd(dram_stride, state=1, block_stride=self.weight_stride)]
        for och in range(0, p.pochs, d if tr else step):
            for krow in range(p.krows):
                for kcol in range(p.kcols):
                    for kch in range(0, p.kchs, step if tr else d):
                        rows, cols = (min(d, p.pochs - och), min(step, p.kchs - kch)) if tr else \
                            (min(d, p.kchs - kch), min(step, p.pochs - och))
                        out.append(Mvin(dram_at(p.weights_addr, self._weight_offset(och, krow, kcol, kch)),
                                        self._b_row(och, krow, kcol, kch), rows, cols, 1))
        return out

    def _ex_runs(self, krow: int, kcol: int) -> list[tuple[int, int, int, int]]:
        """(b, orow, ocol, rows) of each compute of a kernel pixel, in LoopConv's order: runs of ``dim``
        output pixels; trans_input_3120: of ``dim`` images a pixel; input_dilated: of every other column,
        none where the kernel pixel meets a zero between input pixels (LoopConv's skip_iteration)."""
        p, d = self.p, self.dim
        out = []
        for b in range(0, p.batches, d if p.trans_input_3120 else 1):
            for orow in range(p.orows):
                if self.dil and (krow * p.kernel_dilation + orow - p.upad) % 2:
                    continue
                ocol = 0
                while ocol < p.ocols:
                    if self.dil and (kcol * p.kernel_dilation + ocol - p.lpad) % 2:
                        ocol += 1
                    elif p.trans_input_3120:
                        out.append((b, orow, ocol, min(d, p.batches - b)))
                        ocol += 1
                    else:
                        out.append((b, orow, ocol, self._undilated(min(d << self.dil, p.ocols - ocol))))
                        ocol += d << self.dil
        return out

    def execute(self) -> list[Instruction]:
        """LoopConv's preloads and computes (:meth:`_execute_rows`), after config_ex's strides where
        trans_input_3120 sets them."""
        return self._execute_head() + pair_instructions(self._execute_rows())

    def execute_words(self) -> np.ndarray:
        """:meth:`execute`, encoded (isa.encoding.encode_all) from its rows' arrays."""
        return encode_pairs(self._execute_rows(), self._execute_head())

    def _execute_head(self) -> list[Instruction]:
        """trans_input_3120: A's rows (input channels) one image apart, C's (images) one image apart."""
        p = self.p
        return [ConfigEx(a_stride=self.irows * self.icols, c_stride=p.orows * p.ocols, set_only_strides=1)] \
            if p.trans_input_3120 else []

    def _execute_rows(self) -> np.ndarray:
        """Each preload and compute of LoopConv's seven loops, in its order (per output channel block, kernel
        pixel, input channel block and run of :meth:`_ex_runs`, a preload then a compute; the weights preloaded
        for the first run only): a row of its kind and six fields each (isa.encoding.PAIR_KINDS).
        Every kernel pixel at once (their runs are alike unless input_dilated skips some), and every output
        channel block, input channel block and run."""
        p, d = self.p, self.dim
        ochs, kchs = np.arange(0, p.pochs, d), np.arange(0, p.kchs, d)
        taps = [(krow, kcol) for krow in range(p.krows) for kcol in range(0, p.kcols, self.pixels)]
        groups = [taps[n:n + 1] for n in range(len(taps))] if self.dil else [taps]
        pixels = [self._pixel_rows(np.array(group, dtype=np.int64).T, ochs, kchs) for group in groups]
        return np.concatenate(pixels, axis=1).reshape(-1, 7)

    def _pixel_rows(self, taps: np.ndarray, ochs: np.ndarray, kchs: np.ndarray) -> np.ndarray:
        """:meth:`_execute_rows` of kernel pixels ``taps`` (their rows and columns), whose runs are the first's,
        per output channel block (its rows)."""
        p, d = self.p, self.dim
        krow, kcol = taps[0][:, None, None], taps[1][:, None, None]   # (pixel, kch, run) from here
        krot, kcrot = (p.krows - 1 - krow, p.kcols - 1 - kcol) if p.wrot180 else (krow, kcol)
        b, orow, ocol, rows = np.array(self._ex_runs(int(taps[0, 0]), int(taps[1, 0])),
                                       dtype=np.int64).reshape(-1, 4).T
        och, kch, run = ochs[:, None, None, None], kchs[None, :, None], np.arange(len(rows))
        irow = self._undilated(orow * p.stride + krow * p.kernel_dilation)
        icol = self._undilated(ocol * p.stride + kcol * p.kernel_dilation)
        cols = np.minimum(d, p.pochs - och)
        k = np.minimum(p.kcols - kcol, self.pixels) * np.minimum(d, p.kchs - kch)
        b_shape = (cols, k) if p.trans_weight_0132 else (k, cols)   # a transposed operand's are the stored ones
        a_shape = (k, rows) if p.trans_input_3120 else (rows, k)
        c = acc_addr(self._c_row(och, b, orow, ocol), accumulate=True)
        weights = np.where(run == 0, self._b_row(och, krot, kcrot, kch), GARBAGE)
        compute = (np.where(run == 0, FRESH, KEPT), self._a_row(b, kch, irow, icol), *a_shape, GARBAGE, rows, cols)
        return pair_rows((len(ochs), taps.shape[1], len(kchs), len(rows)), (weights, *b_shape, c, rows, cols),
                         compute).reshape(len(ochs), -1, 7)

    def _pool_config(self, pooling: bool) -> ConfigSt:
        """LoopConvSt's config_st before (``pooling``) and after its pooling mvouts; the scale and the
        requantization (out_offset, out_uint8) are kept."""
        p = self.p
        fields = dict(pool_stride=p.pool_stride, pool_size=p.pool_size, pool_out_dim=p.pool_out_col_dim,
                      porows=p.porows, pocols=p.pocols, orows=p.orows, ocols=p.ocols, upad=p.pupad,
                      lpad=p.plpad) if pooling else {}
        try:
            return ConfigSt(p.out_stride, activation=p.activation, acc_scale=self.st.acc_scale,
                            out_offset=self.st.out_offset, out_uint8=self.st.out_uint8, **fields)
        except ISAError as exc:
            raise LoopError(f"loop_conv_ws pooling: {exc}") from None

    def pooled_outputs(self) -> list[Instruction]:
        p, d = self.p, self.dim
        out: list[Instruction] = [self._pool_config(True)]
        for b in range(p.batches):
            for och in range(0, p.pochs, d):
                dram = dram_at(p.output_addr, b * p.pool_out_col_dim * p.pool_out_row_dim * p.out_stride + och)
                out.append(Mvout(dram, acc_addr(self._c_row(och, b, 0, 0)), 1, min(d, p.pochs - och)))
        return out + [self._pool_config(False)]

    def outputs(self) -> list[Instruction]:
        p, d, out = self.p, self.dim, []
        if not p.no_pool:
            return self.pooled_outputs()
        for b, orow, ocol in self._pixel_runs():
            for och in range(0, p.pochs, d):
                if p.trans_output_1203:   # [row][col][batch][och]
                    offset = ((orow * p.out_col_dim + ocol) * p.batch_size + b) * p.out_channels + och
                else:
                    offset = ((b * p.out_row_dim + orow) * p.out_col_dim + ocol) * p.out_stride + och
                out.append(Mvout(dram_at(p.output_addr, offset),
                                 acc_addr(self._c_row(och, b, orow, ocol)), min(d, p.ocols - ocol),
                                 min(d, p.pochs - och)))
        return out


_BASES = (LoopConvWsConfig5, LoopConvWsConfig6)   # the words of the phases' bases, and of nothing else
# a loop's words but its bases, its hardware and placement -> those objects, its shape, and the first loop of it
_loops: dict[Hashable, tuple[tuple, tuple[Hashable, ConvLoop]]] = {}


def conv_phases(words: dict[type, LoopWord], loop: LoopConvWs, hw: HardwareConfig, a_start: int, b_end: int,
                acc_start: int, st: ConfigSt = ConfigSt()) -> tuple[Hashable, list[Phase]]:
    """The shape and the phases of one LOOP_CONV_WS (isa.loop_shared); a zero DRAM address skips its phase
    (its config_ld too). ``st``: the program's last config_st, whose scale and requantization a pooling
    loop's config_st words keep."""
    objects = (*(w for kind, w in words.items() if kind not in _BASES), loop, hw, st)
    shape, first = cached_by_identity(_loops, objects, (a_start, b_end, acc_start),
                                      lambda: _first_of_shape(words, loop, hw, a_start, b_end, acc_start, st))
    c5, c6 = words[LoopConvWsConfig5], words[LoopConvWsConfig6]
    bases = {"bias_addr": c6.bias_addr, "input_addr": c6.input_addr, "weights_addr": c5.weights_addr,
             "output_addr": c5.output_addr}
    made: list[ConvLoop] = []

    def conv() -> ConvLoop:
        """This loop's ConvLoop, made on a phase's first build (a loop whose words are known by its shape
        and bases is never built): ConvLoop derives and checks from all but the bases, so a later loop of
        the shape borrows the first's work."""
        if not made:
            made.append(object.__new__(ConvLoop))
            made[0].__dict__.update(vars(first), p=SimpleNamespace(**{**vars(first.p), **bases}))
        return made[0]

    return shape, [Phase(c6.bias_addr, lambda: conv().bias()), Phase(c6.input_addr, lambda: conv().inputs()),
                   Phase(c5.weights_addr, lambda: conv().weights()),
                   Phase(None, lambda: conv().execute(), lambda: conv().execute_words()),
                   Phase(c5.output_addr, lambda: conv().outputs())]


def _first_of_shape(words: dict[type, LoopWord], loop: LoopConvWs, hw: HardwareConfig, a_start: int, b_end: int,
                    acc_start: int, st: ConfigSt) -> tuple[Hashable, ConvLoop]:
    p = _fields(words, loop)
    first = ConvLoop(p, hw, a_start, b_end, acc_start, st)
    shape = ("conv", *(v for name, v in vars(p).items() if name not in _DRAM), hw.dim, hw.max_block_len, st)
    return Placed(shape_number(shape), (a_start, first.b_start, acc_start)), first


def expand_conv(words: dict[type, LoopWord], loop: LoopConvWs, hw: HardwareConfig, a_start: int, b_end: int,
                acc_start: int, st: ConfigSt = ConfigSt()) -> list[Instruction]:
    """The primitives of one LOOP_CONV_WS (see :func:`conv_phases`)."""
    return unrolled(*conv_phases(words, loop, hw, a_start, b_end, acc_start, st))
