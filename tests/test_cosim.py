"""C programs on the simulators (``systolic cc``, ``simulators/cosim.py``, ``rtl/cosim``): the
project's own C programs (tests/c/, written from Gemmini's documented encoding) pass their own
checks on both engines; memory that is not the program's is an error naming the address; Gemmini's
counters count on the RTL; and a program exported as C reproduces ``tk.run``'s outputs, and on the
RTL its cycles, to the cycle. Built with the machine's gcc."""
from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import toolkit as tk
from isa import Fence
from simulators import cosim
from toolkit.cli import main

C_DIR = Path(__file__).resolve().parent / "c"
TINY = tk.HardwareConfig.preset("tiny")
ENGINES = ["functional", pytest.param("verilator", marks=pytest.mark.rtl)]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    if request.param == "verilator":
        request.getfixturevalue("verilator_ok")
    return request.param


def _run(tmp_path: Path, source: Path, engine: str, *, optimize: bool = False,
         defines: tuple[str, ...] = (), data_slack_mib: int = 0) -> subprocess.CompletedProcess:
    binary = cosim.compile_c([source], tmp_path / "program", hw=TINY, engine=engine,
                             defines=[f"DIM={TINY.dim}", *defines], optimize=optimize, workdir=tmp_path,
                             data_slack_mib=data_slack_mib)
    return cosim.run_c(binary, capture=True, timeout=600)


def _cycles(stderr: str) -> int:
    (cycles,) = re.findall(r"^systolic: cycles (\d+)$", stderr, re.M)
    return int(cycles)


@pytest.mark.parametrize("name, optimize", [("mvin_mvout", False), ("matmul", False), ("matmul", True),
                                            ("stack_dma", False), ("loop_ws", False), ("loop_conv_ws", True)])
def test_c_programs_pass_their_own_checks(tmp_path: Path, engine: str, name: str, optimize: bool) -> None:
    ran = _run(tmp_path, C_DIR / f"{name}.c", engine, optimize=optimize)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert f"{name}: ok" in ran.stdout
    if engine == "verilator":
        assert _cycles(ran.stderr) > 0


def test_a_loop_conv_with_rotated_weights_checks(tmp_path: Path, engine: str) -> None:
    ran = _run(tmp_path, C_DIR / "loop_conv_ws.c", engine, defines=("WROT180=1",))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "loop_conv_ws: ok" in ran.stdout


def test_a_loop_field_we_lack_stops_the_program(tmp_path: Path, engine: str) -> None:
    """LOOP_WS's act=5 (no activation of gemmini.h's): the runtime's check of the word stops the program on
    either engine (the RTL never sees it) with exit 70 and the same error line, not with a status the program
    could give."""
    ran = _run(tmp_path, C_DIR / "loop_ws.c", engine, defines=("ACT=5",))
    assert ran.returncode == 70, ran.stdout + ran.stderr
    assert re.search(r"^systolic: error: instruction \d+ `loop_ws .*act=5 .*`: loop_ws.act=5 names no activation",
                     ran.stderr, re.M), ran.stderr
    assert "loop_ws: ok" not in ran.stdout


def test_unmapped_memory_is_an_error_naming_the_address(tmp_path: Path, engine: str) -> None:
    ran = _run(tmp_path, C_DIR / "unmapped.c", engine)
    assert ran.returncode == 70
    assert "systolic: error: DMA read of 4 bytes at 0xdead0000: not memory of this program" in ran.stderr
    assert "was not refused" not in ran.stdout


def test_data_slack_takes_a_dma_past_the_static_data(tmp_path: Path, engine: str) -> None:
    """--data-slack: memory linked right after the program's static data, as a bare-metal Gemmini has memory
    there; a DMA write 1 MiB past a static array lands in it (transformer.c's FFN does that)."""
    ran = _run(tmp_path, C_DIR / "past_static.c", engine, data_slack_mib=4)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "past_static: ok" in ran.stdout


@pytest.mark.parametrize("case, why", [("FREED", "DMA read of 4 bytes at {}: not memory of this program"),
                                       ("READONLY", "DMA write of 4 bytes at {}: the program's memory there is "
                                                    "read-only")])   # a row of DIM (4) bytes, on both engines
def test_memory_the_program_gave_up_is_an_error_not_a_crash(tmp_path: Path, engine: str, case: str,
                                                            why: str) -> None:
    """Issue 41 #1: the runtime checked against its last copy of /proc/self/maps, so DMA to a buffer
    after free() (unmapped) or mprotect(PROT_READ) passed the check and died of SIGSEGV."""
    ran = _run(tmp_path, C_DIR / "stale_memory.c", engine, defines=(case,))
    assert ran.returncode == 70, ran.stdout + ran.stderr
    (addr,) = re.findall(r"^stale_memory: at (0x[0-9a-f]+)$", ran.stdout, re.M)
    assert re.search("^systolic: error: " + why.format(addr), ran.stderr, re.M), ran.stderr
    assert "not refused" not in ran.stdout


def test_gemmini_counters_count_on_the_rtl(tmp_path: Path, verilator_ok: None) -> None:
    ran = _run(tmp_path, C_DIR / "counters.c", "verilator")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    active, read, more, after_reset = map(int, re.findall(r"\d+", ran.stdout))
    row_bytes = TINY.dim * TINY.dim
    assert (read, more, after_reset) == (4 * row_bytes, 5 * row_bytes, 0)
    total = dict(re.findall(r"(\w+)=(\d+)", ran.stderr))
    assert 0 < active <= int(total["load_busy"])
    assert int(total["dma_bytes_read"]) == 5 * row_bytes


COUNTS = r"""#include "accel.h"
static uint64_t counter_op(uint64_t rs1) { uint64_t v; ROCC_INSTRUCTION(XCUSTOM_ACC, v, rs1, 0, 126); return v; }
int main(void) {
  static int8_t in[8][DIM][DIM];
  /* slot 7: RESERVATION_STATION_LD_COUNT, Gemmini's external counter 1 */
  counter_op(7 << 4 | 0x8 | 1ull << 12 | 1ull << 31);
  config_ld(DIM, 0);
  for (int n = 0; n < 8; ++n) mvin(in[n], n * DIM, DIM, DIM);
  uint64_t queued = counter_op(7 << 4);
  fence();
  uint64_t after = counter_op(7 << 4);
  uint64_t t0 = rdcycle(), t1 = rdcycle();
  printf("%llu %llu %llu %llu\n", (unsigned long long)queued, (unsigned long long)after,
         (unsigned long long)t0, (unsigned long long)t1);
  return 0;
}
"""
UNTIMED_NOTE = "systolic: note: the program reads {}; on the functional engine, which has no timing"


def _run_counts(tmp_path: Path, engine: str) -> tuple[list[int], str]:
    (tmp_path / "counts.c").write_text(COUNTS)
    binary = cosim.compile_c([tmp_path / "counts.c"], tmp_path / "program", hw=TINY, engine=engine,
                             include_dirs=[str(C_DIR)], defines=[f"DIM={TINY.dim}"], workdir=tmp_path)
    ran = cosim.run_c(binary, capture=True, timeout=600)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return [int(v) for v in ran.stdout.split()], ran.stderr


def test_the_reservation_station_load_count_is_the_load_queue_s_entries(tmp_path: Path, verilator_ok: None) -> None:
    """RESERVATION_STATION_LD_COUNT is a level, as Gemmini's (ReservationStation's utilization_ld_q): the loads
    in the queue at the read. Eight mvins into a queue of ld_queue entries leave it full when the last one
    enters; after a fence it is empty."""
    (queued, after, t0, t1), err = _run_counts(tmp_path, "verilator")
    assert (queued, after) == (TINY.ld_queue, 0)
    assert 0 < t0 <= t1 and "note:" not in err


def test_an_engine_without_timing_says_its_clock_and_counters_read_0(tmp_path: Path) -> None:
    """The functional engine has no cycles: its clock and counter reads give 0, and the first of each kind says
    so on stderr (a program that divides by its cycles then dies of SIGFPE with the reason said)."""
    values, err = _run_counts(tmp_path, "functional")
    assert values == [0, 0, 0, 0]
    assert err.count(UNTIMED_NOTE.format("the cycle counter (rdcycle)")) == 1
    assert err.count(UNTIMED_NOTE.format("Gemmini's performance counters (COUNTER_OP)")) == 1


EXPORTS = {
    "matmul default": (tk.matmul(10, 7, 9, bias="row", activation="relu", scale=0.05), None),
    "matmul LOOP_WS": (tk.matmul(10, 7, 9, bias="row"), "gemmini"),
    "conv LOOP_CONV_WS": (tk.conv2d(1, 6, 6, 4, 4, bias="channel", activation="relu", scale=0.1), "gemmini"),
    "conv default": (tk.conv2d(1, 5, 5, 3, 6, stride=2), None),
}


@pytest.mark.parametrize("case", EXPORTS)
def test_exported_c_reproduces_tk_run(tmp_path: Path, engine: str, case: str) -> None:
    op, schedule = EXPORTS[case]
    prog = tk.compile(op, TINY, schedule)
    inputs = op.random_inputs(seed=1)
    source = tmp_path / "exported.c"
    source.write_text(prog.to_c(inputs, check=op.reference(inputs)))
    ran = _run(tmp_path, source, engine)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "outputs match" in ran.stdout
    if engine == "verilator":
        assert _cycles(ran.stderr) == tk.run(prog, inputs, backend="verilator").cycles


def _without_its_last_fence(prog: tk.Program) -> tk.Program:
    assert isinstance(prog.instructions[-1], Fence)
    return dataclasses.replace(prog, instructions=prog.instructions[:-1])


ENDS_WITHOUT_FENCE = {"matmul without its fence": (tk.matmul(10, 7, 9), _without_its_last_fence),
                      "maxpool2d": (tk.maxpool2d(1, 9, 9, 5, kernel=3, stride=2, padding=1), lambda prog: prog)}


@pytest.mark.parametrize("case", ENDS_WITHOUT_FENCE)
def test_exported_c_of_a_program_without_a_last_fence_ends_on_its_cycle(tmp_path: Path, verilator_ok: None,
                                                                       case: str) -> None:
    """Issue 41 #9: the exported C waited for the accelerator at its end with a fence, whose word costs
    the RTL's dispatch a cycle that tk.run (ending when the accelerator is done) never counts: 130
    against 129 for a matmul without its fence, 410 against 409 for maxpool2d."""
    op, edit = ENDS_WITHOUT_FENCE[case]
    prog, inputs = edit(tk.compile(op, TINY)), op.random_inputs(seed=1)
    assert not isinstance(prog.instructions[-1], Fence)
    source = tmp_path / "exported.c"
    source.write_text(prog.to_c(inputs, check=op.reference(inputs)))
    ran = _run(tmp_path, source, "verilator")
    assert ran.returncode == 0 and "outputs match" in ran.stdout, ran.stdout + ran.stderr
    assert _cycles(ran.stderr) == tk.run(prog, inputs, backend="verilator").cycles


def test_exported_c_fails_on_a_wrong_output(tmp_path: Path) -> None:
    op = tk.matmul(5, 4, 3)
    inputs = op.random_inputs(seed=0)
    wrong = {"C": op.reference(inputs)["C"] ^ np.int8(1)}
    source = tmp_path / "wrong.c"
    source.write_text(tk.compile(op, TINY).to_c(inputs, check=wrong))
    ran = _run(tmp_path, source, "functional")
    assert ran.returncode == 1 and "MISMATCH C: byte 0" in ran.stdout


def test_to_c_names_a_bad_check() -> None:
    op = tk.matmul(5, 4, 3)
    prog, inputs = tk.compile(op, TINY), op.random_inputs(seed=0)
    with pytest.raises(ValueError, match="check: 'D' name no output buffer"):
        prog.to_c(inputs, check={"D": np.zeros(3)})
    with pytest.raises(ValueError, match=r"check\['C'\]: int32\[5, 4\] but the output is int8\[5, 4\]"):
        prog.to_c(inputs, check={"C": np.zeros((5, 4), np.int32)})


def test_cli_cc_exits_with_the_programs_status(tmp_path: Path, capfd: pytest.CaptureFixture) -> None:
    exported = tmp_path / "mm.c"
    assert main(["asm", "matmul", "--m", "6", "--n", "5", "--k", "4", "--config", "tiny", "--c", str(exported)]) == 0
    assert main(["cc", str(exported), "--config", "tiny", "-o", str(tmp_path / "mm")]) == 0
    assert (tmp_path / "mm").exists()
    assert main(["cc", str(C_DIR / "unmapped.c"), "-D", "DIM=4", "--config", "tiny"]) == 70
    assert main(["cc", str(exported), "-I", str(tmp_path / "missing")]) == 2
    err = capfd.readouterr().err
    assert "0xdead0000" in err and "-I" in err and "is not a directory" in err


def test_compile_c_refuses_what_it_would_overwrite_or_cannot_compile(tmp_path: Path) -> None:
    """The library, as the CLI: the output may not be a source, and a source must be C text."""
    source = tmp_path / "victim.c"
    source.write_text("int main(void) { return 0; }\n")
    with pytest.raises(ValueError, match="output '.*victim.c' is the source '.*victim.c'"):
        cosim.compile_c([source], tmp_path / "." / "victim.c", hw=TINY, workdir=tmp_path)
    assert source.read_text() == "int main(void) { return 0; }\n"
    with pytest.raises(ValueError, match="source '/bin/true' is not C: its name does not end in .c"):
        cosim.compile_c(["/bin/true"], tmp_path / "program", hw=TINY, workdir=tmp_path)


LOOP = r"""
#include <stdio.h>
#include <unistd.h>
int main(void) {
  printf("%d\n", (int)getpid());
  fflush(stdout);
  if (fork() == 0) {   /* a child the program started: it dies with it */
    printf("%d\n", (int)getpid());
    fflush(stdout);
  }
  for (;;) {}
}
"""


def _gone(pid: int) -> bool:
    """Dead: no such process, or a zombie nobody has reaped yet."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def _all_gone(pids: list[int], within: float = 10) -> bool:
    deadline = time.monotonic() + within
    while not all(map(_gone, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return all(map(_gone, pids))


def test_cli_cc_kills_a_program_past_its_timeout(tmp_path: Path, capfd: pytest.CaptureFixture) -> None:
    source = tmp_path / "loop.c"
    source.write_text(LOOP)
    start = time.monotonic()
    assert main(["cc", str(source), "--timeout", "2"]) == 124
    assert time.monotonic() - start < 60
    out, err = capfd.readouterr()
    assert "systolic cc: the program ran past --timeout 2 s and was killed\n" in err
    assert _all_gone([int(pid) for pid in out.split()])


@pytest.mark.parametrize("body, name, number", [("*(volatile int *)0 = 1;", "SIGSEGV", 11),
                                                 ("abort();", "SIGABRT", 6)])
def test_cli_cc_names_the_signal_a_program_died_of(tmp_path: Path, capfd: pytest.CaptureFixture,
                                                    body: str, name: str, number: int) -> None:
    source = tmp_path / "dies.c"
    source.write_text(f"#include <stdlib.h>\nint main(void) {{ {body} return 0; }}\n")
    assert main(["cc", str(source)]) == 128 + number
    assert f"systolic cc: the program died of {name}\n" in capfd.readouterr().err


@pytest.mark.parametrize("sig, status, said", [(signal.SIGTERM, 128 + signal.SIGTERM, "terminated by SIGTERM"),
                                               (signal.SIGINT, 130, "interrupted"),
                                               (signal.SIGHUP, 128 + signal.SIGHUP, "terminated by SIGHUP"),
                                               (signal.SIGKILL, -signal.SIGKILL, None)])
def test_a_killed_cc_takes_its_program_and_its_folder(tmp_path: Path, sig: signal.Signals, status: int,
                                                      said: str | None) -> None:
    """The program (and what it started) dies with ``systolic cc``; the temporary folder goes too.
    SIGKILL cannot be caught: the program still dies (PR_SET_PDEATHSIG), but a process it started
    and the folder are left."""
    source = tmp_path / "loop.c"
    source.write_text(LOOP)
    temp = tmp_path / "temp"
    temp.mkdir()
    # cc started as from a terminal: a shell without job control starts background jobs with SIGINT
    # ignored, which cc inherits and (as any command does) keeps, so SIGINT would not reach it.
    cc = subprocess.Popen([sys.executable, "-m", "toolkit.cli", "cc", str(source)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env={**os.environ, "TMPDIR": str(temp)},
                          cwd=Path(cosim.__file__).parents[1],
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    pids: list[int] = []
    try:
        pids += [int(cc.stdout.readline()), int(cc.stdout.readline())]
        cc.send_signal(sig)
        assert cc.wait(timeout=60) == status
        assert _all_gone(pids if sig != signal.SIGKILL else pids[:1]), "the program's child has no PDEATHSIG"
    finally:
        cc.kill()
        cc.wait()
        for pid in pids:    # what a failure left running
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    if said:
        assert cc.stderr.read() == f"systolic cc: {said}\n"
        assert list(temp.iterdir()) == []


HWM_PROGRAM = r"""
#include <stdint.h>
#include <stdio.h>
#include "rocc-software/src/xcustom.h"

/* the program's peak resident memory, the runtime's words included */
static long peak_kib(void) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f && fgets(line, sizeof line, f)) {
    if (sscanf(line, "VmHWM: %ld kB", &kib) == 1) break;
  }
  if (f) fclose(f);
  return kib;
}

int main(void) {
  for (long i = 0; i < WORDS; ++i) ROCC_INSTRUCTION_0_R_R(XCUSTOM_ACC, RS1, RS2, FUNCT);
  asm volatile("fence");
  printf("peak %ld\n", peak_kib());
  return 0;
}
"""


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads VmHWM from /proc")
def test_the_runtime_forgets_the_words_it_has_dispatched(tmp_path: Path) -> None:
    """Issue 41 #4: the verilator engine kept every word ever issued (24 bytes each, and a vector's
    doubling). 3M config_ex words must cost the program's peak memory about what 100k do."""
    from isa import ConfigEx
    from isa.encoding import encode
    funct, rs1, rs2 = encode(ConfigEx())
    source = tmp_path / "many.c"
    source.write_text(HWM_PROGRAM)
    peaks = {}
    for words in (100_000, 3_000_000):
        ran = _run(tmp_path, source, "verilator",
                   defines=(f"WORDS={words}L", f"FUNCT={funct}", f"RS1={rs1}ull", f"RS2={rs2}ull"))
        assert ran.returncode == 0, ran.stdout + ran.stderr
        (peaks[words],) = [int(x) for x in re.findall(r"^peak (\d+)$", ran.stdout, re.M)]
    assert peaks[3_000_000] - peaks[100_000] < 16 * 1024, peaks   # 2.9M words kept would be 70 MB


@pytest.mark.parametrize("define, why", [
    ("FUNCT=50", "instruction 2 `funct=50 rs1=0x0 rs2=0x0`: unknown funct 50"),
    ("FUNCT=0x1234567", "instruction 2 `funct=19088743 rs1=0x0 rs2=0x0`: unknown funct 19088743"),
    ("ROW=0x3ffff", "instruction 2 `mvin dram="),
])
def test_both_engines_refuse_a_bad_word_alike(tmp_path: Path, engine: str, define: str, why: str) -> None:
    """Issue 41 #2: the RTL ran unknown functs and wrapped a scratchpad row past the end; the functional
    engine refused them, the row with numpy's broadcast error. The runtime's check refuses each on both
    engines, before it runs, with the checker's message naming the word and the field."""
    ran = _run(tmp_path, C_DIR / "bad_word.c", engine, defines=(define,))
    assert ran.returncode == 70, ran.stdout + ran.stderr
    (line,) = [ln for ln in ran.stderr.splitlines() if ln.startswith("systolic: error: ")]
    assert line.startswith(f"systolic: error: {why}"), line
    if define.startswith("ROW"):
        assert line.endswith("local: row 262146 is past the scratchpad (1024 rows)"), line
    assert "bad_word: ran" not in ran.stdout
