"""Tuner measurement and records: failures are recorded and skipped, a killed run resumes, JSONL round trips."""
from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

import toolkit as tk
from isa import Program
from simulators.base import RunResult
from tuner.api import tune
from tuner.database import Database, Record, best_schedule
from tuner.measure import Measurer
from tuner.space import Space
from simulators.stand_in import run as stand_in_run
from tuner import transfer

TINY = tk.HardwareConfig.preset("tiny")
ROOT = Path(__file__).resolve().parent.parent
OP = tk.matmul(8, 8, 16, bias="row")


def flaky_backend(program: Program, inputs: dict, **_: object) -> RunResult:
    """Stand-in cycles, except: tile_i=1 kills the process, tile_j=1 and tile_k=1 raise or hang, mvin_blocks=1
    with double buffering corrupts the output."""
    knobs = program.meta["schedule"]
    if knobs["tile_i"] == 1 and knobs["tile_j"] == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    if knobs["tile_i"] == 2 and knobs["tile_j"] == 1 and knobs["tile_k"] == 1:
        time.sleep(60)
    if knobs["tile_k"] == 1:
        raise RuntimeError("simulated simulator failure")
    res = stand_in_run(program, inputs)
    if knobs["mvin_blocks"] == 1 and knobs["double_buffer"]:
        res.outputs["C"] = res.outputs["C"] + np.int8(1)
    return res


@pytest.mark.slow
def test_failures_are_recorded_with_their_reason_and_tuning_goes_on(tmp_path: Path) -> None:
    space = Space(OP, TINY)
    pick = {"crash": dict(tile_i=1, tile_j=2), "timeout": dict(tile_i=2, tile_j=1, tile_k=1),
            "error": dict(tile_i=2, tile_j=2, tile_k=1), "wrong": dict(tile_k=2, mvin_blocks=1, double_buffer=True)}
    base = dict(tile_i=2, tile_j=2, tile_k=2, mvin_blocks=2, double_buffer=False, load_ahead=0, store_delay=0)
    schedules = [space.default.replace(**{**base, **k}) for k in pick.values()] + [space.default.replace(**base)]
    with Measurer(flaky_backend, workers=2, timeout=2.0) as m:
        results = dict(m.measure(OP, TINY, schedules))
    statuses = [results[i].status for i in range(len(schedules))]
    assert statuses == [*pick, "ok"]
    assert "died" in results[0].error and "simulated simulator failure" in results[2].error
    assert "differs from the reference" in results[3].error and results[4].cycles > 0
    # the whole loop: failures end up in the database and the best is an ok record
    db = tmp_path / "t.db"
    result = tune(OP, TINY, trials=24, tuner="random", backend=flaky_backend, db=db, workers=2, timeout=2.0,
                  progress=False, seed=1)
    recs = Database(db).records()
    assert len(recs) == 24 and result.cycles is not None
    assert {r.status for r in recs} >= {"ok", "error"}
    assert all(r.error for r in recs if r.status != "ok")
    assert best_schedule(db, OP, TINY).to_dict() == result.schedule.to_dict()


def slow_backend(program: Program, inputs: dict, **_: object) -> RunResult:
    time.sleep(0.3)
    return stand_in_run(program, inputs)


def test_a_timeout_costs_budget_until_a_run_with_more_time(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A timeout says only that the candidate needed more time than its run allowed: it counts against the
    budget of runs that allow no more, and a run that allows more measures it again."""
    db = tmp_path / "t.db"
    options = dict(trials=3, tuner="random", backend=slow_backend, db=db, workers=1, progress=False)
    short = tune(OP, TINY, timeout=0.05, **options)
    assert [t.status for t in short.history] == ["timeout"] * 3 and short.schedule is None
    assert short.failures() == "3 timeout (a rerun with a longer timeout measures the timeouts again)"
    assert tune(OP, TINY, timeout=0.05, **options).measured_now == 0, "the same limit: the budget is spent"
    capsys.readouterr()
    longer = tune(OP, TINY, timeout=30.0, **options)
    assert [t.status for t in longer.history] == ["ok"] * 3 and longer.measured_now == 3
    assert capsys.readouterr().err == ("systolic: measuring again 3 candidate(s) recorded as timeouts in less time "
                                       "than this run allows (30 s)\n")
    assert len(Database(db).records()) == 3


SCRIPT = [sys.executable, str(ROOT / "tests" / "tune_process.py")]


def _count(db: Path) -> int:
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return conn.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


@pytest.mark.slow   # a tuning subprocess killed mid-run, then resumed: 15-30 s
def test_killed_run_resumes_without_losing_or_repeating_a_record(tmp_path: Path) -> None:
    db = tmp_path / "tuning.db"
    run = [*SCRIPT, str(db), "40", "2", "0"]
    proc = subprocess.Popen(run, start_new_session=True)
    deadline = time.time() + 60
    while _count(db) < 12 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the tuner and its workers, mid-batch
    proc.wait()
    before = Database(db).records()
    assert 12 <= len(before) < 40
    subprocess.run(run, check=True, timeout=120)
    after = Database(db).records()
    assert len(after) == 40
    keys = [json.dumps(r.schedule, sort_keys=True) for r in after]
    assert len(set(keys)) == 40, "a schedule was measured twice"
    assert [(r.id, r.cycles, r.schedule) for r in after[:len(before)]] == [(r.id, r.cycles, r.schedule) for r in before]
    # rerunning a finished command measures nothing more
    subprocess.run(run, check=True, timeout=120)
    assert _count(db) == 40


def _session(sid: int) -> list[int]:
    """Live processes of session ``sid``: a run started in a session of its own, and all it started."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, _ppid, _pgrp, session = stat.read_text().rsplit(")", 1)[1].split()[:4]
        except (OSError, ValueError):   # it ended as we looked
            continue
        if int(session) == sid and state != "Z":   # a zombie holds nothing: it waits to be reaped
            pids.append(int(stat.parent.name))
    return pids


def _holds(pid: int, path: Path) -> bool:
    """Whether process ``pid`` has ``path`` (or its -wal, -shm) open or mapped."""
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:   # it ended as we looked
        return False
    return any(_link(fd).startswith(str(path)) for fd in fds) or str(path) in maps


def _commands(pids: list[int]) -> list[str]:
    """Each process's command line, for a failure's message ("" for one that ended)."""
    out = []
    for pid in pids:
        try:
            out.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            out.append("")
    return out


def _link(fd: Path) -> str:
    """Where an open descriptor points; "" for one closed since it was listed (a run opens and closes pipes)."""
    try:
        return os.readlink(fd)
    except OSError:
        return ""


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="lists processes through /proc")
def test_a_killed_run_leaves_no_process_behind(tmp_path: Path) -> None:
    db = tmp_path / "tuning.db"
    proc = subprocess.Popen([*SCRIPT, str(db), "200", "2", "0"], start_new_session=True)
    try:
        def workers() -> list[int]:
            return [pid for pid in _session(proc.pid) if pid != proc.pid]

        # a loaded machine (CI runs two test processes) starts it slowly, and a short-lived process of
        # its start-up may still be there: look once it measures in its two workers and holds the database,
        # the workers judged on the one listing the checks below take (a second listing could catch another
        # short-lived process: a fresh clone under load saw three once)
        deadline, pool = time.time() + 120, workers()
        while (_count(db) < 4 or not _holds(proc.pid, db) or len(pool) != 2) and time.time() < deadline \
                and proc.poll() is None:
            time.sleep(0.05)
            pool = workers()
        assert len(pool) == 2 and _holds(proc.pid, db), f"the run, measuring in two workers: {_commands(pool)}"
        assert not any(_holds(pid, db) for pid in pool), "a worker holds the database"
        os.kill(proc.pid, signal.SIGKILL)   # the run alone, as kill -9 does: its workers must follow
        proc.wait()
        deadline = time.time() + 5
        while _session(proc.pid) and time.time() < deadline:
            time.sleep(0.1)
        assert _session(proc.pid) == [], "a process outlived its tuning run by 5 s"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _records(n: int) -> list[Record]:
    space = Space(OP, TINY)
    return [Record(OP.key, OP.to_dict(), TINY.config_hash(), TINY.as_dict(), "stand-in", space[i].to_dict(),
                   1000 + i, "ok" if i % 3 else "error", {"stall_hazard": i}, "" if i % 3 else "boom")
            for i in range(n)]


def test_records_round_trip_jsonl(tmp_path: Path) -> None:
    db = Database(tmp_path / "a.db")
    for rec in _records(10):
        assert db.add(rec)
    assert not db.add(_records(1)[0]), "the same schedule is recorded once"
    path = tmp_path / "records.jsonl"
    assert db.export_jsonl(path) == 10
    other = Database(tmp_path / "b.db")
    assert other.import_jsonl(path) == 10 and other.import_jsonl(path) == 0
    strip = lambda recs: [(r.to_json()) for r in recs]  # noqa: E731
    assert strip(other.records()) == strip(db.records())
    assert db.best(OP.key, TINY.config_hash()).cycles == 1001


def test_schedule_best_through_the_public_api(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    with pytest.raises(tk.ScheduleError, match="does not exist"):
        tk.compile(OP, TINY, schedule="best", db=path)
    db = Database(path)
    for rec in _records(6):
        db.add(rec)
    db.close()
    prog = tk.compile(OP, TINY, schedule="best", db=path)
    assert prog.meta["schedule"] == _records(2)[1].schedule
    with pytest.raises(tk.ScheduleError, match="no successful tuning record"):
        tk.compile(tk.matmul(8, 8, 8), TINY, schedule="best", db=path)


def test_transfer_seeds_and_warm_start_come_from_similar_workloads(tmp_path: Path) -> None:
    """The warm start takes the ok records and the slow ones, flagged (their cycles are caps), never the
    failures; a slow one never seeds."""
    db = Database(tmp_path / "t.db")
    for rec in _records(9):
        db.add(rec)
    new = tk.matmul(16, 8, 16, bias="row")
    space = Space(new, TINY)
    seeds = transfer.seed_points(db, space, "stand-in")
    assert seeds and all(0 <= p < len(space) for p in seeds)
    db.add(dataclasses.replace(_records(10)[9], cycles=900, status="slow", error="stopped at the cycle cap"))
    assert transfer.seed_points(db, space, "stand-in") == seeds
    X, y, stopped = transfer.warm_start(db, new, TINY, "stand-in")
    assert len(X) == len(y) == len(stopped) == 7
    assert list(y[stopped]) == [900] and stopped.sum() == 1
    assert transfer.similar_workloads(db, new, TINY, "stand-in")[0][0] == OP.key


def test_cli_tune_then_run_best(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from toolkit.cli import main
    db = str(tmp_path / "cli.db")
    args = ["matmul", "--m", "8", "--n", "8", "--k", "16", "--config", "tiny"]
    assert main(["tune", *args, "--backend", "stand-in", "--trials", "8", "--db", db, "--workers", "1",
                 "--quiet", "--plot", str(tmp_path / "curve.png")]) == 0
    out = capsys.readouterr().out
    assert "stand-in" in out and "best" in out and (tmp_path / "curve.png").is_file()
    assert main(["run", *args, "--schedule", "best", "--db", db]) == 0


@pytest.mark.slow
def test_cli_tune_says_at_the_start_when_trials_exceed_the_space(tmp_path: Path, capsys: pytest.CaptureFixture
                                                                  ) -> None:
    from toolkit.cli import main
    assert main(["tune", "matmul", "--m", "1", "--n", "1", "--k", "1", "--config", "tiny", "--backend", "stand-in",
                 "--tuner", "random", "--trials", "900", "--db", str(tmp_path / "t.db"), "--workers", "1",
                 "--quiet"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # 432 schedules in each dataflow
    assert lines[1] == ("note: --trials 900 is more than the 864 candidates of the space: tuning stops when it "
                        "has measured them all")
    assert "864 trials in the db" in lines[2]


def test_cli_tune_help_says_what_a_timeout_costs(capsys: pytest.CaptureFixture) -> None:
    from toolkit.cli import main
    with pytest.raises(SystemExit):
        main(["tune", "--help"])
    assert "a rerun with a longer --timeout measures it again" in " ".join(capsys.readouterr().out.split())


def _outcome(fn: Callable[[], object]) -> dict[str, str]:
    """What ``fn()`` returned or raised (SystemExit too: argparse's errors), and what it wrote on stderr."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            result = fn()
        return {"returned": repr(result), "stderr": err.getvalue()}
    except (Exception, SystemExit) as exc:
        return {"raised": f"{type(exc).__name__}: {exc}", "stderr": err.getvalue()}


def _as_unprivileged(fn: Callable[[], object]) -> dict[str, str]:
    """:func:`_outcome` of ``fn`` for a user that file permissions bind: this process, unless it is root (who
    writes any file, so ``chmod 444`` proves nothing); then a forked child under uid and gid 65534 (nobody),
    which needs the modules ``fn`` uses imported already (root's Python may be unreadable to nobody)."""
    if os.geteuid() != 0:
        return _outcome(fn)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never back into pytest
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            os.write(write, json.dumps(_outcome(fn)).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    return json.loads(data)


def _files(directory: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in directory.iterdir()}


@pytest.mark.parametrize("locked", ["file", "directory"])
def test_a_database_this_user_cannot_write_is_refused_in_one_line_and_left_untouched(locked: str) -> None:
    """Issue 41 #13: a read-only file (or one in a read-only directory, where SQLite keeps its journal)."""
    from toolkit.cli import main
    args = ["tune", "matmul", "--m", "8", "--n", "8", "--k", "16", "--config", "tiny", "--backend", "stand-in"]
    base = Path(tempfile.mkdtemp(prefix="ro-db-"))  # not tmp_path: pytest's folder of root's is closed to nobody
    try:
        db = base / "t.db"
        assert main([*args, "--trials", "2", "--db", str(db), "--quiet"]) == 0  # also imports what the child runs
        db.chmod(0o444 if locked == "file" else 0o666)
        base.chmod(0o777 if locked == "file" else 0o555)
        before = _files(base)
        api = _as_unprivileged(lambda: tk.tune(OP, TINY, trials=4, backend="stand-in", db=db, progress=False))
        cli = _as_unprivileged(lambda: main([*args, "--trials", "4", "--db", str(db), "--quiet"]))
        assert _files(base) == before, "the database, byte for byte and its mtime, and no -wal or -shm beside it"
        read = _as_unprivileged(lambda: best_schedule(db, tk.matmul(8, 8, 16), TINY))
    finally:
        base.chmod(0o700)
        shutil.rmtree(base)
    why = ("this user has no write permission on it" if locked == "file"
           else f"this user cannot write its directory {str(base)!r}, where SQLite keeps its journal")
    message = f"tuning database {str(db)!r} cannot be written: {why}; it was left untouched"
    assert api["raised"] == f"DatabaseError: {message}"
    if locked == "file":
        assert cli == {"returned": "2", "stderr": f"systolic tune: error: {message}\n"}
        assert read["returned"].startswith("MatmulSchedule("), "reading a read-only database is fine"
    else:  # the CLI checks --db's directory as it parses
        assert cli == {"raised": "SystemExit: 2", "stderr": f"systolic tune: error: argument --db: cannot write "
                       f"{str(db)!r}: directory {str(base)!r} is not writable (see systolic tune --help)\n"}
