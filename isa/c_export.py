"""A program as a self-contained C file (``Program.to_c``), from ``templates/program.c.j2``.

The words go out through rocc-software's ``xcustom.h`` macros and the program's fences as the
RISC-V ``fence``, as gemmini.h issues them, so the file builds for a Gemmini SoC as well as under
``systolic cc``. DRAM addresses in the words are offsets into the program's DRAM image; the C
file holds that image in an array (aligned, so that DMA transfers split into the same beats) and
writes every DRAM address field that is not 0 (0 keeps Gemmini's meaning: zeros, or a phase
skipped) as the array's address plus the offset, a link-time constant. The issue code is
straight-line, two loads and the custom instruction a word (isa/host_cost.py counts it).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import jinja2
import numpy as np

from .encoding import encode
from .instructions import Instruction, Mvin, Mvout
from .loop_words import LAYOUTS, LoopWord
from .opcodes import Funct

TEMPLATE = Path(__file__).resolve().parent.parent / "templates" / "program.c.j2"
BYTES_PER_LINE = 24


def _relocations(ins: Instruction) -> int:
    """Which of rs1 (1) and rs2 (2) hold a DRAM address that is not 0."""
    if isinstance(ins, (Mvin, Mvout)):
        return int(ins.dram != 0)
    if isinstance(ins, LoopWord):
        return sum({"rs1": 1, "rs2": 2}[f.word] for f in LAYOUTS[ins.FUNCT] if f.dram and getattr(ins, f.name))
    return 0


def _operand(value: int, relocated: bool) -> str:
    """A word's operand as C: a DRAM offset relocated by the image's address at link time."""
    return f"(uint64_t)(uintptr_t)&dram[{value}]" if relocated else f"0x{value:x}ull"


def _word(ins: Instruction) -> dict:
    funct, rs1, rs2 = encode(ins)
    reloc = _relocations(ins)
    return {"funct": funct, "rs1": _operand(rs1, bool(reloc & 1)), "rs2": _operand(rs2, bool(reloc & 2))}


def _lines(data: np.ndarray) -> list[str]:
    raw = data.tobytes()
    return [", ".join(str(b) for b in raw[i:i + BYTES_PER_LINE]) + ","
            for i in range(0, len(raw), BYTES_PER_LINE)]


def _checks(program: Any, check: Mapping[str, np.ndarray]) -> list[dict]:
    outputs = {b.name: b for b in program.buffers.values() if b.role == "output"}
    unknown = sorted(set(check) - set(outputs))
    if unknown:
        raise ValueError(f"check: {', '.join(map(repr, unknown))} name no output buffer of the program "
                         f"(its outputs: {', '.join(outputs) or 'none'})")
    checks = []
    for name, expected in check.items():
        buf = outputs[name]
        arr = np.asarray(expected)
        if arr.shape != buf.shape or arr.dtype != np.dtype(buf.dtype):
            raise ValueError(f"check[{name!r}]: {arr.dtype}{list(arr.shape)} but the output is "
                             f"{buf.dtype}{list(buf.shape)}")
        data = np.ascontiguousarray(arr).astype(np.dtype(buf.dtype).newbyteorder("<")).view(np.uint8)
        checks.append({"name": name, "addr": buf.addr, "nbytes": buf.nbytes, "lines": _lines(data)})
    return checks


def to_c(program: Any, inputs: Mapping[str, np.ndarray],
         check: Mapping[str, np.ndarray] | None = None, title: str = "a Systolic Toolkit program") -> str:
    """The C source of ``program`` (an ``isa.Program``, which calls this; not imported here, as it
    imports this module); ``check`` (output name -> expected array) adds the comparison."""
    dram = program.dram_image(inputs)   # validates the inputs
    checks = _checks(program, check or {})
    words = [_word(ins) for ins in program.instructions]
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env.from_string(TEMPLATE.read_text()).render(
        title=title, hw_name=program.hw.name, n_words=len(words), words=words,
        dram_size=max(1, len(dram)), dram_lines=_lines(dram), checks=checks,
        fence_funct=int(Funct.FENCE), ends_with_fence=bool(words) and words[-1]["funct"] == Funct.FENCE)
