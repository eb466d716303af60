"""``schedule="gemmini"``: Gemmini's own library, word for word.

gemmini.h's auto-tilers (tiled_matmul_auto, tiled_conv_auto, tiled_conv_dw_auto, tiled_resadd_auto)
choose the tiles with its own arithmetic, and its tiled functions issue a few config words, then per
tile the LOOP_WS or LOOP_CONV_WS words, which the loop unrollers expand as Gemmini's hardware does.
Each module here ports one of them (its auto-tiler is the op kind's ``library`` in toolkit.kinds);
Python computes every word's values, a template (``LibrarySchedule.TEMPLATE``) lays them out as
assembly, and the assembly is parsed back. The tuner's features take the same values as arrays instead
(:func:`library_groups`), with no text.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

from isa import Buffer, HardwareConfig, Program, parse_program
from isa.loop_groups import CONV, WS, LoopKind, groups_from_fields
from isa.loop_unroll import Groups

from ..lowering import op_buffers, render, render_block, requant_fields
from ..ops import Op
from ..schedule import ScheduleError
from .conv import conv_context, conv_fields, conv_head, conv_loop_words, tiled_conv_auto
from .conv_pool import lower_unfused_pool
from .depthwise import depthwise_context, depthwise_fields, depthwise_head, tiled_conv_dw_auto
from .knobs import (LIBRARY_CONV_FIT, LIBRARY_DEPTHWISE_FIT, LIBRARY_MATMUL_FIT, LIBRARY_RESADD_FIT,
                    library_conv_domains, library_depthwise_domains, library_matmul_domains, library_resadd_domains,
                    pointwise_domains)
from .matmul import matmul_columns, matmul_context, matmul_head, tiled_matmul_auto
from .norm import norm_context, tiled_norm_auto
from .pointwise import pointwise_columns, pointwise_context, pointwise_head, tiled_matmul_nn_auto
from .resadd import resadd_columns, resadd_context, resadd_head, tiled_resadd_auto
from .schedule import (CALLS, LibraryConv, LibraryDepthwise, LibraryMatmul, LibraryNorm, LibraryPointwise,
                       LibraryResAdd, LibrarySchedule, is_pointwise, library_class)
from .words import loop_columns

# schedule class -> the template context of its words
CONTEXTS: dict[type[LibrarySchedule], Callable[[Any, Any, HardwareConfig], dict[str, Any]]] = {
    LibraryMatmul: matmul_context, LibraryPointwise: pointwise_context, LibraryConv: conv_context,
    LibraryDepthwise: depthwise_context, LibraryResAdd: resadd_context, LibraryNorm: norm_context}


def check_library(op: Op, s: LibrarySchedule, hw: HardwareConfig) -> None:
    """ScheduleError unless gemmini.h's assertions hold for ``s``'s tiles of ``op`` (checked as its words are
    laid out, without rendering them)."""
    CONTEXTS[type(s)](op, s, hw)


class LoopCall(NamedTuple):
    """A library call whose loops :func:`library_groups` takes without rendering a word a tile: the template's
    context but the tiles' words, every field of the tiles' words (toolkit.library.conv.Addresses for a DRAM
    address), and the kind of loop (isa.loop_groups)."""
    head: Callable[..., dict[str, Any]]
    fields: Callable[..., dict[str, Any]]
    kind: LoopKind


LOOP_CALLS: dict[type[LibrarySchedule], LoopCall] = {
    LibraryConv: LoopCall(conv_head, conv_fields, CONV),
    LibraryDepthwise: LoopCall(depthwise_head, depthwise_fields, CONV),
    LibraryMatmul: LoopCall(matmul_head, matmul_columns, WS),
    LibraryPointwise: LoopCall(pointwise_head, pointwise_columns, WS),
    LibraryResAdd: LoopCall(resadd_head, resadd_columns, WS)}


def _check_call(op: Op, s: LibrarySchedule) -> None:
    if s.OP != op.KIND:
        raise ScheduleError(f"{s.describe()} is gemmini.h's call for a {s.OP}, not a {op.KIND}")


def lower_library(op: Op, s: LibrarySchedule, hw: HardwareConfig) -> Program:
    """Render gemmini.h's words for ``op`` under ``s``; the DRAM buffers are the op's inputs, then outputs."""
    _check_call(op, s)
    if not getattr(op, "pool_pads_as_onnx", True):
        return lower_unfused_pool(op, s, hw)
    return parse_program(render(s.TEMPLATE, requant=requant_fields(op), **CONTEXTS[type(s)](op, s, hw)), hw,
                         op_buffers(op))


def library_groups(op: Op, s: LibrarySchedule, hw: HardwareConfig) -> tuple[Groups, dict[str, Buffer]] | None:
    """The groups of alike loops of :func:`lower_library`'s program (toolkit.family.program_groups's, array for
    array) and its buffers, from the tiles' words as arrays (isa.loop_groups): no word of a tile rendered. None
    where the call has no such arrays (a LayerNorm's, a conv whose pool runs apart); ScheduleError or ISAError
    as lowering would raise."""
    _check_call(op, s)
    call = LOOP_CALLS.get(type(s))
    if call is None or not getattr(op, "pool_pads_as_onnx", True):
        return None
    s.memory_plan(hw, op)
    context, buffers = dict(call.head(op, s, hw), requant=requant_fields(op)), op_buffers(op)
    plain = [parse_program(render_block(s.TEMPLATE, block, **context), hw, buffers).instructions
             for block in ("head", "tail")]
    fields = loop_columns(call.fields(op, s, hw), buffers)
    regions = sorted(b.addr for b in buffers.values())
    return groups_from_fields(call.kind, plain[0], fields, plain[1], hw, regions), buffers


__all__ = ["CALLS", "check_library", "conv_loop_words", "is_pointwise", "LIBRARY_CONV_FIT", "LIBRARY_DEPTHWISE_FIT",
           "LIBRARY_MATMUL_FIT", "LIBRARY_RESADD_FIT", "library_conv_domains", "library_depthwise_domains",
           "library_matmul_domains", "library_resadd_domains", "LibraryConv", "pointwise_domains",
           "LibraryDepthwise", "LibraryMatmul", "LibraryNorm", "LibraryPointwise", "LibraryResAdd",
           "LibrarySchedule", "library_class", "library_groups", "lower_library", "tiled_conv_auto",
           "tiled_conv_dw_auto", "tiled_matmul_auto", "tiled_matmul_nn_auto", "tiled_norm_auto", "tiled_resadd_auto"]
