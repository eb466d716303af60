"""The docs site (docs/, mkdocs.yml): the pages that teach run, the site builds strictly, and the API reference
holds every public name with its docstring.

Executed pages: docs/getting-started.md and docs/guides/*.md. In them
- a ```python block runs (a page's blocks share one namespace, in a fresh folder of their own); when a
  ```text block follows it, what the block printed must match that text;
- a ```console block runs each ``$ COMMAND`` line in the page's folder (``systolic`` is this checkout's) and
  matches its stdout against the lines below it;
- a block after a ``<!-- not run: WHY -->`` comment is shown, not run (the comment says why); any other fenced
  block must have one.
In expected output, a line ``...`` stands for any lines, and ``...`` inside a line for any text on it.
A page whose code names the verilator backend is marked ``rtl``.
"""
from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
RUN_PAGES = [DOCS / "getting-started.md", *sorted((DOCS / "guides").glob("*.md"))]
FENCE = re.compile(r"^(?P<indent> *)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S)
NOT_RUN = re.compile(r"<!-- not run: \S[^>]*-->\s*$")
# the API reference: each module whose __all__ names its public classes and functions, and the page that
# renders them (docs/hooks.py turns "<!-- api: MODULE -->" into one mkdocstrings entry per name)
API_PAGES = {"toolkit": "reference/api", "tuner": "reference/tuner",
             **{f"networks.{m}": "reference/networks" for m in
                ("onnx_import", "network", "network_run", "network_tune", "explore", "area", "suite")}}


def rel(page: Path) -> str:
    return str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else str(page)


def blocks(text: str) -> list[tuple[str, str, str]]:
    """Each fenced block: (info, body, the text before it since the previous block)."""
    out, last = [], 0
    for m in FENCE.finditer(text):
        out.append((m.group("info").strip(), m.group("body"), text[last:m.start()]))
        last = m.end()
    return out


def pattern(expected: str) -> re.Pattern[str]:
    parts = []
    for line in expected.rstrip("\n").split("\n"):
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(r"[^\n]*".join(re.escape(p) for p in line.rstrip().split("...")) + r"[ \t]*\n")
    return re.compile("".join(parts))


def check_output(got: str, expected: str, where: str) -> None:
    got = "\n".join(line.rstrip() for line in got.rstrip("\n").split("\n")) + "\n"
    assert pattern(expected).fullmatch(got), f"{where}: the output differs from the page\n--- page:\n{expected}\n--- got:\n{got}"


def steps(page: Path) -> list[tuple[str, str, str | None, int]]:
    """(kind, code, expected output or None, line) for each block that runs; refuses a block that neither runs
    nor says why."""
    text = page.read_text()
    found = blocks(text)
    out: list[tuple[str, str, str | None, int]] = []
    i = 0
    while i < len(found):
        info, body, before = found[i]
        line = text.count("\n", 0, text.find(body)) + 1
        lang = info.split()[0] if info else ""
        if NOT_RUN.search(before):          # shown, not run (the comment says why); so is its output
            if i + 1 < len(found) and found[i + 1][0].split()[:1] == ["text"] and not found[i + 1][2].strip():
                i += 1
        elif lang == "python":
            expected = None
            if i + 1 < len(found) and found[i + 1][0].split()[:1] == ["text"] and not found[i + 1][2].strip():
                expected = found[i + 1][1]
                i += 1
            out.append(("python", body, expected, line))
        elif lang == "console":
            out.append(("console", body, None, line))
        else:
            raise AssertionError(f"{rel(page)}:{line}: a ```{info} block that does not run needs a "
                                 "'<!-- not run: WHY -->' line before it")
        i += 1
    return out


def _param(page: Path):
    code = "".join(s[1] for s in steps(page))
    marks = [pytest.mark.rtl] if "verilator" in code else []
    return pytest.param(page, id=page.stem, marks=marks)


def run_console(body: str, cwd: Path, where: str) -> None:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "SYSTOLIC_QUIET": "1", "COLUMNS": "100"}
    commands: list[tuple[str, list[str]]] = []
    for line in body.rstrip("\n").split("\n"):
        if line.startswith("$ "):
            commands.append((line[2:], []))
        else:
            assert commands, f"{where}: a console block starts with '$ COMMAND'"
            commands[-1][1].append(line)
    for command, expected in commands:
        proc = subprocess.run(shlex.split(command), cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"{where}: `{command}` exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        check_output(proc.stdout, "\n".join(expected) + "\n", f"{where}: `{command}`")


@pytest.mark.parametrize("page", [_param(p) for p in RUN_PAGES])
def test_page_runs_as_written(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SYSTOLIC_QUIET", "1")
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")  # as activated
    from simulators import base
    monkeypatch.setattr(base, "BACKENDS", dict(base.BACKENDS))   # a page may register a backend (guides/extend.md)
    modules = set(sys.modules)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for kind, code, expected, line in steps(page):
        where = f"{rel(page)}:{line}"
        if kind == "console":
            run_console(code, tmp_path, where)
            continue
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, where, "exec"), namespace)
        if expected is not None:
            check_output(out.getvalue(), expected, where)
    for name in set(sys.modules) - modules:     # a module the page made up (no file), as its backend
        if getattr(sys.modules[name], "__file__", None) is None and name.startswith("simulators."):
            del sys.modules[name]


def test_every_page_that_teaches_runs_something() -> None:
    for page in RUN_PAGES:
        assert steps(page), f"{rel(page)} has no block that runs"


def test_output_patterns() -> None:
    check_output("a 12 b\nx\ny\nz\n", "a ... b\n...\nz\n", "self-test")
    with pytest.raises(AssertionError):
        check_output("a 12 c\n", "a ... b\n", "self-test")
    with pytest.raises(AssertionError, match="not run"):
        steps_of("```sh\nmake\n```\n")
    assert steps_of("<!-- not run: slow -->\n```python\nraise SystemExit\n```\n```text\n1\n```\n") == []
    assert [s[0] for s in steps_of("<!-- not run: slow -->\n```sh\nmake\n```\n```python\nprint(1)\n```\n```text\n1\n```\n")] == ["python"]


def steps_of(text: str) -> list:
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        page = Path(d) / "page.md"
        page.write_text(text)
        return steps(page)


def public_names(module_name: str) -> list[str]:
    import toolkit  # noqa: F401  (networks' modules import through the face's packages)
    module = importlib.import_module(module_name)
    return [n for n in module.__all__ if inspect.isclass(getattr(module, n)) or callable(getattr(module, n))]


def own_doc(obj: object, name: str) -> str:
    """The object's docstring, not a dataclass's generated signature."""
    doc = inspect.getdoc(obj) or ""
    return "" if doc.startswith(f"{name}(") else doc


def build_site(out: Path) -> Path:
    """`mkdocs build --strict`: a broken link or anchor, a missing reference or any warning fails it."""
    mkdocs = Path(sys.executable).parent / "mkdocs"
    proc = subprocess.run([str(mkdocs), "build", "--strict", "--site-dir", str(out)], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_site_builds_strictly_with_every_public_name(tmp_path: Path) -> None:
    """One build (a few seconds) serves every check of the built site."""
    site = build_site(tmp_path / "site")
    check_pages_and_search(site)
    for module_name in API_PAGES:
        check_api_reference(site, module_name)
    check_hardware_config_reference(site)
    check_cli_reference(site)


def check_pages_and_search(site: Path) -> None:
    import json
    for page in ("index.html", "getting-started/index.html", "reference/cli/index.html", "search/search_index.json"):
        assert (site / page).exists(), page
    index = json.loads((site / "search/search_index.json").read_text())["docs"]
    locations = {d["location"] for d in index}
    assert "reference/api/#toolkit.compile" in locations and "guides/tune/" in locations   # search finds the API


def check_api_reference(site: Path, module_name: str) -> None:
    html = (site / API_PAGES[module_name] / "index.html").read_text()
    module = importlib.import_module(module_name)
    missing, undocumented = [], []
    for name in public_names(module_name):
        if f'id="{module_name}.{name}"' not in html:
            missing.append(name)
        if not own_doc(getattr(module, name), name):
            undocumented.append(name)
    assert not missing, f"{module_name}: not in docs/{API_PAGES[module_name]}.md: {missing}"
    assert not undocumented, f"{module_name}: public names without a docstring: {undocumented}"


def check_hardware_config_reference(site: Path) -> None:
    import dataclasses

    from isa import HardwareConfig
    html = (site / "reference/hardware/index.html").read_text()
    assert 'id="isa.HardwareConfig"' in html and own_doc(HardwareConfig, "HardwareConfig")
    for f in dataclasses.fields(HardwareConfig):
        if f.name != "name":
            assert f"<code>{f.name}</code>" in html, f"HardwareConfig.{f.name} is not in the fields table"
    undocumented = [n for n, v in vars(HardwareConfig).items() if not n.startswith("_")
                    and callable(v.fget if isinstance(v, property) else getattr(v, "__func__", v))
                    and not inspect.getdoc(v.fget if isinstance(v, property) else getattr(v, "__func__", v))]
    assert not undocumented, f"HardwareConfig's public methods without a docstring: {undocumented}"


def check_cli_reference(site: Path) -> None:
    from toolkit.cli import build_parser
    html = (site / "reference/cli/index.html").read_text()
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    for name in sub.choices:
        assert f"systolic {name}" in html and f"usage: systolic {name}" in html, name


def test_public_names_have_docstrings() -> None:
    """The docstring half of the reference check, without building the site."""
    for module_name in API_PAGES:
        module = importlib.import_module(module_name)
        undocumented = [n for n in public_names(module_name) if not own_doc(getattr(module, n), n)]
        assert not undocumented, f"{module_name}: public names without a docstring: {undocumented}"


def test_docs_hook_and_test_agree_on_public_names() -> None:
    sys.path.insert(0, str(DOCS))
    try:
        hooks = importlib.import_module("hooks")
    finally:
        sys.path.remove(str(DOCS))
    for module_name in API_PAGES:
        assert hooks.public_names(module_name) == public_names(module_name)
        assert f"<!-- api: {module_name} -->" in (DOCS / f"{API_PAGES[module_name]}.md").read_text()
