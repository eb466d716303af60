"""RTL ground-truth tables (benchmarks/tables/): current with the sources, re-measured on a sample, and
refused with a clear error when damaged or produced by other sources; the stand-in checked against them."""
from __future__ import annotations

import hashlib
import json
import zlib
from pathlib import Path

import numpy as np
import pytest

from toolkit.kinds import lower
from tuner.measure import run_candidate
from tuner.model import spearman
from simulators.stand_in import estimate
from tuner.tables import StaleTable, TableError, load

TABLES = sorted((Path(__file__).resolve().parent.parent / "benchmarks" / "tables").glob("*.json"))
SMALLEST = min(TABLES, key=lambda p: p.stat().st_size) if TABLES else None
# the stand-in's Spearman against the RTL measured 0.82-0.98 over whole tables (bench_tuner_tables.py
# --part stand-in) and 0.89-0.98 on this test's 24-point samples of the tiny ones; its median error is
# 9-59% (it ranks, it does not predict). Below 0.8 it no longer ranks well enough to stand in for the RTL.
STAND_IN_MIN_SPEARMAN = 0.8
REMEASURE_TIMEOUT_S = 120.0   # wall clock per re-measured point


def test_tables_exist() -> None:
    assert len(TABLES) >= 8, "benchmarks/tables/ should hold the 8 RTL tables: run `make tables`"


@pytest.mark.parametrize("path", TABLES, ids=lambda p: p.stem)
def test_table_is_current_and_remeasures(path: Path, verilator_ok: None) -> None:
    """Hashes match the working tree (else StaleTable names what changed), and a few points, the best
    among them, measure on the RTL now exactly what the table says."""
    try:
        table = load(path)
    except StaleTable as exc:
        pytest.fail(str(exc))
    ok = np.flatnonzero(np.isfinite(table.cost()))
    rng = np.random.default_rng(zlib.crc32(path.stem.encode()))
    picks = {int(np.nanargmin(table.cycles)), *rng.choice(ok, 2 if table.hw.name == "tiny" else 1).tolist()}
    for p in sorted(picks):
        knobs = table.space.knobs(p)
        res = run_candidate(table.op.to_dict(), table.hw.as_dict(), knobs, "verilator", REMEASURE_TIMEOUT_S)
        if res.status == "timeout":   # the picks measured ok: a loaded machine, not a stale table
            pytest.fail(f"table {path.name}: point {p} {knobs} timed out on the RTL ({res.error}; the "
                        f"limit is {REMEASURE_TIMEOUT_S:g} s of wall clock), so it was not compared")
        assert (res.status, res.cycles) == (table.status[p], int(table.cycles[p])), (
            f"table {path.name} is stale: point {p} {knobs} measures {res.status} {res.cycles} cycles on the "
            f"RTL now, the table says {table.status[p]} {table.cycles[p]:.0f}; regenerate it with `make tables`")


def _edit(tmp_path: Path, change) -> Path:
    lines = SMALLEST.read_text().splitlines()
    header = json.loads(lines[0])
    change(header, lines)
    out = tmp_path / SMALLEST.name
    out.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    return out


@pytest.mark.skipif(not TABLES, reason="no tables")
def test_table_from_other_sources_is_refused(tmp_path: Path) -> None:
    def other_rtl(header, lines):
        header["hashes"]["rtl"] = "0" * 16
        header["hashes"]["templates"] = "1" * 16
    with pytest.raises(StaleTable, match=rf"{SMALLEST.name}.*stale: rtl, templates changed"):
        load(_edit(tmp_path, other_rtl))


@pytest.mark.skipif(not TABLES, reason="no tables")
def test_damaged_tables_are_refused(tmp_path: Path) -> None:
    text = SMALLEST.read_text()
    bad = tmp_path / SMALLEST.name
    bad.write_text(text[: len(text) // 2])              # truncated
    with pytest.raises(TableError, match="checksum"):
        load(bad)
    bad.write_text(text.replace(', "ok"]', ', "ok"] ', 1))  # one row edited, checksum left as it was
    with pytest.raises(TableError, match="checksum"):
        load(bad)
    bad.write_text("not json\n" + text)
    with pytest.raises(TableError, match="cannot read"):
        load(bad)
    bad.write_text("")
    with pytest.raises(TableError, match="cannot read"):
        load(bad)

    def new_cycles(header, lines):                      # an edited row, checksum recomputed by hand
        row = json.loads(lines[1])
        row[-2], row[-1] = None, "ok"
        lines[1] = json.dumps(row)
        header["rows_sha256"] = hashlib.sha256("\n".join(lines[1:]).encode()).hexdigest()
    with pytest.raises(TableError, match="row 1 is"):
        load(_edit(tmp_path, new_cycles))

    def other_space(header, lines):
        header["domains"]["spread"] = [1.0]
    with pytest.raises(TableError, match="rows over knobs"):
        load(_edit(tmp_path, other_space))


@pytest.mark.slow
@pytest.mark.skipif(not TABLES, reason="no tables")
def test_stand_in_ranks_like_the_rtl() -> None:
    """The stand-in analytical model over 24 random weight-stationary points of each tiny table: Spearman
    against the RTL cycles at least STAND_IN_MIN_SPEARMAN on every one. (The stand-in models WS only: with
    the tables' OS points in the draw it measured 0.61 on conv_6x6x8_16_s2_bias_tiny.)"""
    for path in TABLES:
        table = load(path, check_sources=False)
        if table.hw.name != "tiny":
            continue
        ws = [getattr(table.space[i], "dataflow", "ws") == "ws" for i in range(len(table.space))]
        ok = np.flatnonzero(np.isfinite(table.cost()) & np.array(ws))
        picks = np.random.default_rng(0).choice(ok, min(24, len(ok)), replace=False)
        est = [estimate(lower(table.op, table.space[int(p)], table.hw))[0] for p in picks]
        rho = spearman(np.array(est), table.cycles[picks])
        assert rho >= STAND_IN_MIN_SPEARMAN, f"stand-in Spearman {rho:.2f} on {path.stem}"


def test_search_cycles_leave_out_the_seeded_default(tiny) -> None:
    """TuneResult reports the search's own best beside the tuned best, which includes the default."""
    import toolkit as tk
    from tuner.results import Trial, TuneResult
    from tuner.space import Space
    op = tk.matmul(16, 16, 16)
    space = Space(op, tiny)
    default = space.default.to_dict()
    other = space.knobs(0 if space.index_of(default) else 1)
    history = [Trial(1, default, "ok", 100, 100.0), Trial(2, other, "ok", 120, 100.0),
               Trial(3, other, "error", None, 100.0)]
    res = TuneResult(op, tiny, "stand-in", "model", space.default, 100, space.default, 100, history)
    assert (res.cycles, res.search_cycles) == (100, 120)
    assert "search   120 cycles" in res.summary()
