"""Runs on one tuning database at once share its budget: candidates are claimed in the database
before they are measured, so two runs never measure one candidate twice nor exceed the budget."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import toolkit as tk
from tuner.claims import new_owner, owner_alive
from tuner.database import Database, Record
from tuner.space import Space

TINY = tk.HardwareConfig.preset("tiny")
OP = tk.matmul(8, 8, 16, bias="row")
ROOT = Path(__file__).resolve().parent.parent
SCOPE = (OP.key, TINY.config_hash(), "stand-in")

SCRIPT = ROOT / "tests" / "tune_process.py"


@pytest.mark.slow   # two tuning subprocesses each: about 8 s
@pytest.mark.parametrize("seeds", [(0, 0), (0, 1)], ids=["same seed", "different seeds"])
def test_two_processes_share_one_budget(tmp_path: Path, seeds: tuple[int, int]) -> None:
    db, barrier = tmp_path / "tuning.db", tmp_path / "barrier"
    barrier.mkdir()
    procs = [subprocess.Popen([sys.executable, str(SCRIPT), str(db), "24", "1", str(seed), str(barrier)],
                              stdout=subprocess.PIPE, text=True) for seed in seeds]
    reports = []
    for proc in procs:
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0
        reports.append(json.loads(out.strip().splitlines()[-1]))
    recs = Database(db).records()
    assert len(recs) == 24, "the budget holds across processes"
    assert len({json.dumps(r.schedule, sort_keys=True) for r in recs}) == 24
    assert sum(r["measured_now"] for r in reports) == 24, f"a candidate was measured twice: {reports}"
    assert all(r["measured_now"] > 0 for r in reports), reports   # both did work
    assert all(r["trials"] == 24 for r in reports), reports       # each waited for the other's in-flight ones
    assert Database(db).claimed(*SCOPE) == 0


def _record(schedule: dict) -> Record:
    return Record(OP.key, OP.to_dict(), TINY.config_hash(), TINY.as_dict(), "stand-in", schedule, 100, "ok")


def _dead_owner() -> str:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return f"{socket.gethostname()}:{int(proc.stdout)}:12345:deadbeef"


def test_claims_count_against_the_budget_and_die_with_their_process(tmp_path: Path) -> None:
    space = Space(OP, TINY)
    schedules = [space[i] for i in range(6)]
    db = Database(tmp_path / "t.db")
    me, other = new_owner(), new_owner()
    assert owner_alive(me) and not owner_alive(_dead_owner())
    assert not owner_alive(me.replace(f":{os.getpid()}:", ":1:")), "a reused pid with another start time is gone"
    assert db.add(_record(schedules[0].to_dict()))
    # recorded ones are taken; the budget of 4 leaves 3 after the record
    assert db.claim(*SCOPE, schedules[:5], 4, other) == ([1, 2, 3], [0])
    assert db.claimed(*SCOPE) == 3
    assert db.claim(*SCOPE, schedules, 6, me) == ([4, 5], [0, 1, 2, 3])
    assert db.claim(*SCOPE, schedules[5:], 10, me) == ([], [0]), "one's own claim is not claimed again"
    # recording a claimed schedule drops its claim; releasing drops the rest
    assert db.add(_record(schedules[4].to_dict())) and db.claimed(*SCOPE) == 4
    db.release(me)
    assert db.claimed(*SCOPE) == 3
    # claims of a killed run are stale
    db.conn.execute("UPDATE claims SET owner = ?", (_dead_owner(),))
    assert db.claimed(*SCOPE) == 0
    assert db.claim(*SCOPE, schedules, 6, me) == ([1, 2, 3, 5], [0, 4])
