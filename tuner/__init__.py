"""Schedule tuning, AutoTVM-style: search spaces, instruction-stream features, a learned cost model,
search strategies, parallel measurement, a records database and transfer between workloads.

    import toolkit as tk
    result = tk.tune(tk.matmul(256, 256, 256), "gemmini", trials=200, backend="verilator", db="tuning.db")
"""
from .api import tune
from .database import Database, Record, best_schedule
from .results import Trial, TuneResult
from .session import TuningSession
from .space import Space
from .union import UnionSpace, make_space

__all__ = ["Database", "Record", "Space", "Trial", "TuneResult", "TuningSession", "UnionSpace", "best_schedule", "make_space",
           "tune"]
