"""Every subcommand against a table of bad arguments: each failure is exactly one line on
stderr that says what is wrong, and a nonzero exit status; never a traceback, and files
that are not ours are never written."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import toolkit as tk
from toolkit.cli import main

MM = ["matmul", "--m", "9", "--n", "6", "--k", "13", "--config", "tiny"]
BIG = ["matmul", "--m", "30000", "--n", "30000", "--k", "30000"]

BAD = [
    # run: numbers, hardware, databases, output paths, limits, sizes
    # explore: the space and the workload
    (["run", "layernorm", "--relu"], "layernorm stores int8 rows through the normalization unit: --bias, --relu"),
    (["run", "conv2d", "--igelu"], "--igelu is a matmul's activation, instead of --relu"),
    (["run", "softmax", "--input-scale", "2"], "input_scale=2.0 is above ln 2"),
    (["explore", *MM], "name at least one hardware field to explore"),
    (["explore", "nosuch", "--dim", "4"], "the workload 'nosuch' is no op kind"),
    (["explore", *MM, "--dim", "0"], "argument --dim: must be a positive integer"),
    (["explore", *MM, "--dim", "3"], "argument --dim: HardwareConfig.dim must be a power of two from 1 to 64, got 3"),
    (["explore", *MM, "--dim", "4", "1024"], "argument --dim: HardwareConfig.dim=1024 is above its limit of 64"),
    (["explore", *MM, "--sp-banks", "3"], "argument --sp-banks: HardwareConfig.sp_banks must be a power of two"),
    (["run", "matmul", "--clock-ghz", "0"], "argument --clock-ghz: must be a positive number, got '0'"),
    (["run", "matmul", "--clock-ghz", "-2"], "argument --clock-ghz: must be a positive number"),
    (["run", "matmul", "--m", "0"], "M must be a positive integer"),
    (["run", "matmul", "--m", "x"], "argument --m: invalid int value: 'x'"),
    (["run", "matmul", "--config", "nosuch"], "hw='nosuch' is neither a preset"),
    (["run", "matmul", "--config", "{d}/list.toml"], "a hardware config is a table of fields, got list"),
    (["run", "matmul", "--config", "{d}/float.toml"], "dim must be a positive integer, got 4.5"),
    (["run", "matmul", "--config", "{d}/huge.toml"], "dram_latency=99999999999 is above its limit"),
    (["run", "matmul", "--config", "{d}/binary.toml"], "is not text"),
    (["run", "matmul", "--config", "{d}/empty.toml"], "'{d}/empty.toml' sets no hardware field"),
    (["run", *MM, "--schedule", '{"tile_i": 1}'], "neither 'default', 'gemmini', 'best', nor a JSON file"),
    (["run", *MM, "--schedule", "best", "--db", "{d}/junk.db"], "'{d}/junk.db' cannot be used: file is not a database"),
    (["run", *MM, "--schedule", "best", "--db", "{d}/foreign.db"], "not a tuning database (its tables: notes)"),
    (["run", *MM, "--backend", "verilator", "--trace", "{d}/missing/t.json"], "directory '{d}/missing' does not exist"),
    (["run", *MM, "--backend", "verilator", "--wave", "{d}/missing/w.fst"], "directory '{d}/missing' does not exist"),
    (["run", *MM, "--backend", "verilator", "--trace", "{d}"], "is a directory, not a file"),
    (["run", *MM, "--trace", "{d}/t.json"], "--trace: only the verilator backend takes these"),
    (["run", *MM, "--cycle-limit", "0"], "argument --cycle-limit: must be a positive integer"),
    (["run", *MM, "--watchdog", "-5"], "argument --watchdog: must be a positive integer"),
    (["run", *MM, "--timeout", "0"], "argument --timeout: must be a positive number"),
    (["run", *MM, "--watchdog", "1000"], "--watchdog: only the verilator backend takes these"),
    (["run", "matmul", "--m", "1000000000"], "more than a program's address space"),
    (["run", *BIG], "pass allow_large=True (CLI: --allow-large)"),
    (["run", "resadd", "--bias", "row"], "--bias does not apply to resadd"),
    (["run", "maxpool", "--relu"], "maxpool has no epilogue"),
    (["run", *MM, "--timeout", "1e300"], "argument --timeout: must be at most 1e+07 seconds"),
    (["run", *MM, "--seed", "-1"], "argument --seed: must be a non-negative integer, got '-1'"),
    (["run", *MM, "--schedule", "{d}/binary.toml"], "schedule file '{d}/binary.toml' is not valid JSON"),
    # asm
    (["asm", *MM, "-o", "{d}/missing/mm.s"], "directory '{d}/missing' does not exist"),
    (["asm", *MM, "-o", "{d}"], "is a directory, not a file"),
    (["asm", *MM, "-o", "{d}/mm.txt"], "cannot tell the program format of '{d}/mm.txt' from its suffix '.txt'"),
    # exec
    (["exec", "{d}"], "cannot read program file '{d}': Is a directory"),
    (["exec", "{d}/missing.s"], "does not exist"),
    (["exec", "pyproject.toml"], "line 1: unknown instruction '[build-system]'"),
    (["exec", "{d}/mm.s"], "missing array 'A'"),
    (["exec", "{d}/mm.s", "--input", "A={d}/A.npy", "--input", "B={d}/B.npy", "--input", "Z={d}/A.npy"],
     "'Z' name no input buffer of the program (its inputs: A, B)"),
    (["exec", "{d}/mm.s", "--input", "A={d}/nope.npy"], "--input A: cannot read"),
    (["exec", "{d}/mm.s", "--input", "A"], "--input 'A' must be NAME=FILE.npy"),
    (["exec", "{d}/mm.s", "--out", "{d}/afile"], "'{d}/afile' exists and is not a directory"),
    (["exec", "{d}/mm.s", "--watchdog", "0"], "argument --watchdog: must be a positive integer"),
    (["exec", "{d}/mm.s", "--cycle-limit", "5"], "--cycle-limit: only the verilator backend takes these"),
    (["exec", "{d}/overlap.s"], "buffers 'A' (0x40..0xb4) and 'C'"),
    (["exec", "{d}/float_dim.s"], "line 1: .hardware: dim must be an integer, got '4.5'"),
    # tune
    (["tune", *MM, "--timeout", "-1"], "argument --timeout: must be a positive number, got '-1'"),
    (["tune", *MM, "--batch-size", "-3"], "argument --batch-size: must be a positive integer"),
    (["tune", *MM, "--trials", "0"], "argument --trials: must be a positive integer"),
    (["tune", *MM, "--workers", "0"], "argument --workers: must be a positive integer"),
    (["tune", *MM, "--backend", "stand-in", "--db", "{d}/junk.db"], "cannot be used: file is not a database"),
    (["tune", *MM, "--backend", "stand-in", "--db", "{d}/foreign.db"], "it was left untouched"),
    (["tune", *MM, "--db", "{d}/missing/t.db"], "directory '{d}/missing' does not exist"),
    (["tune", *MM, "--db", "{d}"], "is a directory, not a file"),
    (["tune", *MM, "--plot", "{d}/missing/c.png"], "directory '{d}/missing' does not exist"),
    (["tune", *BIG], "--allow-large"),
    (["tune", *MM, "--timeout", "1e300"], "argument --timeout: must be at most 1e+07 seconds"),
    (["tune", *MM, "--cycle-cap", "1"], "argument --cycle-cap: '1': the cap is a factor above 1"),
    (["tune", *MM, "--cycle-cap", "fast"], "argument --cycle-cap: 'fast' is not a number or 'none'"),
    # bench
    (["bench", "resnet50", "--csv", "{d}/missing/x.csv"], "directory '{d}/missing' does not exist"),
    (["bench", "resnet50", "--plot", "{d}/missing/p.png"], "directory '{d}/missing' does not exist"),
    (["bench", "resnet50", "--limit", "0"], "argument --limit: must be a positive integer"),
    (["bench", "nosuchsuite"], "nosuchsuite"),
    (["bench", "{d}/bad.yaml"], "suite file '{d}/bad.yaml' is not valid YAML"),
    (["bench", "{d}/notmap.yaml"], "suite notmap, layer 2 of 2: must be a mapping of op parameters (name: ..., "
                                   "kind: ..., ...), got 'conv1x1 64'"),
    (["bench", "resnet50", "--seed", "x"], "argument --seed: must be a non-negative integer, got 'x'"),
    # profile
    (["profile", *MM, "--timeout", "0"], "argument --timeout: must be a positive number"),
    (["profile", *MM, "--seed", "-1"], "argument --seed: must be a non-negative integer"),
    (["profile", *MM, "--schedule", "best", "--db", "{d}/junk.db"], "cannot be used: file is not a database"),
    (["profile", "matmul", "--m", "0"], "M must be a positive integer"),
    # net: arguments are checked before the model is read, let alone run
    (["net", "{d}/missing.onnx"], "model '{d}/missing.onnx' is not a file"),
    (["net", "pyproject.toml"], "cannot parse it as ONNX"),
    (["net", "m.onnx", "--clock-ghz", "0"], "argument --clock-ghz: must be a positive number, got '0'"),
    (["net", "m.onnx", "--clock-ghz", "-2"], "argument --clock-ghz: must be a positive number"),
    (["net", "m.onnx", "--csv", "{d}/missing/x.csv"], "directory '{d}/missing' does not exist"),
    (["net", "m.onnx", "--plot", "{d}/missing/p.png"], "directory '{d}/missing' does not exist"),
    (["net", "m.onnx", "--db", "{d}/missing/t.db"], "directory '{d}/missing' does not exist"),
    (["net", "m.onnx", "--tune", "0"], "argument --tune: must be a positive integer"),
    (["net", "m.onnx", "--workers", "-1"], "argument --workers: must be a positive integer"),
    (["cc", "{d}/missing.c"], "FILE.c: '{d}/missing.c' is not a file"),
    (["cc", "{d}/prog.c", "-I", "{d}/missing"], "-I '{d}/missing' is not a directory"),
    (["cc", "{d}/prog.c", "--backend", "gpu"], "argument --backend: invalid choice: 'gpu'"),
    (["cc", "{d}/prog.c", "-o", "{d}/missing/prog"], "directory '{d}/missing' does not exist"),
    (["cc", "{d}/prog.c", "-o", "{d}/prog.c"], "-o '{d}/prog.c' is the source '{d}/prog.c'"),
    (["cc", "{d}/prog.c", "--data-slack", "-1"], "--data-slack -1 must be 0 to 4096 MiB"),
    (["cc", "{d}/prog.c", "-o", "{d}/../{d.name}/prog.c"], "/prog.c' is the source '{d}/prog.c'"),
    (["cc", "{d}/prog.c", "-o", "{d}/link.c"], "-o '{d}/link.c' is the source '{d}/prog.c'"),
    (["cc", "/bin/true"], "FILE.c: '/bin/true' is not C: its name does not end in .c"),
    (["cc", "{d}/prog.c", "{d}/mm.s"], "FILE.c: '{d}/mm.s' is not C: its name does not end in .c"),
    (["cc", "{d}/elf.c"], "FILE.c: '{d}/elf.c' is not C: it holds a NUL byte"),
    (["cc", "{d}/prog.c", "--timeout", "0"], "argument --timeout: must be a positive number, got '0'"),
    (["asm", "matmul", "--c", "{d}/missing/x.c"], "directory '{d}/missing' does not exist"),
    # the command itself
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    ([], "the following arguments are required: COMMAND"),
]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("cli")
    (d / "junk.db").write_bytes(b"this is no database\n" * 10)
    with sqlite3.connect(d / "foreign.db") as conn:
        conn.execute("CREATE TABLE notes (text TEXT)")
    (d / "list.toml").write_text("hardware = [1, 2]\n")
    (d / "float.toml").write_text("dim = 4.5\n")
    (d / "huge.toml").write_text("dram_latency = 99999999999\n")
    (d / "binary.toml").write_bytes(b"\xff\xfe\x00")
    (d / "empty.toml").write_text("# nothing set\n[hardware]\n")
    (d / "prog.c").write_text("int main(void) { return 0; }\n")
    (d / "link.c").symlink_to(d / "prog.c")
    (d / "elf.c").write_bytes(Path("/bin/true").read_bytes())
    (d / "afile").write_text("not a directory\n")
    (d / "bad.yaml").write_text("layers: [a: b\n")
    (d / "notmap.yaml").write_text("name: notmap\nlayers:\n  - {name: a, kind: matmul, M: 4, N: 4, K: 4}\n"
                                   "  - conv1x1 64\n")
    op = tk.matmul(9, 6, 13)
    prog = tk.compile(op, "tiny")
    prog.save(d / "mm.s")
    (d / "float_dim.s").write_text(prog.to_asm().replace(" dim=4 ", " dim=4.5 "))
    (d / "overlap.s").write_text(prog.to_asm().replace(f"@{prog.buffers['C'].addr:#x}", "@0x80"))
    for name, arr in op.random_inputs(0).items():
        np.save(d / f"{name}.npy", arr)
    return d


def _snapshot(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in d.iterdir() if p.is_file()}


@pytest.mark.parametrize("argv, message", BAD, ids=[" ".join(a) or "no-args" for a, _ in BAD])
def test_bad_arguments_fail_in_one_line(workdir: Path, argv: list[str], message: str,
                                        capsys: pytest.CaptureFixture) -> None:
    argv = [a.replace("{d.name}", workdir.name).replace("{d}", str(workdir)) for a in argv]
    before = _snapshot(workdir)
    try:
        status = main(argv)
    except SystemExit as exc:       # argparse's own errors
        status = exc.code
    out, err = capsys.readouterr()
    assert status not in (0, None), out
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert err.startswith(f"systolic {argv[0]}: error: " if argv and argv[0] in
                          ("run", "asm", "exec", "tune", "bench", "profile", "net", "cc", "explore")
                          else "systolic: error: "), err
    assert message.replace("{d}", str(workdir)) in err
    assert "Traceback" not in err
    assert _snapshot(workdir) == before     # nothing written, nothing overwritten


@pytest.mark.parametrize("flag, value", [("--dim", "3"), ("--dim", "1024"), ("--mem-beat-bytes", "12")])
def test_explore_refuses_a_value_no_hardware_takes_before_any_work(flag: str, value: str,
                                                                   capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["explore", *MM, flag, value, "--backend", "stand-in", "--quiet"])
    out, err = capsys.readouterr()
    assert exc.value.code == 2 and out == "" and f"argument {flag}: " in err and f"{value}" in err


def test_a_cache_that_is_a_file_is_one_line(workdir: Path, monkeypatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("SYSTOLIC_CACHE", str(workdir / "afile"))
    assert main(["run", *MM, "--backend", "verilator"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "verilator" in err   # the cache it cannot use, or the toolchain this machine lacks


def test_an_unreachable_scheduler_is_one_line_at_once(workdir: Path, capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("dask.distributed")
    start = time.monotonic()
    assert main(["tune", *MM, "--backend", "stand-in", "--scheduler", "tcp://127.0.0.1:9",
                 "--db", str(workdir / "s.db")]) == 2
    assert time.monotonic() - start < 10, "Dask's own connect timeout is 30 s"
    assert capsys.readouterr().err == ("systolic tune: error: cannot reach the Dask scheduler 'tcp://127.0.0.1:9': "
                                       "Connection refused\n")
    assert not (workdir / "s.db").exists(), "no database before a measurer"


def test_systolic_debug_shows_the_traceback(workdir: Path) -> None:
    argv = [sys.executable, "-m", "toolkit.cli", "exec", str(workdir)]
    quiet = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    loud = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "SYSTOLIC_DEBUG": "1"})
    assert quiet.returncode == loud.returncode == 2
    assert quiet.stderr.count("\n") == 1 and "Traceback" not in quiet.stderr
    assert "Traceback (most recent call last)" in loud.stderr and "isa.instructions.ISAError" in loud.stderr
    assert loud.stderr.rstrip().endswith(quiet.stderr.rstrip())
