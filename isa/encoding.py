"""Binary encoding in Gemmini's RoCC layout: (funct, rs1, rs2), rs1/rs2 64-bit."""
from __future__ import annotations

from operator import attrgetter
from typing import Callable, Iterable, Sequence

import numpy as np

from .instructions import (
    ComputeAccumulated, ComputePreloaded, ConfigEx, ConfigLd, ConfigNorm, ConfigSt, ConfigStScales, Fence, Flush,
    Instruction, ISAError, Mvin, Mvout, Preload, bits_f32, f32_bits,
)
from .loop_words import (BY_FUNCT as LOOP_WORDS, CONFIG_EX, CONFIG_LD, CONFIG_NORM, CONFIG_ST, CONFIG_ST_SCALES,
                         OPERAND, Field, LoopWord)
from .opcodes import MVIN_FUNCTS, ConfigKind, Funct

_ADDR, _COLS, _ROWS = OPERAND   # the layouts are loop_words' tables; these are hot, so unpacked once
_LD = {f.name: f for f in CONFIG_LD}
_ST = {f.name: f for f in CONFIG_ST}
_EX = {f.name: f for f in CONFIG_EX}
_SCALES = {f.name: f for f in CONFIG_ST_SCALES}
_NORM = {f.name: f for f in CONFIG_NORM}
_NORM_SIGNED = ("q_const", "qb", "qc")   # int32 fields, in two's complement


def _unused(layout: tuple[Field, ...], word: str) -> int:
    return ~sum(f.mask << f.lo for f in layout if f.word == word) & ((1 << 64) - 1)


_LD_RS1_RESERVED = _unused(CONFIG_LD, "rs1")
_EX_RESERVED = {word: _unused(CONFIG_EX, word) for word in ("rs1", "rs2")}
# config_ex fields spelled as the instruction's own (the rest: kind, the scale as float32 bits)
_EX_PLAIN = tuple(f for f in CONFIG_EX if f.name not in ("kind", "acc_scale"))
_ST_RESERVED = {word: _unused(CONFIG_ST, word) for word in ("rs1", "rs2")}
_SCALES_RS1_RESERVED = _unused(CONFIG_ST_SCALES, "rs1")
# config_st fields spelled as the instruction's own (the rest: kind, the scale as float32 bits and the
# offset in two's complement)
_ST_PLAIN = tuple(f for f in CONFIG_ST if f.name not in ("kind", "scale", "out_offset"))


def _operand(addr: int, rows: int, cols: int) -> int:
    return (rows << _ROWS.lo) | (cols << _COLS.lo) | (addr << _ADDR.lo)


def split_operand(word: int) -> tuple[int, int, int]:
    """The (local address, columns, rows) of a mvin/mvout/preload/compute operand word."""
    return (word >> _ADDR.lo) & _ADDR.mask, (word >> _COLS.lo) & _COLS.mask, (word >> _ROWS.lo) & _ROWS.mask


def _config_ld(ins: ConfigLd) -> tuple[int, int]:
    values = dict(kind=ConfigKind.LD, shrink=ins.shrink, state=ins.state, pixel_repeats=ins.pixel_repeats,
                  block_stride=ins.block_stride, scale=f32_bits(ins.scale))
    return sum(values[f.name] << f.lo for f in CONFIG_LD if f.word == "rs1"), ins.dram_stride << _LD["dram_stride"].lo


def _ld_field(rs1: int, name: str) -> int:
    return (rs1 >> _LD[name].lo) & _LD[name].mask


def _config_ex(ins: ConfigEx) -> tuple[int, int]:
    rs = {"rs1": (ConfigKind.EX << _EX["kind"].lo) | (f32_bits(ins.acc_scale) << _EX["acc_scale"].lo), "rs2": 0}
    for f in _EX_PLAIN:
        rs[f.word] |= getattr(ins, f.name) << f.lo
    return rs["rs1"], rs["rs2"]


def _ex_field(word: int, name: str) -> int:
    return (word >> _EX[name].lo) & _EX[name].mask


def _config_st(ins: ConfigSt) -> tuple[int, int]:
    offset = _ST["out_offset"]
    rs = {"rs1": (ConfigKind.ST << _ST["kind"].lo) | ((ins.out_offset & offset.mask) << offset.lo),
          "rs2": f32_bits(ins.acc_scale) << _ST["scale"].lo}
    for f in _ST_PLAIN:
        rs[f.word] |= getattr(ins, f.name) << f.lo
    return rs["rs1"], rs["rs2"]


def _decode_config_st(rs1: int, rs2: int) -> ConfigSt:
    for word, value in (("rs1", rs1), ("rs2", rs2)):
        _reserved("config_st", word, value, _ST_RESERVED[word])
    fields = {f.name: ((rs1 if f.word == "rs1" else rs2) >> f.lo) & f.mask for f in _ST_PLAIN}
    offset = _ST["out_offset"]
    raw = (rs1 >> offset.lo) & offset.mask
    return ConfigSt(**fields, acc_scale=bits_f32((rs2 >> _ST["scale"].lo) & _ST["scale"].mask),
                    out_offset=raw - (raw >> (offset.width - 1) << offset.width))


def _config_st_scales(ins: ConfigStScales) -> tuple[int, int]:
    rs1 = (ConfigKind.ST << _SCALES["kind"].lo) | (1 << _SCALES["load_scales"].lo) | (ins.col << _SCALES["col"].lo)
    return rs1, (f32_bits(ins.scale0) << _SCALES["scale0"].lo) | (f32_bits(ins.scale1) << _SCALES["scale1"].lo)


def _decode_config_st_scales(rs1: int, rs2: int) -> ConfigStScales:
    _reserved("config_st_scales", "rs1", rs1, _SCALES_RS1_RESERVED)
    field = {name: (((rs1 if f.word == "rs1" else rs2) >> f.lo) & f.mask) for name, f in _SCALES.items()}
    return ConfigStScales(field["col"], bits_f32(field["scale0"]), bits_f32(field["scale1"]))


def _config_norm(ins: ConfigNorm) -> tuple[int, int]:
    rs = {"rs1": ConfigKind.NORM << _NORM["kind"].lo, "rs2": 0}
    for name, f in _NORM.items():
        if name != "kind":
            rs[f.word] |= (getattr(ins, name) & f.mask) << f.lo
    return rs["rs1"], rs["rs2"]


_NORM_RESERVED = {word: _unused(CONFIG_NORM, word) for word in ("rs1", "rs2")}


def _decode_config_norm(rs1: int, rs2: int) -> ConfigNorm:
    for word, value in (("rs1", rs1), ("rs2", rs2)):
        _reserved("config_norm", word, value, _NORM_RESERVED[word])
    raw = {name: ((rs1 if f.word == "rs1" else rs2) >> f.lo) & f.mask for name, f in _NORM.items() if name != "kind"}
    for name in _NORM_SIGNED:
        raw[name] -= (raw[name] >> 31) << 32
    return ConfigNorm(**raw)


def encode(ins: Instruction) -> tuple[int, int, int]:
    """One instruction -> (funct, rs1, rs2)."""
    t = type(ins)
    if t is Mvin:
        return MVIN_FUNCTS[ins.state], ins.dram, _operand(ins.local, ins.rows, ins.cols)
    if t is Mvout:
        return Funct.MVOUT, ins.dram, _operand(ins.local, ins.rows, ins.cols)
    if t is Preload:
        return Funct.PRELOAD, _operand(ins.b, ins.b_rows, ins.b_cols), _operand(ins.c, ins.c_rows, ins.c_cols)
    if t is ComputePreloaded or t is ComputeAccumulated:
        return t.FUNCT, _operand(ins.a, ins.a_rows, ins.a_cols), _operand(ins.d, ins.d_rows, ins.d_cols)
    if t is ConfigEx:
        return (Funct.CONFIG, *_config_ex(ins))
    if t is ConfigLd:
        return (Funct.CONFIG, *_config_ld(ins))
    if t is ConfigSt:
        return (Funct.CONFIG, *_config_st(ins))
    if t is ConfigStScales:
        return (Funct.CONFIG, *_config_st_scales(ins))
    if t is ConfigNorm:
        return (Funct.CONFIG, *_config_norm(ins))
    if t is Flush or t is Fence:
        return t.FUNCT, 0, 0
    if isinstance(ins, LoopWord):
        return (t.FUNCT, *ins.words())
    raise ISAError(f"cannot encode {ins!r}")


def _reserved(name: str, word: str, value: int, mask: int) -> None:
    if value & mask:
        raise ISAError(f"{name}: reserved bits {value & mask:#x} set in {word}")


_FUNCT_MVIN_STATE = {f: s for s, f in enumerate(MVIN_FUNCTS)}


# Over 40 lines: one branch per opcode, each a few lines; a table of them would read no better.
def decode(funct: int, rs1: int, rs2: int) -> Instruction:
    """(funct, rs1, rs2) -> instruction; any reserved bit or bad field is an ISAError."""
    funct, rs1, rs2 = int(funct), int(rs1), int(rs2)
    for word, value in (("rs1", rs1), ("rs2", rs2)):
        if not 0 <= value < 1 << 64:
            raise ISAError(f"funct {funct}: {word}={value:#x} is not a 64-bit word")
    if funct in _FUNCT_MVIN_STATE:
        addr, cols, rows = split_operand(rs2)
        return Mvin(rs1, addr, rows, cols, _FUNCT_MVIN_STATE[funct])
    if funct == Funct.MVOUT:
        addr, cols, rows = split_operand(rs2)
        return Mvout(rs1, addr, rows, cols)
    if funct == Funct.PRELOAD:
        b, bc, br = split_operand(rs1)
        c, cc, cr = split_operand(rs2)
        return Preload(b, br, bc, c, cr, cc)
    if funct in (Funct.COMPUTE_PRELOADED, Funct.COMPUTE_ACCUMULATED):
        a, ac, ar = split_operand(rs1)
        d, dc, dr = split_operand(rs2)
        cls = ComputePreloaded if funct == Funct.COMPUTE_PRELOADED else ComputeAccumulated
        return cls(a, ar, ac, d, dr, dc)
    if funct == Funct.CONFIG:
        kind = rs1 & 3
        if kind == ConfigKind.EX:
            _reserved("config_ex", "rs1", rs1, _EX_RESERVED["rs1"])
            _reserved("config_ex", "rs2", rs2, _EX_RESERVED["rs2"])
            words = {"rs1": rs1, "rs2": rs2}
            return ConfigEx(acc_scale=bits_f32(_ex_field(rs1, "acc_scale")),
                            **{f.name: _ex_field(words[f.word], f.name) for f in _EX_PLAIN})
        if kind == ConfigKind.LD:
            _reserved("config_ld", "rs1", rs1, _LD_RS1_RESERVED)
            return ConfigLd(dram_stride=rs2, state=_ld_field(rs1, "state"), shrink=_ld_field(rs1, "shrink"),
                            block_stride=_ld_field(rs1, "block_stride"), scale=bits_f32(_ld_field(rs1, "scale")),
                            pixel_repeats=max(1, _ld_field(rs1, "pixel_repeats")))   # Gemmini reads 0 as 1
        if kind == ConfigKind.ST:
            load = _SCALES["load_scales"]
            return (_decode_config_st_scales if (rs1 >> load.lo) & load.mask else _decode_config_st)(rs1, rs2)
        return _decode_config_norm(rs1, rs2)
    if funct in (Funct.FLUSH, Funct.FENCE):
        cls = Flush if funct == Funct.FLUSH else Fence
        if rs1 or rs2:
            raise ISAError(f"{cls.OP}: rs1 and rs2 must be zero")
        return cls()
    if funct in LOOP_WORDS:
        return LOOP_WORDS[funct].from_words(rs1, rs2)
    raise ISAError(f"unknown funct {funct}")


def encode_all(instructions: Iterable[Instruction]) -> np.ndarray:
    """Instructions -> uint64 array of shape (n, 3): funct, rs1, rs2. The kinds a loop unrolls into (moves,
    preloads, computes: most of a program's words) are encoded a column at a time, the rest one by one."""
    items = instructions if isinstance(instructions, (list, tuple)) else list(instructions)
    kinds = _Numbered()
    kind_of = np.fromiter(map(kinds.__getitem__, map(type, items)), dtype=np.intp, count=len(items))
    words = np.empty((len(items), 3), dtype=np.uint64)
    for kind, number in kinds.items():
        at = np.flatnonzero(kind_of == number)
        group = [items[i] for i in at.tolist()]
        if kind in _COLUMNS:
            for column, values in enumerate(_COLUMNS[kind]):
                words[at, column] = values(group)   # into uint64 as they are (a constant is a plain int)
        else:
            words[at] = _encode_each(group)
    return words


class _Numbered(dict):
    """Each key numbered in the order it is first asked for."""

    def __missing__(self, key: object) -> int:
        self[key] = len(self)
        return self[key]


def _encode_each(instructions: list[Instruction]) -> np.ndarray:
    # parsed programs share one object per distinct line (encode_all holds them all, so ids stay theirs)
    words: dict[int, tuple[Instruction, tuple[int, int, int]]] = {}
    rows = []
    for ins in instructions:
        seen = words.get(id(ins))
        if seen is None:
            seen = words[id(ins)] = (ins, encode(ins))
        rows.append(seen[1])
    return np.array(rows, dtype=np.uint64).reshape(-1, 3)


def _column(instructions: list[Instruction], name: str) -> np.ndarray:
    return np.fromiter(map(attrgetter(name), instructions), dtype=np.uint64, count=len(instructions))


def _operands(instructions: list[Instruction], addr: str, rows: str, cols: str) -> np.ndarray:
    """:func:`_operand` of each instruction's fields ``addr``, ``rows`` and ``cols``."""
    return _operand(*(_column(instructions, name) for name in (addr, rows, cols)))


def _moves(group: list[Instruction]) -> np.ndarray:
    return _operands(group, "local", "rows", "cols")


# per kind, what encode() makes of its funct, rs1 and rs2, from a list of instructions of the kind: an array
# of the list's words, or one value for all
_MVIN = np.array(MVIN_FUNCTS, dtype=np.uint64)
_COLUMNS: dict[type, tuple[Callable[[list], np.ndarray | int], ...]] = {
    Mvin: (lambda g: _MVIN[_column(g, "state").astype(np.intp)], lambda g: _column(g, "dram"), _moves),
    Mvout: (lambda g: int(Funct.MVOUT), lambda g: _column(g, "dram"), _moves),
    Preload: (lambda g: int(Funct.PRELOAD), lambda g: _operands(g, "b", "b_rows", "b_cols"),
              lambda g: _operands(g, "c", "c_rows", "c_cols")),
    **{kind: (lambda g, kind=kind: int(kind.FUNCT), lambda g: _operands(g, "a", "a_rows", "a_cols"),
              lambda g: _operands(g, "d", "d_rows", "d_cols"))
       for kind in (ComputePreloaded, ComputeAccumulated)},
}


# the kinds of two local operands (address, rows, columns each), as a loop's execute phase lays them out in rows of
# seven: the kind (an index of PAIR_KINDS: PRELOAD, FRESH a compute with fresh weights, KEPT one that keeps them),
# then the first operand's address, rows and columns and the second's
PAIR_KINDS = (Preload, ComputePreloaded, ComputeAccumulated)
PRELOAD, FRESH, KEPT = range(len(PAIR_KINDS))
_PAIR_FUNCTS = np.array([kind.FUNCT for kind in PAIR_KINDS], dtype=np.uint64)
_COUNTS, _ADDRESSES = [2, 3, 5, 6], [1, 4]   # the rows' rows and columns (16 bits) and local addresses (32 bits)


def pair_rows(shape: tuple[int, ...], preload: Sequence, compute: Sequence) -> np.ndarray:
    """Preload/compute pairs over ``shape`` (C order), a preload then its compute, a row each: ``preload`` the
    preloads' six fields, ``compute`` the computes' kind (FRESH or KEPT) and six fields, each an array that
    broadcasts over ``shape`` or one value for all."""
    rows = np.empty((*shape, 2, 7), dtype=np.int64)
    for pair, values in enumerate(((PRELOAD, *preload), compute)):
        for column, value in enumerate(values):
            rows[..., pair, column] = value
    return rows.reshape(-1, 7)


def pair_instructions(rows: np.ndarray) -> list[Instruction]:
    """The preloads and computes of ``rows`` (kind and six fields each)."""
    return [PAIR_KINDS[kind](*fields) for kind, *fields in rows.tolist()]


def encode_pairs(rows: np.ndarray, head: Sequence[Instruction] = ()) -> np.ndarray:
    """encode_all([*head, *pair_instructions(rows)]), the rows encoded from their arrays; where a field is out of
    its range, the instructions are made, and their own checks say which."""
    if rows[:, 1:].min(initial=0) < 0 or (rows[:, _COUNTS] >> 16).any() or (rows[:, _ADDRESSES] >> 32).any():
        return encode_all([*head, *pair_instructions(rows)])
    f = rows.astype(np.uint64)
    first, second = _operand(f[:, 1], f[:, 2], f[:, 3]), _operand(f[:, 4], f[:, 5], f[:, 6])
    return np.concatenate([encode_all(head), np.stack([_PAIR_FUNCTS[rows[:, 0]], first, second], axis=1)])


def decode_all(words: np.ndarray) -> list[Instruction]:
    out = []
    for index, (f, r1, r2) in enumerate(words.tolist()):
        try:
            out.append(decode(f, r1, r2))
        except ISAError as exc:
            raise ISAError(f"instruction {index}: {exc}") from None
    return out
