"""Our packages import one way, with no cycles (ARCHITECTURE.md, "Floors").

Floors, lowest first, are folders: ``isa`` <- ``simulators`` <- ``toolkit`` (the core) <-
``tuner`` <- ``networks`` <- the public face, which is the ``toolkit`` package's own
``__init__.py`` and its ``toolkit/cli/`` folder. A module may import its own floor and those
below. Every import counts, also those inside functions: a lazy import still ties the modules
together.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FLOORS = ("isa", "simulators", "toolkit", "tuner", "networks")   # the folders, lowest first
FACE = len(FLOORS)
FACE_PACKAGE, FACE_FOLDER = "toolkit", "toolkit.cli"   # the public API and the command line


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, name: str, modules: set[str]) -> set[str]:
    """The modules of ours that ``path`` (module ``name``) imports, anywhere in its body."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from pkg import mod` imports the module pkg.mod; `from mod import name` the module mod
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        found.update(t for t in targets if t in modules and t != name)
    return found


def import_graph(root: Path, packages: tuple[str, ...]) -> dict[str, set[str]]:
    files = {module_name(p, root): p for pkg in packages for p in (root / pkg).rglob("*.py")}
    return {name: imports_of(path, name, set(files)) for name, path in files.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as [a, b, ..., a], or None."""
    state: dict[str, int] = {}   # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def floor(module: str) -> int:
    if module in (FACE_PACKAGE, FACE_FOLDER) or module.startswith(FACE_FOLDER + "."):
        return FACE
    return FLOORS.index(module.split(".")[0])


def python_folders(root: Path) -> set[str]:
    return {p.parent.name for p in root.glob("*/__init__.py")}


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets if floor(b) > floor(a))


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(ROOT, FLOORS)


def test_every_package_folder_is_a_floor() -> None:
    assert python_folders(ROOT) - {"tests", "benchmarks"} == set(FLOORS)


def test_graph_sees_our_imports(graph) -> None:
    assert "isa.assembly" in graph["isa.program"]
    assert "toolkit.kinds" in graph["toolkit.compiler"]
    assert "tuner.api" in graph["toolkit"]   # imported inside a function: still an edge
    assert "toolkit.conv.ops" in graph["toolkit.conv.tiles"]   # relative import


def test_no_import_cycle(graph) -> None:
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def test_imports_point_one_way(graph) -> None:
    assert upward_imports(graph) == []


def edges(graph: dict[str, set[str]], lower: int, upper: int) -> list[str]:
    """Imports from modules of floor ``lower`` into modules of floor ``upper``."""
    return sorted(f"{a} -> {b}" for a, bs in graph.items() for b in bs if floor(a) == lower and floor(b) == upper)


def test_no_networks_to_face_and_no_core_to_tuner(graph) -> None:
    assert edges(graph, FLOORS.index("networks"), FACE) == []
    assert edges(graph, FLOORS.index("toolkit"), FLOORS.index("tuner")) == []
    assert floor("toolkit") == floor("toolkit.cli.run") == FACE and floor("toolkit.kinds") == 2


def test_isa_imports_nothing_of_ours(graph) -> None:
    assert [f"{a} -> {b}" for a, bs in graph.items() if a.startswith("isa") for b in bs
            if not b.startswith("isa")] == []


def test_checks_catch_a_cycle_and_an_upward_import(tmp_path) -> None:
    (tmp_path / "isa").mkdir()
    (tmp_path / "isa" / "__init__.py").write_text("")
    (tmp_path / "isa" / "a.py").write_text("from . import b\n")
    (tmp_path / "isa" / "b.py").write_text("def f():\n    from .a import x\n    import simulators.run\n")
    (tmp_path / "simulators").mkdir()
    (tmp_path / "simulators" / "__init__.py").write_text("")
    (tmp_path / "simulators" / "run.py").write_text("")
    g = import_graph(tmp_path, ("isa", "simulators"))
    assert find_cycle(g) == ["isa.a", "isa.b", "isa.a"]
    assert upward_imports(g) == ["isa.b -> simulators.run"]


# Third-party packages `import toolkit` leaves to first use: each takes 0.15-0.6 s to import (`python -X importtime`),
# and every command, worker and test process starts with `import toolkit`.
ON_FIRST_USE = ("ml_dtypes", "scipy", "sklearn", "onnx", "dask", "optuna")


def test_import_toolkit_leaves_the_heavy_packages_to_first_use() -> None:
    probe = f"import sys, toolkit; print(' '.join(m for m in {ON_FIRST_USE!r} if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert loaded.stdout.split() == []
