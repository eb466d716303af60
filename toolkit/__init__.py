"""Systolic Toolkit: program, simulate and tune a Gemmini-style systolic-array accelerator.

    import toolkit as tk
    hw = tk.HardwareConfig.preset("gemmini")
    op = tk.matmul(64, 64, 64, bias="row", activation="relu", scale=0.05)
    prog = tk.compile(op, hw)
    inputs = op.random_inputs(seed=0)
    res = tk.run(prog, inputs, backend="functional")
"""
from __future__ import annotations

from typing import Any

from isa import HardwareConfig, ISAError, Program
from simulators.base import BackendError, RunResult

from .api import compile, run
from .conv.ops import conv2d, depthwise_conv2d
from .kinds import default_schedule, from_dict, gemmini_schedule
from .maxpool import maxpool2d
from .network import Network, NetworkResult
from .network_run import run_network
from .network_tune import NetworkTuning, tune_network
from .onnx_import import from_onnx
from .ops import Matmul, Op, matmul
from .resadd import resadd
from .schedule import MatmulSchedule, Schedule, ScheduleError
from .version import __version__


def tune(op: Op, hw: HardwareConfig | str = "gemmini", trials: int = 200, **options: Any) -> Any:
    """Search schedules of ``op`` on ``hw``; see :func:`tuner.api.tune` for the options."""
    from tuner.api import tune as _tune  # the public face is the one place that calls the tuner
    return _tune(op, HardwareConfig.resolve(hw), trials=trials, **options)


__all__ = [
    "HardwareConfig", "ISAError", "Program", "BackendError", "RunResult", "compile", "run", "tune",
    "Matmul", "Op", "from_dict", "matmul", "MatmulSchedule", "Schedule", "ScheduleError", "default_schedule",
    "gemmini_schedule",
    "conv2d", "depthwise_conv2d", "maxpool2d", "resadd", "__version__",
    "Network", "NetworkResult", "NetworkTuning", "from_onnx", "run_network", "tune_network",
]
