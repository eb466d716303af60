"""One source of truth for the ISA numbers: isa/opcodes.py, and what is generated from it."""
from __future__ import annotations

import re

import toolkit as tk
from isa.assembly import MNEMONICS, funct_mnemonic
from isa.loop_words import BY_FUNCT as LOOP_WORDS
from isa.opcodes import COUNTERS, ConfigKind, Funct
from simulators import rtl_codegen
from simulators.stand_in import estimate


def test_generated_names_are_the_assembly_mnemonics() -> None:
    header = rtl_codegen.isa_header()
    pairs = dict(re.findall(r'\{(\d+), "(\w+)"\}', header))
    assert {int(f): name for f, name in pairs.items()} == {f.value: funct_mnemonic(f) for f in Funct
                                                          if f != Funct.CONFIG}
    assert set(pairs.values()) | {f"config_{k.name.lower()}" for k in ConfigKind} <= set(MNEMONICS)
    for funct, cls in LOOP_WORDS.items():   # each loop word's mnemonic is its class's, its funct is Gemmini's
        assert pairs[str(funct)] == cls.OP and MNEMONICS[cls.OP] is cls and cls.FUNCT == funct
    assert re.findall(r'"(\w+)"', header.split("COUNTER_NAMES")[1].split(";")[0]) == list(COUNTERS)


def test_generated_enum_has_every_funct() -> None:
    svh = rtl_codegen.isa_svh()
    found = dict(re.findall(r"(Funct\w+) = 7'd(\d+)", svh))
    assert sorted(int(v) for v in found.values()) == sorted(f.value for f in Funct)
    assert f"localparam int NumCounters = {len(COUNTERS)};" in svh


def test_stand_in_reports_the_rtl_counter_schema() -> None:
    prog = tk.compile(tk.matmul(16, 16, 16), tk.HardwareConfig.preset("tiny"))
    cycles, counters = estimate(prog)
    assert set(COUNTERS) <= set(counters) and counters["cycles"] == cycles
    assert not {"ex_busy", "st_busy"} & set(counters)
