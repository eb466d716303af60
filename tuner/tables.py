"""RTL ground-truth tables: every point of a (sub)space of one workload, measured on the Verilator RTL.

A table maps each schedule of ``Space(op, hw, domains=domains)`` to its RTL cycles
and status. It is tied to what produced it by :func:`source_hashes` (the RTL and
harness sources with the generated ISA enums, as the Verilator build cache hashes
them; the templates; the lowering code; the hardware config; the schedule's knobs):
loading a table whose hashes differ from the working tree's raises
:class:`StaleTable` naming the parts that changed, so a table never answers for
RTL or templates that did not produce it. A damaged file (bad JSON, missing
fields, rows that do not match their checksum or the space) raises
:class:`TableError`.

The file is JSON, one row per line: ``[knob values..., cycles or null, status]`` in
space order, plus a header with the workload, the hashes and a sha256 of the rows.
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from isa import HardwareConfig
from toolkit.kinds import KINDS
from toolkit.kinds import from_dict as op_from_dict
from toolkit.ops import Op

from .space import Space

FORMAT = "systolic-rtl-table/1"
ROOT = Path(__file__).resolve().parent.parent
# What turns a table's knobs into instruction words: every module of isa/ and of the core (toolkit/
# without its face: the package's __init__ and cli/). The templates are hashed on their own; the
# default-picking heuristics (each kind's heuristic.py), the tuner's knob domains (knobs.py) and the
# cycle bounds (bounds.py) are left out: a table's rows are explicit schedules and its header holds
# its domains, so a new default, domain or bound does not make it stale.
LOWERING_FOLDERS = ("isa", "toolkit")
NOT_LOWERING = ("toolkit/__init__.py", "toolkit/cli/", "heuristic.py", "knobs.py", "bounds.py")


def lowering_files() -> list[Path]:
    files = sorted(p for top in LOWERING_FOLDERS for p in (ROOT / top).rglob("*.py"))
    return [p for p in files if not any(part in p.relative_to(ROOT).as_posix() for part in NOT_LOWERING)]


class TableError(ValueError):
    """A table file that cannot be trusted: unreadable, damaged, or not matching its space."""


class StaleTable(TableError):
    """A table produced by other RTL, templates, lowering code, hardware config or knobs."""


def _digest(parts: Iterable[tuple[str, bytes]]) -> str:
    h = hashlib.sha256()
    for name, data in parts:
        h.update(name.encode() + b"\0" + data + b"\0")
    return h.hexdigest()[:16]


def _files(paths: Iterable[Path]) -> list[tuple[str, bytes]]:
    return [(p.relative_to(ROOT).as_posix(), p.read_bytes()) for p in paths if p.is_file()]


def source_hashes(op: Op, hw: HardwareConfig) -> dict[str, str]:
    """What a table's cycles depend on, one short hash per part (compared part by part on load)."""
    from simulators import rtl_codegen, verilator  # the sources the build cache keys on
    rtl = _files(verilator.sources()) + [(n, t.encode()) for n, t in sorted(rtl_codegen.isa_sources().items())]
    knobs = [(f.name, str(f.type).encode()) for f in fields(KINDS[op.KIND].schedule)]
    return {
        "rtl": _digest(rtl),
        "templates": _digest(_files(sorted((ROOT / "templates").glob("*.j2")))),
        "lowering": _digest(_files(lowering_files())),
        "hw": hw.config_hash(),
        "knobs": _digest(knobs),
    }


@dataclass
class Table:
    """Cycles (nan where a point did not measure ok) and status of every point of ``space``."""

    name: str
    op: Op
    hw: HardwareConfig
    domains: dict[str, list]          # the (sub)space: knob -> values, as given to Space
    cycles: np.ndarray                # per space point, float, nan unless status is "ok"
    status: list[str]
    hashes: dict[str, str]
    notes: dict[str, Any] = field(default_factory=dict)  # how the subspace was chosen and checked
    _space: Space | None = field(default=None, repr=False)

    @property
    def space(self) -> Space:
        if self._space is None:
            self._space = Space(self.op, self.hw, domains=self.domains)
        return self._space

    @property
    def best(self) -> float:
        return float(np.nanmin(self.cycles))

    def lookup(self, point: int) -> float:
        """Cycles of space point ``point`` (inf when it did not measure ok): the table as a backend."""
        c = self.cycles[point]
        return math.inf if math.isnan(c) else float(c)

    def cost(self) -> np.ndarray:
        """Cycles of every point with failures as inf, the array the search benchmarks index."""
        return np.where(np.isnan(self.cycles), np.inf, self.cycles)

    # ---- file -------------------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        rows = [json.dumps([*self.space.knobs(p).values(),
                            None if math.isnan(c) else int(c), s])
                for p, (c, s) in enumerate(zip(self.cycles.tolist(), self.status))]
        header = {"format": FORMAT, "name": self.name, "op": self.op.to_dict(), "hw": self.hw.as_dict(),
                  "domains": self.domains, "knobs": self.space.names, "hashes": self.hashes, "notes": self.notes,
                  "points": len(rows), "rows_sha256": hashlib.sha256("\n".join(rows).encode()).hexdigest()}
        text = json.dumps(header, sort_keys=True) + "\n" + "\n".join(rows) + "\n"
        path = Path(path)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text)
        tmp.replace(path)  # never a half-written table under the real name


# Over 40 lines: its checks in the order they can fail, each with its own message.
def load(path: str | Path, *, check_sources: bool = True) -> Table:
    """Read a table; TableError when the file is damaged, StaleTable when its sources changed."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
        header = json.loads(lines[0])
    except (OSError, UnicodeDecodeError, IndexError, json.JSONDecodeError) as exc:
        raise TableError(f"table {path.name}: cannot read it ({type(exc).__name__}: {exc})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise TableError(f"table {path.name}: not a {FORMAT} file (format {header.get('format')!r} "
                         if isinstance(header, dict) else f"table {path.name}: header is not an object")
    try:
        rows_text = lines[1:]
        if hashlib.sha256("\n".join(rows_text).encode()).hexdigest() != header["rows_sha256"]:
            raise TableError(f"table {path.name}: its rows do not match their checksum (edited or truncated); "
                             f"regenerate it with `make tables`")
        op = op_from_dict(header["op"])
        hw = HardwareConfig.from_dict(header["hw"])
        name, domains, knobs = header["name"], header["domains"], header["knobs"]
    except TableError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise TableError(f"table {path.name}: bad header ({type(exc).__name__}: {exc})") from None
    if check_sources:
        now = source_hashes(op, hw)
        changed = sorted(k for k in now if header["hashes"].get(k) != now[k])
        if changed:
            was = header.get("hashes", {})
            detail = ", ".join(f"{k} {was.get(k)} -> {now[k]}" for k in changed)
            raise StaleTable(f"table {path.name} ({name}) is stale: {', '.join(changed)} changed since it was "
                             f"measured ({detail}); regenerate it with `make tables`")
    table = Table(name, op, hw, domains, np.empty(0), [], header["hashes"], header.get("notes", {}))
    space = table.space
    if space.names != knobs or len(space) != header["points"] or len(rows_text) != len(space):
        raise TableError(f"table {path.name}: {len(rows_text)} rows over knobs {knobs}, but its space has "
                         f"{len(space)} points over {space.names}")
    cycles = np.full(len(space), np.nan)
    status: list[str] = []
    for p, line in enumerate(rows_text):
        row = json.loads(line)
        want = list(space.knobs(p).values())
        if row[:-2] != want or not isinstance(row[-1], str) or (row[-1] == "ok") != isinstance(row[-2], int):
            raise TableError(f"table {path.name}: row {p + 1} is {row}, expected knobs {want} then cycles, status")
        if row[-1] == "ok":
            cycles[p] = row[-2]
        status.append(row[-1])
    table.cycles, table.status = cycles, status
    if np.isnan(cycles).all():
        raise TableError(f"table {path.name}: no point measured ok")
    return table
