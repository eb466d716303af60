"""Knob domains: the values the tuner may give each field of a kind's schedule.

Each kind's row in :data:`toolkit.kinds.KINDS` names its domain function (``domains``) and the
knobs its ``memory_plan`` reads (``fit_knobs``); the helpers every tiled kind shares live here.
A kind without a domain function gets :func:`perturbed_domains` of its default schedule.
"""
from __future__ import annotations

from isa import HardwareConfig
from isa.checker import transpose_error

from .schedule import DATAFLOWS, Schedule

Domains = dict[str, list]

TILE_POLICIES = ("balanced", "all", "pow2")


def tile_values(extent: int, policy: str = "balanced") -> list[int]:
    """Candidate tile sizes (in dim blocks) for a dimension of ``extent`` blocks.

    "balanced" keeps, for each tile count n, only the smallest tile giving n
    tiles, ceil(extent / n): larger ones only make the last tile ragged.
    """
    if policy == "all":
        return list(range(1, extent + 1))
    if policy == "pow2":
        return sorted({min(1 << p, extent) for p in range(extent.bit_length() + 1)})
    if policy == "balanced":
        return sorted({-(-extent // n) for n in range(1, extent + 1)})
    raise ValueError(f"tile_policy={policy!r} is not one of {TILE_POLICIES}")


def pipeline_domains() -> Domains:
    """The software-pipeline knobs every tiled op shares. Single buffering is left out: it cannot
    pipeline, and with the pipeline double buffering won on every workload we measured."""
    return {"double_buffer": [True], "load_ahead": [0, 1], "store_delay": [0, 1], "spread": [0.25, 0.5, 1.0],
            "split_buffers": [False, True]}


def legal_dataflows(hw: HardwareConfig, transposes: tuple[bool, bool] = (False, False)) -> list[str]:
    """The dataflows the hardware has and the op's transposed operands (A, B) allow."""
    return [d for d in DATAFLOWS if hw.has_dataflow(d) and not transpose_error(d, *transposes)]


def perturbed_domains(default: Schedule) -> Domains:
    """Domains around a kind's default schedule, for kinds without a domain function of their own.

    Ints range over powers of two up to 4x the default, bools over both values;
    other knobs stay at the default (their choices are not known here).
    """
    out: Domains = {}
    for name, value in default.to_dict().items():
        if isinstance(value, bool):
            out[name] = [False, True]
        elif isinstance(value, int) and value >= 1:
            out[name] = sorted({1 << p for p in range((4 * value).bit_length())} | {value})
        else:
            out[name] = [value]
    return out
