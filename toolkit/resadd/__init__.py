"""The residual-add kind (Gemmini's resadd): its op, schedule and default, and lowering."""
from .lowering import lower_resadd
from .op import ResAdd, resadd
from .schedule import ResAddSchedule, default_resadd_schedule

__all__ = ["ResAdd", "ResAddSchedule", "default_resadd_schedule", "lower_resadd", "resadd"]
