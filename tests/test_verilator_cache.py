"""The Verilator build cache, without the toolchain (the build itself is faked): a build says on
stderr what it builds, where and how long it took, unless quiet; it removes what killed
builds left behind, but never the directory of a build still running; and a damaged build
(its binary no longer the one its checksum seals) is rebuilt once, even under concurrent use."""
from __future__ import annotations

import fcntl
import os
import re
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import toolkit as tk
from simulators import verilator as V
from toolkit.cli import main

TINY = tk.HardwareConfig.preset("tiny")


@pytest.fixture
def fake_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache in tmp_path whose builds write a stand-in binary under the key "new"."""
    monkeypatch.setenv("SYSTOLIC_CACHE", str(tmp_path))
    monkeypatch.delenv("SYSTOLIC_QUIET", raising=False)
    monkeypatch.setattr(V, "verilator_env", lambda: {})
    monkeypatch.setattr(V, "build_key", lambda hw, trace=None: "new")
    monkeypatch.setattr(V, "_build_in", lambda tmp, *_: (tmp / "Vsim").write_text("binary"))
    return tmp_path


@pytest.fixture
def builds(fake_build: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The directories the faked builds ran in; a build takes 0.2 s, so that concurrent ones overlap."""
    ran: list[Path] = []
    fake = V._build_in

    def counted(tmp: Path, *args: object) -> None:
        ran.append(tmp)
        time.sleep(0.2)
        fake(tmp, *args)
    monkeypatch.setattr(V, "_build_in", counted)
    return ran


def _replace_with_file(build: Path) -> None:
    shutil.rmtree(build)
    build.write_text("not a build")


# how a cached build gets damaged, and what the rebuild says of it
MISMATCH = "its Vsim does not match its checksum"
DAMAGE = {
    "truncated": (lambda d: (d / "Vsim").write_bytes((d / "Vsim").read_bytes()[:3]), MISMATCH),
    "zero bytes": (lambda d: (d / "Vsim").write_bytes(b""), MISMATCH),
    "random bytes": (lambda d: (d / "Vsim").write_bytes(os.urandom(6)), MISMATCH),
    "Vsim deleted": (lambda d: (d / "Vsim").unlink(), "Vsim is missing"),
    "unsealed": (lambda d: (d / V._seal("Vsim")).unlink(), f"{V._seal('Vsim')} is missing"),
    "key path a file": (_replace_with_file, "it is not a directory"),
}


@pytest.mark.parametrize("how", DAMAGE)
def test_a_damaged_build_is_rebuilt_with_one_line_even_when_quiet(how: str, fake_build: Path, builds: list[Path],
                                                                  capsys: pytest.CaptureFixture,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYSTOLIC_QUIET", "1")
    V.build(TINY)
    damage, reason = DAMAGE[how]
    damage(fake_build / "new")
    binary = V.build(TINY)
    assert binary.read_text() == "binary" and len(builds) == 2
    assert capsys.readouterr().err == (f"systolic: the cached build {fake_build / 'new'} is damaged ({reason}): "
                                       "rebuilding it\n")
    assert V.build(TINY) == binary and len(builds) == 2, "healed: used as it is"
    assert sorted(p.name for p in fake_build.iterdir()) == ["new", "new.lock"], "nothing left behind"


def test_concurrent_uses_of_a_damaged_build_rebuild_it_once(fake_build: Path, builds: list[Path],
                                                            capsys: pytest.CaptureFixture) -> None:
    # threads stand for processes: each build() opens the lock file anew, and flock locks
    # open files, not processes
    V.build(TINY)
    DAMAGE["truncated"][0](fake_build / "new")
    capsys.readouterr()
    with ThreadPoolExecutor(4) as pool:
        binaries = list(pool.map(lambda _: V.build(TINY), range(4)))
    assert len(builds) == 2 and {b.read_text() for b in binaries} == {"binary"}
    assert capsys.readouterr().err.count("is damaged") == 1


def test_a_build_removes_what_killed_builds_left(fake_build: Path) -> None:
    left = [fake_build / "old.tmp-a1", fake_build / "new.tmp-b2", fake_build / "gone.tmp-c3"]
    running = fake_build / "busy.tmp-d4"
    for d in (*left, running):
        (d / "obj").mkdir(parents=True)
    (fake_build / "old.lock").touch()                 # "gone" has no lock file at all
    with open(fake_build / "busy.lock", "w") as busy:
        fcntl.flock(busy, fcntl.LOCK_EX)              # a builder of "busy" still at work
        binary = V.build(TINY)
        assert binary == fake_build / "new" / "Vsim" and binary.read_text() == "binary"
        assert [d.name for d in left if d.exists()] == []
        assert running.is_dir() and (running / "obj").is_dir()
    V.build(TINY)                                      # cached: nothing built, nothing removed
    assert running.is_dir()


def test_a_build_says_what_where_and_how_long_on_stderr(fake_build: Path, capsys: pytest.CaptureFixture) -> None:
    V.build(TINY)
    out, err = capsys.readouterr()
    assert out == "", "stdout stays clean for pipes"
    lines = err.splitlines()
    assert lines[0] == (f"systolic: building the verilator model of hardware config tiny (dim 4) into "
                        f"{fake_build / 'new'} (once per config; a large dim takes minutes)")
    assert re.fullmatch(r"systolic: built the verilator model of hardware config tiny \(dim 4\) in \d+\.\d s",
                        lines[1])
    V.build(TINY)
    assert capsys.readouterr() == ("", ""), "a cached model is used silently"


def test_a_build_waiting_for_another_says_so(fake_build: Path, capsys: pytest.CaptureFixture,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(V, "_try_lock", lambda fh: False)    # as if another process held the lock
    V.build(TINY)
    assert capsys.readouterr().err.startswith("systolic: waiting for another process building the verilator model")


def test_quiet_builds_are_silent(fake_build: Path, capsys: pytest.CaptureFixture,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYSTOLIC_QUIET", "1")
    V.build(TINY)
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("quiet", [True, False])
def test_cli_quiet_reaches_the_builds_for_the_command_only(quiet: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    from toolkit.cli import tune as tune_command
    seen = []
    monkeypatch.delenv("SYSTOLIC_QUIET", raising=False)
    monkeypatch.setattr(tune_command, "cmd_tune", lambda args: seen.append(os.environ.get("SYSTOLIC_QUIET")) or 0)
    argv = ["tune", "matmul", "--config", "tiny"] + (["--quiet"] if quiet else [])
    assert main(argv) == 0
    assert seen == (["1"] if quiet else [None])
    assert "SYSTOLIC_QUIET" not in os.environ


def test_the_build_key_covers_the_harness_headers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness is split into headers that main.cpp includes: verilator is given only the .cpp, but an
    edit to a header is a new build."""
    rtl = tmp_path / "rtl"
    shutil.copytree(V.RTL_DIR, rtl)
    monkeypatch.setattr(V, "RTL_DIR", rtl)
    monkeypatch.setattr(V, "HARNESS_DIR", rtl / "harness")
    monkeypatch.setattr(V, "verilator_version", lambda: "verilator")
    monkeypatch.setattr(V, "machine_key", lambda: "machine")
    headers = sorted((rtl / "harness").glob("*.h"))
    assert headers and not set(headers) & set(V.compiled_sources())
    before = V.build_key(TINY)
    dram = rtl / "harness" / "dram.h"
    dram.write_text(dram.read_text() + "\n")
    assert V.build_key(TINY) != before
