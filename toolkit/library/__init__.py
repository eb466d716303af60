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

from isa import HardwareConfig, Program, layout, parse_program

from ..lowering import render, requant_fields
from ..ops import Op
from ..schedule import ScheduleError
from .conv import conv_context, conv_loop_words, tiled_conv_auto
from .conv_pool import lower_unfused_pool
from .depthwise import depthwise_context, tiled_conv_dw_auto
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


def lower_library(op: Op, s: LibrarySchedule, hw: HardwareConfig) -> Program:
    """Render gemmini.h's words for ``op`` under ``s``; the DRAM buffers are the op's inputs, then outputs."""
    if s.OP != op.KIND:
        raise ScheduleError(f"{s.describe()} is gemmini.h's call for a {s.OP}, not a {op.KIND}")
    if not getattr(op, "pool_pads_as_onnx", True):
        return lower_unfused_pool(op, s, hw)
    specs = [(name, "input", dtype, shape) for name, (shape, dtype) in op.input_specs().items()]
    specs += [(name, "output", dtype, shape) for name, (shape, dtype) in op.output_specs().items()]
    return parse_program(render(s.TEMPLATE, requant=requant_fields(op), **CONTEXTS[type(s)](op, s, hw)), hw,
                         layout(specs))


__all__ = ["CALLS", "check_library", "conv_loop_words", "LIBRARY_CONV_FIT", "LIBRARY_DEPTHWISE_FIT",
           "LIBRARY_MATMUL_FIT", "LIBRARY_RESADD_FIT", "library_conv_domains", "library_depthwise_domains",
           "library_matmul_domains", "library_resadd_domains", "LibraryConv",
           "LibraryDepthwise", "LibraryMatmul", "LibraryNorm", "LibraryResAdd", "LibrarySchedule",
           "library_class", "lower_library", "tiled_conv_auto", "tiled_conv_dw_auto", "tiled_matmul_auto",
           "tiled_norm_auto", "tiled_resadd_auto"]
