"""Who holds a claim on a candidate in a tuning database, and whether they still live.

A tuning run claims candidates in the database before it measures them (see
:meth:`tuner.database.Database.claim`), so that concurrent runs on one database
share the budget and never measure one candidate twice. A run killed mid-batch
leaves its claims behind; they are stale once its process is gone. SQLite's WAL
mode works only among processes of one host, so a process id (with its start
time, against pid reuse) identifies a claimant.
"""
from __future__ import annotations

import os
import socket
import uuid
from pathlib import Path


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot, or None when it is gone (or a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
    return None if fields[0] == "Z" else fields[19]


def _pid_alive(pid: int) -> bool:
    """Without /proc: whether a process of that id exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def new_owner() -> str:
    """A claimant id unique to one tuning run: host, pid, process start time, a random tag."""
    pid = os.getpid()
    has_proc = Path("/proc/self/stat").exists()
    start = _start_time(pid) if has_proc else "-"
    return f"{socket.gethostname()}:{pid}:{start}:{uuid.uuid4().hex[:8]}"


def owner_alive(owner: str) -> bool:
    """Whether the run that made ``owner`` may still be measuring (a claim of another host always may)."""
    host, pid_text, start, _tag = owner.rsplit(":", 3)
    if host != socket.gethostname():
        return True
    pid = int(pid_text)
    if start == "-":
        return _pid_alive(pid)
    return _start_time(pid) == start
