"""The harness's results file (rtl/harness/results.h): cycles, the clock loop's time, the RTL's and the
SoC's counters, the output DRAM segments and, with --log, each instruction's dispatch, issue and
completion and the SoC's state runs."""
from __future__ import annotations

import struct
from typing import Any

import numpy as np

from isa import Preload, Program
from isa.opcodes import SOC_COUNTERS, SOC_STACKS

from .base import BackendError


def _unit_of(ins: Any) -> str:
    op = ins.op
    if op in ("mvin", "mvin2", "mvin3", "config_ld"):
        return "load"
    if op in ("mvout", "config_st", "config_norm"):
        return "store"
    if op in ("fence", "flush"):
        return "dispatch"
    return "execute"


def parse(data: bytes, program: Program) -> tuple[int, float, dict[str, int], dict[int, bytes], list,
                                                           dict[str, list[tuple[int, str]]]]:
    pos = 0

    def take(n: int) -> bytes:
        nonlocal pos
        if pos + n > len(data):
            raise BackendError("verilator harness wrote a truncated results file")
        chunk = data[pos:pos + n]
        pos += n
        return chunk

    if take(8) != b"SYSRES01":
        raise BackendError("verilator harness wrote a results file with a bad magic")
    cycles, sim_ns = struct.unpack("<QQ", take(16))
    (n_ctr,) = struct.unpack("<I", take(4))
    counters = {}
    for _ in range(n_ctr):
        (n,) = struct.unpack("<H", take(2))
        name = take(n).decode()
        (counters[name],) = struct.unpack("<Q", take(8))
    (n_seg,) = struct.unpack("<I", take(4))
    segments = {}
    for _ in range(n_seg):
        addr, length = struct.unpack("<QQ", take(16))
        segments[addr] = take(length)
    (n_log,) = struct.unpack("<I", take(4))
    raw = np.frombuffer(take(25 * n_log), dtype=np.dtype([("disp", "<u8"), ("issue", "<u8"), ("done", "<u8"),
                                                          ("unit", "u1")]))
    runs: dict[str, list[tuple[int, str]]] = {}
    if pos < len(data):   # a log's SoC state runs: the host's, then the memory's
        for stack in SOC_STACKS:
            (n,) = struct.unpack("<I", take(4))
            prefix = f"{stack}_"
            runs[stack] = [(start, SOC_COUNTERS[state].removeprefix(prefix))
                           for start, state in struct.iter_unpack("<QB", take(9 * n))]
    return cycles, sim_ns / 1e9, counters, segments, raw, runs


def instruction_log(program: Program, raw: np.ndarray) -> list[dict]:
    none = np.uint64(0xFFFFFFFFFFFFFFFF)
    log = []
    ins = program.instructions
    for i, rec in enumerate(raw):
        if rec["issue"] != none:
            issue, done = int(rec["issue"]), int(rec["done"]) if rec["done"] != none else None
        else:
            issue = done = int(rec["disp"]) if rec["disp"] != none else None
        log.append({"index": i, "op": ins[i].op, "unit": _unit_of(ins[i]), "issue": issue, "complete": done})
    # a preload runs with the compute that follows it
    for i, entry in enumerate(log):
        if isinstance(ins[i], Preload):
            for j in range(i + 1, len(ins)):
                if ins[j].op in ("compute_preloaded", "compute_accumulated"):
                    entry["issue"], entry["complete"] = log[j]["issue"], log[j]["complete"]
                    break
    return log
