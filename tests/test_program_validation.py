"""The static checker is the one authority on programs and buffer tables: the same rules
hold for programs from assembly, binary files and the API, whatever it rejects names the
buffer or instruction, and whatever it accepts runs to the same bits on both backends."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isa import (
    PRESETS, Buffer, ComputePreloaded, ConfigEx, ConfigLd, ConfigSt, ISAError, Mvin, Mvout, Preload, Program,
    acc_addr,
)
from isa.checker import BufferTableError, ProgramError, check
from isa.buffers import MAX_DRAM_BYTES
from simulators import functional
from simulators import verilator as V

from program_strategies import inputs_for, programs

TINY = PRESETS["tiny"]


def _matmul_program(buffers: dict[str, Buffer]) -> Program:
    """C (acc rows 0..3) = A @ B on the tiny array, from X's first bytes into O."""
    x, o = buffers["X"].addr, buffers["O"].addr
    return Program(TINY, [
        ConfigLd(dram_stride=8, state=0), ConfigEx(), ConfigSt(dram_stride=8),
        Mvin(x, 0, 4, 4), Mvin(x + 32, 4, 4, 4),
        Preload(0, 4, 4, acc_addr(0), 4, 4), ComputePreloaded(4, 4, 4, 0xFFFFFFFF, 4, 4),
        Mvout(o, acc_addr(0), 4, 4)], buffers)


def _table(**addrs: int) -> dict[str, Buffer]:
    shapes = {"X": ("input", "int8", (8, 8)), "O": ("output", "int8", (8, 8))}
    return {name: Buffer(name, *shapes[name], addr) for name, addr in addrs.items()}


# ---- buffer tables ----------------------------------------------------------------------------
@pytest.mark.parametrize("addr", [-1, -(1 << 40), 1.5, True])
def test_buffer_addresses_must_be_non_negative_integers(addr) -> None:
    with pytest.raises(ISAError, match=r"buffer X: address"):
        Buffer("X", "input", "int8", (8, 8), addr)


def test_negative_buffer_address_in_assembly_names_the_line() -> None:
    text = _matmul_program(_table(X=0, O=64)).to_asm().replace("@0x0", "@-64")
    with pytest.raises(ISAError, match=r"line 2: .buffer: buffer X: address -64"):
        Program.from_asm(text)


@pytest.mark.parametrize("backend", [functional.run, V.run])
def test_huge_buffer_address_is_a_clean_error(backend) -> None:
    prog = _matmul_program(_table(X=0, O=1 << 40))
    with pytest.raises(BufferTableError, match=r"buffer 'O' at 0x10000000000 .* DRAM address space"):
        backend(prog, inputs_for(prog))   # checked before any DRAM is allocated or any model built


@pytest.mark.parametrize("suffix", [".bin", ".s"])
def test_loading_a_buffer_table_that_can_never_run_is_refused(tmp_path, suffix: str) -> None:
    path = tmp_path / f"far{suffix}"
    _matmul_program(_table(X=0, O=3 << 40)).save(path)     # 3 TiB
    with pytest.raises(BufferTableError, match=r"buffer 'O' at 0x30000000000 .* DRAM address space"):
        Program.load(path)                                   # the message a run gives


def test_buffers_end_inside_the_dram_address_space() -> None:
    check(_matmul_program(_table(X=0, O=MAX_DRAM_BYTES - 64)))
    with pytest.raises(BufferTableError, match="'O'"):
        check(_matmul_program(_table(X=0, O=MAX_DRAM_BYTES - 63)))


def test_overlapping_buffers_are_rejected() -> None:
    with pytest.raises(BufferTableError, match=r"buffers 'X' \(0x0..0x3f\) and 'O' \(0x20..0x5f\) overlap"):
        check(_matmul_program(_table(X=0, O=32)))


def test_a_buffer_filed_under_another_name_is_rejected() -> None:
    bufs = _table(X=0, O=64)
    bufs["Z"] = bufs.pop("O")
    with pytest.raises(BufferTableError, match="'O' is filed under the name 'Z'"):
        check(Program(TINY, [], bufs))


def test_duplicate_buffer_names_in_a_binary_file_are_rejected() -> None:
    bufs = _table(X=0, O=64)
    twice = Program(TINY, [], {"X": bufs["X"], "X2": Buffer("X", "output", "int8", (4,), 128)})
    with pytest.raises(ISAError, match="buffer 'X' declared twice"):
        Program.from_bytes(twice.to_bytes())


SPANS = st.lists(st.tuples(st.integers(1, 64), st.integers(0, 256)), min_size=1, max_size=5)


@given(SPANS)
def test_buffer_tables_are_accepted_exactly_when_disjoint(spans: list[tuple[int, int]]) -> None:
    bufs = {f"B{i}": Buffer(f"B{i}", "input", "int8", (size,), addr) for i, (size, addr) in enumerate(spans)}
    disjoint = all(a.end <= b.addr or b.end <= a.addr
                   for i, a in enumerate(bufs.values()) for b in list(bufs.values())[i + 1:])
    prog = Program(TINY, [], bufs)
    if disjoint:
        check(prog)
        functional.run(prog, inputs_for(prog))
    else:
        with pytest.raises(BufferTableError, match="overlap"):
            check(prog)


# ---- instructions -----------------------------------------------------------------------------
@pytest.mark.parametrize("ex", [ConfigEx(a_stride=0), ConfigEx(c_stride=0)])
def test_zero_strides_are_rejected(ex: ConfigEx) -> None:
    prog = _matmul_program(_table(X=0, O=64))
    prog.instructions[1] = ex
    with pytest.raises(ProgramError, match=r"instruction 1 `config_ex .*a_stride and c_stride must be at least 1"):
        check(prog)


def test_c_rows_are_checked_with_the_stride_of_the_compute() -> None:
    """A config_ex between a preload and its compute sets the C stride the compute writes with."""
    prog = _matmul_program(_table(X=0, O=64))
    prog.instructions[5] = Preload(0, 4, 4, acc_addr(60), 4, 4)    # rows 60..63 with stride 1: fits
    check(prog)
    prog.instructions.insert(6, ConfigEx(c_stride=2))              # rows 60, 62, 64, 66: past 64 rows
    with pytest.raises(ProgramError, match=r"instruction 7 `compute_preloaded .*row 66 is past the accumulator"):
        check(prog)


def test_a_read_ignores_the_accumulate_flag_as_gemmini_s_does(tiny_model) -> None:
    """gemmini.h's tiled_matmul mvouts C from an accumulator address with .accum set (Gemmini ignores it on a
    read): the checker takes it, and both backends store what the plain address holds."""
    buffers = _table(X=64, O=128)
    plain = _matmul_program(buffers)
    flagged = Program(TINY, plain.instructions[:-1] + [Mvout(buffers["O"].addr, acc_addr(0, accumulate=True), 4, 4)],
                      buffers)
    check(flagged)
    inputs = {"X": np.arange(64, dtype=np.int8).reshape(8, 8)}
    want = functional.run(plain, inputs).outputs["O"]
    for run in (functional.run, V.run):
        np.testing.assert_array_equal(run(flagged, inputs).outputs["O"], want)


def test_inputs_that_name_no_buffer_are_rejected() -> None:
    prog = _matmul_program(_table(X=0, O=64))
    inputs = {**inputs_for(prog), "Xx": np.zeros((8, 8), np.int8)}
    with pytest.raises(ValueError, match=r"inputs: 'Xx' name no input buffer of the program \(its inputs: X\)"):
        functional.run(prog, inputs)


# ---- the checker's word holds on both backends ------------------------------------------------
def _run_both(prog: Program) -> None:
    """Both backends agree: the same clean rejection, or the same bits."""
    try:
        check(prog)
    except ISAError as exc:
        for run in (functional.run, V.run):
            with pytest.raises(ISAError) as info:
                run(prog, {})
            assert str(info.value) == str(exc)
        return
    inputs = inputs_for(prog)
    ref = functional.run(prog, inputs)
    if prog.hw.config_hash() != TINY.config_hash():
        return                      # another hardware config would build another model (minutes)
    res = V.run(prog, inputs, timeout=60)
    for name, want in ref.outputs.items():
        np.testing.assert_array_equal(res.outputs[name], want, err_msg=f"{name} of\n{prog.to_asm()}")


@settings(max_examples=25)
@given(programs())
def test_checked_programs_run_to_the_same_bits_on_both_backends(tiny_model, prog: Program) -> None:
    _run_both(prog)


def _mutants(data: bytes, draw: st.DrawFn) -> bytes:
    """A few random byte edits of ``data``."""
    raw = bytearray(data)
    for _ in range(draw(st.integers(1, 3))):
        pos = draw(st.integers(0, len(raw) - 1))
        raw[pos] = draw(st.integers(0, 255))
    return bytes(raw)


@st.composite
def mutated_files(draw: st.DrawFn) -> bytes:
    prog = draw(programs(max_steps=6))
    if draw(st.booleans()):
        lines = prog.to_asm().splitlines()
        i = draw(st.integers(0, len(lines) - 1))
        words = lines[i].split()
        j = draw(st.integers(0, len(words) - 1))
        key, eq, _ = words[j].partition("=")
        words[j] = key + eq + draw(st.sampled_from(["0", "1", "-1", "65536", "4294967295", "acc[63]", "X+1000",
                                                    "garbage", "sp[1023]", "1e9", "relu", "Y"]))
        lines[i] = " ".join(words)
        return "\n".join(lines).encode()
    return _mutants(prog.to_bytes(), draw)


@settings(max_examples=40)
@given(mutated_files())
def test_mutated_program_files_run_identically_or_fail_cleanly(tiny_model, tmp_path_factory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "p.prog"
    path.write_bytes(data)
    try:
        prog = Program.load(path)
    except ISAError:
        return                      # a clean error that names the line, field or byte
    _run_both(prog)
