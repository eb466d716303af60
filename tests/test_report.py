"""The report core (toolkit/report.py): a value's text, the table, the CSV and the figure of every report."""
from __future__ import annotations

import csv
from dataclasses import dataclass

import pytest

from toolkit.report import Column, figure, fixed, format_table, label_rows, record_columns, show, write_csv


@dataclass
class Row:
    name: str
    cycles: int | None
    time_s: float | None
    ok: bool


ROWS = [Row("a", 1200, 0.00042, True), Row("bb", None, 1.5, False)]
COLUMNS = record_columns(Row, (Column("name", "layer", left=True), Column("cycles", "cycles"),
                               Column("time_s", "ms", fixed(1, times=1e3)), Column("ok", "ok")),
                         extra=(Column("double", get=lambda r: 2 * (r.cycles or 0)),))


def test_fixed_shows_none_truth_units_and_small_values() -> None:
    assert [show(v) for v in (None, True, False, 7, 0.5)] == ["-", "yes", "NO", "7", "0.500"]
    assert fixed(1, per=1e6, suffix="M")(123456789) == "123.5M"
    assert fixed(3)(0.00012) == "0.000" and fixed(3, small=True)(0.00012) == "0.00012"
    assert fixed(3, small=True)(0.0) == "0.000"


def test_table_aligns_names_left_and_numbers_right() -> None:
    assert format_table(COLUMNS, ROWS).splitlines() == [   # the CSV-only column "double" is not shown
        "layer  cycles      ms   ok",
        "-----  ------  ------  ---",
        "a        1200     0.4  yes",
        "bb          -  1500.0   NO"]


def test_csv_has_every_field_raw_then_the_extras(tmp_path) -> None:
    write_csv(COLUMNS, ROWS, tmp_path / "r.csv")
    rows = list(csv.reader(open(tmp_path / "r.csv")))
    assert rows == [["name", "cycles", "time_s", "ok", "double"], ["a", "1200", "0.00042", "True", "2400"],
                    ["bb", "", "1.5", "False", "0"]]
    with pytest.raises(ValueError, match="no fields of Row"):
        record_columns(Row, (Column("nope", "x"),))


def test_figure_saves_only_a_finished_plot(tmp_path) -> None:
    with figure(tmp_path / "f.png", 4, 3, panels=2) as axes:
        x = label_rows(axes[0], ["a", "b"])
        axes[0].bar(x, [1, 2])
    assert len(axes) == 2 and (tmp_path / "f.png").stat().st_size > 0
    with pytest.raises(RuntimeError), figure(tmp_path / "g.png", 4, 3):
        raise RuntimeError("drawing failed")
    assert not (tmp_path / "g.png").exists()
