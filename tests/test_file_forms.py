"""Programs and hardware configs in their file forms: the format follows the suffix in any case,
and wrong inputs (bytes for text, a non-integer field, an empty config) get an error that says so."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolkit as tk
from isa import ConfigError, HardwareConfig, Program
from isa.instructions import ISAError
from isa.program import MAGIC

PROG = tk.compile(tk.matmul(4, 4, 8), "tiny")
FIELDS = [f for f, v in HardwareConfig().as_dict().items()
          if isinstance(v, int) and not isinstance(v, bool)]   # the integer fields


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([".s", ".asm", ".bin"]).flatmap(
    lambda s: st.tuples(st.just(s), st.lists(st.booleans(), min_size=len(s), max_size=len(s)))))
def test_save_picks_the_format_by_suffix_in_any_case(tmp_path_factory, case: tuple[str, list[bool]]) -> None:
    suffix, upper = case
    path = tmp_path_factory.mktemp("save") / ("prog" + "".join(c.upper() if u else c for c, u in zip(suffix, upper)))
    PROG.save(path)
    assert path.read_bytes().startswith(MAGIC) == (suffix == ".bin")
    assert Program.load(path) == PROG


@pytest.mark.parametrize("name", ["prog.txt", "prog", "prog.s.bak"])
def test_save_rejects_a_suffix_that_names_no_format(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="cannot tell the program format of .* use .s or .asm for assembly, .bin"):
        PROG.save(tmp_path / name)
    assert not (tmp_path / name).exists()


def test_assembly_does_not_take_inputs(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="inputs go into a binary program file only"):
        PROG.save(tmp_path / "p.s", tk.matmul(4, 4, 8).random_inputs(0))


@pytest.mark.parametrize("data, message", [
    (PROG.to_asm().encode(), "assembly must be text \\(str\\), got bytes: decode them first"),
    (PROG.to_bytes(), "got bytes: a binary program file: use Program.from_bytes"),
    (bytearray(PROG.to_bytes()), "got bytearray: a binary program file"),
    (None, "assembly must be text \\(str\\), got NoneType"),
])
def test_from_asm_names_what_it_got_and_what_to_use(data: object, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        Program.from_asm(data)  # type: ignore[arg-type]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(FIELDS), st.one_of(st.floats().map(repr), st.text("xyz.-+_", min_size=1)), st.integers(0, 3))
def test_a_hardware_field_that_is_no_integer_names_its_line(field: str, text: str, blank_lines: int) -> None:
    asm = re.sub(rf"\b{field}=\d+", f"{field}={text}", PROG.to_asm(), count=1)
    with pytest.raises(ISAError, match=f"^line {blank_lines + 1}: .hardware: {field} must be an integer, got"):
        Program.from_asm("\n" * blank_lines + asm)


@pytest.mark.parametrize("text", ["", "# a comment\n", "[hardware]\n", 'name = "mine"\n', '[hardware]\nname = "x"\n'])
def test_a_config_file_that_sets_nothing_is_rejected(tmp_path: Path, text: str) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=f"hardware config file '{path}' sets no hardware field; set some of dim"):
        HardwareConfig.resolve(str(path))


def test_a_config_file_with_one_field_keeps_the_defaults_for_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "small.toml"
    path.write_text("dim = 8\n")
    hw = HardwareConfig.load(path)
    assert hw.dim == 8 and hw.name == "small" and hw.sp_kib == HardwareConfig().sp_kib
