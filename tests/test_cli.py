"""The ``systolic`` command line: run, asm and exec, their help and their errors."""
from __future__ import annotations

import numpy as np
import pytest

import toolkit as tk
from isa import Program
from toolkit.cli import main

MATMUL = ["matmul", "--m", "9", "--n", "6", "--k", "13", "--config", "tiny"]


def test_run_checks_bit_exact(capsys: pytest.CaptureFixture) -> None:
    assert main(["run", *MATMUL, "--bias", "row", "--relu", "--scale", "0.05"]) == 0
    out = capsys.readouterr().out
    assert "bit-exact: yes" in out
    assert "instructions:" in out and "compute_preloaded" in out


def test_asm_then_exec_round_trip(tmp_path, capsys: pytest.CaptureFixture) -> None:
    asm = tmp_path / "mm.s"
    assert main(["asm", *MATMUL, "-o", str(asm)]) == 0
    prog = Program.load(asm)
    op = tk.matmul(9, 6, 13)
    assert prog == tk.compile(op, "tiny")
    inputs = op.random_inputs(3)
    args = ["exec", str(asm), "--out", str(tmp_path / "out")]
    for name, arr in inputs.items():
        np.save(tmp_path / f"{name}.npy", arr)
        args += ["--input", f"{name}={tmp_path / name}.npy"]
    assert main(args) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "C.npy"), op.reference(inputs)["C"])


@pytest.mark.parametrize("argv", [
    ["conv2d", "--in-c", "5", "--out-c", "7", "--bias", "channel", "--relu", "--scale", "0.1"],
    ["depthwise", "--in-c", "6", "--stride", "2"],
    ["resadd", "--in-c", "5", "--a-scale", "0.5", "--b-scale", "2"],
    ["maxpool", "--in-c", "3", "--kernel", "3", "3", "--stride", "2"],
    ["layernorm", "--m", "9", "--n", "21", "--scale", "4"],
    ["softmax", "--m", "7", "--n", "12", "--input-scale", "0.1"],
    ["igelu", "--m", "5", "--n", "70", "--input-scale", "0.05", "--scale", "20"],
    ["matmul", "--igelu", "--input-scale", "0.02", "--scale", "-0.001"],
])
def test_run_every_op_kind(argv: list[str], capsys: pytest.CaptureFixture) -> None:
    assert main(["run", *argv, "--in-h", "7", "--in-w", "6", "--config", "tiny"]) == 0
    assert "bit-exact: yes" in capsys.readouterr().out


def test_binary_program_file_runs(tmp_path) -> None:
    path = tmp_path / "mm.bin"
    assert main(["asm", *MATMUL, "-o", str(path)]) == 0
    assert Program.load(path) == tk.compile(tk.matmul(9, 6, 13), "tiny")


def test_exec_reports_missing_inputs(tmp_path, capsys: pytest.CaptureFixture) -> None:
    asm = tmp_path / "mm.s"
    main(["asm", *MATMUL, "-o", str(asm)])
    assert main(["exec", str(asm)]) == 2
    assert "missing array 'A'" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["run", "asm", "exec", "profile", "bench", "tune"])
def test_every_command_has_help_with_an_example(command: str, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "usage: systolic " + command in out and "example" in out
