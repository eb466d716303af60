"""``schedule="gemmini"``: Gemmini's own library, word for word.

gemmini.h's auto-tilers (tiled_matmul_auto, tiled_conv_auto, tiled_conv_dw_auto, tiled_resadd_auto)
choose the tiles with its own arithmetic, and its tiled functions issue a few config words, then per
tile the LOOP_WS or LOOP_CONV_WS words, which the loop unrollers expand as Gemmini's hardware does.
Each module here ports one of them (its auto-tiler is the op kind's ``library`` in toolkit.kinds);
Python computes every word's values, a template (``LibrarySchedule.TEMPLATE``) lays them out as
assembly, and the assembly is parsed back.
"""
from __future__ import annotations

from typing import Any, Callable

from isa import Buffer, HardwareConfig, Program, parse_program
from isa.loop_groups import conv_groups
from isa.loop_unroll import Groups

from ..lowering import op_buffers, render, render_block, requant_fields
from ..ops import Op
from ..schedule import ScheduleError
from .conv import conv_columns, conv_context, conv_head, conv_loop_words, loop_columns, tiled_conv_auto
from .conv_pool import lower_unfused_pool
from .depthwise import depthwise_columns, depthwise_context, depthwise_head, tiled_conv_dw_auto
from .knobs import (LIBRARY_CONV_FIT, LIBRARY_DEPTHWISE_FIT, LIBRARY_MATMUL_FIT, LIBRARY_RESADD_FIT,
                    library_conv_domains, library_depthwise_domains, library_matmul_domains, library_resadd_domains)
from .matmul import matmul_context, tiled_matmul_auto
from .norm import norm_context, tiled_norm_auto
from .resadd import resadd_context, tiled_resadd_auto
from .schedule import (CALLS, LibraryConv, LibraryDepthwise, LibraryMatmul, LibraryNorm, LibraryResAdd,
                       LibrarySchedule, library_class)

# schedule class -> the template context of its words
CONTEXTS: dict[type[LibrarySchedule], Callable[[Any, Any, HardwareConfig], dict[str, Any]]] = {
    LibraryMatmul: matmul_context, LibraryConv: conv_context, LibraryDepthwise: depthwise_context,
    LibraryResAdd: resadd_context, LibraryNorm: norm_context}


def check_library(op: Op, s: LibrarySchedule, hw: HardwareConfig) -> None:
    """ScheduleError unless gemmini.h's assertions hold for ``s``'s tiles of ``op`` (checked as its words are
    laid out, without rendering them)."""
    CONTEXTS[type(s)](op, s, hw)


# schedule class -> the template's context but the tiles' words, and the tiles' words as arrays: the calls whose
# loops library_groups takes without rendering a word a tile
COLUMNS: dict[type[LibrarySchedule], tuple[Callable[..., dict[str, Any]], Callable[..., dict[str, Any]]]] = {
    LibraryConv: (conv_head, conv_columns), LibraryDepthwise: (depthwise_head, depthwise_columns)}


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
    where the call has no such arrays (a matmul, a resadd, a conv whose pool runs apart); ScheduleError or
    ISAError as lowering would raise."""
    _check_call(op, s)
    if type(s) not in COLUMNS or not getattr(op, "pool_pads_as_onnx", True):
        return None
    head, columns = COLUMNS[type(s)]
    s.memory_plan(hw, op)
    context, buffers = dict(head(op, s), requant=requant_fields(op)), op_buffers(op)
    plain = [parse_program(render_block(s.TEMPLATE, block, **context), hw, buffers).instructions
             for block in ("head", "tail")]
    fields = {**vars(context["fixed"]), **loop_columns(columns(op, s, hw), buffers)}
    groups = conv_groups(plain[0], fields, plain[1], hw, sorted(b.addr for b in buffers.values()))
    return groups, buffers


__all__ = ["CALLS", "check_library", "conv_loop_words", "LIBRARY_CONV_FIT", "LIBRARY_DEPTHWISE_FIT",
           "LIBRARY_MATMUL_FIT", "LIBRARY_RESADD_FIT", "library_conv_domains", "library_depthwise_domains",
           "library_matmul_domains", "library_resadd_domains", "LibraryConv",
           "LibraryDepthwise", "LibraryMatmul", "LibraryNorm", "LibraryResAdd", "LibrarySchedule",
           "library_class", "library_groups", "lower_library", "tiled_conv_auto", "tiled_conv_dw_auto",
           "tiled_matmul_auto", "tiled_norm_auto", "tiled_resadd_auto"]
