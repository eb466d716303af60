"""A program: instructions, the DRAM buffers they address, and the hardware they target.

Binary program file (little-endian), read by the RTL harness:

    magic     8 bytes  b"SYSTOLIC"
    version   u32      FORMAT_VERSION
    n_hw      u32      then n_hw x u32: HardwareConfig.hardware_fields() in declaration order
    name_len  u16      then the config name (utf-8)
    n_buf     u32      then per buffer: u16 name_len, name, u8 role, u8 dtype, u8 ndim,
                       ndim x u64 shape, u64 addr
    dram_size u64
    n_instr   u64      then n_instr x (u64 funct, u64 rs1, u64 rs2)
    n_seg     u32      DRAM image: per segment u64 addr, u64 len, len bytes
    n_out     u32      output segments to write back: per segment u64 addr, u64 len
"""
from __future__ import annotations

import io
import struct
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import numpy as np

from .assembly import format_program, parse_assembly
from .buffers import DTYPES, ROLES, Buffer, check_buffer_table
from .c_export import to_c
from .config import ConfigError, HardwareConfig
from .encoding import decode_all, encode_all
from .instructions import Instruction, ISAError

MAGIC = b"SYSTOLIC"
FORMAT_VERSION = 1
SUFFIXES = {".s": "assembly", ".asm": "assembly", ".bin": "binary"}  # what Program.save writes, by suffix


def file_format(path: str | Path) -> str:
    """"assembly" or "binary": what :meth:`Program.save` writes to ``path``, by its suffix (any case)."""
    suffix = Path(path).suffix.lower()
    if suffix not in SUFFIXES:
        which = f"from its suffix {suffix!r}" if suffix else "without a suffix"
        raise ValueError(f"cannot tell the program format of {str(path)!r} {which}: "
                         "use .s or .asm for assembly, .bin for the binary program file")
    return SUFFIXES[suffix]


@dataclass(eq=False)
class Program:
    """A lowered program: the hardware it is for, its instructions and its DRAM buffers (name, role, dtype,
    shape, address). ``tk.compile`` makes one; ``to_asm()`` gives its assembly, ``save(path)`` writes assembly
    (``.s``) or the binary program file the RTL harness reads (``.bin``), ``Program.load`` reads either, and
    ``to_c(inputs, check=outputs)`` writes it as a self-contained C program."""

    hw: HardwareConfig
    instructions: list[Instruction]
    buffers: dict[str, Buffer]
    meta: dict = field(default_factory=dict)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Program) and self.hw == other.hw and self.buffers == other.buffers
                and self.instructions == other.instructions)

    def __len__(self) -> int:
        return len(self.instructions)

    @property
    def dram_size(self) -> int:
        return max((b.end for b in self.buffers.values()), default=0)

    def counts(self) -> Counter:
        """Instruction count per mnemonic."""
        return Counter(i.op for i in self.instructions)

    # ---- DRAM image ----------------------------------------------------
    def check_inputs(self, inputs: Mapping[str, np.ndarray]) -> None:
        if not isinstance(inputs, Mapping):
            raise ValueError(f"inputs must be a dict of name -> ndarray, got {type(inputs).__name__}")
        wanted = sorted(b.name for b in self.buffers.values() if b.role == "input")
        unknown = sorted(set(inputs) - set(wanted))
        if unknown:
            raise ValueError(f"inputs: {', '.join(map(repr, unknown))} name no input buffer of the program "
                             f"(its inputs: {', '.join(wanted) or 'none'})")
        for buf in self.buffers.values():
            if buf.role != "input":
                continue
            if buf.name not in inputs:
                raise ValueError(f"inputs: missing array {buf.name!r} (expected {buf.dtype} of shape {buf.shape})")
            arr = np.asarray(inputs[buf.name])
            if arr.dtype != np.dtype(buf.dtype):
                raise ValueError(f"inputs[{buf.name!r}]: dtype {arr.dtype} but the program expects {buf.dtype}")
            if arr.shape != buf.shape:
                raise ValueError(f"inputs[{buf.name!r}]: shape {arr.shape} but the program expects {buf.shape}")

    def dram_image(self, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        """The DRAM contents before the run: input buffers filled, the rest zero."""
        self.check_inputs(inputs)
        dram = np.zeros(self.dram_size, dtype=np.uint8)
        for buf in self.buffers.values():
            if buf.role == "input":
                data = np.ascontiguousarray(inputs[buf.name], dtype=buf.dtype).astype(np.dtype(buf.dtype).newbyteorder("<"))
                dram[buf.addr:buf.end] = data.view(np.uint8).ravel()
        return dram

    def read_outputs(self, dram: np.ndarray) -> dict[str, np.ndarray]:
        out = {}
        for buf in self.buffers.values():
            if buf.role == "output":
                raw = np.asarray(dram[buf.addr:buf.end], dtype=np.uint8)
                out[buf.name] = raw.view(np.dtype(buf.dtype).newbyteorder("<")).astype(buf.dtype).reshape(buf.shape)
        return out

    # ---- text and binary forms --------------------------------------------
    def to_c(self, inputs: Mapping[str, np.ndarray], check: Mapping[str, np.ndarray] | None = None) -> str:
        """A self-contained C program that issues these words on ``inputs`` through Gemmini's
        xcustom.h macros and, with ``check`` (output name -> expected array), exits 0 only when the
        outputs match (see ``isa/c_export.py``)."""
        return to_c(self, inputs, check)

    def to_asm(self) -> str:
        return format_program(self.hw, self.buffers, self.instructions)

    @classmethod
    def from_asm(cls, text: str) -> "Program":
        """Parse assembly text (for a binary program file: :meth:`from_bytes`; for a path: :meth:`load`)."""
        return parse_program(text)

    def to_bytes(self, inputs: Mapping[str, np.ndarray] | None = None) -> bytes:
        """Binary program file; with ``inputs``, the DRAM image holds the input buffers."""
        out = io.BytesIO()
        hwf = self.hw.hardware_fields()
        name = self.hw.name.encode()
        out.write(MAGIC + struct.pack("<I", FORMAT_VERSION))
        out.write(struct.pack(f"<I{len(hwf)}I", len(hwf), *hwf))
        out.write(struct.pack("<H", len(name)) + name)
        out.write(struct.pack("<I", len(self.buffers)))
        for buf in self.buffers.values():
            bname = buf.name.encode()
            out.write(struct.pack("<H", len(bname)) + bname)
            out.write(struct.pack(f"<BBB{len(buf.shape)}QQ", ROLES.index(buf.role), DTYPES.index(buf.dtype),
                                  len(buf.shape), *buf.shape, buf.addr))
        out.write(struct.pack("<Q", self.dram_size))
        words = encode_all(self.instructions).astype("<u8")
        out.write(struct.pack("<Q", len(words)) + words.tobytes())
        if inputs is None:
            out.write(struct.pack("<I", 0))
        else:
            dram = self.dram_image(inputs)
            segs = [b for b in self.buffers.values() if b.role == "input"]
            out.write(struct.pack("<I", len(segs)))
            for b in segs:
                out.write(struct.pack("<QQ", b.addr, b.nbytes) + dram[b.addr:b.end].tobytes())
        outs = [b for b in self.buffers.values() if b.role == "output"]
        out.write(struct.pack("<I", len(outs)))
        for b in outs:
            out.write(struct.pack("<QQ", b.addr, b.nbytes))
        return out.getvalue()

    # Over 40 lines: the mirror of to_bytes, field by field in file order, so that the two read side by side.
    @classmethod
    def from_bytes(cls, data: bytes) -> tuple["Program", dict[int, bytes]]:
        """Parse a program file; returns the program and its DRAM image segments (addr -> bytes)."""
        r = _Reader(data)
        if r.take(8) != MAGIC:
            raise ISAError("not a program file (bad magic; expected a SYSTOLIC program or assembly text)")
        (version,) = r.unpack("<I")
        if version != FORMAT_VERSION:
            raise ISAError(f"program file format version {version}, this toolkit reads {FORMAT_VERSION}")
        (n_hw,) = r.unpack("<I")
        hwf = r.unpack(f"<{n_hw}I")
        (name_len,) = r.unpack("<H")
        name = r.text(name_len)
        keys = [k for k in HardwareConfig.__dataclass_fields__ if k != "name"]
        if n_hw != len(keys):
            raise ISAError(f"program file has {n_hw} hardware fields, expected {len(keys)}")
        try:
            hw = HardwareConfig.from_hardware_fields(name or "custom", hwf)
        except ConfigError as exc:
            raise ISAError(f"program file hardware config: {exc}") from None
        (n_buf,) = r.unpack("<I")
        buffers = {}
        for _ in range(n_buf):
            (nl,) = r.unpack("<H")
            bname = r.text(nl)
            role, dtype, ndim = r.unpack("<BBB")
            if role >= len(ROLES) or dtype >= len(DTYPES):
                raise ISAError(f"program file: buffer {bname!r} has bad role/dtype codes {role}/{dtype}")
            shape = r.unpack(f"<{ndim}Q")
            (addr,) = r.unpack("<Q")
            if bname in buffers:
                raise ISAError(f"program file: buffer {bname!r} declared twice")
            buffers[bname] = Buffer(bname, ROLES[role], DTYPES[dtype], tuple(shape), addr)
        r.unpack("<Q")  # dram_size, derived from the buffers
        (n_instr,) = r.unpack("<Q")
        words = np.frombuffer(r.take(24 * n_instr), dtype="<u8").reshape(-1, 3)
        instructions = decode_all(words)
        (n_seg,) = r.unpack("<I")
        segments = {}
        for _ in range(n_seg):
            addr, length = r.unpack("<QQ")
            segments[addr] = r.take(length)
        (n_out,) = r.unpack("<I")
        r.take(16 * n_out)
        if not r.done():
            raise ISAError(f"program file has {len(data) - r.pos} trailing bytes")
        return cls(hw, instructions, buffers), segments

    def save(self, path: str | Path, inputs: Mapping[str, np.ndarray] | None = None) -> None:
        """Write assembly (``.s``/``.asm``) or the binary program file (``.bin``), by the suffix in any
        case; another suffix is a ValueError. Assembly has no DRAM image, so it takes no ``inputs``."""
        path = Path(path)
        if file_format(path) == "binary":
            path.write_bytes(self.to_bytes(inputs))
        elif inputs is not None:
            raise ValueError(f"inputs go into a binary program file only; save {str(path)!r} as .bin to keep them")
        else:
            path.write_text(self.to_asm())

    @classmethod
    def load(cls, path: str | Path) -> "Program":
        """Read an assembly or binary program file (told apart by the magic). A buffer table that can never
        run (a buffer past the DRAM address space, overlapping buffers) is refused here, as running it would."""
        prog = cls._read(path)
        check_buffer_table(prog.buffers)
        return prog

    @classmethod
    def _read(cls, path: str | Path) -> "Program":
        path = Path(path)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise ISAError(f"program file {str(path)!r} does not exist") from None
        except OSError as exc:
            raise ISAError(f"cannot read program file {str(path)!r}: {exc.strerror or exc}") from None
        if data.startswith(MAGIC):
            return cls.from_bytes(data)[0]
        try:
            text = data.decode()
        except UnicodeDecodeError:
            raise ISAError(f"{str(path)!r} is neither a program file (bad magic) nor assembly text") from None
        return cls.from_asm(text)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise ISAError(f"program file truncated at byte {len(self.data)} (needed {self.pos + n})")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def text(self, n: int) -> str:
        try:
            return self.take(n).decode()
        except UnicodeDecodeError:
            raise ISAError(f"program file corrupted: a name before byte {self.pos} is not UTF-8") from None

    def unpack(self, fmt: str) -> tuple:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))

    def done(self) -> bool:
        return self.pos == len(self.data)


def parse_program(text: str, hw: HardwareConfig | None = None,
                  buffers: Mapping[str, Buffer] | None = None) -> Program:
    """Parse assembly. Directives come before the first instruction; ``hw`` and
    ``buffers`` stand in for ``.hardware`` and ``.buffer`` lines the text lacks."""
    if isinstance(text, (bytes, bytearray)):
        hint = ("a binary program file: use Program.from_bytes" if bytes(text).startswith(MAGIC)
                else "decode them first, or read a file with Program.load")
        raise TypeError(f"assembly must be text (str), got {type(text).__name__}: {hint}")
    if not isinstance(text, str):
        raise TypeError(f"assembly must be text (str), got {type(text).__name__}")
    return Program(*parse_assembly(text, hw, buffers))
