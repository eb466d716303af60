"""Bad arguments to the public API: a ValueError that names the argument, raised at the boundary, unchained."""
from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import pytest

import toolkit as tk

OP = tk.matmul(6, 5, 7, bias="row")
PROG = tk.compile(OP, "tiny")
GOOD = OP.random_inputs(0)


def raises(fn: Callable[[], Any], match: str) -> ValueError:
    """``fn()`` raises a ValueError matching ``match``, with no chained exception behind it."""
    with pytest.raises(ValueError, match=match) as info:
        fn()
    err = info.value
    assert err.__cause__ is None and (err.__context__ is None or err.__suppress_context__), "chained exception"
    return err


@pytest.mark.parametrize("args, kwargs, match", [
    ((0, 1, 1), {}, r"^M must be a positive integer, got 0"),
    ((1, -3, 1), {}, r"^N must be a positive integer, got -3"),
    ((1, 1, 2.5), {}, r"^K must be a positive integer, got 2.5"),
    ((True, 1, 1), {}, r"^M must be a positive integer"),
    (("3", 1, 1), {}, r"^M must be a positive integer"),
    ((1, 1, 1), {"bias": "col"}, r"^bias='col' is not one of"),
    ((1, 1, 1), {"bias": "channel"}, r"^bias='channel' is not one of"),
    ((1, 1, 1), {"activation": "gelu"}, r"^activation='gelu' is not one of"),
    ((1, 1, 1), {"out_dtype": "int16"}, r"^out_dtype='int16' is not one of"),
    ((1, 1, 1), {"out_dtype": "int32", "scale": 0.5}, r"^scale must be 1.0 when out_dtype='int32'"),
    ((1, 1, 1), {"scale": 0.0}, r"^scale must be a positive finite float32"),
    ((1, 1, 1), {"scale": -1.0}, r"^scale must be a positive finite float32"),
    ((1, 1, 1), {"scale": float("nan")}, r"^scale must be a positive finite float32"),
    ((1, 1, 1), {"scale": 1e-50}, r"^scale must be a positive finite float32"),   # float32 underflow
    ((1, 1, 1), {"scale": "x"}, r"^scale must be a number"),
])
def test_bad_matmul_arguments(args: tuple, kwargs: dict, match: str) -> None:
    raises(lambda: tk.matmul(*args, **kwargs), match)


def test_huge_scale_raises_without_warnings() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        raises(lambda: tk.matmul(1, 1, 1, scale=1e40), r"^scale must be a positive finite float32")


def _replace(name: str, value: Any) -> dict[str, Any]:
    return {**GOOD, name: value}


def _without(name: str) -> dict[str, Any]:
    return {k: v for k, v in GOOD.items() if k != name}


@pytest.mark.parametrize("backend", ["functional", "cpu"])
@pytest.mark.parametrize("inputs, match", [
    (_replace("A", GOOD["A"].astype(np.float64)), r"inputs\['A'\]: dtype float64 but the program expects int8"),
    (_replace("A", GOOD["A"].astype(np.int32)), r"inputs\['A'\]: dtype int32"),
    (_replace("bias", GOOD["bias"].astype(np.int8)), r"inputs\['bias'\]: dtype int8 but the program expects int32"),
    (_replace("B", GOOD["B"].T), r"inputs\['B'\]: shape \(5, 7\) but the program expects \(7, 5\)"),
    (_replace("bias", GOOD["bias"][None]), r"inputs\['bias'\]: shape \(1, 5\)"),
    (_replace("A", GOOD["A"].tolist()), r"inputs\['A'\]: dtype int64"),
    (_without("B"), r"inputs: missing array 'B'"),
])
def test_bad_input_arrays(backend: str, inputs: dict, match: str) -> None:
    raises(lambda: tk.run(PROG, inputs, backend=backend), match)


@pytest.mark.parametrize("inputs", [_replace("A", GOOD["A"].astype(np.float64)), _without("bias")])
def test_reference_checks_its_inputs(inputs: dict) -> None:
    raises(lambda: OP.reference(inputs), r"^inputs")


@pytest.mark.parametrize("inputs", [[GOOD["A"], GOOD["B"]], None])
def test_inputs_must_be_a_mapping(inputs: Any) -> None:
    raises(lambda: tk.run(PROG, inputs), r"^inputs")


@pytest.mark.parametrize("call, match", [
    (lambda: tk.run(PROG, GOOD, backend="tpu"), r"^backend='tpu' is not one of \['cpu', 'functional', 'gpu', "),
    (lambda: tk.run(OP, GOOD), r"^program must be a Program"),
    (lambda: tk.compile("matmul", "tiny"), r"^op must be an op"),
    (lambda: tk.compile(OP, "gemini"), r"'gemini'.*'gemmini'"),
    (lambda: tk.HardwareConfig.preset("gemini"), r"^unknown preset 'gemini'; choose one of"),
    (lambda: tk.compile(OP, "tiny", {"tile_i": 1, "tile_j": 1, "tile_k": 1, "tilek": 2}),
     r"unknown MatmulSchedule knob\(s\) \['tilek'\]"),
    (lambda: tk.compile(OP, "tiny", {"tile_i": 1}), r"missing knob\(s\) \['tile_j', 'tile_k'\]"),
    (lambda: tk.compile(OP, "tiny", {"tile_i": 0, "tile_j": 1, "tile_k": 1}), r"^tile_i=0 must be an integer"),
    (lambda: tk.compile(OP, "tiny", {"tile_i": 1, "tile_j": 1, "tile_k": 1, "loop_order": "kij"}),
     r"^loop_order='kij' is not one of"),
    (lambda: tk.compile(OP, "tiny", {"tile_i": 1, "tile_j": 1, "tile_k": 1, "double_buffer": "yes"}),
     r"^double_buffer='yes' must be true or false"),
    (lambda: tk.compile(OP, "tiny", "fastest"), r"schedule 'fastest' is neither"),
    (lambda: tk.compile(OP, "tiny", 5), r"schedule must be a Schedule, a dict or a path, got int"),
    (lambda: tk.compile(OP, "tiny", "best"), r"schedule='best' needs db="),
])
def test_bad_api_arguments(call: Callable[[], Any], match: str) -> None:
    raises(call, match)


def test_unknown_preset_names_the_argument() -> None:
    raises(lambda: tk.compile(OP, "gemini"), r"\bhw\b")


def test_bad_schedule_file(tmp_path) -> None:
    path = tmp_path / "s.json"
    path.write_text("{tile_i: 1")
    raises(lambda: tk.compile(OP, "tiny", str(path)), r"schedule file .* is not valid JSON")
