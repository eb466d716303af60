"""One rule for both engines of ``systolic cc`` (issue 41 #2), as a property: random word sequences, the
static checker's random programs (many valid, many refused for every reason it has) with at times one
word spoiled (a funct the ISA lacks, a row far past the scratchpad, a flipped bit), issued as they are
by one C program (tests/c/words.c) on the functional and the verilator engine. Both must give the same
verdict: exit 0, or exit 70 with the same error line, the word checker's (isa.checker.WordChecker)
when it refuses a word. When both accept, the same bits, wherever the static checker finds no DRAM
hazard (a pair of accesses nothing orders, which the RTL may run in either order, as Gemmini may)."""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isa import (
    ComputeAccumulated, ComputePreloaded, ConfigEx, ConfigLd, ConfigSt, Mvin, Mvout, Preload, Program,
)
from isa.c_export import _relocations
from isa.checker import ProgramError, WordChecker
from isa.encoding import decode, encode
from helpers import checker_accepts
from program_strategies import HW, inputs_for, programs
from simulators import cosim

C_DIR = Path(__file__).resolve().parent / "c"
SLACK = 4096   # words.c's zeros past the image
FLIPPABLE = {Mvin: ("rs2",), Mvout: ("rs2",), Preload: ("rs1", "rs2"), ComputePreloaded: ("rs1", "rs2"),
             ComputeAccumulated: ("rs1", "rs2"), ConfigEx: ("rs1", "rs2"), ConfigLd: ("rs1",),
             ConfigSt: ("rs1",)}   # no operand holding a DRAM address or stride: no word strays out of memory


@pytest.fixture(scope="module")
def binaries(tmp_path_factory: pytest.TempPathFactory, verilator_ok: None) -> dict[str, Path]:
    out = {}
    for engine in cosim.ENGINES:
        work = tmp_path_factory.mktemp(engine)
        out[engine] = cosim.compile_c([C_DIR / "words.c"], work / "words", hw=HW, engine=engine, workdir=work)
    return out


@st.composite
def spoiled(draw: st.DrawFn, words: list[list[int]], kinds: list[type]) -> list[list[int]]:
    """``words`` (funct, rs1, rs2, relocate), one of them spoiled at times."""
    how = draw(st.sampled_from(["none", "none", "funct", "row", "bit"]))
    if how == "none" or not words:
        return words
    words = [list(w) for w in words]
    at = draw(st.integers(0, len(words) - 1))
    if how == "funct":
        words.insert(at, [draw(st.sampled_from([50, 0x1234567, 2 ** 63 + 5, 13])), 0, 0, 0])
    elif how == "row":
        words.insert(at, [*encode(Mvin(0, 0x3FFFF, 4, 4, 0)), 0])
    elif type(kinds[at]) in FLIPPABLE:
        operand = draw(st.sampled_from(FLIPPABLE[type(kinds[at])]))
        words[at][1 if operand == "rs1" else 2] ^= 1 << draw(st.integers(0, 63))
    return words


def _file(path: Path, words: list[list[int]], image: np.ndarray) -> None:
    blob = struct.pack("<Q", len(words)) + b"".join(struct.pack("<4Q", *w) for w in words)
    path.write_bytes(blob + struct.pack("<Q", image.size) + image.tobytes())


def _expected(words: list[list[int]], base: int) -> str | None:
    """The word checker's error for the words as the program issues them (relocated), or None."""
    checker = WordChecker(HW)
    for funct, rs1, rs2, reloc in words:
        try:
            checker.feed(funct, rs1 + (base if reloc & 1 else 0), rs2 + (base if reloc & 2 else 0))
        except ProgramError as exc:
            return str(exc)
    return None


def _outcome(binary: Path, words: list[list[int]], tmp: Path) -> tuple[int, str | None, bytes | None]:
    ran = cosim.run_c(binary, [str(tmp / "in.bin"), str(tmp / "out.bin")], capture=True, timeout=300)
    (base,) = [int(line.split()[1]) for line in ran.stdout.splitlines() if line.startswith("base ")]
    errors = [line for line in ran.stderr.splitlines() if line.startswith("systolic: error: ")]
    expected = _expected(words, base)
    if expected is not None:   # the checker's own words, on each engine at its own image address
        assert errors == [f"systolic: error: {expected}"] and ran.returncode == 70, ran.stderr
        return 70, "checker", None
    if ran.returncode:
        assert ran.returncode == 70 and len(errors) == 1, ran.stderr
        return 70, errors[0].replace(str(base), "BASE"), None
    return 0, None, (tmp / "out.bin").read_bytes()


@settings(max_examples=16)
@given(data=st.data())
def test_both_engines_give_the_same_verdict_and_bits(binaries: dict[str, Path], tmp_path_factory:
                                                     pytest.TempPathFactory, data: st.DataObject) -> None:
    prog = data.draw(programs(max_steps=8))
    words = [[*encode(ins), _relocations(ins)] for ins in prog.instructions]
    words = data.draw(spoiled(words, list(prog.instructions)))
    tmp = tmp_path_factory.mktemp("words")
    _file(tmp / "in.bin", words, prog.dram_image(inputs_for(prog)))
    func, rtl = (_outcome(binaries[e], words, tmp) for e in cosim.ENGINES)
    assert func[:2] == rtl[:2]
    if func[0] == 0 and checker_accepts(Program(HW, [decode(*w[:3]) for w in words], prog.buffers)):
        assert func[2] == rtl[2]
