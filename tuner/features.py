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

import functools
import itertools
import math
import time
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from isa import HardwareConfig, Program, encode_all
from isa.loop_unroll import Groups
from isa.opcodes import MVIN_FUNCTS, ConfigKind, Funct
from simulators.stand_in import estimate
from toolkit.census import Census
from toolkit.collector import collector_paused
from toolkit.family import flat_cycles, loop_cycles, program_groups
from toolkit.kinds import KINDS, estimate_cycles, family_class, knob_domains, loop_groups, lower, tallies, tally
from toolkit.library import LibrarySchedule
from toolkit.kinds import from_dict as op_from_dict
from toolkit.ops import Op
from toolkit.schedule import Schedule
from toolkit.tally import CONFIG_LD_RS1, MAX_INPUTS, OPCODES, Tally, field
from toolkit.tally import tally as tally_of

if TYPE_CHECKING:
    from .space import Space

FEATURE_VERSION = 10   # 2: pipeline features, 20 knob slots; 3: the stand-in's cycles; 4: order-free, closed-form
# prior; 5: the hardware's sizes; 6: a closed-form prior for output-stationary schedules; 7: the stand-in
# times output-stationary computes (the prior of depthwise ones); 8: a flat stream's prior held to its words at
# the host's cost (on the SoC); 9: the OS priors of the PEs' double-buffered sums (a chain's cost, the stand-in's);
# 10: the loops' prior a pipeline over the loops, with each loop's DRAM traffic and one weight block per named preload
OP_KINDS = ("matmul", "conv2d")  # one-hot slots; any other kind sets the "other" slot
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


def _latest(values: np.ndarray, is_cfg: np.ndarray) -> np.ndarray:
    """For each instruction, ``values`` at the most recent ``is_cfg`` row (0 before any)."""
    last = np.maximum.accumulate(np.where(is_cfg, np.arange(len(is_cfg)), -1))
    return np.where(last >= 0, values[np.maximum(last, 0)], 0)


def ld_configs(funct: np.ndarray, rs1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """At each mvin of a stream in program order (0 elsewhere), the block stride and the shrink flag of
    its load state's latest config_ld."""
    state = np.select([funct == f for f in MVIN_FUNCTS], [0, 1, 2], -1)
    is_ld = (funct == Funct.CONFIG) & (field(rs1, CONFIG_LD_RS1, "kind") == ConfigKind.LD)
    ld_state = field(rs1, CONFIG_LD_RS1, "state")
    stride_of, shrink_of = field(rs1, CONFIG_LD_RS1, "block_stride"), field(rs1, CONFIG_LD_RS1, "shrink")
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


def words_census(w: np.ndarray, count: np.ndarray | None = None) -> Census:
    """The census of a stream of encoded primitives (isa.encoding.encode_all's words), each standing ``count``
    times (default once; isa.loop_unroll.issued_groups gives alike loops' words once)."""
    f = w[:, 0].astype(np.int64)
    if ((f >= Funct.LOOP_WS) & (f <= Funct.LOOP_CONV_WS_CONFIG_6) & (f != Funct.MVIN3)).any():
        raise ValueError("stream_features: the stream holds CISC loop words, which the features do not model")
    return Census(w, np.ones(len(w), dtype=np.int64) if count is None else count, *ld_configs(f, w[:, 1]))


@dataclass(frozen=True)
class Part:
    """One group of stream features: their names, and the amounts a census's sums give them (in order); a name
    that starts with ``log_`` goes in as log2(1 + its amount) (:func:`tally_features` takes the logs at once)."""
    names: tuple[str, ...]
    values: Callable[[Tally, HardwareConfig, Mapping[str, Any]], Iterable[float]]


def _part(*names: str) -> Callable[[Callable[..., Iterable[float]]], Part]:
    """Decorator: the function gives the amounts of these names."""
    return lambda values: Part(names, values)


def _dma_cycles(t: Tally) -> float:
    return float(t.sum("mvin_beats")) + float(t.sum("mvout_beats"))


@_part(*(f"log_n_{op}" for op in OPCODES))
def _opcode_counts(t: Tally, hw: HardwareConfig, buffers: Mapping[str, Any]) -> Iterable[float]:
    return t.sums[:len(OPCODES)]


@_part("log_instructions", "log_dma_bytes_in", "log_dma_bytes_out", "log_mean_mvin_bytes", "log_mean_mvout_bytes",
       "log_mean_row_bytes_in", "log_dram_requests", "log_dma_beats", "beat_efficiency")
def _dma_traffic(t: Tally, hw: HardwareConfig, buffers: Mapping[str, Any]) -> Iterable[float]:
    bytes_in, bytes_out, rows_in, dma = float(t.sum("mvin_bytes")), float(t.sum("mvout_bytes")), \
        float(t.sum("mvin_rows")), _dma_cycles(t)
    return (t.sum("words"), bytes_in, bytes_out, bytes_in / max(1, t.sum("mvin")), bytes_out / max(1, t.sum("mvout")),
            bytes_in / max(1.0, rows_in), rows_in + float(t.sum("mvout_rows")), dma,
            (bytes_in + bytes_out) / max(1.0, dma * hw.dma_beat_bytes))


@_part("log_weight_loads", "weight_load_ratio", "log_acc_rmw", "acc_rmw_ratio", "acc_bytes_in_share")
def _execute(t: Tally, hw: HardwareConfig, buffers: Mapping[str, Any]) -> Iterable[float]:
    """Weight loads (preloads of a real B) and accumulator read-modify-writes (preloads of C and mvins
    onto an accumulating address), per compute."""
    weight_loads, rmw = t.sum("weight_loads"), t.sum("preload_rmw") + t.sum("mvin_rmw")
    n_comp = max(1, t.sum("computes"))
    return (weight_loads, weight_loads / n_comp, rmw, rmw / n_comp,
            float(t.sum("mvin_acc_bytes")) / max(1.0, float(t.sum("mvin_bytes"))))


@_part(*(f"reload_input{i}" for i in range(MAX_INPUTS)), "store_factor")
def _reuse(t: Tally, hw: HardwareConfig, buffers: Mapping[str, Any]) -> Iterable[float]:
    """Bytes loaded from each input buffer over its size (how often it is re-read); stored over the outputs'."""
    inputs = [b for b in buffers.values() if b.role == "input"][:MAX_INPUTS]
    reload = [float(t.sum(f"mvin_bytes_input{i}")) / b.nbytes for i, b in enumerate(inputs)] if t.sum("mvin") else []
    outputs = sum(b.nbytes for b in buffers.values() if b.role == "output")
    return (*reload, *[0.0] * (MAX_INPUTS - len(reload)), float(t.sum("mvout_bytes")) / max(1, outputs))


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
def _banks(t: Tally, hw: HardwareConfig, buffers: Mapping[str, Any]) -> Iterable[float]:
    return (*_shares(t.written, hw.sp_banks), *_shares(t.read, hw.sp_banks), np.count_nonzero(t.written),
            np.count_nonzero(t.read))


@_part("log_ideal_cycles", "row_fill", "log_dma_cycles", "log_roofline_cycles", "dma_over_compute",
       "log_compute_ops_per_mvin")
def _bounds(t: Tally, hw: HardwareConfig, buffers: Mapping[str, Any]) -> Iterable[float]:
    """The array's cycles if always fed (dim a compute), the share of its rows the computes fill, and the
    DMA's cycles (a beat each)."""
    n_comp = t.sum("computes")
    ideal, dma = n_comp * hw.dim, _dma_cycles(t)
    return (ideal, float(t.sum("compute_rows")) / max(1, ideal), dma, max(ideal, dma), dma / max(1, ideal),
            n_comp / max(1, t.sum("mvin")))


# The vector's stream slots: these parts' names, in this order (saved models depend on it). Every part
# is a sum over the stream's words, so order-free: a census gives it exactly (version 4 dropped the
# parts that read the order: bank of the next / previous load, load-to-first-use distances, DMA runs).
STREAM_PARTS: tuple[Part, ...] = (_opcode_counts, _dma_traffic, _execute, _reuse, _banks, _bounds)
STREAM_NAMES = [name for part in STREAM_PARTS for name in part.names]
LOGGED = np.array([name.startswith("log_") for name in STREAM_NAMES])   # the slots that go in as log2(1 + x)
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
SHAPE = FEATURE_NAMES.index(SHAPE_NAMES[0])   # the shape's and hardware's slots follow the knobs'


def _amounts(t: Tally, hw: HardwareConfig, buffers: Mapping[str, Any]) -> Iterator[float]:
    """The stream parts' amounts of a census's sums, slot by slot."""
    return itertools.chain.from_iterable(part.values(t, hw, buffers) for part in STREAM_PARTS)


def _stream_slots(amounts: np.ndarray) -> np.ndarray:
    """The stream slots of amounts (the last axis's), the ``log_`` ones logged in one call (log2 is element-wise:
    the floats of one at a time)."""
    return np.where(LOGGED, _log(amounts), amounts)


def tally_features(t: Tally, hw: HardwareConfig, buffers: Mapping[str, Any]) -> np.ndarray:
    """The instruction-stream part of the vector (``len(STREAM_NAMES)`` values) of a census's sums."""
    return _stream_slots(np.fromiter(_amounts(t, hw, buffers), dtype=np.float64))


def census_features(census: Census, hw: HardwareConfig, buffers: Mapping[str, Any]) -> np.ndarray:
    """The instruction-stream part of the vector of a census."""
    return tally_features(tally_of(census, hw, buffers), hw, buffers)


def stream_features(prog: Program) -> np.ndarray:
    """The instruction-stream part of the vector of a rendered program."""
    return census_features(program_census(prog), prog.hw, prog.buffers)


def _knob_values(schedule: Schedule | dict[str, Any], domains: dict[str, list]) -> list[float]:
    """:func:`knob_features`'s slots, as a list."""
    knobs = schedule.to_dict() if isinstance(schedule, Schedule) else schedule
    out = [0.0] * MAX_KNOBS
    for i, (name, v) in enumerate(list(knobs.items())[:MAX_KNOBS]):
        if isinstance(v, bool):
            out[i] = float(v)
        elif isinstance(v, (int, float)):
            out[i] = math.log2(1 + v)
        else:
            dom = domains.get(name, [])
            out[i] = float(dom.index(v)) if v in dom else 0.0
    return out


def knob_features(schedule: Schedule | dict[str, Any], domains: dict[str, list]) -> np.ndarray:
    """One slot per knob in field order: log2 of ints, 0/1 of bools, the domain index of strings."""
    return np.array(_knob_values(schedule, domains))


@functools.lru_cache(maxsize=256)
def shape_features(op: Op) -> np.ndarray:
    """Op kind, log of its numeric parameters, and whether each epilogue option is set. Kept per op (read-only):
    a batch's candidates share it, and making it costs as much as the rest of their vector but the stream."""
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
    out = np.concatenate([kind, params, fl, _log([op.macs, op.input_bytes, op.output_bytes])])
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=256)
def hardware_features(hw: HardwareConfig) -> np.ndarray:
    """log2(1 + x) of each of :data:`HW_FIELDS`: which hardware point a record was measured on. Kept per
    hardware (read-only), as :func:`shape_features` per op."""
    out = _log([getattr(hw, f) for f in HW_FIELDS])
    out.setflags(write=False)
    return out


def prior_feature(op: Op, schedule: Schedule, hw: HardwareConfig, prog: Program | None = None,
                  n_computes: int | None = None, words: int = 0) -> float:
    """log2(1 + cycles) of the analytical prior: the kind's closed-form estimate where it has one
    (matmul and conv2d in either dataflow, any length: toolkit.kinds.estimate_cycles); else the stand-in's simulated cycles
    of a rendered stream short enough; else NOT_ESTIMATED. Either is held to the stream's ``words`` at the host's
    cost (toolkit.family.flat_cycles), as Gemmini's loops are (toolkit.family.loop_cycles), so that on the SoC
    the two families' priors rank alike. ``n_computes``: the computes of the schedule's census, where the caller
    has it (an output-stationary estimate counts its chains there)."""
    cycles = estimate_cycles(op, schedule, hw, n_computes)
    if cycles is None and prog is not None and len(prog.instructions) <= STAND_IN_MAX_INSTRUCTIONS:
        cycles = estimate(prog)[0]
    return NOT_ESTIMATED if cycles is None else float(_log(flat_cycles(words, cycles, hw)))


def _rows(streams: np.ndarray, priors: Sequence[float], op: Op, schedules: Sequence[Schedule], hw: HardwareConfig,
          domains: dict[str, list]) -> np.ndarray:
    """The vectors (float32, a row each) of candidates of one op and hardware, given their stream slots (a row
    each) and priors: stream + prior + knobs + shape + hardware, each part set for all of them at once."""
    out = np.empty((len(schedules), N_FEATURES), dtype=np.float32)
    out[:, :PRIOR] = streams
    out[:, PRIOR] = priors
    out[:, PRIOR + 1:SHAPE] = [_knob_values(s, domains) for s in schedules]
    out[:, SHAPE:] = np.concatenate([shape_features(op), hardware_features(hw)])
    return out


def _vector(stream: np.ndarray, prior: float, op: Op, schedule: Schedule, hw: HardwareConfig,
            domains: dict[str, list]) -> np.ndarray:
    return _rows(stream[None], [prior], op, [schedule], hw, domains)[0]


def features(prog: Program, op: Op, schedule: Schedule, domains: dict[str, list] | None = None) -> np.ndarray:
    """The full vector of one rendered candidate: stream + prior + knobs + shape + hardware (:data:`N_FEATURES`).

    ``domains`` (knob -> values) encodes string knobs; by default the op kind's registered domains.
    """
    if domains is None:
        domains = knob_domains(op, prog.hw)
    hw = prog.hw
    if isinstance(schedule, LibrarySchedule):
        return _loop_vector(program_groups(prog), prog.buffers, op, schedule, hw, domains)
    return _vector(stream_features(prog), prior_feature(op, schedule, hw, prog, words=len(prog.instructions)), op,
                   schedule, hw, domains)


def _loop_vector(groups: Groups, buffers: Mapping[str, Any], op: Op, schedule: Schedule, hw: HardwareConfig,
                 domains: dict[str, list]) -> np.ndarray:
    """The vector of a candidate of Gemmini's loops, given its alike loops' words once with a count: the stream
    part over what their unrollers issue, and for prior toolkit.family's estimate, which also counts the words
    the host issues."""
    census = words_census(groups.words, groups.count)
    prior = loop_cycles(op, groups, hw, schedule.CONV_LOOPS)
    return _vector(census_features(census, hw, buffers), float(_log(prior)), op, schedule, hw, domains)


def _program_features(op: Op, hw: HardwareConfig, schedule: Schedule, domains: dict[str, list]) -> np.ndarray:
    """:func:`features` of the candidate's program, which a census does not cover: Gemmini's loops from their
    groups (toolkit.kinds.loop_groups: from the tiles' arrays, no text), anything else rendered."""
    if isinstance(schedule, LibrarySchedule):
        return _loop_vector(*loop_groups(op, schedule, hw), op, schedule, hw, domains)
    return features(lower(op, schedule, hw), op, schedule, domains)


def candidate_features(op: Op, hw: HardwareConfig, schedule: Schedule, domains: dict[str, list] | None = None
                       ) -> np.ndarray:
    """The vector of one candidate, equal to :func:`features` of its rendered program: from its census's sums
    (toolkit.kinds.tally: no rendering) where a census covers the schedule, else rendered (Gemmini's loops
    among them). ScheduleError if it does not fit."""
    domains = domains if domains is not None else knob_domains(op, hw)
    return _counted_features(op, hw, schedule, tally(op, schedule, hw), domains)


def _counted_features(op: Op, hw: HardwareConfig, schedule: Schedule, counted: tuple[Tally, dict] | None,
                      domains: dict[str, list]) -> np.ndarray:
    """:func:`candidate_features` given the candidate's tally (None: render it)."""
    if counted is None:
        return _program_features(op, hw, schedule, domains)
    return _counted_rows(op, hw, [schedule], [counted], domains)[0]


def _counted_prior(op: Op, hw: HardwareConfig, schedule: Schedule, sums: Tally) -> float:
    """:func:`prior_feature` of a candidate given its census's sums."""
    # a kind with a census but no closed-form prior (depthwise) renders only a stream the stand-in would run
    short = KINDS[op.KIND].estimate is None and sums.sum("words") <= STAND_IN_MAX_INSTRUCTIONS
    prog = lower(op, schedule, hw) if short else None
    return prior_feature(op, schedule, hw, prog, sums.sum("computes"), sums.sum("words"))


def _counted_rows(op: Op, hw: HardwareConfig, schedules: Sequence[Schedule], counted: Sequence[tuple[Tally, dict]],
                  domains: dict[str, list]) -> np.ndarray:
    """The rows of candidates given their tallies: each one's amounts and prior, then the vector's parts of all
    of them at once (numpy's calls a batch, not a candidate)."""
    amounts = np.fromiter(itertools.chain.from_iterable(_amounts(t, hw, buffers) for t, buffers in counted),
                          dtype=np.float64)
    priors = [_counted_prior(op, hw, s, t) for s, (t, _) in zip(schedules, counted)]
    return _rows(_stream_slots(amounts.reshape(len(counted), len(STREAM_NAMES))), priors, op, schedules, hw, domains)


def featurize(op: Op, hw: HardwareConfig, schedules: Sequence[Schedule],
              domains: dict[str, list] | None = None) -> np.ndarray:
    """The feature rows of candidates (:func:`candidate_features`, bit-identical), shape (len(schedules),
    N_FEATURES): their tallies taken together (toolkit.kinds.tallies), and so their rows (those a census does not
    cover rendered, one by one). ScheduleError if one does not fit."""
    domains = domains if domains is not None else knob_domains(op, hw)
    with collector_paused():   # the census's classes and the prior's tile costs stay in caches
        counted = tallies(op, schedules, hw)
        tallied = [n for n, c in enumerate(counted) if c is not None]
        rows = np.empty((len(schedules), N_FEATURES), dtype=np.float32)
        if tallied:
            rows[tallied] = _counted_rows(op, hw, [schedules[n] for n in tallied], [counted[n] for n in tallied],
                                          domains)
    for n in (n for n, c in enumerate(counted) if c is None):
        rows[n] = _program_features(op, hw, schedules[n], domains)
    return rows


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
            for sp, local, at in self.space.pieces(missing):   # a space of both families: each its own way
                self.rows.update(zip([missing[i] for i in at], self._featurize(sp, local)))
            self.seconds += time.perf_counter() - start
        if not len(points):
            return np.zeros((0, N_FEATURES), dtype=np.float32)
        return np.stack([self.rows[int(p)] for p in points])

    def _featurize(self, sp: "Space", points: list[int]) -> np.ndarray:
        """The rows of ``points`` of one family's space ``sp``, split across the executor's workers if large."""
        knobs = [sp.knobs(p) for p in points]
        if self.executor is not None and len(points) >= 2 * self.workers:
            size = -(-len(points) // self.workers)
            futs = [self.executor.submit(_featurize_knobs, sp.op.to_dict(), sp.hw.as_dict(),
                                         knobs[i:i + size], sp.domains, sp.family)
                    for i in range(0, len(points), size)]
            return np.vstack([f.result() for f in futs])
        return featurize(sp.op, sp.hw, [sp.cls(**k) for k in knobs], sp.domains)
