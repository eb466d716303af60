"""What every kind's lowering shares: the Jinja environment over templates/, dim-wide blocks, interleaving.

A kind's lowering (``toolkit/<kind>/lowering.py``) walks its tile loops and decides
residency (which tile each double buffer holds); its template turns each tile into
instructions. The rendered assembly is parsed back, so what the templates emit is
exactly what runs.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import NamedTuple

import jinja2

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


def interleave(body: str, extras: str, spread: float) -> str:
    """``body``'s instructions with ``extras``' spread over its first ``spread`` share: one extra after
    each equal run of body units, so that the first extras follow some computes already queued.

    An extra that computes (a depthwise diagonal being built) replaces the weights in the array, so
    extras wait, in order, for a point where the body loads new weights anyway: never before a
    ``compute_accumulated``, which reuses the weights already there."""
    extra = units(extras)
    if not extra:
        return body
    main = units(body)
    span = max(1, min(len(main), round(spread * len(main))))
    out: list[str] = []
    e = 0
    for n, unit in enumerate(main, 1):
        out.append(unit)
        reuses = n < len(main) and "compute_accumulated" in main[n]
        while e < len(extra) and (e + 1) * span <= n * len(extra):
            if reuses and "compute_" in extra[e]:
                break
            out.append(extra[e])
            e += 1
    out.extend(extra[e:])
    return "\n" + "\n".join(out)


@functools.cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATE_DIR), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True, trim_blocks=False, autoescape=False)
    env.globals["interleave"] = interleave
    return env


def render(template: str, **context: object) -> str:
    return environment().get_template(template).render(**context)


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


