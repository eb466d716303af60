"""Cycle-accurate backend: the SystemVerilog accelerator (rtl/) under Verilator.

``run(program, inputs)`` builds (once per hardware config, cached) a Verilated
model linked with the C++ harness in ``rtl/harness/``, writes the program file,
runs the harness as a subprocess and reads back outputs, cycles, counters and
optionally the per-instruction log. Python never steps the clock.
``run_many(jobs)`` runs many programs through one harness process (its ``--batch``
mode), so that small programs do not pay a process start each.

Builds are cached under ``$SYSTOLIC_CACHE`` (default ``~/.cache/systolic/verilator``),
keyed by the hardware config hash, the compiler flags, the ``-march=native``
target of this machine, the Verilator version and a hash of the RTL and harness
sources. Two processes building the same key serialize on a file lock; a build
happens in a temporary directory and is renamed into place, sealed with a checksum
of its binary that every use checks: a damaged build is rebuilt, and says so.
A build without a waveform is profile-guided: compiled instrumented, clocked on a
training program (``simulators/pgo.py``), compiled again with the counts (``SYSTOLIC_PGO=0``:
compiled once, plain).
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from isa import HardwareConfig, Program
from isa.checker import check, check_buffers
from isa.config import DATAFLOW_SETS
from isa.opcodes import COUNTERS  # noqa: F401  (the counter names every run reports)

from . import pgo, results_file, rtl_codegen
from .base import (MAX_TIMEOUT_S, BackendError, CycleLimit, RunResult, SimulationTimeout, ToolchainError,
                   positive_limit)
from .toolchain import LZ4_MSG, has_lz4, machine_key, verilator_env, verilator_version

ROOT = Path(__file__).resolve().parent.parent
RTL_DIR = ROOT / "rtl"
HARNESS_DIR = RTL_DIR / "harness"
# package first, then the modules (any order), the top last
RTL_FILES = ("systolic_pkg.sv", "loop_mm_pkg.sv", "loop_conv_pkg.sv", "pe.sv", "mesh.sv", "transposer.sv",
             "ram_bank.sv", "local_mem.sv", "dispatch.sv", "load_unit.sv", "os_sums.sv", "ex_array.sv",
             "execute_unit.sv", "norm_unit.sv", "store_unit.sv",
             "loop_mm_xfer.sv", "loop_mm_ex.sv", "loop_mm_st_norm.sv", "loop_mm_st.sv", "loop_matmul.sv",
             "loop_conv_pipe.sv", "loop_conv_seq.sv", "loop_conv_ld_bias.sv", "loop_conv_ld_input.sv",
             "loop_conv_ld_weight.sv", "loop_conv_ex.sv", "loop_conv_st.sv", "loop_conv.sv", "clock_gate.sv",
             "accel_top.sv")
TOP = "accel_top"
CFLAGS = "-march=native"
# Optimization by kind of code, in the variables of Verilator's makefile (an -O in CFLAGS would
# not do: the makefile puts OPT_FAST after CFLAGS on the harness's files, which left the clock
# loop at OPT_FAST's default -Os). OPT_FAST: the per-cycle code, the model's and the harness's.
# OPT_SLOW: the model's cold code (constructor, initial settle), run once a program, left
# unoptimized as Verilator's default has it: compiling it at -O3 was most of a build.
# OPT_GLOBAL: Verilator's run-time library.
MAKE_VARS = ("OPT_FAST=-O3", "OPT_SLOW=-O0", "OPT_GLOBAL=-O2")
# --assert: the design's assumptions (SystemVerilog assertions) are checked in every run
# -Wall with warnings fatal: the RTL is lint-clean (lowRISC's rule), so a new warning stops the build.
# UNOPTFLAT is Verilator's note on a combinational signal whose bits feed each other across
# modules (the mesh's skew lines, the unrollers' handshakes), a speed hint, not a fault.
VERILATOR_FLAGS = ("--assert", "-Wall", "-Wno-UNOPTFLAT")
# Profile-guided optimization (gcc): a build without a waveform compiles the model instrumented,
# clocks a training program on it (simulators/pgo.py) and compiles it again with the counts:
# the clock loop takes ~18% less CPU at dim 16, for twice the compile time. Code the training
# does not reach keeps the usual optimization (-fprofile-partial-training).
PGO_GENERATE = "-fprofile-generate -fprofile-update=single"
PGO_USE = "-fprofile-use -fprofile-partial-training -fprofile-correction -Wno-missing-profile"


def profile_guided(trace: str | None) -> bool:
    """Whether a build is profile-guided: without a waveform, unless SYSTOLIC_PGO=0 (one plain compile,
    in half the time, for a model that will run little: a quick look, an exploration's design points)."""
    return trace is None and os.environ.get("SYSTOLIC_PGO", "1") != "0"
UNITS = ("load", "execute", "store")


def compiled_sources() -> list[Path]:
    """What verilator is given to build: the RTL and the harness's .cpp files."""
    return [RTL_DIR / f for f in RTL_FILES] + sorted(HARNESS_DIR.glob("*.cpp"))


def sources() -> list[Path]:
    """Every source a build reads (the build key hashes them): those compiled and the harness's headers."""
    return compiled_sources() + sorted(HARNESS_DIR.glob("*.h"))


def cache_root() -> Path:
    return Path(os.environ.get("SYSTOLIC_CACHE") or Path.home() / ".cache" / "systolic" / "verilator")


def build_key(hw: HardwareConfig, trace: str | None = None) -> str:
    h = hashlib.sha256()
    for part in (hw.rtl_hash(), CFLAGS, *MAKE_VARS, *VERILATOR_FLAGS, PGO_GENERATE, PGO_USE, machine_key(),
                 verilator_version(), f"trace={trace}", f"pgo={profile_guided(trace)}"):
        h.update(part.encode() + b"\0")
    for src in (*sources(), Path(pgo.__file__)):
        h.update(src.name.encode() + b"\0" + src.read_bytes())
    for name, text in rtl_codegen.build_sources(hw).items():
        h.update(name.encode() + b"\0" + text.encode())
    return h.hexdigest()[:20]


def params(hw: HardwareConfig) -> dict[str, int]:
    return {"DIM": hw.dim, "SP_ROWS": hw.sp_rows, "SP_BANKS": hw.sp_banks, "ACC_ROWS": hw.acc_rows,
            "ACC_BANKS": hw.acc_banks, "MAX_BLOCK_LEN": hw.max_block_len,
            "LD_QUEUE": hw.ld_queue, "EX_QUEUE": hw.ex_queue, "ST_QUEUE": hw.st_queue,
            "DATAFLOWS": DATAFLOW_SETS[hw.dataflows], "STORE_REQUANT": int(hw.store_requant),
            "STORE_COL_SCALES": int(hw.store_col_scales), "NORM_STATS": hw.norm_stats}


def build(hw: HardwareConfig, *, trace: str | None = None, verbose: bool = False) -> Path:
    """The harness binary for ``hw``, built on first use and cached; trace: None, "fst" or "vcd".

    A build says on stderr what it builds, where, and how long it took (``SYSTOLIC_QUIET=1``:
    silent; the CLI's ``--quiet`` sets it). A cached build whose binary no longer matches its
    checksum (truncated, overwritten, deleted, or the key path is a file) is rebuilt, with a
    line on stderr that says why, quiet or not."""
    env = verilator_env()
    if trace == "fst" and not has_lz4():
        raise ToolchainError(LZ4_MSG)
    what = f"the verilator model of hardware config {hw.name} (dim {hw.dim}" + (f", {trace} tracing)" if trace else ")")
    return cached_build(build_key(hw, trace), what, "Vsim", lambda tmp: _build_in(tmp, hw, trace, env, verbose))


# Over 40 lines: the build cache's protocol (look, lock, look again, build aside, seal, rename) kept whole.
def cached_build(key: str, what: str, product: str, make: Callable[[Path], None]) -> Path:
    """``product`` of the build ``key`` in the cache, made on first use by ``make(directory)``.

    Two processes building the same key serialize on a file lock; ``make`` works in a temporary
    directory that is renamed into place once sealed with a checksum of ``product``. A build whose
    product no longer matches its seal is rebuilt, with a line on stderr that says why."""
    root = cache_root()
    final = root / key
    binary = final / product
    if _damage(final, product) is None:
        return binary
    try:
        root.mkdir(parents=True, exist_ok=True)
        lock = open(root / f"{key}.lock", "w")
    except OSError as exc:
        raise ToolchainError(f"cannot use the build cache {str(root)!r} (set by SYSTOLIC_CACHE or the default "
                             f"~/.cache/systolic/verilator): {exc.strerror or exc}") from None
    with lock:
        if not _try_lock(lock):
            _announce(f"waiting for another process building {what}")
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            damage = _damage(final, product)
            if damage is None:   # another process built it while we waited
                return binary
            if damage:
                _announce(f"the cached build {final} is damaged ({damage}): rebuilding it", always=True)
                _remove(final)
            _remove_abandoned_builds(root, key)
            _announce(f"building {what} into {final} (once per config; a large dim takes minutes)")
            start = time.perf_counter()
            tmp = Path(tempfile.mkdtemp(prefix=f"{key}{_TMP}", dir=root))
            try:
                make(tmp)
                (tmp / _seal(product)).write_text(_digest(tmp / product))   # last: a build without it is incomplete
                os.rename(tmp, final)
            finally:
                if tmp.exists():
                    shutil.rmtree(tmp, ignore_errors=True)
            _announce(f"built {what} in {time.perf_counter() - start:.1f} s")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return binary


_TMP = ".tmp-"  # a build happens in KEY.tmp-XXXX under the cache root, holding KEY.lock


def _seal(product: str) -> str:
    """A build's checksum of its product, written when the build is complete."""
    return f"{product}.sha256"


def _digest(binary: Path) -> str:
    return hashlib.sha256(binary.read_bytes()).hexdigest()


def _damage(final: Path, product: str) -> str | None:
    """None when the build in ``final`` is complete and intact; "" when there is none; else what is
    wrong with it (a cache outlives crashes, full disks and hands that truncate or delete files)."""
    if not os.path.lexists(final):
        return ""
    try:
        actual = _digest(final / product)
        sealed = (final / _seal(product)).read_text().strip()
    except NotADirectoryError:
        return "it is not a directory"
    except FileNotFoundError as exc:
        return f"{Path(exc.filename).name} is missing"
    except OSError as exc:
        return f"cannot read {Path(exc.filename or final).name}: {exc.strerror or exc}"
    return None if actual == sealed else f"its {product} does not match its checksum"


def _remove(path: Path) -> None:
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    except OSError as exc:
        raise ToolchainError(f"cannot remove the damaged build {str(path)!r}: {exc.strerror or exc}") from None


def _try_lock(fh: Any) -> bool:
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _remove_abandoned_builds(root: Path, held_key: str) -> None:
    """Remove the temporary directories of builds that were killed midway. A builder holds its
    key's lock for as long as its directory exists, so a directory whose lock is free (or is
    ``held_key``'s, which the caller holds) has no builder."""
    for tmp in root.glob(f"*{_TMP}*"):
        key = tmp.name.split(_TMP, 1)[0]
        if key == held_key:
            shutil.rmtree(tmp, ignore_errors=True)
            continue
        try:
            lock = open(root / f"{key}.lock", "a")
        except OSError:
            continue
        with lock:
            if _try_lock(lock):
                shutil.rmtree(tmp, ignore_errors=True)


def _announce(message: str, always: bool = False) -> None:
    if always or os.environ.get("SYSTOLIC_QUIET", "") in ("", "0"):
        print(f"systolic: {message}", file=sys.stderr, flush=True)



def _build_in(tmp: Path, hw: HardwareConfig, trace: str | None, env: dict[str, str], verbose: bool) -> None:
    """The model's binary tmp/Vsim; a profile-guided build (profile_guided) is built twice, instrumented
    and then with the training run's profile (PGO_GENERATE above)."""
    rtl_codegen.write_sources(tmp, rtl_codegen.build_sources(hw))
    obj = tmp / "obj"
    start = time.perf_counter()
    pgo_build = profile_guided(trace)
    if pgo_build:
        _compile(tmp, hw, trace, env, PGO_GENERATE, ["-LDFLAGS", "-fprofile-generate"])
        with open(tmp / "build.log", "a") as log:
            log.write(pgo.train(tmp / "Vsim", hw))
        for f in obj.iterdir():   # all but the counts: every object is compiled again with them
            if f.suffix != ".gcda":
                f.unlink()
    _compile(tmp, hw, trace, env, PGO_USE if pgo_build else "", [])
    (tmp / "build_seconds").write_text(f"{time.perf_counter() - start:.2f}\n")
    shutil.rmtree(obj, ignore_errors=True)   # keep the binary only
    if verbose:
        print((tmp / "build.log").read_text())


def _compile(tmp: Path, hw: HardwareConfig, trace: str | None, env: dict[str, str], cflags: str,
             extra: list[str]) -> None:
    """One verilator --build of the sources in tmp into tmp/Vsim, its output appended to build.log."""
    cmd = ["verilator", "--cc", "--exe", "--build", "-j", str(max(1, os.cpu_count() or 1)),
           "--top-module", TOP, "--Mdir", str(tmp / "obj"), "-o", str(tmp / "Vsim"),
           *VERILATOR_FLAGS, "-CFLAGS", f"{CFLAGS} {cflags} -I{tmp}", f"-I{RTL_DIR}", f"-I{tmp}", *extra]
    for var in MAKE_VARS:
        cmd += ["-MAKEFLAGS", var]
    if trace:
        cmd.append("--trace-fst" if trace == "fst" else "--trace")
    cmd += [f"-G{k}={v}" for k, v in params(hw).items()]
    cmd += [str(p) for p in compiled_sources()]
    try:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    except subprocess.TimeoutExpired:
        raise ToolchainError(f"verilator build for {hw.name} timed out") from None
    except OSError as exc:
        raise ToolchainError(f"cannot run verilator: {exc}") from None
    log = out.stdout + out.stderr
    with open(tmp / "build.log", "a") as f:
        f.write(log)
    if out.returncode or not (tmp / "Vsim").exists():
        tail = "\n".join(log.strip().splitlines()[-40:])
        if trace == "fst" and "lz4.h" in log:
            raise ToolchainError(LZ4_MSG)
        raise ToolchainError(f"verilator build for hardware config {hw.name} ({hw.config_hash()}) failed "
                           f"(exit {out.returncode}):\n{tail}")


# ---- running ------------------------------------------------------------------------
# what each exit status of the harness means, for the error message
_FAILURE_KINDS = {2: "bad harness arguments or program file",
                  3: "deadlock, or slower than the watchdog of {watchdog} cycles allows", 4: "cycle limit",
                  5: "RTL check"}


def _failure(code: int, msg: str, watchdog: int) -> BackendError:
    kind = _FAILURE_KINDS.get(code, f"exit {code}").format(watchdog=watchdog)
    return (CycleLimit if code == 4 else BackendError)(f"verilator simulation failed ({kind}): {msg[-4000:]}")


class _Harness:
    """One harness process in ``--batch`` mode, in ``workdir``: a line of arguments in, a status line out.

    A run that outlives its timeout, or a process that dies (a crash, a failed RTL
    assertion), ends the process: the caller starts a fresh one for what is left."""

    def __init__(self, binary: Path, workdir: Path) -> None:
        self._stderr = tempfile.TemporaryFile(dir=workdir)
        self.proc = subprocess.Popen([str(binary), "--batch"], cwd=workdir, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._stderr)
        self._pending = b""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, args: list[str]) -> None:
        """Start one program (:meth:`status` waits for it)."""
        try:
            self.proc.stdin.write(("\t".join(args) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise self._died() from None

    def status(self, timeout: float | None) -> str:
        """The status line of the program sent ("ok" or "error CODE MESSAGE")."""
        deadline = None if timeout is None else time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._pending:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([fd], [], [], wait)[0]:
                self.kill()
                raise SimulationTimeout(f"verilator simulation did not finish within {timeout} s (killed)")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise self._died()
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        return line.decode(errors="replace")

    def _died(self) -> BackendError:
        code = self.proc.wait()
        self._stderr.seek(0)
        err = self._stderr.read().decode(errors="replace").strip()[-4000:]
        how = f"killed by signal {-code}" if code < 0 else f"exit {code}"
        self.kill()
        return BackendError(f"verilator simulation failed (the harness process died: {how}): {err}")

    def close(self) -> None:
        """End of input: the process exits when it has read it."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self._stderr):
            try:
                stream.close()
            except OSError:   # stdin's buffer could not be flushed to a dead process
                pass


def _harness_options(log: bool, wave: str | os.PathLike | None, trace: str | None,
                     cycle_limit: int | None) -> list[str]:
    """The harness flags every job of a batch shares."""
    options = ["--log"] if log else []
    if wave is not None:
        wave_path = str(Path(wave).resolve())
        if "\t" in wave_path or "\n" in wave_path:
            raise ValueError(f"wave: the path {wave_path!r} has a tab or a newline")
        options += [f"--trace-{trace}", wave_path]
    if cycle_limit is not None:
        options += ["--cycle-limit", str(cycle_limit)]
    return options


class _Harnesses:
    """One harness process per hardware config, built and started on first use, and started again
    after one has died (so that the job after a crash runs in a fresh one)."""

    def __init__(self, workdir: Path, trace: str | None) -> None:
        self.workdir, self.trace = workdir, trace
        self._binaries: dict[HardwareConfig, Path] = {}
        self._running: dict[Path, _Harness] = {}

    def built(self, hw: HardwareConfig) -> bool:
        """Whether the model of ``hw`` is built (:meth:`get` takes no build)."""
        return hw in self._binaries or (cache_root() / build_key(hw, self.trace) / "Vsim").exists()

    def get(self, hw: HardwareConfig) -> _Harness:
        if hw not in self._binaries:
            self._binaries[hw] = build(hw, trace=self.trace)
        binary = self._binaries[hw]
        if binary not in self._running or not self._running[binary].alive():
            self._running[binary] = _Harness(binary, self.workdir)
        return self._running[binary]

    def close(self) -> None:
        for harness in self._running.values():
            harness.close()


def _run_jobs(jobs: Iterable[tuple[Program, Mapping[str, np.ndarray]]], *, log: bool, wave: str | os.PathLike | None,
              cycle_limit: int | None, timeout: float | None, watchdog: int | None,
              faults: Mapping[int, str]) -> list[RunResult | Exception]:
    """Run programs in turn in one harness process per binary; a bad program fails only itself.

    faults (for tests) injects a fault into the job at that position: "drop_dma_responses"
    (the harness's DRAM never answers a read) or "kill_harness" (the process is killed
    as the job starts, as a crash would end it)."""
    cycle_limit = positive_limit("cycle_limit", cycle_limit)
    timeout = positive_limit("timeout", timeout, float, MAX_TIMEOUT_S)
    watchdog = positive_limit("watchdog", watchdog)
    trace = None if wave is None else ("vcd" if str(wave).endswith(".vcd") else "fst")
    options = _harness_options(log, wave, trace, cycle_limit)
    with tempfile.TemporaryDirectory(prefix="systolic-run-") as tmpdir:
        harnesses = _Harnesses(Path(tmpdir), trace)
        try:
            return [_run_job(harnesses, n, program, inputs, options, log=log, timeout=timeout,
                             watchdog=watchdog, fault=faults.get(n))
                    for n, (program, inputs) in enumerate(jobs)]
        finally:
            harnesses.close()


def _run_job(harnesses: _Harnesses, n: int, program: Program, inputs: Mapping[str, np.ndarray],
             options: list[str], *, log: bool, timeout: float | None, watchdog: int | None,
             fault: str | None) -> RunResult | Exception:
    """Job ``n`` of a batch: its result, or the error that failed it alone (an error that leaves the
    batch unable to go on, such as a failed build, is raised).

    Where its model is built, the harness starts the program before the checker has passed it, and
    simulates while Python checks (the check was most of a run's fixed cost); a program the checker
    refuses is killed unread, and the checker's error comes first, as if it had run before anything."""
    start = time.perf_counter()
    meanwhile = harnesses.built(program.hw)   # else a build, minutes: not for a program the checker refuses
    try:   # the buffer table first in any case: a bad one may ask for any amount of DRAM
        (check_buffers if meanwhile else check)(program)
    except (ValueError, TypeError) as exc:   # the checker's errors
        return exc
    try:
        sent: _Sent | Exception = _send(harnesses, n, program, inputs, options, watchdog, fault)
    except (ValueError, TypeError, BackendError) as exc:   # the inputs' errors, a failed build, a dead harness
        sent = exc
    try:
        if meanwhile:
            check(program)
    except (ValueError, TypeError) as exc:
        if isinstance(sent, _Sent):
            sent.harness.kill()
        return exc
    if isinstance(sent, ToolchainError):
        raise sent
    if isinstance(sent, Exception):
        return sent
    return _received(sent, program, timeout, log, start)


@dataclass
class _Sent:
    """A program the harness runs: where, its files, its DRAM before the run, its watchdog."""
    harness: _Harness
    program_path: Path
    res_path: Path
    dram: np.ndarray
    watchdog: int


def _send(harnesses: _Harnesses, n: int, program: Program, inputs: Mapping[str, np.ndarray],
          options: list[str], watchdog: int | None, fault: str | None) -> _Sent:
    dram = program.dram_image(inputs)   # validates the inputs
    blob = program.to_bytes(inputs)
    harness = harnesses.get(program.hw)
    program_path, res_path = harnesses.workdir / f"p{n}.bin", harnesses.workdir / f"r{n}.bin"
    program_path.write_bytes(blob)
    dog = watchdog or program.hw.watchdog_cycles
    args = [program_path.name, res_path.name, *options, "--watchdog", str(dog)]
    if fault == "drop_dma_responses":
        args.append("--drop-dma-responses")
    elif fault == "kill_harness":
        harness.proc.kill()
    harness.send(args)   # if it fails, the batch's temporary folder takes the file
    return _Sent(harness, program_path, res_path, dram, dog)


def _received(sent: _Sent, program: Program, timeout: float | None, log: bool, start: float) -> RunResult | Exception:
    """The result of a checked program the harness runs, or the error that failed it."""
    try:
        status = sent.harness.status(timeout)
    except BackendError as exc:
        return exc
    finally:
        sent.program_path.unlink()
    if status != "ok":
        code, _, msg = status.removeprefix("error ").partition(" ")
        return _failure(int(code) if code.isdigit() else -1, msg, sent.watchdog)
    result = _result(program, sent.dram, sent.res_path.read_bytes(), log, start)
    sent.res_path.unlink()
    return result


def _result(program: Program, dram: np.ndarray, data: bytes, log: bool, start: float) -> RunResult:
    cycles, sim_s, counters, segments, raw, runs = results_file.parse(data, program)
    for addr, chunk in segments.items():
        dram[addr:addr + len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
    result = RunResult(program.read_outputs(dram), cycles, counters, "verilator", time.perf_counter() - start)
    result.sim_seconds = sim_s   # the harness's own time in its clock loop (for cycles/s)
    if log:
        result.log = results_file.instruction_log(program, raw)
        result.soc_log = {stack: r for stack, r in runs.items() if r} or None
    return result


def run(program: Program, inputs: Mapping[str, np.ndarray], *, log: bool = False, wave: str | os.PathLike | None = None,
        cycle_limit: int | None = None, timeout: float | None = None, watchdog: int | None = None,
        _fault: str | None = None) -> RunResult:
    """Run ``program`` on the RTL; bit-exact outputs plus cycles and counters.

    log: keep the per-instruction log (RunResult.log: index, op, unit, issue, complete).
    wave: write a waveform there: FST, or VCD when the path ends in .vcd (builds a traced
    model on first use; FST needs the lz4 headers).
    cycle_limit: stop with an error after that many cycles. timeout: seconds of wall time.
    watchdog: cycles without progress before the run stops with a report (default: the
    config's ``watchdog_cycles``, which grows with ``dram_latency``).
    Each limit is None (none) or positive.
    """
    (result,) = _run_jobs([(program, inputs)], log=log, wave=wave, cycle_limit=cycle_limit, timeout=timeout,
                          watchdog=watchdog, faults={0: _fault} if _fault else {})
    if isinstance(result, Exception):
        raise result
    return result


def run_many(jobs: Iterable[tuple[Program, Mapping[str, np.ndarray]]], *, log: bool = False,
             cycle_limit: int | None = None, timeout: float | None = None, watchdog: int | None = None,
             _faults: Mapping[int, str] | None = None) -> list[RunResult | Exception]:
    """Run many ``(program, inputs)`` pairs in one harness process (one per hardware config), in order.

    Small programs pay one process start in all instead of one each; every program
    runs on a freshly constructed model and DRAM, so its cycles are those of ``run``.
    Returns one entry per job: its RunResult, or the exception ``run`` would have
    raised for it (a checker ``ProgramError``, a ``ValueError`` for bad inputs, a
    ``BackendError`` for a failed simulation, ``SimulationTimeout`` past ``timeout``
    seconds). A bad program fails only itself: after a timeout or a harness that died,
    a fresh process runs the rest. The options are ``run``'s, applied to every program;
    a ``ToolchainError`` (no Verilator, failed build) is raised.
    """
    return _run_jobs(jobs, log=log, wave=None, cycle_limit=cycle_limit, timeout=timeout, watchdog=watchdog,
                     faults=_faults or {})
