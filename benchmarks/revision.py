"""Another git revision's Python code, for benchmarks that compare it with the working tree in one run:
its packages exported (git archive) into a temporary folder, and scripts run over them in a subprocess."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("isa", "simulators", "templates", "toolkit", "tuner", "networks")


@contextmanager
def python_tree(rev: str) -> Iterator[Path]:
    """A temporary folder holding ``rev``'s packages (gone on leaving)."""
    with tempfile.TemporaryDirectory(prefix="systolic-rev-") as tmp:
        archive = subprocess.Popen(["git", "-C", str(ROOT), "archive", rev, *PACKAGES], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", tmp], stdin=archive.stdout, check=True)
        if archive.wait():
            raise SystemExit(f"revision {rev}: git archive failed")
        yield Path(tmp)


def run_in(tree: Path, script: str, *args: str) -> str:
    """The standard output of ``python -c script args`` over ``tree``'s packages; SystemExit if it fails."""
    out = subprocess.run([sys.executable, "-c", script, *args], cwd=tree, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(tree)})
    if out.returncode:
        raise SystemExit(f"the script over {tree} failed:\n{out.stderr[-3000:]}")
    return out.stdout
