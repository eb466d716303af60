"""The integer sums a census's words give the tuner's stream features (tuner/features.py).

Every stream feature is a float formula over sums of integers over the words, each word weighed by its
count: instructions per opcode, bytes, rows and DMA beats of the moves, rows each scratchpad bank gives
or takes. Sums of integers do not depend on their order, so a census built class by class (its
classes' sums, times their counts: toolkit/conv/census.py) gives bit-identical features to the rendered
stream's, without joining the classes' words.
"""
from __future__ import annotations

from typing import Any, Mapping, NamedTuple

import numpy as np

from isa import ACC_BIT, ACCUM_BIT, FULL_BIT, GARBAGE, ROW_MASK, HardwareConfig
from isa.loop_words import CONFIG_LD, OPERAND, Field
from isa.opcodes import MVIN_FUNCTS, ConfigKind, Funct

from .census import Census

OPCODES = ("config_ex", "config_ld", "config_st", "mvin", "mvin2", "mvin3", "mvout", "preload",
           "compute_preloaded", "compute_accumulated", "flush", "fence")
MAX_INPUTS = 3      # bytes loaded from each of the first input buffers (matmul: A, B, bias; conv: input, weight, bias)
# the sums, one column each: per opcode slot, then these (a move's bytes count 4 per accumulator word it
# moves, its beats round each row up to whole DMA beats)
SUMS = (*OPCODES, "words", "mvin", "mvin_bytes", "mvin_rows", "mvin_beats", "mvin_acc_bytes", "mvin_rmw",
        *(f"mvin_bytes_input{i}" for i in range(MAX_INPUTS)), "mvout", "mvout_bytes", "mvout_rows", "mvout_beats",
        "computes", "weight_loads", "preload_rmw", "compute_rows")
COL = {name: i for i, name in enumerate(SUMS)}
_CHUNK = 1 << 16   # words decoded at once (a rendered stream can hold millions)

# The tuner's schedules never emit Gemmini's CISC loop words, so those functs have no slot; config_norm
# configures the store unit's normalization path, so it counts with config_st
_FUNCT_SLOT = {f: OPCODES.index(f.name.lower()) for f in Funct if f.name.lower() in OPCODES}
_CONFIG_SLOT = {k: OPCODES.index("config_st" if k == ConfigKind.NORM else f"config_{k.name.lower()}")
                for k in ConfigKind}
_OPERAND = {f.name: f for f in OPERAND}
CONFIG_LD_RS1 = {f.name: f for f in CONFIG_LD if f.word == "rs1"}


def field(x: np.ndarray, layout: Mapping[str, Field], name: str) -> np.ndarray:
    """Field ``name`` of words ``x`` under ``layout`` (operand words, or config_ld's rs1)."""
    f = layout[name]
    return ((x >> np.uint64(f.lo)) & np.uint64(f.mask)).astype(np.int64)


def lo32(x: np.ndarray) -> np.ndarray:
    """Operand address field."""
    return field(x, _OPERAND, "addr")


def mid16(x: np.ndarray) -> np.ndarray:
    """Operand columns field."""
    return field(x, _OPERAND, "cols")


def hi16(x: np.ndarray) -> np.ndarray:
    """Operand rows field."""
    return field(x, _OPERAND, "rows")


class Accesses(NamedTuple):
    """Scratchpad rows that words touch: which word, its local address (before the row mask), rows past it
    (a later block of a strided mvin) and rows touched per occurrence."""
    word: np.ndarray
    addr: np.ndarray
    off: np.ndarray
    amount: np.ndarray

    def rows(self, shift: np.ndarray | int = 0) -> np.ndarray:
        """The rows touched, each address moved by ``shift`` first (a class's buffer base)."""
        return ((self.addr + shift) & ROW_MASK) + self.off


class WordSums(NamedTuple):
    """Each word's sums (one occurrence), and the scratchpad rows its DMA writes and its execute reads."""
    sums: np.ndarray      # (words, len(SUMS)) int64
    writes: Accesses
    reads: Accesses


class Tally(NamedTuple):
    """A census's sums (:data:`SUMS`) and the rows written and read per scratchpad bank."""
    sums: np.ndarray      # (len(SUMS),) int64
    written: np.ndarray   # float64, whole numbers
    read: np.ndarray

    def sum(self, name: str) -> int:
        return int(self.sums[COL[name]])


def _slots(funct: np.ndarray, rs1: np.ndarray) -> np.ndarray:
    """Each word's opcode slot (a config word's by its kind), -1 for none."""
    table = np.full(max(Funct) + 1, -1, dtype=np.int64)
    for f, k in _FUNCT_SLOT.items():
        table[f] = k
    slot = table[funct]
    config = funct == Funct.CONFIG
    kinds = np.full(len(ConfigKind), -1, dtype=np.int64)
    for k, s in _CONFIG_SLOT.items():
        kinds[k] = s
    slot[config] = kinds[field(rs1[config], CONFIG_LD_RS1, "kind")]
    return slot


def _moves(out: np.ndarray, name: str, rs2: np.ndarray, mask: np.ndarray, wide: np.ndarray, beat: int
           ) -> tuple[np.ndarray, ...]:
    """Fill the ``name`` move sums (rows of ``out``) of the moves ``mask`` (``wide``: those that move 4-byte
    accumulator words); their local addresses, rows and bytes."""
    local, cols, rows = lo32(rs2[mask]), mid16(rs2[mask]), hi16(rs2[mask])
    acc = (local & ACC_BIT) != 0
    row_bytes = cols * np.where(acc & wide, 4, 1)
    nbytes = rows * row_bytes
    at = np.flatnonzero(mask)
    out[COL[name], at] = 1
    out[COL[f"{name}_bytes"], at] = nbytes
    out[COL[f"{name}_rows"], at] = rows
    out[COL[f"{name}_beats"], at] = rows * -(-row_bytes // beat)
    return local, cols, rows, nbytes, acc


def word_sums(c: Census, hw: HardwareConfig, buffers: Mapping[str, Any]) -> WordSums:
    """The sums of each of the census's words (one occurrence) and the scratchpad rows it touches."""
    w = c.words
    funct, rs1, rs2 = w[:, 0].astype(np.int64), w[:, 1], w[:, 2]
    out = np.zeros((len(SUMS), len(w)), dtype=np.int64)   # a row per sum: each filled along one row
    slot = _slots(funct, rs1)
    has = np.flatnonzero(slot >= 0)
    out[slot[has], has] = 1
    out[COL["words"]] = 1
    is_mvin = np.isin(funct, [int(f) for f in MVIN_FUNCTS]) & (lo32(rs2) != GARBAGE)
    local, cols, rows, nbytes, acc = _moves(out, "mvin", rs2, is_mvin, c.shrink[is_mvin] == 0, hw.dma_beat_bytes)
    at = np.flatnonzero(is_mvin)
    out[COL["mvin_acc_bytes"], at] = nbytes * acc
    out[COL["mvin_rmw"], at] = acc & ((local & ACCUM_BIT) != 0)
    inputs = [b for b in buffers.values() if b.role == "input"][:MAX_INPUTS]
    if inputs:
        owner = np.searchsorted(np.array([b.addr for b in inputs]), rs1[at].astype(np.int64), side="right") - 1
        for i in range(len(inputs)):
            out[COL[f"mvin_bytes_input{i}"], at] = nbytes * (owner == i)
    writes = _writes(at, local, cols, rows, acc, c.stride[at], hw.dim)
    is_out = funct == Funct.MVOUT
    _moves(out, "mvout", rs2, is_out, (lo32(rs2[is_out]) & FULL_BIT) != 0, hw.dma_beat_bytes)
    pre, comp = funct == Funct.PRELOAD, (funct == Funct.COMPUTE_PRELOADED) | (funct == Funct.COMPUTE_ACCUMULATED)
    b_addr, c_addr = lo32(rs1[pre]), lo32(rs2[pre])
    out[COL["weight_loads"], pre] = b_addr != GARBAGE
    out[COL["preload_rmw"], pre] = ((c_addr & ACC_BIT) != 0) & ((c_addr & ACCUM_BIT) != 0) & (c_addr != GARBAGE)
    out[COL["computes"], comp] = 1
    out[COL["compute_rows"], comp] = hi16(rs1[comp])
    src = np.flatnonzero(pre | comp)
    addr = lo32(rs1[src])
    keep = (addr != GARBAGE) & ((addr & ACC_BIT) == 0)
    reads = Accesses(src[keep], addr[keep], np.zeros(int(keep.sum()), np.int64), hi16(rs1[src[keep]]))
    return WordSums(out.T, writes, reads)


def _writes(at: np.ndarray, local: np.ndarray, cols: np.ndarray, rows: np.ndarray, acc: np.ndarray,
            stride: np.ndarray, dim: int) -> Accesses:
    """The DMA's scratchpad writes of mvins ``at``: one per dim-wide block (at the config's block stride)."""
    nblk = np.maximum(1, -(-cols // dim))
    rep = np.repeat(np.arange(len(at)), nblk)
    blk = np.arange(rep.size) - np.repeat(np.cumsum(nblk) - nblk, nblk)
    keep = ~acc[rep]
    rep, blk = rep[keep], blk[keep]
    return Accesses(at[rep], local[rep], blk * stride[rep], rows[rep])


def banks(a: Accesses, shift: np.ndarray | int, bank_rows: int, nbanks: int) -> np.ndarray:
    """Rows touched per scratchpad bank (float64, whole numbers), each address moved by ``shift`` first."""
    return np.bincount(a.rows(shift) // bank_rows, weights=a.amount, minlength=nbanks)


def tally(c: Census, hw: HardwareConfig, buffers: Mapping[str, Any]) -> Tally:
    """The census's sums, each word weighed by its count."""
    sums = np.zeros(len(SUMS), dtype=np.int64)
    written, read = [], []
    for lo in range(0, max(1, len(c.count)), _CHUNK):
        part = Census(*(x[lo:lo + _CHUNK] for x in c))
        ws = word_sums(part, hw, buffers)
        sums += part.count @ ws.sums
        written.append(ws.writes._replace(amount=ws.writes.amount * part.count[ws.writes.word]))
        read.append(ws.reads._replace(amount=ws.reads.amount * part.count[ws.reads.word]))
    one = [Accesses(*(np.concatenate(x) for x in zip(*a))) for a in (written, read)]
    return Tally(sums, *(banks(a, 0, hw.sp_bank_rows, hw.sp_banks) for a in one))
