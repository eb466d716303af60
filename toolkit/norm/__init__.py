"""The row-normalization kind (Gemmini's normalization unit): LayerNorm and softmax over rows, I-GELU."""
from .lowering import lower_norm
from .op import RowNorm, igelu, layernorm, softmax
from .schedule import NormSchedule, default_norm_schedule

__all__ = ["NormSchedule", "RowNorm", "default_norm_schedule", "igelu", "layernorm", "lower_norm", "softmax"]
