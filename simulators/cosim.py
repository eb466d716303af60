"""C programs on the simulators: the co-simulation runtime (``rtl/cosim``) and the C toolchain around it.

A C program written for Gemmini's ``gemmini.h`` issues RoCC words through rocc-software's
``xcustom.h`` macros, fences with the RISC-V ``fence`` and reads ``rdcycle``. ``compile_c``
compiles it natively against the compatibility include directory (``rtl/cosim/include``:
``rocc-software/src/xcustom.h`` mapped to the runtime, and ``systolic_riscv.h``, force-included,
which turns that inline assembly into calls of the runtime) and links it with a runtime
library: the accelerator runs in the program's own process, and its DMA reads and writes the
program's memory at the addresses the words carry. ``run_c`` runs the result.

Engines, one runtime library each, built on first use and cached like the harness
(``verilator.cached_build``):

* ``verilator``: the Verilated RTL of one hardware config, with the harness's DRAM model and
  clock loop (``rtl/harness/machine.h``); cycles and counters are the RTL's, the same as
  ``tk.run`` of a program holding the same words.
* ``functional``: the toolkit's functional model through an embedded Python interpreter
  (``simulators/cosim_functional.py``), so that the C runtime and ``tk.run`` share one model of
  the semantics; no timing.
"""
from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import signal
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Callable, Iterable, Sequence

from isa import HardwareConfig

from . import rtl_codegen, verilator
from .base import ToolchainError

RUNTIME_DIR = verilator.RTL_DIR / "cosim"
INCLUDE_DIR = RUNTIME_DIR / "include"
FORCED_HEADER = "systolic_riscv.h"   # included into every C file: fence and rdcycle on x86
ENGINES = ("functional", "verilator")
LIBRARY = "libcosim.a"
CFLAGS = "-O2 -march=native"
PR_SET_PDEATHSIG = 1   # <sys/prctl.h>


def runtime_sources() -> list[Path]:
    """Every source of the runtime (its build keys hash them, with the harness's)."""
    return sorted(RUNTIME_DIR.glob("*.cpp")) + sorted(RUNTIME_DIR.glob("*.h")) + sorted(INCLUDE_DIR.rglob("*.h"))


def _key(parts: Iterable[str]) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() + b"\0")
    for src in runtime_sources() + sorted(verilator.HARNESS_DIR.glob("*.h")):
        h.update(src.name.encode() + b"\0" + src.read_bytes())
    return h.hexdigest()[:20]


def _python() -> dict[str, str]:
    """Where the embedded interpreter's headers and library are (this Python's)."""
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    version = sysconfig.get_config_var("LDVERSION") or sysconfig.get_config_var("VERSION")
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        raise ToolchainError("the C runtime embeds Python (its word checker, and the functional engine) and needs "
                             f"a Python built with a shared libpython ({sys.executable} has none)")
    return {"include": sysconfig.get_paths()["include"], "libdir": libdir, "lib": f"python{version}"}


def build_runtime(engine: str, hw: HardwareConfig) -> Path:
    """The runtime library of ``engine`` (for ``hw``, on verilator), built on first use and cached."""
    if engine == "verilator":
        model = _build_model(hw)
        flags = (model.parent / "cxxflags").read_text().split() + [f"-I{_python()['include']}"]
        key = _key(["cosim-verilator", model.parent.name, *flags])
        what = f"the C runtime over the verilator model of hardware config {hw.name} (dim {hw.dim})"
        return verilator.cached_build(key, what, LIBRARY, lambda tmp: _build_verilator(tmp, model, flags))
    if engine == "functional":
        py = _python()
        key = _key(["cosim-functional", CFLAGS, *py.values(), rtl_codegen.isa_header(), verilator.machine_key()])
        return verilator.cached_build(key, "the C runtime over the functional model", LIBRARY,
                                      lambda tmp: _build_functional(tmp, py))
    raise ValueError(f"backend: {engine!r} is not an engine of the C runtime; choose one of {', '.join(ENGINES)}")


def _includes(tmp: Path) -> list[str]:
    return [f"-I{tmp}", f"-I{verilator.HARNESS_DIR}", f"-I{RUNTIME_DIR}", f"-I{INCLUDE_DIR}"]


# What the model's build adds to Verilator's makefile: the model's objects without a main, and the
# flags it compiles C++ with (the runtime is compiled with the same).
_MODEL_MK = """cosim-model: $(VK_GLOBAL_OBJS) $(VM_PREFIX)__ALL.a
cosim-flags:
\t@echo $(OPT_FAST) $(CXXFLAGS) $(CPPFLAGS)
"""


def _build_model(hw: HardwareConfig) -> Path:
    """The Verilated model of ``hw`` and Verilator's runtime as one library (``libmodel.a``), its headers
    (``obj/``) and compile flags (``cxxflags``): cached apart from the C runtime, which is quick to rebuild."""
    env = verilator.verilator_env()
    key = "cosim-model-" + verilator.build_key(hw)   # the RTL, the harness and the flags, not the runtime
    what = f"the verilator model of hardware config {hw.name} (dim {hw.dim}) for C programs"
    return verilator.cached_build(key, what, "libmodel.a", lambda tmp: _make_model(tmp, hw, env))


def _make_model(tmp: Path, hw: HardwareConfig, env: dict[str, str]) -> None:
    rtl_codegen.write_sources(tmp, rtl_codegen.build_sources(hw))
    _tool(["verilator", "--cc", "--exe", "--top-module", verilator.TOP, "--Mdir", "obj",
           *verilator.VERILATOR_FLAGS, "-CFLAGS", f"{verilator.CFLAGS} -I{tmp}", f"-I{verilator.RTL_DIR}",
           *[f"-G{k}={v}" for k, v in verilator.params(hw).items()],
           *[str(verilator.RTL_DIR / f) for f in verilator.RTL_FILES]], tmp, env, "verilator")
    (tmp / "model.mk").write_text(_MODEL_MK)
    top = f"V{verilator.TOP}"
    make = ["make", "-C", "obj", "-f", f"{top}.mk", "-f", "../model.mk"]
    _tool([*make, "-j", str(max(1, os.cpu_count() or 1)), "cosim-model"], tmp, env, "make")
    flags = subprocess.run([*make, "-s", "cosim-flags"], cwd=tmp, env=env, capture_output=True, text=True)
    (tmp / "cxxflags").write_text(flags.stdout.strip() + "\n")
    _merge(tmp, "libmodel.a", [f"obj/{top}__ALL.a"], sorted(f"obj/{o.name}" for o in (tmp / "obj").glob("verilated*.o")))
    for f in (tmp / "obj").iterdir():
        if f.suffix != ".h":
            f.unlink()


def _build_verilator(tmp: Path, model: Path, flags: list[str]) -> None:
    """The runtime's objects, compiled with the model's flags, and the model, as one library."""
    hw_sources = model.parent
    objects = []
    for src in (RUNTIME_DIR / "runtime.cpp", RUNTIME_DIR / "engine_verilator.cpp"):
        objects.append(f"{src.stem}.o")
        _tool(["g++", *flags, *_includes(hw_sources), f"-I{hw_sources / 'obj'}", "-c", str(src), "-o", objects[-1]],
              tmp, None, "g++")
    _merge(tmp, LIBRARY, [str(model)], objects)


def _build_functional(tmp: Path, py: dict[str, str]) -> None:
    rtl_codegen.write_sources(tmp, rtl_codegen.isa_sources())
    objects = []
    for src in (RUNTIME_DIR / "runtime.cpp", RUNTIME_DIR / "engine_functional.cpp"):
        objects.append(f"{src.stem}.o")
        _tool(["g++", "-std=c++17", *CFLAGS.split(), *_includes(tmp), f"-I{py['include']}", "-c", str(src),
               "-o", objects[-1]], tmp, None, "g++")
    _merge(tmp, LIBRARY, [], objects)


def _merge(tmp: Path, library: str, archives: list[str], objects: list[str]) -> None:
    """One static library of archives and objects (an ar MRI script; paths absolute or relative to tmp)."""
    script = "\n".join([f"CREATE {library}", *[f"ADDLIB {a}" for a in archives],
                        *[f"ADDMOD {o}" for o in objects], "SAVE", "END"]) + "\n"
    _tool(["ar", "-M"], tmp, None, "ar", stdin=script)


def _tool(cmd: list[str], cwd: Path, env: dict[str, str] | None, what: str, stdin: str | None = None) -> None:
    try:
        out = subprocess.run(cmd, cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=1800)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolchainError(f"cannot run {what}: {exc}") from None
    if out.returncode:
        tail = "\n".join((out.stdout + out.stderr).strip().splitlines()[-30:])
        raise ToolchainError(f"{what} failed building the C runtime (exit {out.returncode}):\n{tail}")


def link_flags() -> list[str]:
    """What a program linked with the C runtime needs besides the library: either engine embeds
    Python (the word checker; the functional engine's model)."""
    py = _python()
    return [f"-L{py['libdir']}", f"-l{py['lib']}", f"-Wl,-rpath,{py['libdir']}", "-ldl", "-lm", "-pthread"]


def _c_string(text: str) -> str:
    """``text`` as a C string literal (octal escapes for anything but plain printable ASCII)."""
    return '"' + "".join(chr(b) if 32 <= b < 127 and chr(b) not in '"\\?' else f"\\{b:03o}"
                         for b in text.encode()) + '"'


def link_config(hw: HardwareConfig, data_slack_mib: int = 0) -> str:
    """The C source of the definitions the runtime reads (engine.h): the hardware (as TOML, and its
    fields, whose SoC timing the verilator engine takes), the toolkit's Python path (the runtime
    imports it: its word checker, the functional engine) and the watchdog; and ``data_slack_mib`` MiB of
    zeroed memory, linked right after the program's own objects, so that it follows their static data."""
    pythonpath = os.pathsep.join([str(verilator.ROOT), *(p for p in sys.path if p and Path(p).is_dir())])
    return "\n".join([
        "/* generated by systolic cc (simulators/cosim.py) */",
        "#include <stdint.h>",
        f"const char systolic_cosim_hw_toml[] = {_c_string(hw.to_toml())};",
        f"const char systolic_cosim_pythonpath[] = {_c_string(pythonpath)};",
        f"const uint64_t systolic_cosim_watchdog = {hw.watchdog_cycles}u;",
        "/* the hardware fields, HardwareConfig.hardware_fields(): the SoC's timing comes from here */",
        "const uint32_t systolic_cosim_hw_fields[] = {" + ", ".join(f"{v}u" for v in hw.hardware_fields()) + "};",
        *([f"char systolic_cosim_data_slack[{data_slack_mib << 20}] __attribute__((used, aligned(64)));"]
          if data_slack_mib else []),
    ]) + "\n"


def compile_c(sources: Sequence[str | os.PathLike], output: str | os.PathLike, *, hw: HardwareConfig,
              engine: str = "functional", include_dirs: Sequence[str] = (), defines: Sequence[str] = (),
              optimize: bool = False, workdir: str | os.PathLike, data_slack_mib: int = 0) -> Path:
    """Compile and link C ``sources`` against the runtime of ``engine`` into the program ``output``.

    ``data_slack_mib``: memory after the program's static data (see :func:`link_config`), as bare metal has
    memory there; a DMA that runs past the end of the last static arrays lands in it instead of failing.

    The compatibility include directory comes before ``include_dirs``, so that its
    ``rocc-software/src/xcustom.h`` wins over a checkout's own. ``defines`` are NAME or NAME=VALUE;
    ``workdir`` holds the objects. A source that is not C, or an ``output`` that is a source, raises
    ``ValueError``; a compile or link error raises ``ToolchainError`` with gcc's message.
    """
    check_sources(sources, output)
    library = build_runtime(engine, hw)
    work = Path(workdir)
    config = work / "systolic_link_config.c"
    config.write_text(link_config(hw, data_slack_mib))
    flags = ["-O2" if optimize else "-O0", "-g", f"-I{INCLUDE_DIR}", *[f"-I{d}" for d in include_dirs],
             *[f"-D{d}" for d in defines], "-include", FORCED_HEADER]
    objects = []
    for n, src in enumerate([*map(Path, sources), config]):
        objects.append(work / f"{n}_{src.stem}.o")
        _compiler(["gcc", *flags, "-c", str(src), "-o", str(objects[-1])], f"gcc could not compile {src}")
    _compiler(["g++", *map(str, objects), str(library), *link_flags(), "-o", str(output)],
              f"linking {output} failed")
    return Path(output)


def check_sources(sources: Sequence[str | os.PathLike], output: str | os.PathLike | None,
                  names: tuple[str, str] = ("source", "output")) -> None:
    """Refuse, with a ``ValueError`` that calls the arguments ``names``, a source that is no C file
    gcc would compile (gcc takes any other name for the linker's input) and an ``output`` that is
    one of the sources (the same file, by any path), which linking would overwrite."""
    for src in sources:
        problem = why_not_c(Path(src))
        if problem:
            raise ValueError(f"{names[0]} {os.fspath(src)!r} {problem}")
        if output is not None and Path(output).exists() and os.path.samefile(output, src):
            raise ValueError(f"{names[1]} {os.fspath(output)!r} is the source {os.fspath(src)!r}: the program "
                             "would overwrite it")


def why_not_c(source: Path) -> str | None:
    """Why ``source`` is no C source, or None: it must be a file named .c, of text (no NUL byte)."""
    if not source.is_file():
        return "is not a file"
    if source.suffix != ".c":
        return "is not C: its name does not end in .c"
    with source.open("rb") as f:
        if b"\0" in f.read(1 << 16):
            return "is not C: it holds a NUL byte"
    return None


def _compiler(cmd: list[str], what: str) -> None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolchainError(f"{what}: {exc}") from None
    if out.returncode:
        raise ToolchainError(f"{what}:\n{out.stderr.strip()[-4000:]}")


def run_c(binary: str | os.PathLike, args: Sequence[str] = (), *, capture: bool = False,
          timeout: float | None = None) -> subprocess.CompletedProcess:
    """Run a program ``compile_c`` built: its stdout and stderr (the runtime's report), captured or
    passed through, and its exit status (70: the simulation failed, said on stderr; negative: the
    signal it died of).

    The program runs in a session and process group of its own, so that nothing it starts outlives
    it: past ``timeout`` seconds (``subprocess.TimeoutExpired``), or when any exception reaches this
    call (KeyboardInterrupt, a handler's for SIGTERM), the whole group is killed before the exception
    goes on. On Linux the program is also killed when its parent dies, even of SIGKILL."""
    cmd = [str(Path(binary).resolve()), *args]
    pipe = subprocess.PIPE if capture else None
    # The signals that end `systolic cc` wait while the program starts: one that came between the fork and
    # the try below would leave the program's group running.
    held = signal.pthread_sigmask(signal.SIG_BLOCK, HELD_SIGNALS)
    try:
        proc = subprocess.Popen(cmd, stdout=pipe, stderr=pipe, text=True, start_new_session=True,
                                preexec_fn=_child_setup(os.getpid(), held))
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        raise
    with proc:
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)   # a signal held meanwhile arrives here
            out, err = proc.communicate(timeout=timeout)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


HELD_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


def _child_setup(parent: int, mask: set) -> Callable[[], None]:
    """What the child runs before exec: the signal mask ``mask`` back (the parent held some while it
    started the child) and, on Linux, SIGKILL when ``parent`` dies (prctl's PR_SET_PDEATHSIG), at once
    if it died before that was set."""
    prctl = ctypes.CDLL(None).prctl if sys.platform == "linux" else None   # looked up here, not in the child

    def preexec() -> None:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != parent:
                os._exit(128 + signal.SIGKILL)
    return preexec
