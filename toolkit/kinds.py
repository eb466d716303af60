"""Every op kind in one table: its op class, schedule class, heuristics, lowering, knob domains and
cycle lower bounds.

Adding an op kind is adding a row to :data:`KINDS`; nothing registers itself on import.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, fields
from typing import Any, Callable, Mapping, Sequence

from isa import Buffer, HardwareConfig, Program
from isa.loop_unroll import Groups

from .bounds import dense_cycles
from .estimate import os_cycles

from .family import flat_cycles, loop_cycles, program_groups
from .col_scales import load_column_scales
from .census import Census, computes
from .conv.census import conv_census, conv_tallies
from .conv.heuristic import kept_conv_cycles
from .conv.bounds import conv_ideal_cycles
from .conv.heuristic import default_conv_schedule, gemmini_conv_schedule
from .conv.knobs import CONV_FIT, conv_domains
from .conv.lowering import lower_conv
from .conv.ops import Conv2d, DepthwiseConv2d
from .conv.schedule import ConvSchedule, DepthwiseSchedule
from .library.matmul import ROW_ACTIVATIONS
from .library import (LIBRARY_CONV_FIT, LIBRARY_DEPTHWISE_FIT, LIBRARY_MATMUL_FIT, LIBRARY_RESADD_FIT, LibraryConv,
                      LibraryDepthwise, LibraryMatmul, LibraryPointwise, LibraryResAdd, LibrarySchedule,
                      conv_loop_words, is_pointwise,
                      library_class, library_conv_domains, library_depthwise_domains, library_matmul_domains,
                      library_groups, library_resadd_domains, pointwise_domains,
                      lower_library, tiled_conv_auto, tiled_conv_dw_auto, tiled_matmul_auto, tiled_matmul_nn_auto,
                      tiled_norm_auto,
                      tiled_resadd_auto)
from .gemm import Matmul, MatmulSchedule, default_matmul_schedule, gemmini_matmul_schedule, lower_matmul
from .gemm.heuristic import default_dataflow, os_chains
from .gemm.bounds import matmul_ideal_cycles
from .gemm.census import matmul_census
from .gemm.heuristic import pipelined_matmul_cycles
from .gemm.knobs import MATMUL_FIT, matmul_domains
from .knobs import Domains, perturbed_domains
from .maxpool import MaxPool2d, MaxPoolSchedule, default_maxpool, lower_maxpool
from .ops import Op
from .norm import NormSchedule, RowNorm, default_norm_schedule, lower_norm
from .resadd import ResAdd, ResAddSchedule, default_resadd_schedule, lower_resadd
from .schedule import Schedule, ScheduleError
from .tally import Tally
from .tally import tally as tally_of


@dataclass(frozen=True)
class LoopFamily:
    """A kind's schedules of Gemmini's loops as the tuner sees them: the class, its knob domains
    ((op, hw, tile_policy) -> knob -> values) and the knobs its memory plan reads."""

    schedule: type[LibrarySchedule]
    domains: Callable[[Any, HardwareConfig, str], Domains]
    fit_knobs: frozenset[str]
    # the loop words the host issues at each point, (op, fit knob -> an array of values) -> an array (None: not
    # counted): a kind whose small tiles multiply its loops, so that a space can leave out what its host cannot
    # issue in time (tuner.space.HOST_BOUND_MARGIN)
    host_words: Callable[[Any, Mapping[str, Any]], Any] | None = None
    # gemmini.h's own choice of the family's tiles, its space's default (None: the kind's ``library`` call)
    call: Callable[[Any, HardwareConfig], LibrarySchedule] | None = None


@dataclass(frozen=True)
class Kind:
    op: type[Op]
    schedule: type[Schedule]
    default: Callable[[Any, HardwareConfig], Schedule]           # the toolkit's heuristic
    lower: Callable[[Any, Any, HardwareConfig], Program]
    # gemmini.h's auto-tiler: its words are the baseline (schedule="gemmini"; None: as default)
    library: Callable[[Any, HardwareConfig], LibrarySchedule] | None = None
    # the earlier port of its tile sizing in our own flat instruction stream (schedule="gemmini-flat";
    # None: as default): a point of the tuner's space, not Gemmini's words
    flat: Callable[[Any, HardwareConfig], Schedule] | None = None
    # the tuner's knob domains, (op, hw, tile_policy) -> knob -> values (None: perturb the default)
    domains: Callable[[Any, HardwareConfig, str], Domains] | None = None
    fit_knobs: frozenset[str] | None = None   # the knobs memory_plan reads; None: all of them
    # cycles of a perfectly fed array (the ideal of utilization = ideal / cycles)
    ideal: Callable[[Any, HardwareConfig], int] = dense_cycles
    # the instruction census of the lowering without rendering it (toolkit/census.py; None: render)
    census: Callable[[Any, Any, HardwareConfig], tuple[Census, dict]] | None = None
    # the census's sums (toolkit/tally.py) of many schedules at once, without joining their words and sharing
    # work across them (None: tally each census)
    tallies: Callable[[Any, list, HardwareConfig], list[tuple[Tally, dict]]] | None = None
    # an analytical cycle estimate of a weight-stationary schedule, in closed form (None: none)
    estimate: Callable[[Any, Any, HardwareConfig], float] | None = None
    # the output-stationary chains of a schedule, which the estimate adds to its tiles' WS estimate:
    # (op, its WS twin, hw, the computes of the OS schedule's own census where the caller has them, else None)
    os_chains: Callable[[Any, Any, HardwareConfig, int | None], int] | None = None
    # whether the default weighs gemmini.h's loops (``library``) against the flat stream on a hardware
    # point with a host cost; depthwise does not: tiled_conv_dw_auto issues a loop per channel and tap
    # (8,640 on MobileNetV2's first depthwise conv), too many to unroll for an estimate, and each too
    # small to keep the array busy
    loops_by_default: bool = False
    # the tuner's family of gemmini.h's loops (Space(..., family="loops")): its class, knob domains, fit knobs
    loops: "LoopFamily | None" = None
    # a second loop family of a pointwise op (toolkit.library.is_pointwise): a 1x1 conv of stride 1 is a matmul
    # in DRAM, and Gemmini's own networks run it as one (toolkit/library/pointwise.py)
    pointwise: "LoopFamily | None" = None

    def knob_domains(self, op: Op, hw: HardwareConfig, tile_policy: str) -> Domains:
        if self.domains is None:
            return perturbed_domains(self.default(op, hw))
        return self.domains(op, hw, tile_policy)


def default_matmul(op: Matmul, hw: HardwareConfig) -> Schedule:
    """The toolkit's matmul heuristic, or for a matmul that normalizes its rows (LayerNorm, softmax) gemmini.h's
    tiled_matmul_auto: the toolkit's own tiles do not hold whole rows for the normalization unit."""
    if op.activation in ROW_ACTIVATIONS:
        return tiled_matmul_auto(op, hw)
    return default_matmul_schedule(op.M, op.N, op.K, hw, 4 if op.out_dtype == "int32" else 1) \
        .replace(dataflow=default_dataflow(op, hw))


def default_conv2d(op: Conv2d, hw: HardwareConfig) -> Schedule:
    """The toolkit's conv heuristic, or for a conv with a pool Gemmini's tiled_conv_auto, whose tiles are pooled
    outputs (the toolkit's own conv tiles do not fuse a pool; a pool that runs apart, library/conv_pool.py,
    leaves the conv's own tiles)."""
    return tiled_conv_auto(op, hw) if op.pool else default_conv_schedule(op, hw)


def _conv_os_chains(op: Conv2d, s: ConvSchedule, hw: HardwareConfig, n_computes: int | None = None) -> int:
    """conv_ws_steps.s.j2: output-stationary, each compute is a chain of its own. Either dataflow's census of
    the same tiles holds the same computes (tests/test_census.py), so the OS schedule's own computes, where the
    caller has them, save building the WS twin's census."""
    return n_computes if n_computes is not None else computes(conv_census(op, s, hw)[0])


KINDS: dict[str, Kind] = {
    "matmul": Kind(Matmul, MatmulSchedule, default_matmul,
                   lower_matmul, library=tiled_matmul_auto,
                   flat=lambda op, hw: gemmini_matmul_schedule(op.M, op.N, op.K, hw),
                   domains=matmul_domains, fit_knobs=MATMUL_FIT, ideal=matmul_ideal_cycles, census=matmul_census,
                   estimate=lambda op, s, hw: pipelined_matmul_cycles(op.M, op.N, op.K, s, hw,
                                                                      4 if op.out_dtype == "int32" else 1),
                   os_chains=lambda op, s, hw, n_computes=None: os_chains(op, s, hw), loops_by_default=True,
                   loops=LoopFamily(LibraryMatmul, library_matmul_domains, LIBRARY_MATMUL_FIT)),
    "conv2d": Kind(Conv2d, ConvSchedule, default_conv2d, lower_conv, library=tiled_conv_auto,
                   flat=gemmini_conv_schedule, domains=conv_domains, fit_knobs=CONV_FIT, ideal=conv_ideal_cycles,
                   census=conv_census, tallies=conv_tallies, estimate=kept_conv_cycles, os_chains=_conv_os_chains,
                   loops_by_default=True,
                   loops=LoopFamily(LibraryConv, library_conv_domains, LIBRARY_CONV_FIT, conv_loop_words),
                   pointwise=LoopFamily(LibraryPointwise, pointwise_domains, LIBRARY_MATMUL_FIT,
                                        call=tiled_matmul_nn_auto)),
    "depthwise": Kind(DepthwiseConv2d, DepthwiseSchedule, default_conv_schedule, lower_conv,
                      library=tiled_conv_dw_auto, flat=gemmini_conv_schedule, domains=conv_domains,
                      fit_knobs=CONV_FIT, census=conv_census, tallies=conv_tallies,
                      loops=LoopFamily(LibraryDepthwise, library_depthwise_domains, LIBRARY_DEPTHWISE_FIT)),
    "resadd": Kind(ResAdd, ResAddSchedule, default_resadd_schedule, lower_resadd, library=tiled_resadd_auto,
                   loops_by_default=True, loops=LoopFamily(LibraryResAdd, library_resadd_domains, LIBRARY_RESADD_FIT)),
    "maxpool": Kind(MaxPool2d, MaxPoolSchedule, default_maxpool, lower_maxpool),
    "norm": Kind(RowNorm, NormSchedule, default_norm_schedule, lower_norm, library=tiled_norm_auto),
}


def from_dict(data: Mapping[str, Any]) -> Op:
    """Rebuild an op from :meth:`Op.to_dict`."""
    data = dict(data)
    kind = data.pop("kind", None)
    if kind not in KINDS:
        raise ValueError(f"op kind {kind!r} is not one of {sorted(KINDS)}")
    cls = KINDS[kind].op
    for f in fields(cls):
        if isinstance(data.get(f.name), list):
            data[f.name] = tuple(data[f.name])
    return cls(**data)


def flat_schedule(op: Op, hw: HardwareConfig) -> Schedule:
    """The toolkit's own flat heuristic for ``op`` (the default's choice where the host is free)."""
    return KINDS[op.KIND].default(op, hw)


def default_schedule(op: Op, hw: HardwareConfig) -> Schedule:
    """The toolkit's own heuristic for ``op`` on ``hw`` (what an untuned user gets): the kind's flat
    schedule, or on a hardware point whose host pays for every word (the SoC) gemmini.h's loops where
    their estimate is no worse (toolkit.family): the library's call, or a pointwise conv's
    tiled_matmul_nn_auto, whichever is estimated faster."""
    kind = KINDS[op.KIND]
    flat = flat_schedule(op, hw)
    if not hw.host_cmd_cycles or not kind.loops_by_default or isinstance(flat, LibrarySchedule):
        return flat
    return _pick_family(op, hw, flat)


@functools.lru_cache(maxsize=256)
def _pick_family(op: Op, hw: HardwareConfig, flat: Schedule) -> Schedule:
    """``flat`` or gemmini.h's loops for ``op``, whichever toolkit.family estimates fastest (the loops on a
    tie with ``flat``, the first loop family's on a tie between them), the loops from their groups
    (:func:`loop_groups`: no text where the call lays its tiles out as arrays); loops lose at once where the
    words the host issues alone cost more than ``flat``."""
    best, best_cycles = flat, flat_estimate(op, flat, hw)
    for family in loop_families(op):
        try:
            loops = family_call(op, hw, family)
        except ScheduleError:   # an op gemmini.h cannot do
            continue
        groups = loop_groups(op, loops, hw)[0]
        if groups.host_words * hw.host_cmd_cycles > best_cycles:
            continue
        cycles = loop_cycles(op, groups, hw, loops.CONV_LOOPS)
        if cycles < best_cycles or (cycles == best_cycles and best is flat):
            best, best_cycles = loops, cycles
    return best


def flat_estimate(op: Op, schedule: Schedule, hw: HardwareConfig) -> float:
    """toolkit.family.flat_cycles of ``schedule``: its words counted by the census (or rendered)."""
    counted = tally(op, schedule, hw)
    words = counted[0].sum("words") if counted is not None else len(lower(op, schedule, hw).instructions)
    return flat_cycles(words, estimate_cycles(op, schedule, hw, counted[0].sum("computes") if counted else None), hw)


def knob_domains(op: Op, hw: HardwareConfig, tile_policy: str = "balanced") -> Domains:
    """The domains of ``op``'s knobs (no validity check): cheap, and the same for every workload of a
    kind, so string knobs encode alike across workloads."""
    return KINDS[op.KIND].knob_domains(op, hw, tile_policy)


def ideal_cycles(op: Op, hw: HardwareConfig) -> int:
    """Cycles of a perfectly fed ``dim x dim`` array: a GEMM's ceil-blocked MACs / dim^2; a conv's is its
    im2col GEMM's; a depthwise conv's its MACs over dim^2; 0 for ops without MACs."""
    return KINDS[op.KIND].ideal(op, hw)


def dram_cycles(op: Op, hw: HardwareConfig) -> int:
    """Cycles the one DMA port needs for the bytes every schedule must move, at a beat a cycle."""
    return -(-op.compulsory_bytes // hw.dma_beat_bytes)


def roofline_cycles(op: Op, hw: HardwareConfig) -> int:
    """A lower bound of every schedule's cycles: compute or DRAM, whichever bounds ``op``."""
    return max(ideal_cycles(op, hw), dram_cycles(op, hw))


def gemmini_schedule(op: Op, hw: HardwareConfig) -> Schedule:
    """The baseline (schedule="gemmini"): Gemmini's own library, a :class:`LibrarySchedule` whose
    program is gemmini.h's words (tiled_matmul_auto, tiled_conv_auto, tiled_conv_dw_auto,
    tiled_resadd_auto; see toolkit/library/). ScheduleError where gemmini.h cannot do ``op`` (an
    int32 conv or resadd, a non-square kernel); a kind it has no auto-tiler for (maxpool) gets the
    toolkit's heuristic."""
    kind = KINDS[op.KIND]
    return (kind.library or kind.default)(op, hw)


def gemmini_nn_schedule(op: Op, hw: HardwareConfig) -> Schedule:
    """schedule="gemmini-nn": gemmini.h's calls as Gemmini's own networks make them (gemmini-rocc-tests 180c468,
    imagenet/resnet50.c and mobilenet.c): a pointwise conv (1x1, stride 1, no padding, no pool) through
    tiled_matmul_nn_auto, the NHWC input as a matrix (toolkit/library/pointwise.py); anything else as
    :func:`gemmini_schedule`."""
    return tiled_matmul_nn_auto(op, hw) if is_pointwise(op) else gemmini_schedule(op, hw)


def gemmini_flat_schedule(op: Op, hw: HardwareConfig) -> Schedule:
    """schedule="gemmini-flat": the toolkit's earlier port of the library, tiles sized the way
    tiled_matmul_auto / tiled_conv_auto size them, in the toolkit's own instruction stream with a flat
    load-compute-store order per tile; a tunable schedule (knobs can be replaced), not Gemmini's words."""
    kind = KINDS[op.KIND]
    return (kind.flat or kind.default)(op, hw)


def schedule_from_dict(kind: str, knobs: Mapping[str, Any]) -> Schedule:
    """A record's schedule of an op of ``kind``: gemmini.h's loops where the dict names their ``call``, else
    the kind's flat schedule."""
    if is_library_spec(knobs):
        return library_class(knobs["call"]).from_dict(knobs)
    return KINDS[kind].schedule.from_dict(knobs)


# the tuner's families of schedules (tuner.space.Space's family): the toolkit's flat streams, gemmini.h's loops of
# the kind's library call, and of a pointwise conv tiled_matmul_nn_auto's (Kind.pointwise)
FAMILIES = ("flat", "loops", "pointwise")
# what tk.tune's family takes: a family, all of an op's in one space (tuner.union.UnionSpace), or the default's
TUNE_FAMILIES = ("auto", *FAMILIES, "both")


def is_library_spec(spec: Any) -> bool:
    """Whether a schedule spec is of gemmini.h's loops: a library schedule, or a dict naming its ``call``."""
    return isinstance(spec, LibrarySchedule) or (isinstance(spec, Mapping) and "call" in spec)


def loop_families(op: Op) -> dict[str, LoopFamily]:
    """``op``'s families of gemmini.h's loops by name: "loops" (the library's call) where the kind has them, and
    "pointwise" (tiled_matmul_nn_auto) for a pointwise conv."""
    kind = KINDS[op.KIND]
    families = {"loops": kind.loops, "pointwise": kind.pointwise if is_pointwise(op) else None}
    return {name: family for name, family in families.items() if family is not None}


def loop_kinds() -> list[str]:
    """The op kinds the tuner has a family of gemmini.h's loops of ("loops"), for the errors that name them."""
    return sorted(k for k, v in KINDS.items() if v.loops is not None)


def family_class(op: Op, family: str) -> type[Schedule]:
    """The schedule class of ``family`` for ``op``: the kind's own (flat) or a call of gemmini.h (loops,
    pointwise)."""
    if family not in FAMILIES:
        raise ValueError(f"family={family!r} is not one of {FAMILIES}")
    if family == "flat":
        return KINDS[op.KIND].schedule
    loops = loop_families(op)
    if family not in loops:
        raise ValueError(f"family={family!r}: the tuner has no loop schedules of {op.KIND} in that family (this "
                         f"op's: {sorted(loops) or 'none'}; 'loops' of the kinds "
                         f"{loop_kinds()}, 'pointwise' of 1x1 convs "
                         f"of stride 1 with no padding or pool)")
    return loops[family].schedule


def family_call(op: Op, hw: HardwareConfig, family: str) -> LibrarySchedule:
    """gemmini.h's own tiles of ``op`` in the loop family ``family`` (ScheduleError where the call cannot do
    ``op``)."""
    loops = loop_families(op)[family]
    return (loops.call or KINDS[op.KIND].library)(op, hw)


def default_family(op: Op, hw: HardwareConfig) -> str:
    """The tuner's family of ``op``'s default schedule: the loop family whose class the default is, else
    "flat"."""
    default = default_schedule(op, hw)
    return next((name for name, loops in loop_families(op).items() if type(default) is loops.schedule), "flat")


def schedule_class(op: Op, spec: Any) -> type[Schedule]:
    """The class a schedule spec for ``op`` loads as: a library schedule (an instance, or a dict that
    names gemmini.h's ``call``), else the kind's tunable schedule."""
    if isinstance(spec, LibrarySchedule):
        return type(spec)
    if is_library_spec(spec):
        return library_class(spec["call"])
    return KINDS[op.KIND].schedule


def _closed_form(op: Op, schedule: Schedule, what: str, dataflows: tuple[str, ...] = ("ws",)
                 ) -> Callable | None:
    """The kind's closed form ``what`` ("census", "tallies", "estimate" or "os_chains") where it covers ``schedule``:
    the kind's own tunable schedules in ``dataflows`` of ops without transposed operands or a fused pool;
    None for Gemmini's library words, another dataflow, those ops, or a kind without one."""
    kind = KINDS.get(op.KIND)
    if kind is None or not isinstance(schedule, kind.schedule) or getattr(schedule, "dataflow", "ws") not in dataflows:
        return None
    if getattr(op, "transpose_a", False) or getattr(op, "transpose_b", False) or getattr(op, "pool", None) \
            or getattr(op, "col_scaled", False) or getattr(op, "activation", "none") not in ("none", "relu"):
        # per-channel scales add words after rendering; the normalization unit's activations config_norm words
        return None
    return getattr(kind, what)


def census(op: Op, schedule: Schedule, hw: HardwareConfig) -> tuple[Census, dict] | None:
    """The instruction census of ``lower(op, schedule, hw)`` and its buffers, without rendering; None
    where no census covers the schedule (then render it). ScheduleError if it does not fit."""
    build = _closed_form(op, schedule, "census", ("ws", "os"))
    return None if build is None else build(op, schedule, hw)


def tally(op: Op, schedule: Schedule, hw: HardwareConfig) -> tuple[Tally, dict] | None:
    """The sums (toolkit/tally.py) of :func:`census`'s census and its buffers; None where no census covers
    the schedule. A kind with tallies of its own skips joining its classes' words."""
    build = _closed_form(op, schedule, "tallies", ("ws", "os"))
    if build is not None:
        return build(op, [schedule], hw)[0]
    counted = census(op, schedule, hw)
    return None if counted is None else (tally_of(counted[0], hw, counted[1]), counted[1])


def tallies(op: Op, schedules: Sequence[Schedule], hw: HardwareConfig) -> list[tuple[Tally, dict] | None]:
    """:func:`tally` of each of ``schedules``, those a kind's batched tally covers taken together (many of
    one candidate's classes are another's: each new one is found once)."""
    batched = [n for n, s in enumerate(schedules) if _closed_form(op, s, "tallies", ("ws", "os")) is not None]
    counted = dict(zip(batched, KINDS[op.KIND].tallies(op, [schedules[n] for n in batched], hw))) if batched else {}
    return [counted[n] if n in counted else tally(op, s, hw) for n, s in enumerate(schedules)]


def estimate_cycles(op: Op, schedule: Schedule, hw: HardwareConfig, n_computes: int | None = None) -> float | None:
    """The kind's analytical cycle estimate of ``schedule`` (closed form, any size); None where it has none.
    Output-stationary: the same tiles' weight-stationary estimate plus a cost per chain
    (toolkit.estimate.os_cycles); ``n_computes``, the computes of the schedule's census (:func:`census`)
    where the caller has it, gives the chains without building another."""
    est = _closed_form(op, schedule, "estimate", ("ws", "os"))
    chains = _closed_form(op, schedule, "os_chains", ("os",))
    if est is None or (schedule.dataflow == "os" and chains is None):
        return None
    if schedule.dataflow == "ws":
        return float(est(op, schedule, hw))
    ws = schedule.replace(dataflow="ws")
    return os_cycles(float(est(op, ws, hw)), chains(op, ws, hw, n_computes), hw.dim)


def lower(op: Op, schedule: Schedule, hw: HardwareConfig) -> Program:
    """Render ``op`` under ``schedule`` for ``hw``; ScheduleError before any instruction if it does not fit."""
    _check_lowering(op, schedule)
    col_scaled = getattr(op, "col_scaled", False)
    if isinstance(schedule, LibrarySchedule):
        prog, template = lower_library(op, schedule, hw), schedule.TEMPLATE
    else:
        prog, template = KINDS[op.KIND].lower(op, schedule, hw), f"{op.KIND}_ws.s.j2"
    if col_scaled:
        prog = load_column_scales(prog, op, hw)
    prog.meta.update(op=op.to_dict(), schedule=schedule.to_dict(), template=template)
    return prog


def _check_lowering(op: Op, schedule: Schedule) -> None:
    """ScheduleError for an op kind with no lowering, or per-channel scales under gemmini.h's loops."""
    if op.KIND not in KINDS:
        raise ScheduleError(f"no lowering for op kind {op.KIND!r}")
    if isinstance(schedule, LibrarySchedule) and getattr(op, "col_scaled", False):
        raise ScheduleError("scale: per-channel scales need the toolkit's own schedules, not gemmini.h's "
                            f"{schedule.CALL} (its loops store several column blocks under one config_st)")


def loop_groups(op: Op, schedule: LibrarySchedule, hw: HardwareConfig) -> tuple[Groups, Mapping[str, Buffer]]:
    """toolkit.family.program_groups of :func:`lower`'s program of gemmini.h's loops, and its buffers: from the
    tiles' words as arrays where the call lays them out so (toolkit.library.library_groups: the same groups
    without rendering a word a tile), else rendered. ScheduleError as :func:`lower` raises."""
    _check_lowering(op, schedule)
    grouped = library_groups(op, schedule, hw)
    if grouped is None:
        prog = lower(op, schedule, hw)
        return program_groups(prog), prog.buffers
    return grouped
