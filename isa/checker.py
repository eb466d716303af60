"""Static check of a program against its hardware, before any backend runs it.

It is the one authority the backends agree with: whatever it accepts, the
functional model and the RTL run to the same bits. It checks the buffer table
(names, DRAM range, no overlaps), then follows the config state (load/store
strides, block strides, A/C strides, the pending preload) without moving data,
so every address a run would touch is known to be in range. Backends run the
program without checks of their own; a failure names the buffer, or the
instruction's index and its assembly text.
"""
from __future__ import annotations

from .assembly import DramNames, format_instruction
from .instructions import (
    ACC_BIT, ACCUM_BIT, FULL_BIT, GARBAGE, ROW_MASK, ComputeAccumulated, ComputePreloaded, ConfigEx, ConfigLd,
    ConfigSt, Fence, Flush, Instruction, ISAError, Mvin, Mvout, Preload,
)
from .buffers import MAX_DRAM_BYTES
from .program import Program


class ProgramError(ISAError):
    """An instruction that cannot run on this hardware."""

    def __init__(self, index: int, text: str, reason: str) -> None:
        super().__init__(f"instruction {index} `{text}`: {reason}")
        self.index, self.text, self.reason = index, text, reason


class BufferTableError(ISAError):
    """A buffer table that no backend can lay out in DRAM."""


def check(prog: Program) -> None:
    """Raise :class:`BufferTableError` for a bad buffer table, else :class:`ProgramError`
    at the first instruction that cannot run."""
    check_buffers(prog)
    _Checker(prog).run()


def check_buffers(prog: Program) -> None:
    """Every buffer filed under its own name, inside the DRAM address space, none overlapping."""
    for key, buf in prog.buffers.items():
        if key != buf.name:
            raise BufferTableError(f"buffer {buf.name!r} is filed under the name {key!r}")
        if buf.end > MAX_DRAM_BYTES:
            raise BufferTableError(f"buffer {buf.name!r} at {buf.addr:#x} ({buf.nbytes} bytes) ends past the "
                                   f"{MAX_DRAM_BYTES:#x}-byte DRAM address space")
    spans = sorted(prog.buffers.values(), key=lambda b: b.addr)
    for first, second in zip(spans, spans[1:]):
        if second.addr < first.end:
            raise BufferTableError(f"buffers {first.name!r} ({first.addr:#x}..{first.end - 1:#x}) and "
                                   f"{second.name!r} ({second.addr:#x}..{second.end - 1:#x}) overlap")


class _Checker:
    def __init__(self, prog: Program) -> None:
        self.prog, self.hw = prog, prog.hw
        self.ld: dict[int, ConfigLd] = {}
        self.st: ConfigSt | None = None
        self.ex: ConfigEx | None = None
        self.preloaded: Preload | None = None   # a preload waits for its compute
        self.weights = False        # the array holds weights

    def run(self) -> None:
        dispatch = {Mvin: self.mvin, Mvout: self.mvout, Preload: self.preload,
                    ComputePreloaded: self.compute, ComputeAccumulated: self.compute,
                    ConfigEx: self.config_ex, ConfigLd: self.config_ld, ConfigSt: self.config_st,
                    Flush: _nothing, Fence: _nothing}
        for index, ins in enumerate(self.prog.instructions):
            reason = dispatch[type(ins)](ins)
            if reason:
                text = format_instruction(ins, DramNames(self.prog.buffers))
                raise ProgramError(index, text, reason)

    # ---- helpers: each returns an error string or None ---------------------
    def _dim(self, what: str, n: int, limit: int | None = None) -> str | None:
        limit = limit or self.hw.dim
        if not 1 <= n <= limit:
            return f"{what}={n} must be between 1 and {limit}"
        return None

    def _rows(self, addr: int, what: str, first: int, count: int, stride: int, write: bool) -> str | None:
        """Rows first, first+stride, ... (count of them) of the memory ``addr`` names."""
        if addr == GARBAGE:
            return None
        acc = bool(addr & ACC_BIT)
        if not acc and addr & (ACCUM_BIT | FULL_BIT):
            return f"{what}: accumulate/full flags ({addr:#x}) only apply to accumulator addresses"
        if acc and write and addr & FULL_BIT:
            return f"{what}: the .full flag applies to reads only"
        if acc and not write and addr & ACCUM_BIT:
            return f"{what}: the .accum flag applies to writes only"
        limit = self.hw.acc_rows if acc else self.hw.sp_rows
        last = (addr & ROW_MASK) + first + (count - 1) * stride
        if last >= limit:
            return (f"{what}: row {last} is past the {'accumulator' if acc else 'scratchpad'} "
                    f"({limit} rows)")
        return None

    def _dram(self, addr: int, rows: int, stride: int, row_bytes: int) -> str | None:
        end = addr + (rows - 1) * stride + row_bytes
        if end > self.prog.dram_size:
            return f"DRAM bytes {addr}..{end - 1} run past the end of DRAM ({self.prog.dram_size} bytes)"
        return None

    # ---- instructions ----------------------------------------------------------
    def config_ex(self, ins: ConfigEx) -> str | None:
        if ins.dataflow != 1:
            return "output-stationary dataflow is not implemented (use dataflow=ws)"
        if ins.a_transpose or ins.b_transpose:
            return "transposed operands are not implemented"
        if ins.a_stride < 1 or ins.c_stride < 1:
            return "a_stride and c_stride must be at least 1 (rows of A and C are distinct)"
        self.ex = ins
        return None

    def config_ld(self, ins: ConfigLd) -> str | None:
        self.ld[ins.state] = ins
        return None

    def config_st(self, ins: ConfigSt) -> str | None:
        self.st = ins
        return None

    def mvin(self, ins: Mvin) -> str | None:
        cfg = self.ld.get(ins.state)
        if cfg is None:
            return f"no config_ld for state {ins.state} before this {ins.op}"
        if reason := (self._dim("rows", ins.rows) or self._dim("cols", ins.cols, self.hw.max_mvin_cols)):
            return reason
        if ins.local == GARBAGE:
            return None
        acc = bool(ins.local & ACC_BIT)
        blocks = -(-ins.cols // self.hw.dim)
        if blocks > 1 and cfg.block_stride < ins.rows:
            return f"block_stride={cfg.block_stride} of state {ins.state} would overlap blocks of {ins.rows} rows"
        for b in range(blocks):
            if reason := self._rows(ins.local, "local", b * cfg.block_stride, ins.rows, 1, write=True):
                return reason
        itemsize = 4 if acc and not cfg.shrink else 1
        return self._dram(ins.dram, ins.rows, cfg.dram_stride, ins.cols * itemsize)

    def mvout(self, ins: Mvout) -> str | None:
        if self.st is None:
            return "no config_st before this mvout"
        if reason := (self._dim("rows", ins.rows) or self._dim("cols", ins.cols)):
            return reason
        if ins.local == GARBAGE:
            return "mvout from the garbage address"
        if reason := self._rows(ins.local, "local", 0, ins.rows, 1, write=False):
            return reason
        itemsize = 4 if ins.local & ACC_BIT and ins.local & FULL_BIT else 1
        return self._dram(ins.dram, ins.rows, self.st.dram_stride, ins.cols * itemsize)

    def preload(self, ins: Preload) -> str | None:
        if self.preloaded is not None:
            return "preload while an earlier preload still waits for its compute"
        for what in ("b_rows", "b_cols", "c_rows", "c_cols"):
            if reason := self._dim(what, getattr(ins, what)):
                return reason
        if ins.b != GARBAGE and ins.b & ACC_BIT:
            return "b: weights come from the scratchpad, not the accumulator"
        # C's first row and flags now; all its rows at the compute, with the c_stride in force then
        if reason := (self._rows(ins.b, "b", 0, ins.b_rows, 1, write=False)
                      or self._rows(ins.c, "c", 0, 1, 1, write=True)):
            return reason
        self.preloaded = ins
        return None

    def compute(self, ins: ComputePreloaded) -> str | None:
        if self.ex is None:
            return "no config_ex before this compute"
        if self.preloaded is None:
            return "compute without a preload before it (the preload names C)"
        if isinstance(ins, ComputeAccumulated) and not self.weights:
            return "compute_accumulated with no weights in the array (use compute_preloaded first)"
        for what in ("a_rows", "a_cols", "d_rows", "d_cols"):
            if reason := self._dim(what, getattr(ins, what)):
                return reason
        for what in ("a", "d"):
            if getattr(ins, what) != GARBAGE and getattr(ins, what) & ACC_BIT:
                return f"{what}: operands come from the scratchpad, not the accumulator"
        c = self.preloaded
        if reason := (self._rows(ins.a, "a", 0, ins.a_rows, self.ex.a_stride, write=False)
                      or self._rows(ins.d, "d", 0, ins.d_rows, 1, write=False)
                      or self._rows(c.c, "c (of the preload)", 0, c.c_rows, self.ex.c_stride, write=True)):
            return reason
        self.preloaded = None
        self.weights = True
        return None


def _nothing(_: Instruction) -> None:
    return None
