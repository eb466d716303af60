"""cocotb testbenches of RTL units, built and run with cocotb_tools.runner and Verilator.

Each test builds one small toplevel (a few seconds) and runs the cocotb module
tests/rtl/cocotb_<unit>.py on it.
"""
from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RTL = ROOT / "rtl"
HERE = Path(__file__).resolve().parent


def _runner():
    pytest.importorskip("cocotb")
    runner_mod = pytest.importorskip("cocotb_tools.runner")
    from simulators.base import BackendError
    from simulators.verilator import verilator_env
    try:
        env = verilator_env()
    except BackendError as exc:
        pytest.skip(f"verilator unavailable: {exc}")
    for key in ("VERILATOR_ROOT", "PATH", "MAKEFLAGS"):
        os.environ[key] = env[key]
    return runner_mod.get_runner("verilator")


def _build(runner, toplevel: str, files: list[str], parameters: dict) -> Path:
    """The bench's Verilated toplevel, built once per sources, parameters and toolchain and kept in the
    Verilator build cache (a build takes 10-25 s; the benches build eleven)."""
    import cocotb
    from simulators.rtl_codegen import isa_sources, write_sources
    from simulators.verilator import VERILATOR_FLAGS, cached_build, verilator_version
    sources, generated = [RTL / f for f in files], isa_sources()
    # The toplevel links cocotb's VPI library by its path (an rpath into this environment's cocotb), so a
    # build made from another environment, since removed, would not load: the path is part of the key.
    digest = hashlib.sha256(repr((toplevel, sorted(parameters.items()), VERILATOR_FLAGS, verilator_version(),
                                  cocotb.__version__, str(Path(cocotb.__file__).resolve().parent),
                                  sys.version_info[:2], sorted(generated.items()))).encode())
    for path in sources:
        digest.update(path.read_bytes())

    def make(build_dir: Path) -> None:
        write_sources(build_dir, generated)   # systolic_pkg.sv includes the generated enums
        runner.build(sources=sources, hdl_toplevel=toplevel, build_dir=build_dir, includes=[build_dir],
                     parameters=parameters, build_args=list(VERILATOR_FLAGS), always=True)

    key = f"cocotb-{toplevel}-{digest.hexdigest()[:20]}"
    return cached_build(key, f"the cocotb bench toplevel {toplevel}", toplevel, make).parent


def _run(tmp_path_factory, toplevel: str, files: list[str], module: str, parameters: dict | None = None) -> None:
    runner = _runner()
    build_dir = _build(runner, toplevel, files, parameters or {})
    for path in (str(HERE), str(ROOT)):   # the runner passes sys.path to the simulator as PYTHONPATH
        if path not in sys.path:
            sys.path.insert(0, path)
    runner.test(hdl_toplevel=toplevel, hdl_toplevel_lang="verilog", test_module=module, build_dir=build_dir,
                test_dir=tmp_path_factory.mktemp(f"cocotb_{toplevel}"))


def test_fp_scale(tmp_path_factory) -> None:
    _run(tmp_path_factory, "fp_scale", ["systolic_pkg.sv", "fp_scale.sv"], "cocotb_fp_scale")


def test_pe(tmp_path_factory) -> None:
    _run(tmp_path_factory, "pe", ["pe.sv"], "cocotb_pe")


def test_mesh(tmp_path_factory) -> None:
    _run(tmp_path_factory, "mesh", ["clock_gate.sv", "pe.sv", "mesh.sv"], "cocotb_mesh", {"DIM": 4, "TAG_W": 8})


@pytest.mark.parametrize("lane_w, accum", [(8, 0), (32, 1)], ids=["scratchpad", "accumulator"])
def test_ram_bank(tmp_path_factory, lane_w: int, accum: int) -> None:
    _run(tmp_path_factory, "ram_bank", ["ram_bank.sv"], "cocotb_ram_bank",
         {"ROWS": 16, "DIM": 4, "LANE_W": lane_w, "ACCUM": accum, "NREQ": 3})


def test_dispatch(tmp_path_factory) -> None:
    _run(tmp_path_factory, "dispatch", ["systolic_pkg.sv", "dispatch.sv"], "cocotb_dispatch",
         {"LDQ": 4, "EXQ": 4, "STQ": 2, "DIM": 4, "SP_ROWS": 256, "ACC_ROWS": 64})


def test_load_unit(tmp_path_factory) -> None:
    _run(tmp_path_factory, "load_unit", ["systolic_pkg.sv", "load_unit.sv"], "cocotb_load_unit",
         {"DIM": 4, "MAX_BLOCK_LEN": 2, "SP_ROWS": 64, "ACC_ROWS": 16, "LDQ": 4, "N": 10})


# Gemmini's store unit (the tiny preset's max_block_len 2: writes of up to 2 blocks), and one with both
# extensions (requantization, column scales) and max_block_len 4 (writes of up to 4 blocks, the whole port)
@pytest.mark.parametrize("extensions, max_block_len", [(0, 2), (1, 4)], ids=["gemmini", "extensions"])
def test_store_unit(tmp_path_factory, extensions: int, max_block_len: int) -> None:
    _run(tmp_path_factory, "store_unit", ["systolic_pkg.sv", "norm_unit.sv", "store_unit.sv"], "cocotb_store_unit",
         {"DIM": 4, "MAX_BLOCK_LEN": max_block_len, "SP_ROWS": 64, "ACC_ROWS": 16, "N": 10,
          "STORE_REQUANT": extensions, "STORE_COL_SCALES": extensions})


# the normalization unit alone: its stat registers and int8 rows against isa.norm (dim 4, 4 stat ids)
def test_norm_unit(tmp_path_factory) -> None:
    _run(tmp_path_factory, "norm_unit", ["systolic_pkg.sv", "norm_unit.sv"], "cocotb_norm_unit",
         {"DIM": 4, "NORM_STATS": 4, "N": 10})


LOOP_CONV_FILES = ["systolic_pkg.sv", "loop_conv_pkg.sv", "loop_conv_pipe.sv", "loop_conv_seq.sv",
                   "loop_conv_ld_bias.sv", "loop_conv_ld_input.sv", "loop_conv_ld_weight.sv", "loop_conv_ex.sv",
                   "loop_conv_st.sv", "loop_conv.sv"]


def test_loop_conv(tmp_path_factory) -> None:
    _run(tmp_path_factory, "loop_conv", LOOP_CONV_FILES, "cocotb_loop_conv",
         {"DIM": 4, "SP_ROWS": 1024, "ACC_ROWS": 64, "MAX_BLOCK_LEN": 2})


LOOP_MATMUL_FILES = ["systolic_pkg.sv", "loop_mm_pkg.sv", "loop_mm_xfer.sv", "loop_mm_ex.sv",
                     "loop_mm_st_norm.sv", "loop_mm_st.sv", "loop_matmul.sv"]


def test_loop_matmul(tmp_path_factory) -> None:
    """The tiny preset's sizes; mvouts of up to max_block_len blocks, as the reference unroller's."""
    if str(HERE.parent) not in sys.path:   # tests/loop_programs.py, for the bench
        sys.path.insert(0, str(HERE.parent))
    _run(tmp_path_factory, "loop_matmul", LOOP_MATMUL_FILES, "cocotb_loop_matmul",
         {"DIM": 4, "SP_ROWS": 1024, "ACC_ROWS": 64, "MAX_BLOCK_LEN": 2, "MAX_BLOCK_LEN_ACC": 1, "ST_BLOCKS": 2})
