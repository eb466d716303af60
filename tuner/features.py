"""Features of a candidate, computed from its rendered instruction stream without simulating it.

One fixed-length float32 vector for every op and shape (see :data:`FEATURE_NAMES`):
the stream statistics (numpy over the encoded (funct, rs1, rs2) words, in named groups:
:data:`STREAM_PARTS`), the knobs of the schedule (slot per dataclass field, padded), and
the log-shape of the workload (slot per numeric op parameter, padded), and the hardware's sizes (so
that records transfer across hardware points: tk.explore). Counts go in as log2(1 + x) so that one
model serves small and large workloads.
"""
from __future__ import annotations

import math
import time
from concurrent.futures import Executor
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, NamedTuple, Sequence

import numpy as np

from isa import ACC_BIT, ACCUM_BIT, FULL_BIT, GARBAGE, ROW_MASK, HardwareConfig, Program, encode_all
from isa.loop_words import CONFIG_LD, OPERAND, Field
from isa.opcodes import MVIN_FUNCTS, ConfigKind, Funct
from simulators.stand_in import estimate
from toolkit.kinds import KINDS, knob_domains, lower
from toolkit.kinds import from_dict as op_from_dict
from toolkit.ops import Op
from toolkit.schedule import Schedule

if TYPE_CHECKING:
    from .space import Space

FEATURE_VERSION = 4   # 2: pipeline features, 20 knob slots; 3: the stand-in's cycles; 4: the hardware's sizes
OPCODES = ("config_ex", "config_ld", "config_st", "mvin", "mvin2", "mvin3", "mvout", "preload",
           "compute_preloaded", "compute_accumulated", "flush", "fence")
# The tuner's schedules never emit Gemmini's CISC loop words (only the library baseline does),
# so those functs have no slot; featurize refuses a stream that holds one.
_FUNCT_SLOT = {f: OPCODES.index(f.name.lower()) for f in Funct if f.name.lower() in OPCODES}
_CONFIG_SLOT = {k: OPCODES.index(f"config_{k.name.lower()}") for k in ConfigKind}
OP_KINDS = ("matmul", "conv2d")  # one-hot slots; any other kind sets the "other" slot
MAX_INPUTS = 3      # reload factor slots (matmul: A, B, bias; conv2d: input, weight, bias)
MAX_BANKS = 4       # sorted per-bank shares, the rest folded into the last slot
MAX_KNOBS = 20
MAX_PARAMS = 10
MAX_FLAGS = 4

KNOB_NAMES = [f"knob{i}" for i in range(MAX_KNOBS)]
SHAPE_NAMES = ([f"kind_{k}" for k in OP_KINDS] + ["kind_other"] + [f"log_param{i}" for i in range(MAX_PARAMS)]
               + [f"flag{i}" for i in range(MAX_FLAGS)] + ["log_macs", "log_input_bytes", "log_output_bytes"])
# The stand-in simulates one instruction at a time in Python (~15 us each, 4x lowering's cost), so
# it joins the features only for streams up to this length; longer ones get NOT_ESTIMATED (not nan:
# scikit-learn's binning fails on a column that is all nan) and the prior falls back to the stream's
# roofline.
STAND_IN_MAX_INSTRUCTIONS = 8192
NOT_ESTIMATED = -1.0


def _log(x: Any) -> Any:
    return np.log2(1.0 + np.asarray(x, dtype=np.float64))


def _bits(x: np.ndarray, lo: int, mask: int) -> np.ndarray:
    return ((x >> np.uint64(lo)) & np.uint64(mask)).astype(np.int64)


def _latest(values: np.ndarray, is_cfg: np.ndarray) -> np.ndarray:
    """For each instruction, ``values`` at the most recent ``is_cfg`` row (0 before any)."""
    last = np.maximum.accumulate(np.where(is_cfg, np.arange(len(is_cfg)), -1))
    return np.where(last >= 0, values[np.maximum(last, 0)], 0)


# the layouts are written once, in isa/loop_words.py
_OPERAND = {f.name: f for f in OPERAND}
_CONFIG_LD_RS1 = {f.name: f for f in CONFIG_LD if f.word == "rs1"}


def _field(x: np.ndarray, layout: Mapping[str, Field], name: str) -> np.ndarray:
    """Field ``name`` of words ``x`` under ``layout`` (operand words, or config_ld's rs1)."""
    f = layout[name]
    return _bits(x, f.lo, f.mask)


def lo32(x: np.ndarray) -> np.ndarray:
    """Operand address field."""
    return _field(x, _OPERAND, "addr")


def mid16(x: np.ndarray) -> np.ndarray:
    """Operand columns field."""
    return _field(x, _OPERAND, "cols")


def hi16(x: np.ndarray) -> np.ndarray:
    """Operand rows field."""
    return _field(x, _OPERAND, "rows")


class _Moves(NamedTuple):
    """The DMA moves of one direction, by their local (scratchpad or accumulator) operand."""
    mask: np.ndarray      # which instructions of the stream
    local: np.ndarray
    cols: np.ndarray
    rows: np.ndarray
    acc: np.ndarray       # to the accumulator
    nbytes: np.ndarray
    beats: float          # DMA beats: each row's bytes rounded up to whole beats


def _moves(stream: Stream, mask: np.ndarray, wide: np.ndarray) -> _Moves:
    """``wide``: which of the moves carry 4-byte accumulator words (else a byte an element)."""
    rs2 = stream.rs2[mask]
    local, cols, rows = lo32(rs2), mid16(rs2), hi16(rs2)
    acc = (local & ACC_BIT) != 0
    row_bytes = cols * np.where(acc & wide, 4, 1)
    beats = float((rows * -(-row_bytes // stream.hw.dma_beat_bytes)).sum())
    return _Moves(mask, local, cols, rows, acc, rows * row_bytes, beats)


class _Access(NamedTuple):
    """Scratchpad rows touched: where in the stream, which row, how many rows from it, which bank."""
    pos: np.ndarray
    rows: np.ndarray
    amount: np.ndarray
    bank: np.ndarray


class Stream:
    """A program's instruction words, decoded for the feature parts; each decoded array is computed on
    first use and shared by the parts that read it."""

    def __init__(self, prog: Program) -> None:
        self.prog, self.hw = prog, prog.hw
        w = encode_all(prog.instructions)
        self.n = len(w)
        self.funct = w[:, 0].astype(np.int64)
        self.rs1, self.rs2 = w[:, 1], w[:, 2]
        f = self.funct
        if ((f >= Funct.LOOP_WS) & (f <= Funct.LOOP_CONV_WS_CONFIG_6) & (f != Funct.MVIN3)).any():
            raise ValueError("stream_features: the stream holds CISC loop words, which the features do not model")

    @cached_property
    def config(self) -> np.ndarray:
        """The config kind (ConfigKind) of each CONFIG word, -1 elsewhere (every config word has
        config_ld's kind bits)."""
        return np.where(self.funct == Funct.CONFIG, _field(self.rs1, _CONFIG_LD_RS1, "kind"), -1)

    @cached_property
    def load_state(self) -> np.ndarray:
        """Which of the three load states (mvin, mvin2, mvin3) each instruction moves with, -1: none."""
        return np.select([self.funct == f for f in MVIN_FUNCTS], [0, 1, 2], -1)

    @cached_property
    def ld_config(self) -> tuple[np.ndarray, np.ndarray]:
        """At each mvin (0 elsewhere), the block stride and the shrink flag of its load state's latest
        config_ld."""
        rs1, state = self.rs1, self.load_state
        is_ld, ld_state = self.config == ConfigKind.LD, _field(rs1, _CONFIG_LD_RS1, "state")
        stride_of, shrink_of = _field(rs1, _CONFIG_LD_RS1, "block_stride"), _field(rs1, _CONFIG_LD_RS1, "shrink")
        stride, shrink = np.zeros(self.n, dtype=np.int64), np.zeros(self.n, dtype=np.int64)
        for s in range(3):
            moves = state == s
            if moves.any():
                stride[moves] = _latest(stride_of, is_ld & (ld_state == s))[moves]
                shrink[moves] = _latest(shrink_of, is_ld & (ld_state == s))[moves]
        return stride, shrink

    @cached_property
    def mvin(self) -> _Moves:
        """The mvins of real data (GARBAGE ones load nothing); to the accumulator they move 4-byte words
        unless their config_ld shrinks them to bytes."""
        mask = (self.load_state >= 0) & (lo32(self.rs2) != GARBAGE)
        return _moves(self, mask, self.ld_config[1][mask] == 0)

    @cached_property
    def mvout(self) -> _Moves:
        """The mvouts; full accumulator words (FULL_BIT) move 4 bytes each."""
        mask = self.funct == Funct.MVOUT
        return _moves(self, mask, (lo32(self.rs2[mask]) & FULL_BIT) != 0)

    @cached_property
    def dma_cycles(self) -> float:
        return self.mvin.beats + self.mvout.beats

    @cached_property
    def pre(self) -> np.ndarray:
        return self.funct == Funct.PRELOAD

    @cached_property
    def comp(self) -> np.ndarray:
        return (self.funct == Funct.COMPUTE_PRELOADED) | (self.funct == Funct.COMPUTE_ACCUMULATED)

    @cached_property
    def n_comp(self) -> int:
        return int(self.comp.sum())

    @cached_property
    def sp_writes(self) -> _Access:
        """The DMA's scratchpad writes, one per dim-wide block of an mvin (at the config's block stride)."""
        m = self.mvin
        nblk = np.maximum(1, -(-m.cols // self.hw.dim))
        rep = np.repeat(np.arange(len(m.local)), nblk)
        blk_off = np.arange(rep.size) - np.repeat(np.cumsum(nblk) - nblk, nblk)
        rows = (m.local & ROW_MASK)[rep] + blk_off * self.ld_config[0][m.mask][rep]
        keep = ~m.acc[rep]
        rows = rows[keep]
        return _Access(np.flatnonzero(m.mask)[rep][keep], rows, m.rows[rep][keep], rows // self.hw.sp_bank_rows)

    @cached_property
    def sp_reads(self) -> _Access:
        """The execute unit's scratchpad reads: preloads' and computes' rs1 operands."""
        src = np.concatenate([np.flatnonzero(self.pre), np.flatnonzero(self.comp)])
        addr, amount = lo32(self.rs1[src]), hi16(self.rs1[src])
        keep = (addr != GARBAGE) & ((addr & ACC_BIT) == 0)
        rows = addr[keep] & ROW_MASK
        return _Access(src[keep], rows, amount[keep], rows // self.hw.sp_bank_rows)

    @cached_property
    def bank_use(self) -> tuple[np.ndarray, np.ndarray]:
        """Rows written and rows read per scratchpad bank."""
        w, r, banks = self.sp_writes, self.sp_reads, self.hw.sp_banks
        return (np.bincount(w.bank, weights=w.amount, minlength=banks),
                np.bincount(r.bank, weights=r.amount, minlength=banks))


@dataclass(frozen=True)
class Part:
    """One group of stream features: their names, and the values a decoded stream gives them (in order)."""
    names: tuple[str, ...]
    values: Callable[[Stream], Iterable[float]]

    def __call__(self, stream: Stream) -> dict[str, float]:
        return dict(zip(self.names, self.values(stream), strict=True))


def _part(*names: str) -> Callable[[Callable[[Stream], Iterable[float]]], Part]:
    """Decorator: the function gives the values of these names."""
    return lambda values: Part(names, values)


@_part(*(f"log_n_{op}" for op in OPCODES))
def _opcode_counts(s: Stream) -> Iterable[float]:
    per_funct = np.bincount(s.funct, minlength=max(Funct) + 1)
    per_config = np.bincount(s.config[s.config >= 0], minlength=len(ConfigKind))
    counts = np.zeros(len(OPCODES))
    for f, k in _FUNCT_SLOT.items():
        counts[k] = per_funct[f]
    for kind, k in _CONFIG_SLOT.items():
        counts[k] = per_config[kind]
    return _log(counts)


@_part("log_instructions", "log_dma_bytes_in", "log_dma_bytes_out", "log_mean_mvin_bytes", "log_mean_mvout_bytes",
       "log_mean_row_bytes_in", "log_dram_requests", "log_dma_beats", "beat_efficiency")
def _dma_traffic(s: Stream) -> Iterable[float]:
    mi, mo = s.mvin, s.mvout
    bytes_in, bytes_out = float(mi.nbytes.sum()), float(mo.nbytes.sum())
    return (_log(s.n), _log(bytes_in), _log(bytes_out), _log(bytes_in / max(1, len(mi.local))),
            _log(bytes_out / max(1, len(mo.local))), _log(bytes_in / max(1, int(mi.rows.sum()))),
            _log(mi.rows.sum() + mo.rows.sum()), _log(s.dma_cycles),
            (bytes_in + bytes_out) / max(1.0, s.dma_cycles * s.hw.dma_beat_bytes))


@_part("log_weight_loads", "weight_load_ratio", "log_acc_rmw", "acc_rmw_ratio", "acc_bytes_in_share")
def _execute(s: Stream) -> Iterable[float]:
    """Weight loads (preloads of a real B) and accumulator read-modify-writes (preloads of C and mvins
    onto an accumulating address), per compute."""
    mi, b_addr, c_addr = s.mvin, lo32(s.rs1[s.pre]), lo32(s.rs2[s.pre])
    weight_loads = int((b_addr != GARBAGE).sum())
    rmw = int((((c_addr & ACC_BIT) != 0) & ((c_addr & ACCUM_BIT) != 0) & (c_addr != GARBAGE)).sum())
    rmw += int((mi.acc & ((mi.local & ACCUM_BIT) != 0)).sum())
    n_comp = max(1, s.n_comp)
    return (_log(weight_loads), weight_loads / n_comp, _log(rmw), rmw / n_comp,
            float(mi.nbytes[mi.acc].sum()) / max(1.0, float(mi.nbytes.sum())))


@_part(*(f"reload_input{i}" for i in range(MAX_INPUTS)), "store_factor")
def _reuse(s: Stream) -> Iterable[float]:
    """Bytes loaded from each input buffer over its size (how often it is re-read); stored over the outputs'."""
    buffers = s.prog.buffers.values()
    inputs = [b for b in buffers if b.role == "input"][:MAX_INPUTS]
    reload = np.zeros(MAX_INPUTS)
    if inputs and s.mvin.mask.any():
        starts = np.array([b.addr for b in inputs])
        owner = np.searchsorted(starts, s.rs1[s.mvin.mask].astype(np.int64), side="right") - 1
        for i, b in enumerate(inputs):
            reload[i] = s.mvin.nbytes[owner == i].sum() / b.nbytes
    outputs = sum(b.nbytes for b in buffers if b.role == "output")
    return (*reload, float(s.mvout.nbytes.sum()) / max(1, outputs))


def _shares(amounts: np.ndarray, banks: int) -> np.ndarray:
    """Per-bank shares of ``amounts``, largest first, the banks past MAX_BANKS folded into the last slot."""
    total = amounts.sum()
    out = np.zeros(MAX_BANKS)
    if total <= 0:
        return out
    s = np.sort(amounts / total)[::-1]
    out[:min(banks, MAX_BANKS)] = s[:MAX_BANKS]
    if banks > MAX_BANKS:
        out[-1] += s[MAX_BANKS:].sum()
    return out


@_part(*(f"sp_write_bank_share{i}" for i in range(MAX_BANKS)), *(f"sp_read_bank_share{i}" for i in range(MAX_BANKS)))
def _bank_shares(s: Stream) -> Iterable[float]:
    written, read = s.bank_use
    return (*_shares(written, s.hw.sp_banks), *_shares(read, s.hw.sp_banks))


@_part("same_bank_next_load", "same_bank_prev_load", "banks_written", "banks_read")
def _bank_conflicts(s: Stream) -> Iterable[float]:
    """Share of the scratchpad reads in the bank of the next (previous) DMA write: the two contend."""
    w, r = s.sp_writes, s.sp_reads
    same_next = same_prev = 0.0
    if len(w.pos) and len(r.pos):   # w.pos is in stream order, as searchsorted needs
        nxt = np.searchsorted(w.pos, r.pos, side="right")
        same_next = float(np.mean(np.where(nxt < len(w.pos), w.bank[np.minimum(nxt, len(w.pos) - 1)] == r.bank,
                                           False)))
        prv = nxt - 1
        same_prev = float(np.mean(np.where(prv >= 0, w.bank[np.maximum(prv, 0)] == r.bank, False)))
    written, read = s.bank_use
    return same_next, same_prev, float((written > 0).sum()), float((read > 0).sum())


@_part("log_first_use_mean", "log_first_use_min", "log_first_use_median", "first_use_near_share",
       "unused_load_share")
def _first_use(s: Stream) -> Iterable[float]:
    """Distance from each load (dim-row block) to its first use; a later load of the block ends the wait."""
    w, r, d = s.sp_writes, s.sp_reads, s.hw.dim
    out = np.zeros(5)
    if not len(w.pos):
        return out
    blk, pos = np.concatenate([w.rows // d, r.rows // d]), np.concatenate([w.pos, r.pos])
    kind = np.concatenate([np.zeros(len(w.pos), int), np.ones(len(r.pos), int)])
    order = np.lexsort((kind, pos, blk))
    blk, pos, kind = blk[order], pos[order], kind[order]
    is_w = np.flatnonzero(kind[:-1] == 0)
    used = (kind[is_w + 1] == 1) & (blk[is_w + 1] == blk[is_w])
    dist = (pos[is_w + 1] - pos[is_w])[used]
    if dist.size:
        ld = _log(dist)
        out[:4] = [ld.mean(), ld.min(), np.median(ld), np.mean(dist < 2 * 8)]
    out[4] = 1.0 - dist.size / len(w.pos)
    return out


@_part("log_mean_dma_run", "log_max_dma_run", "dma_after_last_compute_share")
def _dma_runs(s: Stream) -> Iterable[float]:
    """Runs of DMA instructions between computes, and the share of DMA instructions after the last compute:
    long runs (flat load-compute-store order) leave the array idle while the DMA works; short ones (a
    software pipeline) overlap the two."""
    kinds = np.where(s.mvin.mask | s.mvout.mask, 1, np.where(s.comp, 2, 0))
    kinds = kinds[kinds > 0]
    if not (kinds == 1).any():
        return 0.0, 0.0, 0.0
    change = np.flatnonzero(np.diff(np.r_[0, kinds, 0]) != 0)
    starts, ends = change[:-1], change[1:]
    runs = (ends - starts)[kinds[starts] == 1]
    tail = 0
    if (kinds == 2).any():
        tail = int((kinds[np.flatnonzero(kinds == 2)[-1]:] == 1).sum())
    return float(_log(runs.mean())), float(_log(runs.max())), tail / float((kinds == 1).sum())


@_part("log_ideal_cycles", "row_fill", "log_dma_cycles", "log_roofline_cycles", "dma_over_compute",
       "log_compute_ops_per_mvin")
def _bounds(s: Stream) -> Iterable[float]:
    """The array's cycles if always fed (dim a compute), the share of its rows the computes fill, and the
    DMA's cycles (a beat each)."""
    ideal, dma = s.n_comp * s.hw.dim, s.dma_cycles
    return (_log(ideal), float(hi16(s.rs1[s.comp]).sum()) / max(1, ideal), _log(dma), _log(max(ideal, dma)),
            dma / max(1, ideal), _log(s.n_comp / max(1, len(s.mvin.local))))


@_part("log_stand_in_cycles")
def _stand_in(s: Stream) -> Iterable[float]:
    """The stand-in simulator's cycles, where the stream is short enough to simulate cheaply."""
    return (_log(estimate(s.prog)[0]) if s.n <= STAND_IN_MAX_INSTRUCTIONS else NOT_ESTIMATED,)


# The vector's stream slots: these parts' names, in this order (saved models depend on it).
STREAM_PARTS: tuple[Part, ...] = (_opcode_counts, _dma_traffic, _execute, _reuse, _bank_shares, _bank_conflicts,
                                  _first_use, _dma_runs, _bounds, _stand_in)
STREAM_NAMES = [name for part in STREAM_PARTS for name in part.names]
# the hardware fields that shape a schedule's cost (queue depths and DMA slots are left to the stream)
HW_FIELDS = ("dim", "sp_kib", "sp_banks", "acc_kib", "acc_banks", "dma_beat_bytes", "max_block_len", "dram_latency")
HW_NAMES = [f"log_hw_{f}" for f in HW_FIELDS]
FEATURE_NAMES: tuple[str, ...] = tuple(STREAM_NAMES + KNOB_NAMES + SHAPE_NAMES + HW_NAMES)
N_FEATURES = len(FEATURE_NAMES)
IDEAL = FEATURE_NAMES.index("log_ideal_cycles")
DMA_CYCLES = FEATURE_NAMES.index("log_dma_cycles")
MACS = FEATURE_NAMES.index("log_macs")  # a workload constant: the cost model's normalizer
STAND_IN = FEATURE_NAMES.index("log_stand_in_cycles")


def stream_features(prog: Program) -> np.ndarray:
    """The instruction-stream part of the vector (``len(STREAM_NAMES)`` values)."""
    stream = Stream(prog)
    return np.asarray([v for part in STREAM_PARTS for v in part(stream).values()], dtype=np.float64)


def knob_features(schedule: Schedule | dict[str, Any], domains: dict[str, list]) -> np.ndarray:
    """One slot per knob in field order: log2 of ints, 0/1 of bools, the domain index of strings."""
    knobs = schedule.to_dict() if isinstance(schedule, Schedule) else schedule
    out = np.zeros(MAX_KNOBS)
    for i, (name, v) in enumerate(list(knobs.items())[:MAX_KNOBS]):
        if isinstance(v, bool):
            out[i] = float(v)
        elif isinstance(v, (int, float)):
            out[i] = math.log2(1 + v)
        else:
            dom = domains.get(name, [])
            out[i] = float(dom.index(v)) if v in dom else 0.0
    return out


def shape_features(op: Op) -> np.ndarray:
    """Op kind, log of its numeric parameters, and whether each epilogue option is set."""
    kind = np.zeros(len(OP_KINDS) + 1)
    kind[OP_KINDS.index(op.KIND) if op.KIND in OP_KINDS else -1] = 1.0
    numbers: list[float] = []
    flags: list[float] = []
    for value in op.params().values():
        if isinstance(value, bool):
            flags.append(float(value))
        elif isinstance(value, (int, float)):
            numbers.append(float(value))
        elif isinstance(value, (tuple, list)):
            numbers += [float(v) for v in value]
        else:
            flags.append(0.0 if value in (None, "none", "int8") else 1.0)
    params = np.zeros(MAX_PARAMS)
    vals = _log(np.abs(numbers[:MAX_PARAMS])) if numbers else []
    params[:len(vals)] = vals
    fl = np.zeros(MAX_FLAGS)
    fl[:min(len(flags), MAX_FLAGS)] = flags[:MAX_FLAGS]
    in_bytes = sum(math.prod(s) * (1 if t == "int8" else 4) for s, t in op.input_specs().values())
    out_bytes = sum(math.prod(s) * (1 if t == "int8" else 4) for s, t in op.output_specs().values())
    return np.concatenate([kind, params, fl, _log([op.macs, in_bytes, out_bytes])])


def hardware_features(hw: HardwareConfig) -> np.ndarray:
    """log2(1 + x) of each of :data:`HW_FIELDS`: which hardware point a record was measured on."""
    return _log([getattr(hw, f) for f in HW_FIELDS])


def features(prog: Program, op: Op, schedule: Schedule, domains: dict[str, list] | None = None) -> np.ndarray:
    """The full vector of one candidate: stream + knobs + shape + hardware, length :data:`N_FEATURES`.

    ``domains`` (knob -> values) encodes string knobs; by default the op kind's registered domains.
    """
    if domains is None:
        domains = knob_domains(op, prog.hw)
    return np.concatenate([stream_features(prog), knob_features(schedule, domains),
                           shape_features(op), hardware_features(prog.hw)]).astype(np.float32)


def featurize(op: Op, hw: HardwareConfig, schedules: Sequence[Schedule],
              domains: dict[str, list] | None = None) -> np.ndarray:
    """Lower each schedule and return its feature rows, shape (len(schedules), N_FEATURES)."""
    domains = domains if domains is not None else knob_domains(op, hw)
    rows = [features(lower(op, s, hw), op, s, domains) for s in schedules]
    return np.stack(rows) if rows else np.zeros((0, N_FEATURES), dtype=np.float32)


def _featurize_knobs(op: dict[str, Any], hw: dict[str, Any], knobs: list[dict[str, Any]],
                     domains: dict[str, list]) -> np.ndarray:
    """Worker side of :class:`FeatureCache`: plain dicts in, so any executor can run it."""
    the_op = op_from_dict(op)
    cls = KINDS[the_op.KIND].schedule
    return featurize(the_op, HardwareConfig.from_dict(hw), [cls.from_dict(k) for k in knobs], domains)


class FeatureCache:
    """Feature rows of a space's points, computed once each (lowering dominates the cost).

    With an executor, a large request is split across its workers.
    """

    def __init__(self, space: "Space", executor: Executor | None = None, workers: int = 1) -> None:
        self.space, self.executor, self.workers = space, executor, max(1, workers)
        self.rows: dict[int, np.ndarray] = {}
        self.seconds = 0.0  # time spent computing features, for candidates-per-minute reports

    def __call__(self, points: Sequence[int]) -> np.ndarray:
        missing = list(dict.fromkeys(int(p) for p in points if int(p) not in self.rows))
        if missing:
            start = time.perf_counter()
            knobs = [self.space.knobs(p) for p in missing]
            sp = self.space
            if self.executor is not None and len(missing) >= 2 * self.workers:
                size = -(-len(missing) // self.workers)
                futs = [self.executor.submit(_featurize_knobs, sp.op.to_dict(), sp.hw.as_dict(),
                                             knobs[i:i + size], sp.domains) for i in range(0, len(missing), size)]
                X = np.vstack([f.result() for f in futs])
            else:
                X = featurize(sp.op, sp.hw, [sp.cls(**k) for k in knobs], sp.domains)
            self.rows.update(zip(missing, X))
            self.seconds += time.perf_counter() - start
        if not len(points):
            return np.zeros((0, N_FEATURES), dtype=np.float32)
        return np.stack([self.rows[int(p)] for p in points])
