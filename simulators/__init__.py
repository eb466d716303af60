"""Backends that run programs: functional (numpy ISA model), verilator (RTL), cpu and gpu (baselines)."""
from .base import BACKENDS, BackendError, RunResult, SimulationTimeout, ToolchainError, get_backend, run

__all__ = ["BACKENDS", "BackendError", "RunResult", "SimulationTimeout", "ToolchainError", "get_backend", "run"]
