"""Features of a candidate, computed from its rendered instruction stream without simulating it.

One fixed-length float32 vector for every op and shape (see :data:`FEATURE_NAMES`):
the stream statistics (numpy over the encoded (funct, rs1, rs2) words), the knobs
of the schedule (slot per dataclass field, padded), and the log-shape of the
workload (slot per numeric op parameter, padded). Counts go in as log2(1 + x) so
that one model serves small and large workloads.
"""
from __future__ import annotations

import math
import time
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from isa import ACC_BIT, ACCUM_BIT, FULL_BIT, GARBAGE, ROW_MASK, HardwareConfig, Program, encode_all
from isa.loop_words import OPERAND
from isa.opcodes import MVIN_FUNCTS, ConfigKind, Funct
from simulators.stand_in import estimate
from toolkit.kinds import KINDS, knob_domains, lower
from toolkit.kinds import from_dict as op_from_dict
from toolkit.ops import Op
from toolkit.schedule import Schedule

if TYPE_CHECKING:
    from .space import Space

FEATURE_VERSION = 3   # 2: pipeline features, 20 knob slots; 3: the stand-in's cycles
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

STREAM_NAMES = (
    [f"log_n_{op}" for op in OPCODES]
    + ["log_instructions", "log_dma_bytes_in", "log_dma_bytes_out", "log_mean_mvin_bytes", "log_mean_mvout_bytes",
       "log_mean_row_bytes_in", "log_dram_requests", "log_dma_beats", "beat_efficiency",
       "log_weight_loads", "weight_load_ratio", "log_acc_rmw", "acc_rmw_ratio", "acc_bytes_in_share"]
    + [f"reload_input{i}" for i in range(MAX_INPUTS)] + ["store_factor"]
    + [f"sp_write_bank_share{i}" for i in range(MAX_BANKS)] + [f"sp_read_bank_share{i}" for i in range(MAX_BANKS)]
    + ["same_bank_next_load", "same_bank_prev_load", "banks_written", "banks_read"]
    + ["log_first_use_mean", "log_first_use_min", "log_first_use_median", "first_use_near_share",
       "unused_load_share"]
    + ["log_mean_dma_run", "log_max_dma_run", "dma_after_last_compute_share"]
    + ["log_ideal_cycles", "row_fill", "log_dma_cycles", "log_roofline_cycles", "dma_over_compute",
       "log_compute_ops_per_mvin", "log_stand_in_cycles"]
)
KNOB_NAMES = [f"knob{i}" for i in range(MAX_KNOBS)]
SHAPE_NAMES = ([f"kind_{k}" for k in OP_KINDS] + ["kind_other"] + [f"log_param{i}" for i in range(MAX_PARAMS)]
               + [f"flag{i}" for i in range(MAX_FLAGS)] + ["log_macs", "log_input_bytes", "log_output_bytes"])
FEATURE_NAMES: tuple[str, ...] = tuple(STREAM_NAMES + KNOB_NAMES + SHAPE_NAMES)
N_FEATURES = len(FEATURE_NAMES)
IDEAL = FEATURE_NAMES.index("log_ideal_cycles")
DMA_CYCLES = FEATURE_NAMES.index("log_dma_cycles")
MACS = FEATURE_NAMES.index("log_macs")  # a workload constant: the cost model's normalizer
STAND_IN = FEATURE_NAMES.index("log_stand_in_cycles")
# The stand-in simulates one instruction at a time in Python (~15 us each, 4x lowering's cost), so
# it joins the features only for streams up to this length; longer ones get NOT_ESTIMATED (not nan:
# scikit-learn's binning fails on a column that is all nan) and the prior falls back to the stream's
# roofline.
STAND_IN_MAX_INSTRUCTIONS = 8192
NOT_ESTIMATED = -1.0


def _log(x: Any) -> Any:
    return np.log2(1.0 + np.asarray(x, dtype=np.float64))


def _last_config(is_cfg: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """For each instruction, ``values`` at the most recent config row (0 before any)."""
    idx = np.where(is_cfg, np.arange(n), -1)
    last = np.maximum.accumulate(idx) if n else idx
    return np.where(last >= 0, values[np.maximum(last, 0)], 0)


_OPERAND = {f.name: f for f in OPERAND}


def _operand_field(x: np.ndarray, name: str) -> np.ndarray:
    """One field of operand words (isa.loop_words.OPERAND: the layout is written once, there)."""
    f = _OPERAND[name]
    return ((x >> np.uint64(f.lo)) & np.uint64(f.mask)).astype(np.int64)


def lo32(x: np.ndarray) -> np.ndarray:
    """Operand address field."""
    return _operand_field(x, "addr")


def mid16(x: np.ndarray) -> np.ndarray:
    """Operand columns field."""
    return _operand_field(x, "cols")


def hi16(x: np.ndarray) -> np.ndarray:
    """Operand rows field."""
    return _operand_field(x, "rows")


def _shares(amounts: np.ndarray, banks: int) -> np.ndarray:
    total = amounts.sum()
    out = np.zeros(MAX_BANKS)
    if total <= 0:
        return out
    s = np.sort(amounts / total)[::-1]
    out[:min(banks, MAX_BANKS)] = s[:MAX_BANKS]
    if banks > MAX_BANKS:
        out[-1] += s[MAX_BANKS:].sum()
    return out


def _runs(dma: np.ndarray, comp: np.ndarray) -> list[float]:
    """log mean and log max length of the runs of DMA instructions between computes, and the share of
    DMA instructions after the last compute: long runs (flat load-compute-store order) leave the
    array idle while the DMA works; short ones (a software pipeline) overlap the two."""
    kinds = np.where(dma, 1, np.where(comp, 2, 0))
    kinds = kinds[kinds > 0]
    if not (kinds == 1).any():
        return [0.0, 0.0, 0.0]
    change = np.flatnonzero(np.diff(np.r_[0, kinds, 0]) != 0)
    starts, ends = change[:-1], change[1:]
    runs = (ends - starts)[kinds[starts] == 1]
    tail = 0
    if (kinds == 2).any():
        tail = int((kinds[np.flatnonzero(kinds == 2)[-1]:] == 1).sum())
    return [float(_log(runs.mean())), float(_log(runs.max())), tail / float((kinds == 1).sum())]


def stream_features(prog: Program) -> np.ndarray:
    """The instruction-stream part of the vector (``len(STREAM_NAMES)`` values)."""
    hw = prog.hw
    d = hw.dim
    w = encode_all(prog.instructions)
    n = len(w)
    funct = w[:, 0].astype(np.int64)
    rs1, rs2 = w[:, 1], w[:, 2]
    sub = (rs1 & np.uint64(3)).astype(np.int64)
    slot = np.full(n, -1)
    for f, k in _FUNCT_SLOT.items():
        slot[funct == f] = k
    if ((funct >= Funct.LOOP_WS) & (funct <= Funct.LOOP_CONV_WS_CONFIG_6) & (funct != Funct.MVIN3)).any():
        raise ValueError("stream_features: the stream holds CISC loop words, which the features do not model")
    cfg = funct == Funct.CONFIG
    for k, i in _CONFIG_SLOT.items():
        slot[cfg & (sub == k)] = i
    counts = np.bincount(slot[slot >= 0], minlength=len(OPCODES))[:len(OPCODES)].astype(float)

    # ---- DMA in: mvin of each load state, with that state's latest config_ld
    state = np.select([funct == f for f in MVIN_FUNCTS], [0, 1, 2], -1)
    is_ld_cfg = cfg & (sub == ConfigKind.LD)
    ld_state = ((rs1 >> np.uint64(3)) & np.uint64(3)).astype(np.int64)
    block_stride = np.zeros(n, dtype=np.int64)
    shrink = np.zeros(n, dtype=np.int64)
    for s in range(3):
        rows_s = state == s
        if rows_s.any():
            mask = is_ld_cfg & (ld_state == s)
            block_stride[rows_s] = _last_config(mask, ((rs1 >> np.uint64(16)) & np.uint64(0xFFFF)).astype(np.int64),
                                                n)[rows_s]
            shrink[rows_s] = _last_config(mask, ((rs1 >> np.uint64(2)) & np.uint64(1)).astype(np.int64), n)[rows_s]
    mv = (state >= 0) & (lo32(rs2) != GARBAGE)
    m_local, m_cols, m_rows = lo32(rs2[mv]), mid16(rs2[mv]), hi16(rs2[mv])
    m_acc = (m_local & ACC_BIT) != 0
    m_item = np.where(m_acc & (shrink[mv] == 0), 4, 1)
    m_row_bytes = m_cols * m_item
    m_bytes = m_rows * m_row_bytes
    bytes_in = float(m_bytes.sum())
    beats_in = float((m_rows * -(-m_row_bytes // hw.dma_beat_bytes)).sum())

    # ---- DMA out
    mo = funct == Funct.MVOUT
    o_local, o_cols, o_rows = lo32(rs2[mo]), mid16(rs2[mo]), hi16(rs2[mo])
    o_item = np.where(((o_local & ACC_BIT) != 0) & ((o_local & FULL_BIT) != 0), 4, 1)
    o_bytes = o_rows * o_cols * o_item
    bytes_out = float(o_bytes.sum())
    beats_out = float((o_rows * -(-(o_cols * o_item) // hw.dma_beat_bytes)).sum())

    # ---- per input buffer: bytes loaded / buffer size (how often it is re-read)
    inputs = [b for b in prog.buffers.values() if b.role == "input"][:MAX_INPUTS]
    reload = np.zeros(MAX_INPUTS)
    if inputs and mv.any():
        starts = np.array([b.addr for b in inputs])
        owner = np.searchsorted(starts, rs1[mv].astype(np.int64), side="right") - 1
        for i, b in enumerate(inputs):
            reload[i] = m_bytes[owner == i].sum() / b.nbytes
    outputs = [b for b in prog.buffers.values() if b.role == "output"]
    store_factor = bytes_out / max(1, sum(b.nbytes for b in outputs))

    # ---- execute: weight loads, accumulator read-modify-writes
    pre = funct == Funct.PRELOAD
    comp = (funct == Funct.COMPUTE_PRELOADED) | (funct == Funct.COMPUTE_ACCUMULATED)
    n_comp = int(comp.sum())
    b_addr = lo32(rs1[pre])
    weight_loads = int((b_addr != GARBAGE).sum())
    c_addr = lo32(rs2[pre])
    rmw = int((((c_addr & ACC_BIT) != 0) & ((c_addr & ACCUM_BIT) != 0) & (c_addr != GARBAGE)).sum())
    rmw += int((m_acc & ((m_local & ACCUM_BIT) != 0)).sum())

    # ---- scratchpad banks: DMA writes (each dim-wide block of an mvin) and execute reads
    sp_load = ~m_acc
    nblk = np.maximum(1, -(-m_cols // d))
    rep = np.repeat(np.arange(len(m_local)), nblk)
    blk_off = np.arange(rep.size) - np.repeat(np.cumsum(nblk) - nblk, nblk)
    w_rows = (m_local & ROW_MASK)[rep] + blk_off * block_stride[mv][rep]
    w_keep = sp_load[rep]
    w_rows, w_pos = w_rows[w_keep], np.flatnonzero(mv)[rep][w_keep]
    w_amount = m_rows[rep][w_keep]
    w_bank = w_rows // hw.sp_bank_rows
    r_src = np.concatenate([np.flatnonzero(pre), np.flatnonzero(comp)])
    r_addr = np.concatenate([lo32(rs1[pre]), lo32(rs1[comp])])
    r_amount = np.concatenate([hi16(rs1[pre]), hi16(rs1[comp])])
    r_keep = (r_addr != GARBAGE) & ((r_addr & ACC_BIT) == 0)
    r_pos, r_rows, r_amount = r_src[r_keep], r_addr[r_keep] & ROW_MASK, r_amount[r_keep]
    r_bank = r_rows // hw.sp_bank_rows
    wb = np.bincount(w_bank, weights=w_amount, minlength=hw.sp_banks)
    rb = np.bincount(r_bank, weights=r_amount, minlength=hw.sp_banks)
    same_next = same_prev = 0.0
    if len(w_pos) and len(r_pos):
        order = np.argsort(w_pos, kind="stable")
        wp, wbk = w_pos[order], w_bank[order]
        nxt = np.searchsorted(wp, r_pos, side="right")
        has = nxt < len(wp)
        same_next = float(np.mean(np.where(has, wbk[np.minimum(nxt, len(wp) - 1)] == r_bank, False)))
        prv = nxt - 1
        has = prv >= 0
        same_prev = float(np.mean(np.where(has, wbk[np.maximum(prv, 0)] == r_bank, False)))

    # ---- distance from each load (dim-row block) to its first use; a later load of the block ends the wait
    first_use = np.zeros(5)
    if len(w_pos):
        w_blk, r_blk = w_rows // d, r_rows // d
        blk = np.concatenate([w_blk, r_blk])
        pos = np.concatenate([w_pos, r_pos])
        kind = np.concatenate([np.zeros(len(w_blk), int), np.ones(len(r_blk), int)])
        order = np.lexsort((kind, pos, blk))
        blk, pos, kind = blk[order], pos[order], kind[order]
        is_w = np.flatnonzero(kind[:-1] == 0)
        used = (kind[is_w + 1] == 1) & (blk[is_w + 1] == blk[is_w])
        dist = (pos[is_w + 1] - pos[is_w])[used]
        n_w = int((kind == 0).sum())
        if dist.size:
            ld = _log(dist)
            first_use[:4] = [ld.mean(), ld.min(), np.median(ld), np.mean(dist < 2 * 8)]
        first_use[4] = 1.0 - dist.size / n_w

    # ---- software pipeline: how DMA instructions interleave with computes in the stream
    dma_run = _runs(mv | mo, comp)

    # ---- bounds
    ideal = n_comp * d
    dma_cycles = beats_in + beats_out
    roofline = max(ideal, dma_cycles)
    n_mvin = max(1, int(mv.sum()))
    stream = [
        *_log(counts), _log(n), _log(bytes_in), _log(bytes_out), _log(bytes_in / n_mvin),
        _log(bytes_out / max(1, int(mo.sum()))), _log(bytes_in / max(1, int(m_rows.sum()))),
        _log(m_rows.sum() + o_rows.sum()), _log(dma_cycles),
        (bytes_in + bytes_out) / max(1.0, dma_cycles * hw.dma_beat_bytes),
        _log(weight_loads), weight_loads / max(1, n_comp), _log(rmw), rmw / max(1, n_comp),
        float(m_bytes[m_acc].sum()) / max(1.0, bytes_in),
        *reload, store_factor,
        *_shares(wb, hw.sp_banks), *_shares(rb, hw.sp_banks),
        same_next, same_prev, float((wb > 0).sum()), float((rb > 0).sum()),
        *first_use,
        *dma_run,
        _log(ideal), float(hi16(rs1[comp]).sum()) / max(1, ideal), _log(dma_cycles), _log(roofline),
        dma_cycles / max(1, ideal), _log(n_comp / n_mvin),
        _log(estimate(prog)[0]) if n <= STAND_IN_MAX_INSTRUCTIONS else NOT_ESTIMATED,
    ]
    return np.asarray(stream, dtype=np.float64)


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


def features(prog: Program, op: Op, schedule: Schedule, domains: dict[str, list] | None = None) -> np.ndarray:
    """The full vector of one candidate: stream + knobs + shape, length :data:`N_FEATURES`.

    ``domains`` (knob -> values) encodes string knobs; by default the op kind's registered domains.
    """
    if domains is None:
        domains = knob_domains(op, prog.hw)
    return np.concatenate([stream_features(prog), knob_features(schedule, domains),
                           shape_features(op)]).astype(np.float32)


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
