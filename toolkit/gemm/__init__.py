"""The matmul kind: its op, schedule, heuristics and lowering (registered in :data:`toolkit.kinds.KINDS`)."""
from .heuristic import default_matmul_schedule, gemmini_matmul_schedule
from .lowering import lower_matmul
from .op import Matmul, matmul
from .schedule import MatmulSchedule

__all__ = ["Matmul", "MatmulSchedule", "default_matmul_schedule", "gemmini_matmul_schedule", "lower_matmul", "matmul"]
