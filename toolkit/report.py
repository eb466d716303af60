"""The one report core of ``systolic bench``, ``net`` and ``profile``: columns, the table, the CSV, the figure.

A report is a sequence of :class:`Column` over rows of any type (a dataclass, a tuple). The CSV
has every column, raw; the table only those with a header, formatted. It lives in the core,
not with the networks, because ``toolkit.profile`` (the core) prints a table too.
"""
from __future__ import annotations

import csv

from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

Format = Callable[[Any], str]


def fixed(digits: int = 3, times: float = 1, per: float = 1, suffix: str = "", small: bool = False) -> Format:
    """Text of a value: "-" for None, yes/NO for a truth value, a float (``value * times / per``: the unit
    shown) to ``digits`` places, then ``suffix``; with ``small``, a nonzero float under 1e-3 to ``digits``
    significant digits, so that a small deviation does not print as zero."""
    def text(value: Any) -> str:
        if value is None:
            return "-"
        if isinstance(value, bool):
            return "yes" if value else "NO"
        if times != 1 or per != 1:
            value = value * times / per
        if isinstance(value, float):
            spec = "g" if small and value and abs(value) < 1e-3 else "f"
            return f"{value:.{digits}{spec}}{suffix}"
        return f"{value}{suffix}"
    return text


show = fixed()   # the default: three places


@dataclass(frozen=True)
class Column:
    name: str                                  # the CSV's heading and, without ``get``, the row's attribute
    header: str = ""                           # the table's heading; none: the column is in the CSV only
    fmt: Format = show                         # the table's text of a value
    left: bool = False                         # names read better aligned left, numbers right
    get: Callable[[Any], Any] | None = None    # the value, where it is not the attribute ``name``

    def value(self, row: Any) -> Any:
        return self.get(row) if self.get is not None else getattr(row, self.name)


def record_columns(record: type, shown: Sequence[Column], extra: Sequence[Column] = (),
                   skip: Sequence[str] = ()) -> tuple[Column, ...]:
    """A column per field of the dataclass ``record`` (those in ``shown`` as given there), then ``extra``:
    the CSV follows the record as it grows."""
    by_name = {c.name: c for c in shown}
    names = [f.name for f in fields(record) if f.name not in skip]
    if unknown := set(by_name) - set(names):
        raise ValueError(f"columns {sorted(unknown)} are no fields of {record.__name__}")
    return tuple(by_name.get(n, Column(n)) for n in names) + tuple(extra)


def format_table(columns: Sequence[Column], rows: Sequence[Any]) -> str:
    """The columns with a header, a line each row, under a rule; widths fit the widest cell."""
    shown = [c for c in columns if c.header]
    cells = [[c.header for c in shown]] + [[c.fmt(c.value(r)) for c in shown] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(shown))]
    lines = ["  ".join(text.ljust(w) if c.left else text.rjust(w) for c, text, w in zip(shown, row, widths))
             for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def write_csv(columns: Sequence[Column], rows: Sequence[Any], path: str | Path) -> None:
    """Every column, raw values (an empty cell for None), one line per row."""
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow([c.name for c in columns])
        writer.writerows([c.value(r) for c in columns] for r in rows)


@contextmanager
def figure(path: str | Path, width: float, height: float, panels: int = 1) -> Iterator[list[Any]]:
    """The axes of a figure of ``panels`` stacked plots, saved to ``path`` when the block ends without
    an error; the Agg backend draws it without a display."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(panels, 1, figsize=(width, height), squeeze=False)
    try:
        yield [row[0] for row in axes]
        fig.tight_layout()
        fig.savefig(path, dpi=120)
    finally:
        plt.close(fig)


def label_rows(ax: Any, names: Sequence[str], rotation: float = 75, fontsize: float = 7, ha: str = "right"
               ) -> np.ndarray:
    """Name each row's bar on the x axis; returns the bars' positions."""
    x = np.arange(len(names))
    ax.set_xticks(x, list(names), rotation=rotation, ha=ha, fontsize=fontsize)
    return x
