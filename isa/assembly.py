"""Assembly text: one instruction per line, named fields, ``#`` comments.

    .hardware name=gemmini dim=16 sp_kib=256 ...
    .buffer A input int8 64x64 @0x0
    config_ld dram_stride=64 state=0 shrink=0 block_stride=16 scale=1.0
    mvin dram=A+128 local=sp[0] rows=16 cols=64
    preload b=sp[0] b_rows=16 b_cols=16 c=acc[0].accum c_rows=16 c_cols=16
    compute_preloaded a=sp[256] a_rows=16 a_cols=16 d=garbage d_rows=16 d_cols=16

    loop_ws_addrs_ab a=A+64 b=0

Local addresses read ``sp[row]``, ``acc[row]`` with optional ``.accum`` (accumulate
on write), ``.full`` (read int32 rows) and a normalization command (``.sum``, ``.mean``,
``.variance``, ``.inv_stddev``, ``.max``, ``.sum_exp``, ``.inv_sum_exp``: isa.norm), or ``garbage``; DRAM addresses
``buffer+offset`` (or a plain integer). Loop words (isa.loop_words) are all plain
integers but their DRAM addresses; 0 there (skip the phase) prints as ``0``.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import MISSING, fields
from typing import Callable, Iterable, Mapping

import numpy as np

from .buffers import Buffer
from .config import FLAGS, ConfigError, HardwareConfig
from .instructions import (
    ACC_BIT, ACCUM_BIT, ACTIVATIONS, DATAFLOWS, FULL_BIT, GARBAGE, NORM_MASK, NORM_SHIFT, OPS, ROW_MASK, ConfigEx,
    ConfigSt, Instruction, ISAError, Mvin, MVIN_OPS,
)
from .norm import NormCmd
from .loop_words import BY_FUNCT as LOOP_WORDS, LOOP_WORD_CLASSES, LoopWord, dram_fields
from .opcodes import Funct

_LOCAL_FIELDS = {"local", "a", "b", "c", "d"}
_ENUMS = {"activation": ACTIVATIONS, "dataflow": DATAFLOWS}
_FLOATS = {"acc_scale", "scale", "scale0", "scale1"}
# config_st's pooling fields, written out only when one is set (so that any word prints as itself)
_POOL_FIELDS = frozenset(("pool_stride", "pool_size", "pool_out_dim", "porows", "pocols", "orows", "ocols", "upad",
                          "lpad"))


# config_st's fields of the store-unit extensions (requantization, column scales), each written out only when set
_EXTENSION_FIELDS = ("out_offset", "out_uint8", "col_scales")


def _quiet_st_fields(ins: ConfigSt) -> set[str]:
    """The config_st fields left out of its text: at their defaults, and the pooling ones only all together."""
    quiet = {f for f in _EXTENSION_FIELDS if not getattr(ins, f)}
    return quiet | _POOL_FIELDS if not any(getattr(ins, f) for f in _POOL_FIELDS) else quiet


# ---- local and DRAM addresses ---------------------------------------------
def format_local(addr: int) -> str:
    if addr == GARBAGE:
        return "garbage"
    if not addr & ACC_BIT:
        if addr & (ACCUM_BIT | FULL_BIT | NORM_MASK):
            return f"{addr:#x}"
        return f"sp[{addr}]"
    norm = NormCmd(addr >> NORM_SHIFT & 7)
    flags = (".accum" if addr & ACCUM_BIT else "") + (".full" if addr & FULL_BIT else "") \
        + (f".{norm.name.lower()}" if norm else "")
    return f"acc[{addr & ROW_MASK}]{flags}"


def parse_local(text: str) -> int:
    if text == "garbage":
        return GARBAGE
    if text.startswith("sp[") and text.endswith("]"):
        return int(text[3:-1])
    if text.startswith("acc["):
        close = text.index("]")
        addr = ACC_BIT | int(text[4:close])
        for flag in text[close + 1:].split(".")[1:]:
            if flag == "accum":
                addr |= ACCUM_BIT
            elif flag == "full":
                addr |= FULL_BIT
            elif flag.upper() in NormCmd.__members__ and flag != "reset":
                addr = addr & ~NORM_MASK | NormCmd[flag.upper()] << NORM_SHIFT
            else:
                raise ValueError(f"unknown flag .{flag}")
        return addr
    return int(text, 0)


class DramNames:
    """Renders DRAM byte addresses as ``buffer+offset`` and parses them back."""

    def __init__(self, buffers: Mapping[str, Buffer]) -> None:
        self.buffers = buffers
        self._spans = sorted((b.addr, b.end, b.name) for b in buffers.values())

    def format(self, addr: int) -> str:
        for start, end, name in self._spans:
            if start <= addr < end:
                return name if addr == start else f"{name}+{addr - start}"
        return str(addr)

    def parse(self, text: str) -> int:
        name, plus, offset = text.partition("+")
        if name in self.buffers:
            return self.buffers[name].addr + (int(offset, 0) if plus else 0)
        if name[:1].isalpha():
            raise ValueError(f"unknown buffer {name!r} (declared: {', '.join(self.buffers) or 'none'})")
        return int(text, 0)


# ---- instructions ------------------------------------------------------------
# assembly mnemonic -> class, loop words included
MNEMONICS: dict[str, type[Instruction]] = {**OPS, **{cls.OP: cls for cls in LOOP_WORD_CLASSES}}


def funct_mnemonic(funct: Funct) -> str:
    """The mnemonic of a funct other than config (whose kinds are config_ex/_ld/_st): what logs print."""
    return LOOP_WORDS[funct].OP if funct in LOOP_WORDS else funct.name.lower()


def _field_plan(cls: type[Instruction]) -> list[tuple[str, str]]:
    if issubclass(cls, LoopWord):   # plain integers but for DRAM addresses (field names a/b/c/d are no locals)
        dram = set(dram_fields(cls))
        return [(f.name, "dram" if f.name in dram else "int") for f in fields(cls)]
    plan = []
    for f in fields(cls):
        if cls is Mvin and f.name == "state":
            continue  # spelled by the mnemonic
        kind = ("dram" if f.name == "dram" else "local" if f.name in _LOCAL_FIELDS else
                "enum" if f.name in _ENUMS else "float" if f.name in _FLOATS else "int")
        plan.append((f.name, kind))
    return plan


_PLANS = {cls: _field_plan(cls) for cls in set(MNEMONICS.values())}


def format_instruction(ins: Instruction, dram: DramNames | None = None) -> str:
    parts = [ins.op]
    quiet = (_quiet_st_fields(ins) if type(ins) is ConfigSt else
             ("set_only_strides",) if type(ins) is ConfigEx and not ins.set_only_strides else ())
    for name, kind in _PLANS[type(ins)]:
        if name in quiet:
            continue
        value = getattr(ins, name)
        if kind == "dram":
            text = dram.format(value) if dram else str(value)
        elif kind == "local":
            text = format_local(value)
        elif kind == "enum":
            text = _ENUMS[name][value]
        else:
            text = str(np.float32(value)) if kind == "float" else str(value)
        parts.append(f"{name}={text}")
    return " ".join(parts)


def _converter(name: str, kind: str, dram: DramNames) -> Callable[[str], object]:
    if kind == "dram":
        return dram.parse
    if kind == "local":
        return parse_local
    if kind == "enum":
        choices = _ENUMS[name]
        return lambda text: choices.index(text) if text in choices else int(text, 0)
    if kind == "float":
        return float
    return lambda text: int(text, 0)


class InstructionParser:
    """Parses instruction lines against one set of DRAM buffers."""

    def __init__(self, buffers: Mapping[str, Buffer]) -> None:
        dram = DramNames(buffers)
        self._conv = {cls: {n: _converter(n, k, dram) for n, k in plan} for cls, plan in _PLANS.items()}
        self._required = {cls: {f.name for f in fields(cls) if f.default is MISSING}
                          - ({"state"} if cls is Mvin else set()) for cls in _PLANS}

    def parse(self, line: str, lineno: int) -> Instruction:
        op, *items = line.split()
        cls = MNEMONICS.get(op)
        if cls is None:
            raise ISAError(f"line {lineno}: unknown instruction {op!r} in {line!r}")
        conv = self._conv[cls]
        kwargs: dict[str, object] = {}
        for item in items:
            key, eq, text = item.partition("=")
            if not eq or key not in conv:
                raise ISAError(f"line {lineno}: {op} has no field {key!r} (fields: {', '.join(conv)}) in {line!r}")
            if key in kwargs:
                raise ISAError(f"line {lineno}: field {key!r} given twice in {line!r}")
            try:
                kwargs[key] = conv[key](text)
            except ValueError as exc:
                raise ISAError(f"line {lineno}: bad value for {key}: {text!r} ({exc}) in {line!r}") from None
        missing = self._required[cls] - kwargs.keys()
        if missing:
            raise ISAError(f"line {lineno}: {op} is missing field(s) {', '.join(sorted(missing))} in {line!r}")
        if cls is Mvin:
            kwargs["state"] = MVIN_OPS.index(op)
        try:
            return cls(**kwargs)
        except ISAError as exc:
            raise ISAError(f"line {lineno}: {exc} in {line!r}") from None


# ---- whole programs ------------------------------------------------------------
def format_program(hw: HardwareConfig, buffers: Mapping[str, Buffer], instructions: Iterable[Instruction]) -> str:
    """A program's assembly text: its directives, then one line per instruction."""
    fields_text = " ".join(f"{k}={v}" for k, v in hw.as_dict().items())
    lines = [f".hardware {fields_text}"]
    for b in buffers.values():
        lines.append(f".buffer {b.name} {b.role} {b.dtype} {'x'.join(map(str, b.shape))} @{b.addr:#x}")
    dram = DramNames(buffers)
    lines.extend(format_instruction(i, dram) for i in instructions)
    return "\n".join(lines) + "\n"


def _flag(text: str) -> bool:
    """An on/off hardware field as format_program writes it (True / False)."""
    if text not in ("True", "False"):
        raise ValueError(text)
    return text == "True"


def _parse_hardware(items: list[str], lineno: int) -> HardwareConfig:
    data: dict[str, object] = {}
    for item in items:
        key, eq, text = item.partition("=")
        if not eq:
            raise ISAError(f"line {lineno}: .hardware expects key=value, got {item!r}")
        try:
            data[key] = text if key in ("name", "dataflows") else _flag(text) if key in FLAGS else int(text, 0)
        except ValueError:
            kind = "True or False" if key in FLAGS else "an integer"
            raise ISAError(f"line {lineno}: .hardware: {key} must be {kind}, got {text!r}") from None
    try:
        return HardwareConfig.from_dict(data)
    except (ConfigError, ValueError) as exc:
        raise ISAError(f"line {lineno}: .hardware: {exc}") from None


def _parse_buffer(items: list[str], lineno: int) -> Buffer:
    if len(items) != 5 or not items[4].startswith("@"):
        raise ISAError(f"line {lineno}: .buffer expects NAME ROLE DTYPE SHAPE @ADDR, got {' '.join(items)!r}")
    name, role, dtype, shape, addr = items
    try:
        return Buffer(name, role, dtype, tuple(int(s) for s in shape.split("x")), int(addr[1:], 0))
    except ValueError as exc:
        raise ISAError(f"line {lineno}: .buffer: {exc}") from None


_PARSED: "OrderedDict[tuple[Buffer, ...], dict[str, Instruction]]" = OrderedDict()


def _parsed_lines(buffers: Mapping[str, Buffer]) -> dict[str, Instruction]:
    """Lines already parsed against these buffers. Lowered programs repeat most lines, and the
    tuner lowers many schedules of one op; instructions are immutable, so they are shared."""
    key = tuple(buffers.values())
    cache = _PARSED.pop(key, None)
    if cache is None or len(cache) > 500_000:
        cache = {}
    _PARSED[key] = cache
    while len(_PARSED) > 8:
        _PARSED.popitem(last=False)
    return cache


def clear_parse_cache() -> None:
    _PARSED.clear()


def parse_assembly(text: str, hw: HardwareConfig | None = None, buffers: Mapping[str, Buffer] | None = None
                   ) -> tuple[HardwareConfig, list[Instruction], dict[str, Buffer]]:
    """Parse assembly into the parts of a program (see :func:`isa.program.parse_program`)."""
    buffers = dict(buffers or {})
    instructions: list[Instruction] = []
    parser: InstructionParser | None = None
    parsed: dict[str, Instruction] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        ins = parsed.get(raw)
        if ins is not None:
            instructions.append(ins)
            continue
        line = raw.split("#", 1)[0].strip() if "#" in raw else raw.strip()
        if not line:
            continue
        if line.startswith("."):
            if parser is not None:
                raise ISAError(f"line {lineno}: directive after the first instruction in {line!r}")
            directive, *items = line.split()
            if directive == ".hardware":
                hw = _parse_hardware(items, lineno)
            elif directive == ".buffer":
                buf = _parse_buffer(items, lineno)
                if buf.name in buffers:
                    raise ISAError(f"line {lineno}: buffer {buf.name!r} declared twice")
                buffers[buf.name] = buf
            else:
                raise ISAError(f"line {lineno}: unknown directive {directive!r} (.hardware, .buffer)")
            continue
        if parser is None:  # directives are done: buffers are known
            parser = InstructionParser(buffers)
            parsed = _parsed_lines(buffers)
            if raw in parsed:
                instructions.append(parsed[raw])
                continue
        ins = parsed[raw] = parser.parse(line, lineno)
        instructions.append(ins)
    if hw is None:
        raise ISAError("assembly has no .hardware line and no hardware config was given")
    return hw, instructions, buffers
