"""The host's cost per command (isa/host_cost.py) rests on the code Program.to_c exports: cross-compiled
for RV64 as a Gemmini SoC would run it, each word must be the two loads and the custom instruction that
the derivation counts, the custom instruction right after the load it needs (the load-use cycle).
Skips where Debian's riscv64-unknown-elf-gcc and picolibc are not installed (.ci/run installs them)."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import toolkit as tk
from isa import PRESETS, Fence, host_cost

GCC = "riscv64-unknown-elf-gcc"
# rocc-software's macro as a Gemmini build has it: one R-type custom-0 instruction, xd = 0
XCUSTOM = """#define XCUSTOM_ACC 3
#define STR1(x) #x
#define STR(x) STR1(x)
#define ROCC_INSTRUCTION_0_R_R(x, rs1, rs2, funct) \\
  asm volatile(".insn r 0x0b, 3, " STR(funct) ", x0, %0, %1" :: "r"(rs1), "r"(rs2))
"""


def _main_asm(tmp_path: Path, source: str) -> list[str]:
    (tmp_path / "rocc-software" / "src").mkdir(parents=True)
    (tmp_path / "rocc-software" / "src" / "xcustom.h").write_text(XCUSTOM)
    (tmp_path / "p.c").write_text(source)
    out = subprocess.run([GCC, "--specs=picolibc.specs", "-O2", f"-I{tmp_path}", "-S", "-o", "-", "p.c"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    body = out.stdout.split("\nmain:\n", 1)[1].split("\n\t.size\tmain", 1)[0]
    return [line.strip() for line in body.splitlines()
            if line.startswith("\t") and not line.startswith("\t.") or line.startswith("\t.insn")]


def _cross_compiler() -> bool:
    """Whether the RV64 compiler and picolibc's headers are there (Debian's two packages)."""
    if shutil.which(GCC) is None:
        return False
    out = subprocess.run([GCC, "--specs=picolibc.specs", "-E", "-x", "c", "-"], input="#include <stdio.h>\n",
                         capture_output=True, text=True, timeout=120)
    return out.returncode == 0


@pytest.mark.skipif(not _cross_compiler(), reason=f"{GCC} or picolibc is not installed (apt-get install "
                    "gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf)")
def test_exported_issue_code_is_what_the_derivation_counts(tmp_path: Path) -> None:
    op = tk.matmul(64, 64, 64, bias="row", scale=0.05)
    prog = tk.compile(op, PRESETS["gemmini"])
    inputs = op.random_inputs(seed=0)
    asm = _main_asm(tmp_path, prog.to_c(inputs, check=op.reference(inputs)))
    words = [i for i, line in enumerate(asm) if line.startswith(".insn")]
    n = sum(not isinstance(ins, Fence) for ins in prog.instructions)
    assert len(words) == n
    issue = asm[words[0] - 2:words[-1] + 1]
    extra = len(issue) - host_cost.INSTRUCTIONS_PER_WORD * n
    fences = sum(line == "fence" for line in issue)
    assert 0 <= extra - fences <= n // 128 + 2, "base-register moves only, one per 2 KiB of table"
    for i in words:
        operands = re.findall(r"\b(?:a|t|s)\d+\b", asm[i])
        loaded = re.match(r"ld\s+(\w+),", asm[i - 1])
        assert loaded and loaded.group(1) in operands, asm[i - 2:i + 1]
    assert host_cost.LOAD_USE_STALLS == 1
