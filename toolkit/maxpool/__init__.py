"""The max-pooling kind: its op, schedule and default, the store unit's pooling tiles (tiles, store) and the
lowering (in the store unit where config_st can express the window, else through the accumulator's ReLU)."""
from .lowering import lower_maxpool
from .op import MaxPool2d, maxpool2d
from .schedule import MaxPoolSchedule, default_maxpool

__all__ = ["MaxPool2d", "MaxPoolSchedule", "default_maxpool", "lower_maxpool", "maxpool2d"]
