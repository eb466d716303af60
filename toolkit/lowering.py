"""What every kind's lowering shares: the Jinja environment over templates/, dim-wide blocks, interleaving.

A kind's lowering (``toolkit/<kind>/lowering.py``) walks its tile loops and decides
residency (which tile each double buffer holds); its template turns each tile into
instructions. The rendered assembly is parsed back, so what the templates emit is
exactly what runs.
"""
from __future__ import annotations

import functools
import itertools
import re
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, NamedTuple

import jinja2
import numpy as np

from isa import Buffer, layout
from isa.norm import IExpConsts, igelu_consts, softmax_consts

if TYPE_CHECKING:
    from .ops import Op

TEMPLATE_DIR = Path(__file__).resolve().parent.parent / "templates"


@functools.lru_cache(maxsize=4096)
def units(text: str) -> tuple[str, ...]:
    """Instruction lines of rendered text, each preload glued to the compute it feeds."""
    out: list[str] = []
    glue = False
    for line in text.split("\n"):
        if not line:
            continue
        if glue:
            out[-1] += "\n" + line
        else:
            out.append(line)
        glue = line.startswith("preload")
    return tuple(out)


@functools.lru_cache(maxsize=1 << 16)   # a pipeline's steps repeat their units (93% of calls on a conv)
def _weight(unit: str) -> int:
    """About how long a unit keeps its unit busy: a compute's rows (a row a cycle); an mvin's or mvout's
    rows times its 16-column pieces (a 16-byte beat, or a 16-wide block, a cycle)."""
    fields = dict(_FIELD.findall(unit))
    if "a_rows" in fields:
        return max(1, int(fields["a_rows"]))
    if "rows" in fields:
        return max(1, int(fields["rows"]) * -(-int(fields["cols"]) // 16))
    return 1


def interleave(body: str, extras: str, spread: float) -> str:
    """``body``'s instructions with ``extras``' spread over its first ``spread`` share, in proportion
    to time: each extra goes after the body unit by which that share of the body's computes (by
    rows) has gone as the extras up to it have of theirs (by rows times blocks), so that the first
    extras follow some computes already queued, and many short extras (stores of a few pixels) do
    not crowd a few long ones (a step's loads) into its end.

    An extra that computes (a depthwise diagonal being built) replaces the weights in the array, so
    extras wait, in order, for a point where the body loads new weights anyway: never before a
    ``compute_accumulated``, which reuses the weights already there."""
    extra = units(extras)
    if not extra:
        return body
    main = units(body)
    if not main:
        return "\n" + "\n".join(extra)
    body_time = list(itertools.accumulate(_weight(u) for u in main))
    extra_time = list(itertools.accumulate(_weight(u) for u in extra))
    scale = body_time[-1] * min(1.0, max(spread, 1.0 / len(main))) / extra_time[-1]
    out: list[str] = []
    e = 0
    for n, unit in enumerate(main, 1):
        out.append(unit)
        reuses = n < len(main) and "compute_accumulated" in main[n]
        while e < len(extra) and extra_time[e] * scale <= body_time[n - 1] + 1e-9:
            if reuses and "compute_" in extra[e]:
                break
            out.append(extra[e])
            e += 1
    out.extend(extra[e:])
    return "\n" + "\n".join(out)


def overlap_stores(stores: str, loads: str, computes: str) -> str:
    """A step's ``stores`` and the next step's ``loads``, the extras issued among ``computes``. Where
    they outlast the computes (by :func:`_weight`), the DMA port bounds the step: the loads into the
    scratchpad go in among the stores in proportion to time, so that the port's read and write sides
    stay busy together (stores first would starve the load unit for their whole run: 1.13x on a 1x1
    conv of 16 output channels). Elsewhere the stores go first, so that the next step's loads land
    early. Loads into the accumulator (bias, D) follow the last store either way, since they may
    refill the rows the stores read; loads and stores of different memories commute."""
    out, sp, acc = list(units(stores)), [], []
    for u in units(loads):
        (acc if "=acc[" in u else sp).append(u)
    if not out or not sp or sum(map(_weight, out + sp + acc)) <= sum(map(_weight, units(computes))):
        return stores + loads
    return interleave("\n".join(sp), "\n".join(out), 1.0) + "".join("\n" + u for u in acc)


_OPERAND = re.compile(r"\b(local|a|b|c|d)=(sp|acc)\[(\d+)\]")
_FIELD = re.compile(r"\b(rows|cols|a_rows|b_rows|c_rows|d_rows)=(\d+)")
_MVIN = re.compile(r"^(mvin[23]?|mvout) ")


def _footprint(unit: str, strides: Mapping[str, int], dim: int) -> list[tuple[int, int, int]]:
    """(memory, first row, end row) of every local row an instruction unit reads or writes (memory 0 the
    scratchpad, 1 the accumulator). An mvin of more than ``dim`` columns writes its blocks
    ``strides[mnemonic]`` rows apart (config_ld's block_stride), an mvout's blocks are ``dim`` apart;
    computes and preloads walk their rows one apart (the templates' config_ex a_stride = c_stride = 1)."""
    out = []
    for line in unit.split("\n"):
        fields = dict(_FIELD.findall(line))
        head = _MVIN.match(line)
        for name, mem, row in _OPERAND.findall(line):
            start, memory = int(row), int(mem == "acc")
            if head:
                rows, blocks = int(fields["rows"]), -(-int(fields["cols"]) // dim)
                step = dim if head.group(1) == "mvout" else strides[head.group(1)]
                out += [(memory, start + n * step, start + n * step + rows) for n in range(blocks)]
            else:
                out.append((memory, start, start + int(fields[f"{name}_rows"])))
    return out


# Over 40 lines: one pass whose steps share the first-use and placement arrays.
def need_ordered(loads: str, body: str, strides: Mapping[str, int], extras: str = "", spread: float = 1.0) -> str:
    """A software pipeline's first step: ``body``'s units with its own ``loads`` in among them (and then
    ``extras``, the next step's loads, as :func:`interleave` spreads them), so that its computes start
    once their own operands are in, not after all of the step's loads have been dispatched.

    The loads go in the order the body first touches what they write, each no later than just before
    that unit (loads that write the same rows keep their order), spread with ``extras`` evenly over
    the body (so that dispatch, in order, never stalls behind a burst of them). A load's rows count,
    as dispatch tracks them for hazards, from its first row to its last: a load after a compute that
    reads inside that range would wait for it. Program semantics are
    unchanged: no body unit before a load touches what it writes. Loads that compute (depthwise
    diagonals, which replace the weights in the array) keep the plain order. ``strides``: ``dim``
    and each mvin mnemonic's block stride (config_ld's)."""
    dim = strides["dim"]
    extra, main = units(loads), units(body)
    if not extra or not main or any("compute_" in u for u in extra):
        return loads + interleave(body, extras, spread)   # loads that compute (depthwise diagonals): plain order
    feet = [_footprint(u, strides, dim) for u in main]
    size = 1 + max((hi for f in feet for _, _, hi in f), default=0)
    size = max(size, 1 + max((hi for u in extra for _, _, hi in _footprint(u, strides, dim)), default=0))
    first = np.full((2, size), len(main), dtype=np.int64)   # the first body unit that touches each row
    for n in range(len(main) - 1, -1, -1):
        for memory, lo, hi in feet[n]:
            first[memory, lo:hi] = n
    placed = np.zeros((2, size), dtype=np.int64)   # the latest place of an earlier load that wrote each row
    place = []
    for u in extra:
        # dispatch tracks an instruction's rows as one range, from its first row to its last: a load
        # that goes after a compute reading inside that range waits for it
        spans = [(m, min(lo for m2, lo, _ in foot if m2 == m), max(hi for m2, _, hi in foot if m2 == m))
                 for foot in [[f for f in _footprint(u, strides, dim) if f[2] > f[1]]] for m in {f[0] for f in foot}]
        need = min((int(first[m, lo:hi].min()) for m, lo, hi in spans), default=len(main))
        need = max([need] + [int(placed[m, lo:hi].max()) for m, lo, hi in spans])
        for m, lo, hi in spans:
            np.maximum(placed[m, lo:hi], need, out=placed[m, lo:hi])
        place.append(need)
    order = sorted(range(len(extra)), key=lambda j: place[j])   # stable: ties keep their order
    # then the own loads (in that order) and ``extras``, one after each equal run of body units (by
    # count: these loads are alike), each own load no later than its first use
    merged = [extra[j] for j in order] + list(units(extras))
    span = max(1, min(len(main), round(spread * len(main))))
    at = [min(len(main), -(-(e + 1) * span // len(merged))) for e in range(len(merged))]
    for e, j in enumerate(order):
        at[e] = min(at[e], place[j])
    out, e = [], 0
    for n, unit in enumerate(main):
        while e < len(merged) and at[e] <= n:
            out.append(merged[e])
            e += 1
        out.append(unit)
    out.extend(merged[e:])
    return "\n" + "\n".join(out)


def clear_unit_caches() -> None:
    """Forget split and weighed instruction units (for cold-start measurements)."""
    units.cache_clear()
    _weight.cache_clear()


def op_buffers(op: "Op", scratch: tuple[tuple[str, str, tuple[int, ...]], ...] = ()) -> dict[str, Buffer]:
    """The DRAM buffers of ``op``'s program: its inputs, its outputs, then (name, dtype, shape) scratch."""
    specs = [(name, "input", dtype, shape) for name, (shape, dtype) in op.input_specs().items()]
    specs += [(name, "output", dtype, shape) for name, (shape, dtype) in op.output_specs().items()]
    specs += [(name, "scratch", dtype, shape) for name, dtype, shape in scratch]
    return layout(specs)


@functools.cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATE_DIR), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True, trim_blocks=False, autoescape=False)
    env.globals["interleave"] = interleave
    env.globals["need_ordered"] = need_ordered
    env.globals["overlap_stores"] = overlap_stores
    return env


def render(template: str, **context: object) -> str:
    return environment().get_template(template).render(**context)


def render_block(template: str, block: str, **context: object) -> str:
    """The text of one ``{% block %}`` of ``template`` alone."""
    t = environment().get_template(template)
    return "".join(t.blocks[block](t.new_context(context)))


def requant_fields(op: object) -> str:
    """The config_st fields of an op's output offset and uint8 range (the store unit's requantization
    extension) and of its per-channel scales (the column-scale extension), as assembly text after the scale;
    empty when the op needs none."""
    offset, uint8 = getattr(op, "out_offset", 0), getattr(op, "out_dtype", "") == "uint8"
    return ((f" out_offset={offset}" if offset else "") + (" out_uint8=1" if uint8 else "")
            + (" col_scales=1" if getattr(op, "col_scaled", False) else ""))


def norm_config(op: object) -> str:
    """The config_norm words of an op whose store activation is the normalization unit's I-GELU (its qb and qc)
    or softmax (I-exp's constants, the activation's high bit), as gemmini.h's tiled_matmul_outer computes them from
    bert_scale, as assembly lines; else empty."""
    act = getattr(op, "activation", "")
    if act == "igelu":
        return igelu_config(igelu_consts(op.input_scale))
    if act == "softmax":
        return softmax_config(softmax_consts(op.input_scale))
    return ""


def igelu_config(c: IExpConsts) -> str:
    """gemmini.h's config_norm word of IGELU: its qb and qc, as an assembly line."""
    return f"\nconfig_norm qb={c.qb} qc={c.qc}"


def softmax_config(c: IExpConsts) -> str:
    """gemmini.h's two config_norm words of SOFTMAX: I-exp's q_ln2 and q_ln2_inv, qb, qc, the activation's high
    bit; as assembly lines."""
    return "".join(f"\nconfig_norm q_const={q} q_const_type={t} act_msb=1 qb={c.qb} qc={c.qc}"
                   for t, q in enumerate((c.qln2, c.qln2_inv)))


class Block(NamedTuple):
    """One dim-wide slice of a tile (or a group of them): index in the tile, first element, extent."""

    idx: int
    start: int
    size: int
    first: bool


def blocks(tile: int, tile_size: int, extent: int, dim: int, group: int = 1) -> list[Block]:
    """Blocks (or groups of ``group`` blocks) of tile number ``tile`` along a dimension of ``extent``."""
    first = tile * tile_size * dim
    last = min(extent, first + tile_size * dim)
    step = group * dim
    return [Block(n * group, start, min(step, last - start), n == 0)
            for n, start in enumerate(range(first, last, step))]


