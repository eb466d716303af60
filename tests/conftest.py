"""Shared test setup: the repository on sys.path, hardware fixtures, hypothesis profiles.

HYPOTHESIS_PROFILE=thorough runs every property test with many more examples.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from isa import PRESETS, HardwareConfig  # noqa: E402  (needs ROOT on sys.path)

settings.register_profile("fast", deadline=None, max_examples=100,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.register_profile("thorough", parent=settings.get_profile("fast"), max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fast"))


@pytest.fixture
def tiny() -> HardwareConfig:
    return PRESETS["tiny"]


@pytest.fixture
def gemmini() -> HardwareConfig:
    return PRESETS["gemmini"]
