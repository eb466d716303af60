"""The instruction set: one frozen dataclass per Gemmini instruction we implement.

Fields are range-checked on construction, so an instruction that exists can be
encoded. Checks that depend on the hardware (a row past the scratchpad, more
rows than ``dim``) live in :func:`isa.program.Program.validate`.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, fields, replace
from typing import ClassVar, Union

from .opcodes import Funct


class ISAError(ValueError):
    """A malformed instruction, assembly line or program file."""


# ---- local addresses ------------------------------------------------------
# bit 31 accumulator, bit 30 accumulate on write, bit 29 read full int32 row, bits 28:26 an accumulator
# mvout's normalization command (Gemmini's LocalAddr.norm_cmd, isa.norm.NormCmd), bits 25:0 the row.
ACC_BIT = 1 << 31
ACCUM_BIT = 1 << 30
FULL_BIT = 1 << 29
NORM_SHIFT = 26
NORM_MASK = 7 << NORM_SHIFT
ROW_MASK = (1 << NORM_SHIFT) - 1
GARBAGE = 0xFFFFFFFF

# config_st's and config_ex's two activation bits (gemmini.h's values; config_norm's act_msb makes SOFTMAX, 4)
ACTIVATIONS = ("none", "relu", "layernorm", "igelu")
DATAFLOWS = ("os", "ws")


def sp_addr(row: int) -> int:
    return row


def acc_addr(row: int, *, accumulate: bool = False, full: bool = False, norm: int = 0) -> int:
    return ACC_BIT | (ACCUM_BIT if accumulate else 0) | (FULL_BIT if full else 0) | (norm << NORM_SHIFT) | row


def is_garbage(addr: int) -> bool:
    return addr == GARBAGE


def is_acc(addr: int) -> bool:
    return bool(addr & ACC_BIT) and addr != GARBAGE


def addr_row(addr: int) -> int:
    return addr & ROW_MASK


def norm_cmd(addr: int) -> int:
    """The normalization command an accumulator mvout's address carries (0: none, a plain store)."""
    return (addr & NORM_MASK) >> NORM_SHIFT


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def bits_f32(b: int) -> float:
    return struct.unpack("<f", struct.pack("<I", b))[0]


def _as_f32(name: str, x: float) -> float:
    """Round a Python float to the nearest float32 (what the hardware holds)."""
    try:
        y = bits_f32(f32_bits(float(x)))
    except (OverflowError, TypeError, ValueError):
        raise ISAError(f"{name}={x!r} is not a finite float32") from None
    if y != y or y in (float("inf"), float("-inf")):
        raise ISAError(f"{name}={x!r} is not a finite float32")
    return y


def _check_uint(cls_name: str, name: str, value: int, bits: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < (1 << bits):
        raise ISAError(f"{cls_name}.{name}={value!r} out of range (unsigned {bits}-bit)")


def _check_local(cls_name: str, name: str, value: int) -> None:
    _check_uint(cls_name, name, value, 32)


@dataclass(frozen=True, slots=True)
class Instruction:
    """Base class. ``OP`` is the assembly mnemonic, ``FUNCT`` Gemmini's funct."""

    OP: ClassVar[str] = ""
    FUNCT: ClassVar[int] = -1
    # (field, bit width) checked on construction; floats and flags handled separately
    _UINTS: ClassVar[tuple[tuple[str, int], ...]] = ()
    _LOCALS: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        # the common case (a plain int in range) inline: the unrollers build millions of primitives
        for field, bits in self._UINTS:
            value = getattr(self, field)
            if type(value) is not int or not 0 <= value < 1 << bits:
                _check_uint(type(self).__name__, field, value, bits)
        for field in self._LOCALS:
            value = getattr(self, field)
            if type(value) is not int or not 0 <= value < 1 << 32:
                _check_local(type(self).__name__, field, value)

    @property
    def op(self) -> str:
        return self.OP


@dataclass(frozen=True, slots=True)
class ConfigEx(Instruction):
    dataflow: int = 1          # 0 output-stationary, 1 weight-stationary
    activation: int = 0        # 1 relu (on results written to the scratchpad); 0, and gemmini.h's 2 and 3, none
    a_transpose: int = 0
    b_transpose: int = 0
    a_stride: int = 1          # scratchpad rows between consecutive A rows
    acc_scale: float = 1.0     # scale of results written to the scratchpad
    c_stride: int = 1          # local rows between consecutive C rows
    in_shift: int = 0          # output-stationary: results leave the array rounding-shifted right by this
    set_only_strides: int = 0  # set a_stride and c_stride only, keep the rest (LoopConv's transposed input)

    OP: ClassVar[str] = "config_ex"
    FUNCT: ClassVar[int] = Funct.CONFIG
    # in_shift travels in rs2[31:0]; Gemmini's register holds log2(32) = 5 bits of it
    _UINTS = (("dataflow", 1), ("activation", 2), ("a_transpose", 1), ("b_transpose", 1),
              ("a_stride", 16), ("c_stride", 16), ("in_shift", 5), ("set_only_strides", 1))

    def __post_init__(self) -> None:
        Instruction.__post_init__(self)
        object.__setattr__(self, "acc_scale", _as_f32("ConfigEx.acc_scale", self.acc_scale))

    def applied_to(self, current: ConfigEx) -> ConfigEx:
        """The config in force after this word, ``current`` before it."""
        if not self.set_only_strides:
            return self
        return replace(current, a_stride=self.a_stride, c_stride=self.c_stride)


@dataclass(frozen=True, slots=True)
class ConfigLd(Instruction):
    dram_stride: int = 0       # bytes between consecutive DRAM rows
    state: int = 0             # which mvin (0 mvin, 1 mvin2, 2 mvin3) this configures
    shrink: int = 0            # accumulator mvins read int8 (sign-extended) instead of int32
    block_stride: int = 0      # local rows between the dim-wide blocks of one wide mvin
    scale: float = 1.0         # mvin scale
    pixel_repeats: int = 1     # Gemmini's PixelRepeater: local rows each DRAM row is written to (see functional)

    OP: ClassVar[str] = "config_ld"
    FUNCT: ClassVar[int] = Funct.CONFIG
    _UINTS = (("dram_stride", 64), ("state", 2), ("shrink", 1), ("block_stride", 16), ("pixel_repeats", 8))

    def __post_init__(self) -> None:
        Instruction.__post_init__(self)
        if self.state > 2:
            raise ISAError(f"ConfigLd.state={self.state} out of range (0, 1 or 2)")
        if self.pixel_repeats < 1:
            raise ISAError(f"ConfigLd.pixel_repeats={self.pixel_repeats} out of range (1 to 255)")
        object.__setattr__(self, "scale", _as_f32("ConfigLd.scale", self.scale))


@dataclass(frozen=True, slots=True)
class ConfigSt(Instruction):
    """Store config. With ``pool_stride`` > 0 an mvout max-pools (Gemmini's store-path pooling): its local
    rows are an ``orows`` x ``ocols`` image of pixels (one row each, ``cols`` <= dim channels), and it writes
    the ``porows`` x ``pocols`` maxima of ``pool_size``-square windows ``pool_stride`` apart, the image offset
    by ``upad`` rows and ``lpad`` columns of padding, to DRAM pixel ``porow * pool_out_dim + pocol``
    (``dram_stride`` bytes apart). A padded position (above, left, or past the image's end) pools as the
    byte 0, as on Gemmini, whose store unit reads it from the garbage address (zeros).

    The requantization extension (``HardwareConfig.store_requant``; Gemmini has none): an accumulator row
    stored as 8-bit values is ``clip(relu?(rne(acc * acc_scale)) + out_offset, qmin, qmax)``, with [qmin,
    qmax] = [0, 255] when ``out_uint8`` (the byte is the uint8), else [-128, 127].

    The column-scale extension (``HardwareConfig.store_col_scales``; Gemmini has none): with ``col_scales``
    lane i of every accumulator row block an mvout stores is scaled by entry i of the store unit's scale
    vector (loaded by :class:`ConfigStScales`) instead of ``acc_scale``; the rest of the epilogue is the same."""

    dram_stride: int = 0       # bytes between consecutive DRAM rows (pixels, when pooling)
    activation: int = 0        # 0 none, 1 relu, 2 layernorm, 3 igelu (4, softmax: 0 with config_norm's act_msb)
    acc_scale: float = 1.0     # float32 scale of accumulator rows stored as int8
    pool_stride: int = 0       # 0: no pooling
    pool_size: int = 0
    pool_out_dim: int = 0      # pixels of a pooled DRAM row
    porows: int = 0
    pocols: int = 0
    orows: int = 0
    ocols: int = 0
    upad: int = 0
    lpad: int = 0
    out_offset: int = 0        # added after rounding (an output zero point), -256 to 255
    out_uint8: int = 0         # clip to [0, 255], not [-128, 127]
    col_scales: int = 0        # scale by the store unit's per-column scale vector, not acc_scale

    OP: ClassVar[str] = "config_st"
    FUNCT: ClassVar[int] = Funct.CONFIG
    _UINTS = (("dram_stride", 32), ("activation", 2), ("pool_stride", 2), ("pool_size", 2), ("pool_out_dim", 8),
              ("porows", 8), ("pocols", 8), ("orows", 8), ("ocols", 8), ("upad", 2), ("lpad", 2), ("out_uint8", 1),
              ("col_scales", 1))
    OFFSET_BITS: ClassVar[int] = 9   # out_offset's two's complement width

    @property
    def requantizes(self) -> bool:
        """Whether the word uses the store unit's requantization extension."""
        return self.out_offset != 0 or self.out_uint8 != 0

    @property
    def pooling(self) -> bool:
        return self.pool_stride != 0

    def __post_init__(self) -> None:
        Instruction.__post_init__(self)
        object.__setattr__(self, "acc_scale", _as_f32("ConfigSt.acc_scale", self.acc_scale))
        half = 1 << (self.OFFSET_BITS - 1)
        if isinstance(self.out_offset, bool) or not isinstance(self.out_offset, int) \
                or not -half <= self.out_offset < half:
            raise ISAError(f"ConfigSt.out_offset={self.out_offset!r} out of range (signed {self.OFFSET_BITS}-bit, "
                           f"{-half} to {half - 1})")


@dataclass(frozen=True, slots=True)
class ConfigStScales(Instruction):
    """The column-scale extension's load (``HardwareConfig.store_col_scales``; Gemmini has none): a config_st
    word that writes ``scale0`` and ``scale1`` (float32) into entries ``col`` and ``col + 1`` of the store unit's
    scale vector of dim entries (an entry past dim is dropped), leaving the store config as it is. dim / 2 of
    them load the scales of one column block; config_st's ``col_scales`` uses them."""

    col: int
    scale0: float = 1.0
    scale1: float = 1.0

    OP: ClassVar[str] = "config_st_scales"
    FUNCT: ClassVar[int] = Funct.CONFIG
    _UINTS = (("col", 16),)

    def __post_init__(self) -> None:
        Instruction.__post_init__(self)
        if self.col % 2:
            raise ISAError(f"ConfigStScales.col={self.col} must be even (a word loads entries col and col + 1)")
        for name in ("scale0", "scale1"):
            object.__setattr__(self, name, _as_f32(f"ConfigStScales.{name}", getattr(self, name)))


def _check_int32(cls_name: str, name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not -(1 << 31) <= value < (1 << 31):
        raise ISAError(f"{cls_name}.{name}={value!r} out of range (signed 32-bit)")


@dataclass(frozen=True, slots=True)
class ConfigNorm(Instruction):
    """gemmini.h's gemmini_config_norm: the normalization unit's config (isa.norm). Sets the stat id that the
    next normalizing mvouts use; unless ``set_stats_id_only``, also I-GELU's ``qb`` and ``qc``, I-exp's
    q_ln2 (``q_const_type`` 0) or q_ln2_inv (1) from ``q_const``, and the store activation's high bit
    (``act_msb``: config_st's activation 0 with it is SOFTMAX, 4). A config_st clears that bit."""

    stat_id: int = 0
    act_msb: int = 0
    set_stats_id_only: int = 0
    q_const_type: int = 0
    q_const: int = 0
    qb: int = 0
    qc: int = 0

    OP: ClassVar[str] = "config_norm"
    FUNCT: ClassVar[int] = Funct.CONFIG
    _UINTS = (("stat_id", 8), ("act_msb", 1), ("set_stats_id_only", 1), ("q_const_type", 1))

    def __post_init__(self) -> None:
        Instruction.__post_init__(self)
        for name in ("q_const", "qb", "qc"):
            _check_int32("ConfigNorm", name, getattr(self, name))


@dataclass(frozen=True, slots=True)
class Mvin(Instruction):
    """DRAM -> local memory; ``state`` picks the load config (mvin, mvin2, mvin3)."""

    dram: int
    local: int
    rows: int
    cols: int
    state: int = 0

    FUNCT: ClassVar[int] = Funct.MVIN
    _UINTS = (("dram", 64), ("rows", 16), ("cols", 16), ("state", 2))
    _LOCALS = ("local",)

    def __post_init__(self) -> None:
        Instruction.__post_init__(self)
        if self.state > 2:
            raise ISAError(f"Mvin.state={self.state} out of range (0, 1 or 2)")

    @property
    def op(self) -> str:
        return MVIN_OPS[self.state]


MVIN_OPS = ("mvin", "mvin2", "mvin3")


@dataclass(frozen=True, slots=True)
class Mvout(Instruction):
    dram: int
    local: int
    rows: int
    cols: int

    OP: ClassVar[str] = "mvout"
    FUNCT: ClassVar[int] = Funct.MVOUT
    _UINTS = (("dram", 64), ("rows", 16), ("cols", 16))
    _LOCALS = ("local",)


@dataclass(frozen=True, slots=True)
class Preload(Instruction):
    """Weights ``b`` (rows x cols) into the array; ``c`` is where the next compute writes."""

    b: int
    b_rows: int
    b_cols: int
    c: int
    c_rows: int
    c_cols: int

    OP: ClassVar[str] = "preload"
    FUNCT: ClassVar[int] = Funct.PRELOAD
    _UINTS = (("b_rows", 16), ("b_cols", 16), ("c_rows", 16), ("c_cols", 16))
    _LOCALS = ("b", "c")


@dataclass(frozen=True, slots=True)
class ComputePreloaded(Instruction):
    """C = A @ W + D with the weights of the last preload."""

    a: int
    a_rows: int
    a_cols: int
    d: int
    d_rows: int
    d_cols: int

    OP: ClassVar[str] = "compute_preloaded"
    FUNCT: ClassVar[int] = Funct.COMPUTE_PRELOADED
    _UINTS = (("a_rows", 16), ("a_cols", 16), ("d_rows", 16), ("d_cols", 16))
    _LOCALS = ("a", "d")


@dataclass(frozen=True, slots=True)
class ComputeAccumulated(ComputePreloaded):
    """C = A @ W + D keeping the weights already in the array."""

    OP: ClassVar[str] = "compute_accumulated"
    FUNCT: ClassVar[int] = Funct.COMPUTE_ACCUMULATED


@dataclass(frozen=True, slots=True)
class Flush(Instruction):
    OP: ClassVar[str] = "flush"
    FUNCT: ClassVar[int] = Funct.FLUSH


@dataclass(frozen=True, slots=True)
class Fence(Instruction):
    """Wait until every earlier instruction is done. A pseudo-instruction of our program files:
    Gemmini's ``gemmini_fence()`` is the RISC-V ``fence``, not a RoCC word; funct 127 is ours."""

    OP: ClassVar[str] = "fence"
    FUNCT: ClassVar[int] = Funct.FENCE


InstructionT = Union[ConfigEx, ConfigLd, ConfigSt, ConfigStScales, ConfigNorm, Mvin, Mvout, Preload, ComputePreloaded,
                     ComputeAccumulated, Flush, Fence]

INSTRUCTION_CLASSES: tuple[type[Instruction], ...] = (
    ConfigEx, ConfigLd, ConfigSt, ConfigStScales, ConfigNorm, Mvin, Mvout, Preload, ComputePreloaded,
    ComputeAccumulated, Flush, Fence)

# assembly mnemonic -> class (mvin2/mvin3 are Mvin with state 1/2)
OPS: dict[str, type[Instruction]] = {c.OP: c for c in INSTRUCTION_CLASSES if c.OP}
OPS.update({op: Mvin for op in MVIN_OPS})


def field_names(cls: type[Instruction]) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))
