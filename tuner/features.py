"""Features of a candidate, computed from its instruction stream without simulating it.

One fixed-length float32 vector for every op and shape (see :data:`FEATURE_NAMES`):
the stream statistics (numpy over the encoded (funct, rs1, rs2) words, in named groups:
:data:`STREAM_PARTS`), the analytical prior's cycles, the knobs of the schedule (slot per dataclass
field, padded), and the log-shape of the workload (slot per numeric op parameter, padded), and the hardware's sizes (so that
records transfer across hardware points: tk.explore). Counts go in as log2(1 + x) so that one model
serves small and large workloads.

Every stream statistic is a sum over the stream's words, blind to their order, so it is computed over a
:class:`~toolkit.census.Census` (each distinct word with its count). A rendered program gives one
(:func:`program_census`); the kinds with a census (``toolkit.kinds.census``: matmul and conv2d, in
either dataflow) give the same one from their tile walk without rendering, which is how
:func:`candidate_features` featurizes the tuner's candidates; the rest are rendered.
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
from toolkit.census import Census
from isa.loop_unroll import issued_words
from toolkit.family import loop_cycles
from toolkit.kinds import KINDS, census, estimate_cycles, family_class, knob_domains, lower
from toolkit.library import LibrarySchedule
from toolkit.kinds import from_dict as op_from_dict
from toolkit.ops import Op
from toolkit.schedule import Schedule

if TYPE_CHECKING:
    from .space import Space

FEATURE_VERSION = 7   # 2: pipeline features, 20 knob slots; 3: the stand-in's cycles; 4: order-free, closed-form
# prior; 5: the hardware's sizes; 6: a closed-form prior for output-stationary schedules; 7: the stand-in
# times output-stationary computes (the prior of depthwise ones)
OPCODES = ("config_ex", "config_ld", "config_st", "mvin", "mvin2", "mvin3", "mvout", "preload",
           "compute_preloaded", "compute_accumulated", "flush", "fence")
# The tuner's schedules never emit Gemmini's CISC loop words (only the library baseline does),
# so those functs have no slot; featurize refuses a stream that holds one.
_FUNCT_SLOT = {f: OPCODES.index(f.name.lower()) for f in Funct if f.name.lower() in OPCODES}
# config_norm configures the store unit's normalization path: it counts with config_st, the store's config
_CONFIG_SLOT = {k: OPCODES.index("config_st" if k == ConfigKind.NORM else f"config_{k.name.lower()}")
                for k in ConfigKind}
OP_KINDS = ("matmul", "conv2d")  # one-hot slots; any other kind sets the "other" slot
MAX_INPUTS = 3      # reload factor slots (matmul: A, B, bias; conv2d: input, weight, bias)
MAX_BANKS = 4       # sorted per-bank shares, the rest folded into the last slot
MAX_KNOBS = 20
MAX_PARAMS = 10
MAX_FLAGS = 4

KNOB_NAMES = [f"knob{i}" for i in range(MAX_KNOBS)]
SHAPE_NAMES = ([f"kind_{k}" for k in OP_KINDS] + ["kind_other"] + [f"log_param{i}" for i in range(MAX_PARAMS)]
               + [f"flag{i}" for i in range(MAX_FLAGS)] + ["log_macs", "log_input_bytes", "log_output_bytes"])
# The prior is the kind's closed-form estimate where it has one. Elsewhere it is the stand-in, which
# simulates one instruction at a time in Python (~15 us each, 4x lowering's cost), so only for streams
# up to this length; longer ones get NOT_ESTIMATED (not nan: scikit-learn's binning fails on a column
# that is all nan) and the cost model's prior falls back to the stream's roofline.
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


def ld_configs(funct: np.ndarray, rs1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """At each mvin of a stream in program order (0 elsewhere), the block stride and the shrink flag of
    its load state's latest config_ld."""
    state = np.select([funct == f for f in MVIN_FUNCTS], [0, 1, 2], -1)
    is_ld = (funct == Funct.CONFIG) & (_field(rs1, _CONFIG_LD_RS1, "kind") == ConfigKind.LD)
    ld_state = _field(rs1, _CONFIG_LD_RS1, "state")
    stride_of, shrink_of = _field(rs1, _CONFIG_LD_RS1, "block_stride"), _field(rs1, _CONFIG_LD_RS1, "shrink")
    stride, shrink = np.zeros(len(funct), dtype=np.int64), np.zeros(len(funct), dtype=np.int64)
    for s in range(3):
        moves = state == s
        if moves.any():
            stride[moves] = _latest(stride_of, is_ld & (ld_state == s))[moves]
            shrink[moves] = _latest(shrink_of, is_ld & (ld_state == s))[moves]
    return stride, shrink


def program_census(prog: Program) -> Census:
    """The census of a rendered program: each instruction once, in order."""
    return instruction_census(prog.instructions)


def instruction_census(instructions: Iterable[Any]) -> Census:
    """The census of a stream of primitives (no CISC loop words: unroll them first)."""
    return words_census(encode_all(instructions))


def words_census(w: np.ndarray) -> Census:
    """The census of a stream of encoded primitives (isa.encoding.encode_all's words)."""
    f = w[:, 0].astype(np.int64)
    if ((f >= Funct.LOOP_WS) & (f <= Funct.LOOP_CONV_WS_CONFIG_6) & (f != Funct.MVIN3)).any():
        raise ValueError("stream_features: the stream holds CISC loop words, which the features do not model")
    return Census(w, np.ones(len(w), dtype=np.int64), *ld_configs(f, w[:, 1]))


class _Moves(NamedTuple):
    """The DMA moves of one direction, by their local (scratchpad or accumulator) operand."""
    mask: np.ndarray      # which words of the census
    count: np.ndarray     # how many times each occurs
    local: np.ndarray
    cols: np.ndarray
    rows: np.ndarray
    acc: np.ndarray       # to the accumulator
    nbytes: np.ndarray    # of one occurrence
    beats: float          # DMA beats of all occurrences: each row's bytes rounded up to whole beats

    @property
    def n(self) -> int:
        return int(self.count.sum())

    def total(self, values: np.ndarray) -> float:
        return float((values * self.count).sum())


def _moves(stream: Stream, mask: np.ndarray, wide: np.ndarray) -> _Moves:
    """``wide``: which of the moves carry 4-byte accumulator words (else a byte an element)."""
    rs2, count = stream.rs2[mask], stream.count[mask]
    local, cols, rows = lo32(rs2), mid16(rs2), hi16(rs2)
    acc = (local & ACC_BIT) != 0
    row_bytes = cols * np.where(acc & wide, 4, 1)
    beats = float((count * rows * -(-row_bytes // stream.hw.dma_beat_bytes)).sum())
    return _Moves(mask, count, local, cols, rows, acc, rows * row_bytes, beats)


class _Access(NamedTuple):
    """Scratchpad rows touched: which row, how many rows from it (all occurrences), which bank."""
    rows: np.ndarray
    amount: np.ndarray
    bank: np.ndarray


class Stream:
    """A census's words, decoded for the feature parts; each decoded array is computed on first use and
    shared by the parts that read it. Every sum weighs a word by its count."""

    def __init__(self, census: Census, hw: HardwareConfig, buffers: Mapping[str, Any]) -> None:
        self.hw, self.buffers = hw, buffers
        w = census.words
        self.count = census.count
        self.n = int(census.count.sum())
        self.funct = w[:, 0].astype(np.int64)
        self.rs1, self.rs2 = w[:, 1], w[:, 2]
        self.stride, self.shrink = census.stride, census.shrink

    def total(self, mask: np.ndarray) -> int:
        return int(self.count[mask].sum())

    @cached_property
    def config(self) -> np.ndarray:
        """The config kind (ConfigKind) of each CONFIG word, -1 elsewhere (every config word has
        config_ld's kind bits)."""
        return np.where(self.funct == Funct.CONFIG, _field(self.rs1, _CONFIG_LD_RS1, "kind"), -1)

    @cached_property
    def mvin(self) -> _Moves:
        """The mvins of real data (GARBAGE ones load nothing); to the accumulator they move 4-byte words
        unless their config_ld shrinks them to bytes."""
        is_mvin = np.isin(self.funct, [int(f) for f in MVIN_FUNCTS])
        mask = is_mvin & (lo32(self.rs2) != GARBAGE)
        return _moves(self, mask, self.shrink[mask] == 0)

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
        return self.total(self.comp)

    @cached_property
    def sp_writes(self) -> _Access:
        """The DMA's scratchpad writes, one per dim-wide block of an mvin (at the config's block stride)."""
        m = self.mvin
        nblk = np.maximum(1, -(-m.cols // self.hw.dim))
        rep = np.repeat(np.arange(len(m.local)), nblk)
        blk_off = np.arange(rep.size) - np.repeat(np.cumsum(nblk) - nblk, nblk)
        rows = (m.local & ROW_MASK)[rep] + blk_off * self.stride[m.mask][rep]
        keep = ~m.acc[rep]
        rows = rows[keep]
        return _Access(rows, (m.rows * m.count)[rep][keep], rows // self.hw.sp_bank_rows)

    @cached_property
    def sp_reads(self) -> _Access:
        """The execute unit's scratchpad reads: preloads' and computes' rs1 operands."""
        src = self.pre | self.comp
        addr, amount = lo32(self.rs1[src]), hi16(self.rs1[src]) * self.count[src]
        keep = (addr != GARBAGE) & ((addr & ACC_BIT) == 0)
        rows = addr[keep] & ROW_MASK
        return _Access(rows, amount[keep], rows // self.hw.sp_bank_rows)

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
    per_funct = np.bincount(s.funct, weights=s.count, minlength=max(Funct) + 1)
    configs = s.config >= 0
    per_config = np.bincount(s.config[configs], weights=s.count[configs], minlength=len(ConfigKind))
    counts = np.zeros(len(OPCODES))
    for f, k in _FUNCT_SLOT.items():
        counts[k] = per_funct[f]
    for kind, k in _CONFIG_SLOT.items():
        counts[k] += per_config[kind]   # config_norm adds to config_st's slot
    return _log(counts)


@_part("log_instructions", "log_dma_bytes_in", "log_dma_bytes_out", "log_mean_mvin_bytes", "log_mean_mvout_bytes",
       "log_mean_row_bytes_in", "log_dram_requests", "log_dma_beats", "beat_efficiency")
def _dma_traffic(s: Stream) -> Iterable[float]:
    mi, mo = s.mvin, s.mvout
    bytes_in, bytes_out = mi.total(mi.nbytes), mo.total(mo.nbytes)
    return (_log(s.n), _log(bytes_in), _log(bytes_out), _log(bytes_in / max(1, mi.n)),
            _log(bytes_out / max(1, mo.n)), _log(bytes_in / max(1.0, mi.total(mi.rows))),
            _log(mi.total(mi.rows) + mo.total(mo.rows)), _log(s.dma_cycles),
            (bytes_in + bytes_out) / max(1.0, s.dma_cycles * s.hw.dma_beat_bytes))


@_part("log_weight_loads", "weight_load_ratio", "log_acc_rmw", "acc_rmw_ratio", "acc_bytes_in_share")
def _execute(s: Stream) -> Iterable[float]:
    """Weight loads (preloads of a real B) and accumulator read-modify-writes (preloads of C and mvins
    onto an accumulating address), per compute."""
    mi, b_addr, c_addr, n_pre = s.mvin, lo32(s.rs1[s.pre]), lo32(s.rs2[s.pre]), s.count[s.pre]
    weight_loads = int(n_pre[b_addr != GARBAGE].sum())
    rmw = int(n_pre[((c_addr & ACC_BIT) != 0) & ((c_addr & ACCUM_BIT) != 0) & (c_addr != GARBAGE)].sum())
    rmw += int(mi.count[mi.acc & ((mi.local & ACCUM_BIT) != 0)].sum())
    n_comp = max(1, s.n_comp)
    return (_log(weight_loads), weight_loads / n_comp, _log(rmw), rmw / n_comp,
            mi.total(mi.nbytes * mi.acc) / max(1.0, mi.total(mi.nbytes)))


@_part(*(f"reload_input{i}" for i in range(MAX_INPUTS)), "store_factor")
def _reuse(s: Stream) -> Iterable[float]:
    """Bytes loaded from each input buffer over its size (how often it is re-read); stored over the outputs'."""
    buffers = s.buffers.values()
    inputs = [b for b in buffers if b.role == "input"][:MAX_INPUTS]
    reload = np.zeros(MAX_INPUTS)
    mi = s.mvin
    if inputs and mi.mask.any():
        starts = np.array([b.addr for b in inputs])
        owner = np.searchsorted(starts, s.rs1[mi.mask].astype(np.int64), side="right") - 1
        for i, b in enumerate(inputs):
            reload[i] = mi.total(mi.nbytes * (owner == i)) / b.nbytes
    outputs = sum(b.nbytes for b in buffers if b.role == "output")
    return (*reload, s.mvout.total(s.mvout.nbytes) / max(1, outputs))


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


@_part(*(f"sp_write_bank_share{i}" for i in range(MAX_BANKS)), *(f"sp_read_bank_share{i}" for i in range(MAX_BANKS)),
       "banks_written", "banks_read")
def _banks(s: Stream) -> Iterable[float]:
    written, read = s.bank_use
    return (*_shares(written, s.hw.sp_banks), *_shares(read, s.hw.sp_banks),
            float((written > 0).sum()), float((read > 0).sum()))


@_part("log_ideal_cycles", "row_fill", "log_dma_cycles", "log_roofline_cycles", "dma_over_compute",
       "log_compute_ops_per_mvin")
def _bounds(s: Stream) -> Iterable[float]:
    """The array's cycles if always fed (dim a compute), the share of its rows the computes fill, and the
    DMA's cycles (a beat each)."""
    ideal, dma = s.n_comp * s.hw.dim, s.dma_cycles
    a_rows = float((hi16(s.rs1[s.comp]) * s.count[s.comp]).sum())
    return (_log(ideal), a_rows / max(1, ideal), _log(dma), _log(max(ideal, dma)),
            dma / max(1, ideal), _log(s.n_comp / max(1, s.mvin.n)))


# The vector's stream slots: these parts' names, in this order (saved models depend on it). Every part
# is a sum over the stream's words, so order-free: a census gives it exactly (version 4 dropped the
# parts that read the order: bank of the next / previous load, load-to-first-use distances, DMA runs).
STREAM_PARTS: tuple[Part, ...] = (_opcode_counts, _dma_traffic, _execute, _reuse, _banks, _bounds)
STREAM_NAMES = [name for part in STREAM_PARTS for name in part.names]
# the hardware fields that shape a schedule's cost (queue depths and DMA slots are left to the stream)
HW_FIELDS = ("dim", "sp_kib", "sp_banks", "acc_kib", "acc_banks", "dma_beat_bytes", "max_block_len", "dram_latency")
HW_NAMES = [f"log_hw_{f}" for f in HW_FIELDS]
PRIOR_NAMES = ["log_prior_cycles"]
FEATURE_NAMES: tuple[str, ...] = tuple(STREAM_NAMES + PRIOR_NAMES + KNOB_NAMES + SHAPE_NAMES + HW_NAMES)
N_FEATURES = len(FEATURE_NAMES)
IDEAL = FEATURE_NAMES.index("log_ideal_cycles")
DMA_CYCLES = FEATURE_NAMES.index("log_dma_cycles")
MACS = FEATURE_NAMES.index("log_macs")  # a workload constant: the cost model's normalizer
PRIOR = FEATURE_NAMES.index("log_prior_cycles")


def census_features(census: Census, hw: HardwareConfig, buffers: Mapping[str, Any]) -> np.ndarray:
    """The instruction-stream part of the vector (``len(STREAM_NAMES)`` values) of a census."""
    stream = Stream(census, hw, buffers)
    return np.asarray([v for part in STREAM_PARTS for v in part(stream).values()], dtype=np.float64)


def stream_features(prog: Program) -> np.ndarray:
    """The instruction-stream part of the vector of a rendered program."""
    return census_features(program_census(prog), prog.hw, prog.buffers)


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
    return np.concatenate([kind, params, fl, _log([op.macs, op.input_bytes, op.output_bytes])])


def hardware_features(hw: HardwareConfig) -> np.ndarray:
    """log2(1 + x) of each of :data:`HW_FIELDS`: which hardware point a record was measured on."""
    return _log([getattr(hw, f) for f in HW_FIELDS])


def prior_feature(op: Op, schedule: Schedule, hw: HardwareConfig, prog: Program | None = None,
                  counted: Census | None = None) -> float:
    """log2(1 + cycles) of the analytical prior: the kind's closed-form estimate where it has one
    (matmul and conv2d in either dataflow, any length: toolkit.kinds.estimate_cycles); else the stand-in's simulated cycles
    of a rendered stream short enough; else NOT_ESTIMATED. ``counted``: the schedule's census, where the caller
    has it (an output-stationary estimate counts its chains there)."""
    cycles = estimate_cycles(op, schedule, hw, counted)
    if cycles is None and prog is not None and len(prog.instructions) <= STAND_IN_MAX_INSTRUCTIONS:
        cycles = estimate(prog)[0]
    return NOT_ESTIMATED if cycles is None else float(_log(cycles))


def _vector(stream: np.ndarray, prior: float, op: Op, schedule: Schedule, hw: HardwareConfig,
            domains: dict[str, list]) -> np.ndarray:
    return np.concatenate([stream, [prior], knob_features(schedule, domains), shape_features(op),
                           hardware_features(hw)]).astype(np.float32)


def features(prog: Program, op: Op, schedule: Schedule, domains: dict[str, list] | None = None) -> np.ndarray:
    """The full vector of one rendered candidate: stream + prior + knobs + shape + hardware (:data:`N_FEATURES`).

    ``domains`` (knob -> values) encodes string knobs; by default the op kind's registered domains.
    """
    if domains is None:
        domains = knob_domains(op, prog.hw)
    hw = prog.hw
    if isinstance(schedule, LibrarySchedule):
        # Gemmini's loops, unrolled once: the stream part over what their unrollers issue, and for prior
        # toolkit.family's estimate, which also counts the words the host issues
        words, host_words = issued_words(prog.instructions, hw)
        census = words_census(words)
        prior = loop_cycles(op, words, host_words, hw)
        return _vector(census_features(census, hw, prog.buffers), float(_log(prior)), op, schedule, hw, domains)
    return _vector(stream_features(prog), prior_feature(op, schedule, hw, prog), op, schedule, hw, domains)


def candidate_features(op: Op, hw: HardwareConfig, schedule: Schedule, domains: dict[str, list] | None = None
                       ) -> np.ndarray:
    """The vector of one candidate, equal to :func:`features` of its rendered program: from its census
    (toolkit.kinds.census: no rendering) where one covers the schedule, else rendered (Gemmini's loops
    among them). ScheduleError if it does not fit."""
    domains = domains if domains is not None else knob_domains(op, hw)
    counted = census(op, schedule, hw)
    if counted is None:
        return features(lower(op, schedule, hw), op, schedule, domains)
    # a kind with a census but no closed-form prior (depthwise) renders only a stream the stand-in would run
    short = KINDS[op.KIND].estimate is None and counted[0].count.sum() <= STAND_IN_MAX_INSTRUCTIONS
    prog = lower(op, schedule, hw) if short else None
    return _vector(census_features(counted[0], hw, counted[1]), prior_feature(op, schedule, hw, prog, counted[0]),
                   op, schedule, hw, domains)


def featurize(op: Op, hw: HardwareConfig, schedules: Sequence[Schedule],
              domains: dict[str, list] | None = None) -> np.ndarray:
    """The feature rows of candidates (:func:`candidate_features`), shape (len(schedules), N_FEATURES)."""
    domains = domains if domains is not None else knob_domains(op, hw)
    rows = [candidate_features(op, hw, s, domains) for s in schedules]
    return np.stack(rows) if rows else np.zeros((0, N_FEATURES), dtype=np.float32)


def _featurize_knobs(op: dict[str, Any], hw: dict[str, Any], knobs: list[dict[str, Any]],
                     domains: dict[str, list], family: str = "flat") -> np.ndarray:
    """Worker side of :class:`FeatureCache`: plain dicts in, so any executor can run it."""
    the_op = op_from_dict(op)
    cls = family_class(the_op, family)
    return featurize(the_op, HardwareConfig.from_dict(hw), [cls(**k) for k in knobs], domains)


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
                                             knobs[i:i + size], sp.domains, sp.family)
                        for i in range(0, len(missing), size)]
                X = np.vstack([f.result() for f in futs])
            else:
                X = featurize(sp.op, sp.hw, [sp.cls(**k) for k in knobs], sp.domains)
            self.rows.update(zip(missing, X))
            self.seconds += time.perf_counter() - start
        if not len(points):
            return np.zeros((0, N_FEATURES), dtype=np.float32)
        return np.stack([self.rows[int(p)] for p in points])
