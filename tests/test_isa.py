"""isa/: hardware configs, instruction encodings, assembly text and program files."""
from __future__ import annotations

import re
from dataclasses import fields, replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from isa import (
    ACC_BIT, GARBAGE, PRESETS, ROW_MASK, ComputeAccumulated, ComputePreloaded, ConfigEx, ConfigError, ConfigLd,
    ConfigNorm, ConfigSt, ConfigStScales, Fence, Flush, HardwareConfig, ISAError, Mvin, Mvout, Preload, Program, acc_addr,
    decode, decode_all, encode, encode_all, layout, parse_program,
)
from isa.instructions import INSTRUCTION_CLASSES
from isa.loop_words import CONFIG_EX, CONFIG_LD, CONFIG_ST_SCALES, LAYOUTS, LOOP_WORD_CLASSES
from isa.program import FORMAT_VERSION, MAGIC


# ---- hardware configuration ----------------------------------------------------------------
@pytest.mark.parametrize("name, expected", [
    ("gemmini", dict(dim=16, sp_rows=16384, sp_banks=4, acc_rows=1024, acc_banks=2, dma_beat_bytes=16,
                     max_block_len=4, dram_latency=30, ld_queue=8, ex_queue=16, st_queue=4, l2_kib=512,
                     host_cmd_cycles=26, soc=True)),
    ("gemmini-alone", dict(dim=16, sp_rows=16384, sp_banks=4, acc_rows=1024, acc_banks=2, dma_beat_bytes=16,
                           max_block_len=4, dram_latency=40, ld_queue=8, ex_queue=16, st_queue=4, l2_kib=0,
                           host_cmd_cycles=0, soc=False)),
    ("tiny", dict(dim=4, sp_rows=1024, sp_banks=2, acc_rows=64, acc_banks=2, dma_beat_bytes=4,
                  max_block_len=2, dram_latency=10, ld_queue=4, ex_queue=4, st_queue=2)),
])
def test_presets(name: str, expected: dict) -> None:
    hw = HardwareConfig.preset(name)
    assert hw is PRESETS[name] and hw.name == name
    assert {key: getattr(hw, key) for key in expected} == expected
    assert hw.sp_kib * 1024 == hw.sp_rows * hw.dim and hw.acc_kib * 1024 == hw.acc_rows * hw.dim * 4


@pytest.mark.parametrize("changes, field", [
    ({"dim": 3}, "dim"), ({"dim": 0}, "dim"), ({"dim": 128}, "dim"), ({"dim": "16"}, "dim"),
    ({"sp_banks": 3}, "sp_banks"), ({"acc_banks": 0}, "acc_banks"), ({"dma_beat_bytes": 2}, "dma_beat_bytes"),
    ({"max_block_len": -1}, "max_block_len"), ({"ld_queue": True}, "ld_queue"), ({"name": ""}, "name"),
    ({"dim": 64, "sp_kib": 1}, "sp_kib"), ({"acc_kib": 1, "acc_banks": 8}, "acc_kib"),
])
def test_config_validation_names_the_field(changes: dict, field: str) -> None:
    with pytest.raises(ConfigError, match=rf"\b{field}\b"):
        replace(PRESETS["gemmini"], **changes)


def test_config_from_dict_rejects_unknown_fields() -> None:
    with pytest.raises(ConfigError, match="sp_kb"):
        HardwareConfig.from_dict({"dim": 16, "sp_kb": 256})


@pytest.mark.parametrize("hw", [PRESETS["gemmini"], PRESETS["tiny"],
                                HardwareConfig(name="wide", dim=32, sp_kib=512, acc_kib=128, max_block_len=2)])
def test_config_toml_round_trip(hw: HardwareConfig, tmp_path) -> None:
    path = tmp_path / "hw.toml"
    hw.save(path)
    assert HardwareConfig.load(path) == hw
    assert HardwareConfig.resolve(str(path)) == hw


def test_config_flat_toml_takes_the_file_name(tmp_path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text("dim = 8\nsp_kib = 64\n")
    hw = HardwareConfig.load(path)
    assert (hw.name, hw.dim, hw.sp_kib, hw.acc_kib) == ("mine", 8, 64, 64)


@pytest.mark.parametrize("text, message", [
    ("dim = \n", "not valid TOML"), ("[hardware]\ndim = 3\n", "dim"), ("bogus = 1\n", "bogus"),
])
def test_config_bad_toml(tmp_path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        HardwareConfig.load(path)


def test_config_missing_file_and_unknown_preset(tmp_path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        HardwareConfig.load(tmp_path / "nope.toml")
    with pytest.raises(ConfigError, match="gemini"):
        HardwareConfig.preset("gemini")


def test_config_hash_is_stable() -> None:
    # pinned: caches and tuning records are keyed by these digests (they moved when dma_inflight
    # joined the fields: Gemmini's max_in_flight_mem_reqs, reads in flight went from 64 to 16). The
    # accelerator alone keeps the digest the gemmini preset had before the SoC; the SoC has its own.
    assert PRESETS["gemmini-alone"].config_hash() == "40ff860238b17544"
    assert PRESETS["gemmini"].config_hash() == "33a9740d30edd27a"
    assert PRESETS["tiny"].config_hash() == "a5bf430300c8d5c4"
    # one RTL build serves every SoC timing
    assert PRESETS["gemmini"].rtl_hash() == PRESETS["gemmini-alone"].rtl_hash()
    gemmini = PRESETS["gemmini"]
    renamed = replace(gemmini, name="other")
    assert renamed.config_hash() == gemmini.config_hash()
    assert replace(gemmini, dram_latency=41).config_hash() != gemmini.config_hash()
    assert hash(HardwareConfig(name="gemmini")) == hash(gemmini) and {gemmini: 1}[HardwareConfig(name="gemmini")]


# ---- instructions: strategies for every type, random in-range fields ------------------------
def uint(bits: int) -> st.SearchStrategy[int]:
    return st.integers(0, (1 << bits) - 1)


BIT = uint(1)
U16 = uint(16)
STATE = st.integers(0, 2)
F32 = st.floats(width=32, allow_nan=False, allow_infinity=False)
LOCAL = st.one_of(
    uint(32), st.just(GARBAGE), st.integers(0, ROW_MASK),
    st.builds(lambda row, a, f, n: acc_addr(row, accumulate=a, full=f, norm=n), st.integers(0, ROW_MASK),
              st.booleans(), st.booleans(), st.integers(0, 7)))
I32 = st.integers(-(1 << 31), (1 << 31) - 1)
DRAM = st.one_of(uint(64), st.integers(0, 600))   # the small ones land in the test buffers

FIELDS: dict[type, dict[str, st.SearchStrategy]] = {
    ConfigEx: dict(dataflow=BIT, activation=uint(2), a_transpose=BIT, b_transpose=BIT, a_stride=U16, acc_scale=F32,
                   c_stride=U16, in_shift=st.integers(0, 31), set_only_strides=BIT),
    ConfigLd: dict(dram_stride=uint(64), state=STATE, shrink=BIT, block_stride=U16, scale=F32,
                   pixel_repeats=st.integers(1, 255)),
    ConfigSt: dict(dram_stride=uint(32), activation=uint(2), acc_scale=F32, pool_stride=uint(2), pool_size=uint(2),
                   pool_out_dim=uint(8), porows=uint(8), pocols=uint(8), orows=uint(8), ocols=uint(8), upad=uint(2),
                   lpad=uint(2), out_offset=st.integers(-256, 255), out_uint8=BIT, col_scales=BIT),
    ConfigStScales: dict(col=st.integers(0, (1 << 15) - 1).map(lambda k: 2 * k), scale0=F32, scale1=F32),
    ConfigNorm: dict(stat_id=uint(8), act_msb=BIT, set_stats_id_only=BIT, q_const_type=BIT, q_const=I32, qb=I32,
                     qc=I32),
    Mvin: dict(dram=DRAM, local=LOCAL, rows=U16, cols=U16, state=STATE),
    Mvout: dict(dram=DRAM, local=LOCAL, rows=U16, cols=U16),
    Preload: dict(b=LOCAL, b_rows=U16, b_cols=U16, c=LOCAL, c_rows=U16, c_cols=U16),
    ComputePreloaded: dict(a=LOCAL, a_rows=U16, a_cols=U16, d=LOCAL, d_rows=U16, d_cols=U16),
    ComputeAccumulated: dict(a=LOCAL, a_rows=U16, a_cols=U16, d=LOCAL, d_rows=U16, d_cols=U16),
    Flush: {}, Fence: {},
}
# loop words: every field of their layout, DRAM addresses often inside the test buffers
LOOP_WORDS = [st.builds(cls, **{f.name: st.one_of(DRAM, uint(64)) if f.dram else uint(f.width)
                                for f in LAYOUTS[cls.FUNCT]}) for cls in LOOP_WORD_CLASSES]
INSTRUCTIONS = st.one_of([st.builds(cls, **FIELDS[cls]) for cls in FIELDS] + LOOP_WORDS)


def test_strategies_cover_every_instruction_and_field() -> None:
    assert set(FIELDS) == set(INSTRUCTION_CLASSES)
    for cls, strategies in FIELDS.items():
        assert set(strategies) == {f.name for f in fields(cls)}, cls.__name__


@given(INSTRUCTIONS)
def test_encode_decode_round_trip(ins) -> None:
    funct, rs1, rs2 = encode(ins)
    assert all(0 <= w < 1 << 64 for w in (funct, rs1, rs2))
    assert decode(funct, rs1, rs2) == ins


BUFFER_SPECS = st.lists(
    st.tuples(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True),
              st.sampled_from(["input", "output", "scratch"]), st.sampled_from(["int8", "int32"]),
              st.lists(st.integers(1, 12), min_size=1, max_size=3).map(tuple)),
    max_size=4, unique_by=lambda spec: spec[0])
HARDWARE = st.one_of(st.sampled_from(list(PRESETS.values())),
                     st.builds(HardwareConfig, name=st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True),
                               dim=st.sampled_from([4, 8, 16]), sp_kib=st.sampled_from([16, 64]),
                               dram_latency=st.integers(1, 100)))
PROGRAMS = st.builds(lambda hw, specs, instrs: Program(hw, instrs, layout(specs)),
                     HARDWARE, BUFFER_SPECS, st.lists(INSTRUCTIONS, max_size=30))


@given(PROGRAMS)
def test_program_round_trips(prog: Program) -> None:
    text = prog.to_asm()
    assert parse_program(text) == prog
    assert decode_all(encode_all(prog.instructions)) == prog.instructions
    back, segments = Program.from_bytes(prog.to_bytes())
    assert back == prog and back.hw.name == prog.hw.name and segments == {}


def _small_program() -> tuple[Program, dict[str, np.ndarray]]:
    buffers = layout([("A", "input", "int8", (3, 5)), ("bias", "input", "int32", (5,)),
                      ("C", "output", "int8", (3, 5))])
    instrs = [ConfigLd(dram_stride=5, state=0), Mvin(buffers["A"].addr, 0, 3, 5), ConfigSt(dram_stride=5),
              Mvout(buffers["C"].addr, 0, 3, 5), Fence()]
    rng = np.random.default_rng(1)
    inputs = {"A": rng.integers(-128, 128, (3, 5)).astype(np.int8),
              "bias": rng.integers(-1000, 1000, 5).astype(np.int32)}
    return Program(PRESETS["tiny"], instrs, buffers), inputs


def test_program_file_carries_the_dram_image() -> None:
    prog, inputs = _small_program()
    back, segments = Program.from_bytes(prog.to_bytes(inputs))
    assert back == prog
    assert segments == {prog.buffers["A"].addr: inputs["A"].tobytes(),
                        prog.buffers["bias"].addr: inputs["bias"].astype("<i4").tobytes()}


@pytest.mark.parametrize("suffix", [".s", ".asm", ".bin"])
def test_program_save_load(tmp_path, suffix: str) -> None:
    prog, _ = _small_program()
    path = tmp_path / f"prog{suffix}"
    prog.save(path)
    assert Program.load(path) == prog


# ---- malformed assembly ---------------------------------------------------------------------------
@pytest.mark.parametrize("line, message", [
    ("mvim dram=A local=sp[0] rows=1 cols=1", "unknown instruction 'mvim'"),
    ("mvin dram=A local=sp[0] rows=1 cols=1 stride=2", "no field 'stride'"),
    ("mvin dram=A local=sp[0] rows 1 cols=1", "no field 'rows'"),
    ("mvin dram=A local=sp[x] rows=1 cols=1", "bad value for local"),
    ("mvin dram=A local=acc[0].sticky rows=1 cols=1", "bad value for local"),
    ("mvin dram=Q+4 local=sp[0] rows=1 cols=1", "bad value for dram.*unknown buffer 'Q'"),
    ("config_ex dataflow=diagonal", "bad value for dataflow"),
    ("config_st acc_scale=half", "bad value for acc_scale"),
    ("mvin dram=A local=sp[0] rows=1", "missing field.*cols"),
    ("preload b=sp[0] b_rows=4 b_cols=4 c=acc[0] c_rows=4", "missing field.*c_cols"),
    ("mvin dram=A local=sp[0] rows=70000 cols=1", "rows=70000 out of range"),
    ("mvin dram=A local=sp[0] rows=-1 cols=1", "rows=-1 out of range"),
    ("config_ex acc_scale=1e40", "acc_scale"),
    ("mvin dram=A dram=A local=sp[0] rows=1 cols=1", "given twice"),
])
def test_malformed_assembly_names_the_line(line: str, message: str) -> None:
    text = f".buffer A input int8 4x4 @0x0\n# a comment\n\nfence\n{line}\nfence\n"
    with pytest.raises(ISAError, match=message) as info:
        parse_program(text, PRESETS["tiny"])
    assert str(info.value).startswith("line 5:") and line in str(info.value)


@pytest.mark.parametrize("text, message", [
    ("fence\n", "no .hardware"),
    (".hardware dim=3\nfence\n", "line 1: .hardware.*dim"),
    (".hardware dim\n", "line 1: .hardware expects key=value"),
    (".hardware\n.buffer A input int8 4x4\n", "line 2: .buffer expects"),
    (".hardware\n.buffer A input float 4x4 @0\n", "line 2: .buffer.*dtype 'float'"),
    (".hardware\n.buffer A input int8 4x4 @0\n.buffer A input int8 4x4 @0x40\n", "line 3: buffer 'A' declared twice"),
    (".hardware\n.include other.s\n", "line 2: unknown directive '.include'"),
    (".hardware\nfence\n.buffer B input int8 4x4 @0x100\n", "line 3: directive after the first instruction in .*buffer B"),
])
def test_malformed_directives(text: str, message: str) -> None:
    with pytest.raises(ISAError, match=message):
        parse_program(text)


# ---- reserved bits and bad binary words -----------------------------------------------------------
def _free_bits(layout: tuple, word: str) -> list[int]:
    """The bits of ``word`` that no field of ``layout`` covers: reserved, so the decoder refuses them."""
    used = {f.lo + i for f in layout if f.word == word for i in range(f.width)}
    return [b for b in range(64) if b not in used]


# config kind -> (rs1 reserved bits, rs2 reserved bits), from the field tables isa/encoding.py writes
# (config_st's rs1[23] makes it a config_st_scales word, whose own layout leaves its bits free)
_RESERVED = {cls: (_free_bits(layout, "rs1"), _free_bits(layout, "rs2"))
             for cls, layout in ((ConfigEx, CONFIG_EX), (ConfigLd, CONFIG_LD), (ConfigStScales, CONFIG_ST_SCALES))}


@given(st.data())
def test_reserved_bits_are_rejected(data) -> None:
    cls = data.draw(st.sampled_from(list(_RESERVED)))
    funct, rs1, rs2 = encode(data.draw(st.builds(cls, **FIELDS[cls])))
    word = data.draw(st.sampled_from(["rs1", "rs2"] if _RESERVED[cls][1] else ["rs1"]))
    bit = data.draw(st.sampled_from(_RESERVED[cls][word == "rs2"]))
    if word == "rs1":
        rs1 |= 1 << bit
    else:
        rs2 |= 1 << bit
    with pytest.raises(ISAError, match=f"reserved bits.*{word}"):
        decode(funct, rs1, rs2)


@pytest.mark.parametrize("word, message", [
    ((7, 1, 0), "flush: rs1 and rs2 must be zero"),
    ((127, 0, 1 << 63), "fence: rs1 and rs2 must be zero"),
    ((0, 3 | 1 << 4, 0), "config_norm: reserved bits 0x10 set in rs1"),
    ((22, 0, 0), "unknown funct 22"),
    ((0, 1 | (1 << 8) | (3 << 3), 0), "state=3 out of range"),   # config_ld state 3 (pixel_repeats 1)
    ((2, 1 << 64, 0), "not a 64-bit word"),
    ((0, 4 | (0x7F800000 << 32), 0), "acc_scale.*not a finite float32"),   # inf scale
])
def test_bad_words(word: tuple[int, int, int], message: str) -> None:
    with pytest.raises(ISAError, match=message):
        decode(*word)


def test_decode_all_names_the_index() -> None:
    words = encode_all([Fence(), Flush(), Fence()])
    words[2, 1] = 5
    with pytest.raises(ISAError, match="instruction 2: fence"):
        decode_all(words)


def test_encode_all_of_fresh_objects() -> None:
    """A generator's instructions are freed as it goes, and CPython reuses their ids: each must still
    be encoded as itself (the loop unrollers feed encode_all this way)."""
    fresh = (Mvin(dram=64 + 16 * n, local=n, rows=1 + n % 4, cols=4, state=n % 3) for n in range(200))
    want = [encode(Mvin(dram=64 + 16 * n, local=n, rows=1 + n % 4, cols=4, state=n % 3)) for n in range(200)]
    assert encode_all(fresh).tolist() == [list(w) for w in want]


# ---- program files: truncated, foreign, corrupted --------------------------------------------------
def test_truncated_program_files() -> None:
    prog, inputs = _small_program()
    data = prog.to_bytes(inputs)
    for n in range(len(data)):
        with pytest.raises(ISAError, match="truncated|bad magic"):
            Program.from_bytes(data[:n])
    with pytest.raises(ISAError, match="3 trailing bytes"):
        Program.from_bytes(data + b"abc")


@pytest.mark.parametrize("data, message", [
    (b"\x7fELF\x02\x01\x01" + bytes(64), "bad magic"),
    (b"", "truncated"),
    (MAGIC + (FORMAT_VERSION + 1).to_bytes(4, "little"), f"version {FORMAT_VERSION + 1}"),
])
def test_foreign_program_files(data: bytes, message: str) -> None:
    with pytest.raises(ISAError, match=message):
        Program.from_bytes(data)


@pytest.mark.parametrize("content, message", [
    (b"\xff\xfe\x00binary junk", "neither a program file"),
    (b"def main():\n    pass\n", "unknown instruction 'def'"),
])
def test_load_foreign_files(tmp_path, content: bytes, message: str) -> None:
    path = tmp_path / "thing.bin"
    path.write_bytes(content)
    with pytest.raises(ISAError, match=message):
        Program.load(path)
    with pytest.raises(ISAError, match="does not exist"):
        Program.load(tmp_path / "missing.bin")


def _hw_field_offset(field: str) -> int:
    keys = [f.name for f in fields(HardwareConfig) if f.name != "name"]
    return len(MAGIC) + 8 + 4 * keys.index(field)


def test_program_file_with_bad_hardware() -> None:
    prog, _ = _small_program()
    data = bytearray(prog.to_bytes())
    data[_hw_field_offset("dim"):_hw_field_offset("dim") + 4] = (3).to_bytes(4, "little")
    with pytest.raises(ISAError, match="hardware config.*dim"):
        Program.from_bytes(bytes(data))


def test_program_file_with_a_corrupted_name() -> None:
    prog, _ = _small_program()
    data = bytearray(prog.to_bytes())
    name_at = _hw_field_offset("st_queue") + 4 + 2   # after the hardware fields and the u16 name length
    data[name_at] = 0xFF
    with pytest.raises(ISAError):
        Program.from_bytes(bytes(data))


@given(st.data())
def test_corrupted_program_files_fail_cleanly(data) -> None:
    prog, inputs = _small_program()
    raw = bytearray(prog.to_bytes(inputs))
    at = data.draw(st.integers(len(MAGIC) + 4, len(raw) - 1))
    raw[at] ^= data.draw(st.integers(1, 255))
    try:
        back, _ = Program.from_bytes(bytes(raw))
    except ISAError:
        return
    assert isinstance(back, Program)   # a corruption that still decodes is a valid program


def test_local_address_text_forms() -> None:
    prog = Program(PRESETS["tiny"], [Mvout(0, acc_addr(7, accumulate=True, full=True), 1, 1),
                                     Mvout(0, ACC_BIT | 3, 1, 1), Mvout(0, GARBAGE, 1, 1), Mvout(0, 1 << 30, 1, 1)],
                   {})
    lines = prog.to_asm().splitlines()[1:]
    assert [re.search(r"local=(\S+)", line).group(1) for line in lines] == [
        "acc[7].accum.full", "acc[3]", "garbage", "0x40000000"]
    assert parse_program(prog.to_asm()) == prog


@pytest.mark.parametrize("name", ["my chip", "rev#2", ""])
def test_hardware_names_that_assembly_cannot_hold_are_rejected(name: str) -> None:
    with pytest.raises(ConfigError, match="HardwareConfig.name"):
        replace(PRESETS["tiny"], name=name)
