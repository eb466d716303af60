"""The wheel holds every file the code reads at run time, so an install outside the checkout works.

Built once with ``pip wheel --no-deps`` (the build backend pyproject.toml names); the files
expected come from the code's own constants (the RTL and harness the Verilator build compiles,
the template and suite folders), not from a list kept here.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from simulators import cosim, verilator
from toolkit.lowering import TEMPLATE_DIR
from networks.suite import SUITE_DIR

pytestmark = pytest.mark.slow   # builds the wheel: about 20 s

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("isa", "simulators", "toolkit", "tuner", "networks")


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory) -> set[str]:
    """Built from a private copy of the checkout: setuptools builds in the tree's ``build/``, and with pytest-xdist
    each worker that runs a test of this module builds at once (two builds in one ``build/`` raced)."""
    out = tmp_path_factory.mktemp("wheel")
    tree = tmp_path_factory.mktemp("tree") / "src"
    shutil.copytree(ROOT, tree, ignore=shutil.ignore_patterns(".git", ".venv", "build", "__pycache__", "*.egg-info"))
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(tree)],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = out.glob("*.whl")
    with zipfile.ZipFile(wheel) as zf:
        return set(zf.namelist())


def _relative(paths) -> set[str]:
    return {Path(p).resolve().relative_to(ROOT).as_posix() for p in paths}


def test_wheel_has_the_runtime_data(wheel_names: set[str]) -> None:
    needed = (_relative(verilator.sources()) | _relative(cosim.runtime_sources())
              | _relative(TEMPLATE_DIR.glob("*.j2"))
              | _relative(SUITE_DIR.glob("*.yaml")))
    assert any(n.startswith("networks/suites/") for n in needed)
    assert needed - wheel_names == set()


def test_wheel_has_every_module(wheel_names: set[str]) -> None:
    modules = _relative(p for top in PACKAGES for p in (ROOT / top).rglob("*.py"))
    assert modules - wheel_names == set()
