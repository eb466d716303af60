"""Tuning records in SQLite (one file, WAL), with JSON-lines import and export.

Each measurement is committed on its own as soon as it finishes, so a killed
run loses only what was in flight; a UNIQUE key over (workload, hw, backend,
schedule) makes a rerun skip what is recorded instead of measuring it twice.
A run claims candidates (in one transaction with counting the budget) before it
measures them, so that concurrent runs on one database share the budget and
never measure a candidate twice; claims of a run whose process is gone are stale.
Feature vectors are cached beside the records (per feature version) so that
transfer learning does not lower every old schedule again.
"""
from __future__ import annotations

import json
import math
import os
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from isa import HardwareConfig
from toolkit.ops import Op
from toolkit.kinds import schedule_from_dict
from toolkit.kinds import from_dict as op_from_dict
from toolkit.schedule import Schedule, ScheduleError
from toolkit.version import __version__

from .claims import owner_alive

STATUSES = ("ok", "wrong", "error", "timeout", "crash", "invalid", "slow")
BACKEND_PREFERENCE = ("verilator",)  # best_schedule trusts these cycle sources first, in order

_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    id INTEGER PRIMARY KEY,
    workload TEXT NOT NULL,
    op_json TEXT NOT NULL,
    hw_hash TEXT NOT NULL,
    hw_json TEXT NOT NULL,
    backend TEXT NOT NULL,
    schedule_json TEXT NOT NULL,
    cycles INTEGER,
    counters_json TEXT NOT NULL DEFAULT '{}',
    status TEXT NOT NULL,
    error TEXT NOT NULL DEFAULT '',
    time REAL NOT NULL,
    wall_s REAL NOT NULL DEFAULT 0,
    toolkit_version TEXT NOT NULL,
    tuner TEXT NOT NULL DEFAULT '',
    UNIQUE (workload, hw_hash, backend, schedule_json)
);
CREATE INDEX IF NOT EXISTS records_by_hw ON records (hw_hash, backend, status);
CREATE TABLE IF NOT EXISTS features (
    record_id INTEGER NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    version INTEGER NOT NULL,
    vec BLOB NOT NULL,
    PRIMARY KEY (record_id, version)
);
CREATE TABLE IF NOT EXISTS claims (
    workload TEXT NOT NULL,
    hw_hash TEXT NOT NULL,
    backend TEXT NOT NULL,
    schedule_json TEXT NOT NULL,
    owner TEXT NOT NULL,
    time REAL NOT NULL,
    PRIMARY KEY (workload, hw_hash, backend, schedule_json)
);
"""


def _schema_columns() -> frozenset[str]:
    mem = sqlite3.connect(":memory:")
    mem.executescript(_SCHEMA)
    columns = frozenset(row[1] for row in mem.execute("PRAGMA table_info(records)"))
    mem.close()
    return columns


_COLUMNS = _schema_columns()


class DatabaseError(ValueError):
    """A file that cannot serve as a tuning database: not SQLite, another program's, unreachable."""


def schedule_key(schedule: Schedule | dict[str, Any]) -> str:
    """Canonical JSON of a schedule's knobs: the identity of a record within a workload."""
    knobs = schedule.to_dict() if isinstance(schedule, Schedule) else schedule
    return json.dumps(knobs, sort_keys=True, separators=(",", ":"))


@dataclass
class Record:
    """One measured (or failed) candidate."""

    workload: str
    op: dict[str, Any]
    hw_hash: str
    hw: dict[str, Any]
    backend: str
    schedule: dict[str, Any]
    cycles: int | None
    status: str
    counters: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    time: float = field(default_factory=time.time)
    wall_s: float = 0.0
    toolkit_version: str = __version__
    tuner: str = ""
    id: int | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status={self.status!r} is not one of {STATUSES}")

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.cycles is not None

    def make_op(self) -> Op:
        return op_from_dict(self.op)

    def make_schedule(self) -> Schedule:
        return schedule_from_dict(self.op["kind"], self.schedule)

    def to_json(self) -> str:
        data = asdict(self)
        data.pop("id")
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, line: str) -> "Record":
        data = json.loads(line)
        data.pop("id", None)
        return cls(**data)


class Database:
    """A tuning-records file (``":memory:"`` for a throwaway one). Safe to reopen while another process reads.

    write=True: refuse (before SQLite opens it, which may leave -wal and -shm files beside it) a file that
    this user cannot write, or one in a directory this user cannot write (where SQLite keeps its journal).
    """

    def __init__(self, path: str | Path = ":memory:", *, write: bool = False) -> None:
        self.path = str(path)
        if write:
            check_writable(self.path)
        try:
            # autocommit: one record, one commit
            self.conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            self._check_ours()  # before anything writes: a file of another kind stays untouched
            if self.path != ":memory:":
                self.conn.execute("PRAGMA journal_mode=WAL")
                self.conn.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: a committed record survives a kill
            self.conn.execute("PRAGMA foreign_keys=ON")
            self.conn.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            if hasattr(self, "conn"):
                self.conn.close()
            hint = " (does its directory exist?)" if "unable to open" in str(exc) else ""
            raise DatabaseError(f"tuning database {self.path!r} cannot be used: {exc}{hint}") from None

    def _check_ours(self) -> None:
        """An empty file, or one with our records table; anything else is another program's data."""
        tables = {name for (name,) in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            return
        if "records" not in tables:
            raise DatabaseError(f"{self.path!r} is an SQLite database but not a tuning database (its tables: "
                                f"{', '.join(sorted(tables))}); it was left untouched")
        have = {row[1] for row in self.conn.execute("PRAGMA table_info(records)")}
        missing = sorted(_COLUMNS - have)
        if missing:
            raise DatabaseError(f"{self.path!r} has a records table without the column(s) {', '.join(missing)}: "
                                "not a tuning database of this toolkit; it was left untouched")

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- writing -----------------------------------------------------------------------
    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write transaction, holding the write lock from its start (other processes wait for it)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def add(self, rec: Record, features: np.ndarray | None = None, feature_version: int | None = None) -> bool:
        """Insert ``rec`` (with its feature vector) and drop any claim on its schedule; False when that
        schedule is recorded already."""
        key = schedule_key(rec.schedule)
        with self._transaction():
            cur = self.conn.execute(
                "INSERT OR IGNORE INTO records (workload, op_json, hw_hash, hw_json, backend, schedule_json, cycles, "
                "counters_json, status, error, time, wall_s, toolkit_version, tuner) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (rec.workload, json.dumps(rec.op, sort_keys=True), rec.hw_hash, json.dumps(rec.hw, sort_keys=True),
                 rec.backend, key, rec.cycles, json.dumps(rec.counters, sort_keys=True),
                 rec.status, rec.error, rec.time, rec.wall_s, rec.toolkit_version, rec.tuner))
            self.conn.execute("DELETE FROM claims WHERE workload = ? AND hw_hash = ? AND backend = ? "
                              "AND schedule_json = ?", (rec.workload, rec.hw_hash, rec.backend, key))
            if cur.rowcount == 0:
                return False
            rec.id = cur.lastrowid
            if features is not None and feature_version is not None:
                self.put_features(rec.id, feature_version, features)
        return True

    def forget_timeouts(self, workload: str, hw_hash: str, backend: str, limit: float | None) -> int:
        """Drop the timeout records of this workload, hardware and backend that ran for less than ``limit``
        seconds (None: no limit), so that a run with more time measures those candidates again; how many."""
        with self._transaction():
            cur = self.conn.execute("DELETE FROM records WHERE workload = ? AND hw_hash = ? AND backend = ? "
                                    "AND status = 'timeout' AND wall_s < ?",
                                    (workload, hw_hash, backend, math.inf if limit is None else limit))
        return cur.rowcount

    def put_features(self, record_id: int, version: int, vec: np.ndarray) -> None:
        self.conn.execute("INSERT OR REPLACE INTO features (record_id, version, vec) VALUES (?,?,?)",
                          (record_id, version, np.asarray(vec, dtype=np.float32).tobytes()))

    # ---- claims: sharing one budget among concurrent runs ------------------------------------
    def claim(self, workload: str, hw_hash: str, backend: str, schedules: Sequence[Schedule | dict[str, Any]],
              budget: int, owner: str) -> tuple[list[int], list[int]]:
        """Claim for ``owner`` the ``schedules`` that nobody has recorded or claimed, as many as ``budget``
        (records plus live claims of this workload, hardware and backend) leaves, all in one transaction.

        Returns the positions in ``schedules`` granted, and those another run has (recorded or in flight).
        """
        keys = [schedule_key(s) for s in schedules]
        wanted = set(keys)
        scope = (workload, hw_hash, backend)
        with self._transaction():
            self._drop_stale_claims()
            used = self._count("records", scope) + self._count("claims", scope)
            taken = {k for table in ("records", "claims") for (k,) in self.conn.execute(
                f"SELECT schedule_json FROM {table} WHERE workload = ? AND hw_hash = ? AND backend = ?", scope)
                if k in wanted}
            granted = [i for i, k in enumerate(keys) if k not in taken][:max(0, budget - used)]
            self.conn.executemany("INSERT INTO claims VALUES (?,?,?,?,?,?)",
                                  [(*scope, keys[i], owner, time.time()) for i in granted])
        return granted, [i for i, k in enumerate(keys) if k in taken]

    def claimed(self, workload: str, hw_hash: str, backend: str) -> int:
        """How many candidates of this workload live runs are measuring now."""
        with self._transaction():
            self._drop_stale_claims()
            return self._count("claims", (workload, hw_hash, backend))

    def release(self, owner: str) -> None:
        """Drop what ``owner`` claimed and did not record (a run that stops early, or fails)."""
        with self._transaction():
            self.conn.execute("DELETE FROM claims WHERE owner = ?", (owner,))

    def _drop_stale_claims(self) -> None:
        owners = [o for (o,) in self.conn.execute("SELECT DISTINCT owner FROM claims")]
        self.conn.executemany("DELETE FROM claims WHERE owner = ?", [(o,) for o in owners if not owner_alive(o)])

    def _count(self, table: str, scope: tuple[str, str, str]) -> int:
        return self.conn.execute(f"SELECT COUNT(*) FROM {table} WHERE workload = ? AND hw_hash = ? AND backend = ?",
                                 scope).fetchone()[0]

    # ---- reading -----------------------------------------------------------------------
    def records(self, *, workload: str | None = None, hw_hash: str | None = None, backend: str | None = None,
                status: str | None = None, after_id: int = 0) -> list[Record]:
        """Records in the order they were added, filtered; ``after_id``: only those added after that one."""
        where, args = ["id > ?"], [after_id]
        for column, value in (("workload", workload), ("hw_hash", hw_hash), ("backend", backend), ("status", status)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        sql = "SELECT * FROM records WHERE " + " AND ".join(where) + " ORDER BY id"
        return [self._row(r) for r in self.conn.execute(sql, args)]

    def features(self, record_ids: Iterable[int], version: int) -> dict[int, np.ndarray]:
        ids = list(record_ids)
        out: dict[int, np.ndarray] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            rows = self.conn.execute(
                f"SELECT record_id, vec FROM features WHERE version = ? AND record_id IN ({','.join('?' * len(chunk))})",
                [version, *chunk])
            out.update({rid: np.frombuffer(vec, dtype=np.float32) for rid, vec in rows})
        return out

    def workloads(self, hw_hash: str, backend: str | None = None) -> list[tuple[str, dict[str, Any]]]:
        """(workload key, op dict) of every workload with an ok record on this hardware."""
        sql = "SELECT DISTINCT workload, op_json FROM records WHERE hw_hash = ? AND status = 'ok'"
        args: list[Any] = [hw_hash]
        if backend is not None:
            sql += " AND backend = ?"
            args.append(backend)
        return [(w, json.loads(o)) for w, o in self.conn.execute(sql, args)]

    def best(self, workload: str, hw_hash: str, backend: str | None = None) -> Record | None:
        """Lowest-cycle ok record; without ``backend``, from the most trusted backend that has one. Ties
        go to the first schedule in JSON order, not the first inserted: workers finish in any order."""
        backends = [backend] if backend is not None else self._backends(workload, hw_hash)
        for b in backends:
            row = self.conn.execute(
                "SELECT * FROM records WHERE workload = ? AND hw_hash = ? AND backend = ? AND status = 'ok' "
                "AND cycles IS NOT NULL ORDER BY cycles, schedule_json LIMIT 1", (workload, hw_hash, b)).fetchone()
            if row is not None:
                return self._row(row)
        return None

    def _backends(self, workload: str, hw_hash: str) -> list[str]:
        have = [b for (b,) in self.conn.execute(
            "SELECT DISTINCT backend FROM records WHERE workload = ? AND hw_hash = ? AND status = 'ok'",
            (workload, hw_hash))]
        return sorted(have, key=lambda b: (BACKEND_PREFERENCE.index(b) if b in BACKEND_PREFERENCE
                                           else len(BACKEND_PREFERENCE), b))

    def __len__(self) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM records").fetchone()[0]

    def _row(self, row: tuple) -> Record:
        (rid, workload, op_json, hw_hash, hw_json, backend, schedule_json, cycles, counters_json, status, error,
         t, wall_s, version, tuner) = row
        return Record(workload, json.loads(op_json), hw_hash, json.loads(hw_json), backend, json.loads(schedule_json),
                      cycles, status, json.loads(counters_json), error, t, wall_s, version, tuner, rid)

    # ---- JSON lines ----------------------------------------------------------------------
    def export_jsonl(self, path: str | Path, **filters: Any) -> int:
        """Write records (optionally filtered as in :meth:`records`) one JSON object a line."""
        recs = self.records(**filters)
        with open(path, "w") as fh:
            for rec in recs:
                fh.write(rec.to_json() + "\n")
        return len(recs)

    def import_jsonl(self, path: str | Path) -> int:
        """Add the records of a JSON-lines file; returns how many were new."""
        added = 0
        with open(path) as fh:
            for line in fh:
                if line.strip():
                    added += self.add(Record.from_json(line))
        return added

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records())


def check_writable(path: str) -> None:
    """Raise DatabaseError when this user cannot write the database file ``path`` or its directory (SQLite
    writes its -wal, -shm or -journal file beside it); a file or directory that does not exist yet passes."""
    if path == ":memory:":
        return
    file = Path(path)
    if file.exists() and not os.access(file, os.W_OK):
        raise DatabaseError(f"tuning database {path!r} cannot be written: this user has no write permission "
                            "on it; it was left untouched")
    directory = file.parent
    if directory.is_dir() and not os.access(directory, os.W_OK | os.X_OK):
        raise DatabaseError(f"tuning database {path!r} cannot be written: this user cannot write its directory "
                            f"{str(directory)!r}, where SQLite keeps its journal; it was left untouched")


def open_db(db: "Database | str | Path | None", *, write: bool = False) -> Database:
    """``db`` itself, or the database at that path (None: a throwaway one in memory); write=True: one this
    user can write, checked before anything opens it."""
    if isinstance(db, Database):
        if write:
            check_writable(db.path)
        return db
    return Database(":memory:" if db is None else db, write=write)


def best_schedule(db: "Database | str | Path", op: Op, hw: HardwareConfig, backend: str | None = None) -> Schedule:
    """The best recorded schedule of ``op`` on ``hw`` (what ``tk.compile(schedule="best")`` uses)."""
    if not isinstance(db, Database) and not Path(db).is_file():
        raise ScheduleError(f"tuning database {str(db)!r} does not exist; run `systolic tune` first")
    database = open_db(db)
    try:
        rec = database.best(op.key, hw.config_hash(), backend)
    finally:
        if database is not db:
            database.close()
    if rec is None:
        raise ScheduleError(
            f"no successful tuning record for {op.key} on hardware {hw.name!r} (hash {hw.config_hash()})"
            + (f" with backend {backend!r}" if backend else "") + f" in {getattr(db, 'path', db)}; "
            "tune it first (tk.tune or `systolic tune`)")
    return rec.make_schedule()
