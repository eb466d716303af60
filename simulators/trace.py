"""Chrome trace-event JSON of a per-instruction log (opens in Perfetto / chrome://tracing).

``write_chrome_trace(result.log, "trace.json", soc=result.soc_log)`` with the log of
``tk.run(..., backend="verilator", log=True)``: one track per unit (load,
execute, store, dispatch), one slice per instruction from issue to completion,
timestamps in cycles (shown as microseconds); on the SoC, a track for the host
and one for the memory, a slice per run of cycles in one state (isa.opcodes.SOC_STACKS;
the host's "done" and the memory's "idle" left blank).
"""
from __future__ import annotations

import json
import os
from typing import Iterable, Mapping

TRACKS = ("load", "execute", "store", "dispatch")
SOC_TRACKS = {"host": "host", "mem": "memory"}
_BLANK = ("done", "idle")   # states drawn as no slice


def soc_events(soc: Mapping[str, list[tuple[int, str]]], end: int) -> list[dict]:
    """The SoC's tracks (after the units'): one slice per run of a state, until the next run or ``end``."""
    events: list[dict] = []
    for tid, (stack, runs) in enumerate(soc.items(), start=len(TRACKS) + 1):
        events.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": SOC_TRACKS[stack]}})
        events.append({"name": "thread_sort_index", "ph": "M", "pid": 1, "tid": tid, "args": {"sort_index": tid}})
        for (start, state), (stop, _) in zip(runs, [*runs[1:], (end, "")]):
            if state not in _BLANK:
                events.append({"name": state, "cat": stack, "ph": "X", "pid": 1, "tid": tid, "ts": start,
                               "dur": max(1, stop - start)})
    return events


def chrome_trace_events(log: Iterable[Mapping], soc: Mapping[str, list[tuple[int, str]]] | None = None,
                        cycles: int = 0) -> list[dict]:
    events: list[dict] = [{"name": "process_name", "ph": "M", "pid": 1, "tid": 0,
                           "args": {"name": "accelerator (1 us = 1 cycle)"}}]
    for tid, track in enumerate(TRACKS, start=1):
        events.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": track}})
        events.append({"name": "thread_sort_index", "ph": "M", "pid": 1, "tid": tid, "args": {"sort_index": tid}})
    for entry in log:
        issue, done = entry.get("issue"), entry.get("complete")
        if issue is None:
            continue
        unit = entry.get("unit", "dispatch")
        tid = TRACKS.index(unit) + 1 if unit in TRACKS else len(TRACKS)
        dur = max(1, (done if done is not None else issue) - issue + 1)
        events.append({"name": entry.get("op", "?"), "cat": unit, "ph": "X", "pid": 1, "tid": tid,
                       "ts": issue, "dur": dur, "args": {"index": entry.get("index"), "issue": issue,
                                                          "complete": done}})
    return events + soc_events(soc or {}, cycles)


def write_chrome_trace(log: Iterable[Mapping], path: str | os.PathLike,
                       soc: Mapping[str, list[tuple[int, str]]] | None = None, cycles: int = 0) -> None:
    """Write ``log`` (and the SoC's state runs ``soc``, which end at ``cycles``) as a Chrome trace-event
    JSON file at ``path``."""
    if log is None:
        raise ValueError("log is None: run with log=True to get a per-instruction log")
    with open(path, "w") as f:
        json.dump({"traceEvents": chrome_trace_events(log, soc, cycles), "displayTimeUnit": "ns"}, f)
