"""Shared test setup: the repository on sys.path, hardware fixtures, hypothesis profiles, markers.

HYPOTHESIS_PROFILE=thorough runs every property test with many more examples. Every test that
uses the Verilator fixtures (``verilator_ok``, ``tiny_model`` and those built on them) is marked
``rtl``, so ``pytest -m "not slow and not rtl"`` is the quick loop; the compile-run-compare check
is ``helpers.assert_exact``.
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


RTL_FIXTURES = frozenset({"verilator_ok", "tiny_model"})
RTL_BENCHES = Path(__file__).resolve().parent / "rtl"   # cocotb benches of the RTL units, on Verilator


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``rtl`` whatever needs the Verilator toolchain: the tests using its fixtures (fixturenames
    is the closure, so a fixture built on ``tiny_model`` counts too) and the cocotb benches."""
    for item in items:
        if RTL_FIXTURES & set(getattr(item, "fixturenames", ())) or RTL_BENCHES in item.path.parents:
            item.add_marker(pytest.mark.rtl)


@pytest.fixture(scope="session")
def verilator_ok() -> None:
    """Skip the test where this machine has no Verilator toolchain (the RTL backend's tests)."""
    from simulators import BackendError, verilator
    try:
        verilator.verilator_env()
    except BackendError as exc:
        pytest.skip(f"verilator backend unavailable: {exc}")


@pytest.fixture(scope="session")
def tiny_model(verilator_ok: None):
    """The tiny preset's RTL model, built (or found in the build cache) once per run."""
    from simulators import verilator
    return verilator.build(PRESETS["tiny"])


@pytest.fixture
def tiny() -> HardwareConfig:
    return PRESETS["tiny"]


@pytest.fixture
def gemmini() -> HardwareConfig:
    return PRESETS["gemmini"]
