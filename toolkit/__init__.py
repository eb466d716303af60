"""Systolic Toolkit: program, simulate and tune a Gemmini-style systolic-array accelerator.

    import toolkit as tk
    hw = tk.HardwareConfig.preset("gemmini")
    op = tk.matmul(64, 64, 64, bias="row", activation="relu", scale=0.05)
    prog = tk.compile(op, hw)
    inputs = op.random_inputs(seed=0)
    res = tk.run(prog, inputs, backend="functional")
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from isa import HardwareConfig, ISAError, Program
from networks.compiling import compile_op
from networks.network import Network, NetworkResult
from networks.network_run import run_network
from networks.network_tune import NetworkTuning, tune_network
from networks.onnx_import import from_onnx
from simulators.base import BackendError, RunResult
from simulators.base import run as run_backend

from .conv.ops import conv2d, depthwise_conv2d
from .kinds import default_schedule, from_dict, gemmini_schedule
from .maxpool import maxpool2d
from .norm import igelu, layernorm, softmax
from .gemm import Matmul, MatmulSchedule, matmul
from .ops import Op
from .resadd import resadd
from .schedule import Schedule, ScheduleError
from .version import __version__


def compile(op: Any, hw: HardwareConfig | str = "gemmini", schedule: Any = None, *,
            db: str | Path | None = None, allow_large: bool = False) -> Program:
    """Lower ``op`` for ``hw`` under ``schedule``: None/"default" (the toolkit's heuristic), "gemmini"
    (Gemmini's own library, the baseline: gemmini.h's config and LOOP_WS / LOOP_CONV_WS words, see
    toolkit/library/), "gemmini-nn" (its calls as Gemmini's own networks make them: a pointwise conv through
    tiled_matmul_nn_auto, see toolkit/library/pointwise.py), "gemmini-flat" (the earlier port of its tile sizing
    in our own flat instruction stream), "best" (the best record in ``db``), a Schedule, a dict of knobs, or a
    JSON file of knobs.
    An op past the size limits (see :func:`toolkit.limits.check_size`) needs ``allow_large=True``."""
    return compile_op(op, HardwareConfig.resolve(hw), schedule, db=db, allow_large=allow_large)


def run(program: Program, inputs: Mapping[str, np.ndarray], backend: str = "functional", **options: Any) -> RunResult:
    """Run ``program`` on ``inputs`` with ``backend`` ("functional", "verilator", "cpu" or "gpu"; "stand-in"
    is an analytical timing estimate, not the RTL)."""
    if not isinstance(program, Program):
        raise ValueError(f"program must be a Program from tk.compile, got {type(program).__name__}")
    return run_backend(program, inputs, backend, **options)


def tune(op: Op, hw: HardwareConfig | str = "gemmini", trials: int = 200, **options: Any) -> Any:
    """Search schedules of ``op`` on ``hw``; see :func:`tuner.api.tune` for the options."""
    from tuner.api import tune as _tune  # on first use: importing the tuner takes a second
    return _tune(op, HardwareConfig.resolve(hw), trials=trials, **options)


def explore(workload: Any, space: Mapping[str, Any], trials: int = 20, backend: str = "verilator",
            workers: int | None = None, scheduler: str | None = None, db: str | Path = "explore.db",
            **options: Any) -> Any:
    """Tune ``workload`` (an op, a list of ops or a Network) on every hardware point of ``space``
    (HardwareConfig field -> values): cycles from the RTL, area from synthesis, and the Pareto front;
    see :func:`networks.explore.explore` for the options."""
    from networks.explore import explore as _explore  # on first use, as tune: it reaches the tuner
    return _explore(workload, space, trials=trials, backend=backend, workers=workers, scheduler=scheduler, db=db,
                    **options)


__all__ = [
    "HardwareConfig", "ISAError", "Program", "BackendError", "RunResult", "compile", "run", "tune", "explore",
    "Matmul", "Op", "from_dict", "matmul", "MatmulSchedule", "Schedule", "ScheduleError", "default_schedule",
    "gemmini_schedule",
    "conv2d", "depthwise_conv2d", "maxpool2d", "resadd", "layernorm", "softmax", "igelu", "__version__",
    "Network", "NetworkResult", "NetworkTuning", "from_onnx", "run_network", "tune_network",
]
