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

The A tile sits at the bottom of a scratchpad half (the loop's slot, or a_spad_id), the B
tile ends at the top of one (b_spad_id), the accumulator half toggles after each loop whose
output address is not zero.
"""
from __future__ import annotations

from types import SimpleNamespace

from .config import HardwareConfig
from .instructions import (
    GARBAGE, ComputeAccumulated, ComputePreloaded, ConfigLd, ConfigSt, Instruction, ISAError, Mvin, Mvout, Preload,
    acc_addr,
)
from .loop_words import LoopConvWs, LoopError, LoopWord, dram_at

_UNIMPLEMENTED = {   # loop_conv_ws field -> what it asks for (training convs, pooling)
    "wrot180": "rotated weights", "trans_output_1203": "a transposed output", "trans_weight_1203":
    "transposed weights", "trans_weight_0132": "transposed weights", "trans_input_3120": "a transposed input",
    "input_dilated": "a dilated input",
}
_POSITIVE = ("batches", "orows", "ocols", "pochs", "krows", "kcols", "kchs", "stride", "kernel_dilation",
             "in_row_dim", "in_col_dim")


def _fields(words: dict[type, LoopWord], loop: LoopConvWs) -> SimpleNamespace:
    """Every field of the six config words and the loop, by name (the names are distinct)."""
    return SimpleNamespace(**{name: getattr(w, name) for w in (*words.values(), loop)
                              for name in w.__dataclass_fields__})


def _check(p: SimpleNamespace) -> None:
    for name, what in _UNIMPLEMENTED.items():
        if getattr(p, name):
            raise LoopError(f"loop_conv_ws.{name}=1 ({what}) is not implemented")
    for name in _POSITIVE:
        if getattr(p, name) < 1:
            raise LoopError(f"loop_conv_ws {name}={getattr(p, name)} must be at least 1")
    for name in ("a_spad_id", "b_spad_id"):
        if getattr(p, name) > 2:
            raise LoopError(f"loop_conv_ws.{name}={getattr(p, name)} must be 0 (the loop's slot), 1 or 2")


class ConvLoop:
    """One LOOP_CONV_WS with LoopConv's derived parameters; each phase is a method."""

    def __init__(self, p: SimpleNamespace, hw: HardwareConfig, a_start: int, b_end: int, acc_start: int,
                 st: ConfigSt = ConfigSt()) -> None:
        _check(p)
        self.p, self.dim, self.block_len, self.st = p, hw.dim, hw.max_block_len, st
        self.a_start, self.acc_start = a_start, acc_start
        self.pixels = p.max_pixels_per_row or 1   # Gemmini reads 0 as 1
        self.ds = p.downsample
        dilated_krows = p.krows + (p.kernel_dilation - 1) * (p.krows - 1)
        dilated_kcols = p.kcols + (p.kernel_dilation - 1) * (p.kcols - 1)
        self.irows = p.orows * p.stride + dilated_krows - 1   # input rows and columns, padding included
        self.icols = p.ocols * p.stride + dilated_kcols - 1
        self.irows_unpadded = self.irows - p.upad - p.dpad
        self.icols_unpadded = self.icols - p.lpad - p.rpad
        if self.irows_unpadded < 0 or self.icols_unpadded < 0:
            raise LoopError(f"loop_conv_ws: padding (up {p.upad}, down {p.dpad}, left {p.lpad}, right {p.rpad}) is "
                            f"larger than the tile's {self.irows}x{self.icols} input pixels")
        self.in_rows, self.in_cols = self.irows >> self.ds, self.icols >> self.ds   # as the scratchpad holds them
        self.out_pixels = p.batches * p.orows * p.ocols              # accumulator rows of one channel block
        self.input_stride = p.batches * self.in_rows * self.in_cols  # scratchpad rows of one channel block
        self.weight_stride = p.krows * p.kcols * p.kchs
        self.b_start = b_end - -(-p.pochs // self.dim) * self.weight_stride
        if self.b_start < 0:
            raise LoopError(f"loop_conv_ws: the weights ({b_end - self.b_start} rows) do not fit below scratchpad "
                            f"row {b_end}")
        for what, start, rows, limit in (("input", a_start, self.input_stride * -(-p.kchs // self.dim), hw.sp_rows),
                                         ("output", acc_start, self.out_pixels * -(-p.pochs // self.dim), hw.acc_rows)):
            if start + rows > limit:   # (this also bounds the expansion of a malformed loop)
                raise LoopError(f"loop_conv_ws: the {what} tile ({rows} rows from row {start}) runs past the "
                                f"{'scratchpad' if what == 'input' else 'accumulator'} ({limit} rows)")
        for what, stride in (("bias", self.out_pixels), ("input", self.input_stride), ("weight", self.weight_stride)):
            if stride > 0xFFFF:
                raise LoopError(f"loop_conv_ws: the {what} tile's block stride ({stride} rows) is past config_ld's "
                                "16-bit field")

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
            return min(d, self.icols_unpadded + self.p.rpad - icol)
        return min(d << self.ds, self.icols_unpadded - icol)

    def inputs(self) -> list[Instruction]:
        p, d = self.p, self.dim
        step = min(p.kchs, self.block_len * d)
        out: list[Instruction] = [ConfigLd(p.in_stride << self.ds, state=0, block_stride=self.input_stride,
                                           pixel_repeats=self.pixels)]
        for b in range(p.batches):
            for irow in range(-p.upad, self.irows_unpadded + p.dpad, 1 << self.ds):
                icol = -p.lpad
                while icol < self.icols_unpadded + p.rpad:
                    width = self._input_width(icol)
                    zeros = not (0 <= irow < self.irows_unpadded and 0 <= icol < self.icols_unpadded)
                    for ich in range(0, p.kchs, step):
                        pixel = (b * p.in_row_dim + irow) * p.in_col_dim + icol
                        dram = 0 if zeros else dram_at(p.input_addr, pixel * p.in_stride + ich)
                        row = (self.a_start + (ich // d) * self.input_stride + b * self.in_rows * self.in_cols
                               + ((irow + p.upad) >> self.ds) * self.in_cols + ((icol + p.lpad) >> self.ds))
                        out.append(Mvin(dram, row, width >> self.ds, min(step, p.kchs - ich), 0))
                    icol += width
        return out

    def _b_row(self, och: int, krow: int, kcol: int, kch: int) -> int:
        p = self.p
        return self.b_start + (och // self.dim) * self.weight_stride + (krow * p.kcols + kcol) * p.kchs + kch

    def weights(self) -> list[Instruction]:
        p, d = self.p, self.dim
        step = min(p.pochs, self.block_len * d)
        out: list[Instruction] = [ConfigLd(1 if p.dw else p.weight_stride, state=1, block_stride=self.weight_stride)]
        for och in range(0, p.pochs, step):
            for krow in range(p.krows):
                for kcol in range(p.kcols):
                    for kch in range(0, p.kchs, d):
                        offset = (krow * p.kernel_dim + kcol if p.dw else
                                  ((krow * p.kernel_dim + kcol) * p.in_channels + kch) * p.weight_stride + och)
                        out.append(Mvin(dram_at(p.weights_addr, offset), self._b_row(och, krow, kcol, kch),
                                        min(d, p.kchs - kch), min(step, p.pochs - och), 1))
        return out

    def execute(self) -> list[Instruction]:
        p, d, out = self.p, self.dim, []
        for och in range(0, p.pochs, d):
            cols = min(d, p.pochs - och)
            for krow in range(p.krows):
                for kcol in range(0, p.kcols, self.pixels):
                    for kch in range(0, p.kchs, d):
                        k = min(p.kcols - kcol, self.pixels) * min(d, p.kchs - kch)
                        for run, (b, orow, ocol) in enumerate(self._pixel_runs()):
                            rows = min(d, p.ocols - ocol)
                            irow = orow * p.stride + krow * p.kernel_dilation
                            icol = ocol * p.stride + kcol * p.kernel_dilation
                            a = (self.a_start + (kch // d) * self.input_stride + b * self.in_rows * self.in_cols
                                 + (irow >> self.ds) * self.in_cols + (icol >> self.ds))
                            weights = self._b_row(och, krow, kcol, kch) if run == 0 else GARBAGE
                            out.append(Preload(weights, k, cols, acc_addr(self._c_row(och, b, orow, ocol),
                                                                          accumulate=True), rows, cols))
                            out.append((ComputeAccumulated if run else ComputePreloaded)(a, rows, k, GARBAGE, rows,
                                                                                         cols))
        return out

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
                pixel = (b * p.out_row_dim + orow) * p.out_col_dim + ocol
                out.append(Mvout(dram_at(p.output_addr, pixel * p.out_stride + och),
                                 acc_addr(self._c_row(och, b, orow, ocol)), min(d, p.ocols - ocol),
                                 min(d, p.pochs - och)))
        return out


def expand_conv(words: dict[type, LoopWord], loop: LoopConvWs, hw: HardwareConfig, a_start: int, b_end: int,
                acc_start: int, st: ConfigSt = ConfigSt()) -> list[Instruction]:
    """The primitives of one LOOP_CONV_WS; a zero DRAM address skips its phase (its config_ld too).
    ``st``: the program's last config_st, whose scale and requantization a pooling loop's config_st words keep."""
    p = _fields(words, loop)
    conv = ConvLoop(p, hw, a_start, b_end, acc_start, st)
    out = conv.bias() if p.bias_addr else []
    if p.input_addr:
        out += conv.inputs()
    if p.weights_addr:
        out += conv.weights()
    out += conv.execute()
    if p.output_addr:
        out += conv.outputs()
    return out
