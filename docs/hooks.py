"""MkDocs hooks: pages whose facts live in the code are filled from the code at build time.

- ``<!-- api: MODULE -->`` becomes one mkdocstrings ``::: MODULE.NAME`` per class or function of
  ``MODULE.__all__`` (the module's public names; :func:`public_names` is what tests/test_docs.py checks).
- ``<!-- cli-help -->`` becomes the ``--help`` of ``systolic`` and of each of its commands.
- ``<!-- hardware-fields -->`` becomes the table of ``isa.HardwareConfig``'s fields: each preset's value,
  the limit, and the comment beside the field in ``isa/config.py``.
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import io
import os
import re
from contextlib import redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
API = re.compile(r"^<!-- api: ([\w.]+) -->$", re.M)


def public_names(module_name: str) -> list[str]:
    """The classes and functions a module exports (``__all__``), in its order."""
    import toolkit  # noqa: F401  (networks' modules import through the face's packages)

    module = importlib.import_module(module_name)
    return [name for name in module.__all__
            if inspect.isclass(getattr(module, name)) or callable(getattr(module, name))]


def _api(match: re.Match[str]) -> str:
    module = match.group(1)
    return "\n\n".join(f"::: {module}.{name}" for name in public_names(module))


def cli_help() -> str:
    from toolkit.cli import COMMANDS, build_parser

    os.environ["COLUMNS"] = "100"   # argparse wraps to the terminal; a fixed width keeps the page stable
    parser = build_parser()
    out = ["```text", parser.format_help().rstrip(), "```"]
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, command in sub.choices.items():
        out += ["", f"### systolic {name}", "", "```text", command.format_help().rstrip(), "```"]
    assert len(sub.choices) >= len(COMMANDS)
    return "\n".join(out)


def _field_comments() -> dict[str, str]:
    """The comment beside each field of HardwareConfig (trailing, or the lines just above it)."""
    lines = (ROOT / "isa" / "config.py").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("class HardwareConfig"))
    comments: dict[str, str] = {}
    above: list[str] = []
    section = False     # the comment lines of a "# ---- section" heading describe the section, not a field
    for line in lines[start + 1:]:
        text = line.strip()
        if text.startswith("def "):
            break
        if text.startswith("#"):
            text = text.lstrip("#").strip()
            section = section or text.startswith("----")
            if not section:
                above.append(text)
            continue
        section = False
        field = re.match(r"(\w+): [\w\[\] |]+ = [^#]*(?:#\s*(.*))?$", text)
        if field:
            comments[field.group(1)] = " ".join(above + ([field.group(2)] if field.group(2) else []))
        above = []
    return comments


def hardware_fields() -> str:
    from isa import HardwareConfig
    from isa.config import LIMITS, TIMING

    presets = ["gemmini", "gemmini-alone", "tiny"]
    hws = [HardwareConfig.preset(p) for p in presets]
    comments = _field_comments()
    rows = ["| field | " + " | ".join(f"`{p}`" for p in presets) + " | limit | timing only | what it is |",
            "|---|" + "---|" * len(presets) + "---|---|---|"]
    for f in dataclasses.fields(HardwareConfig):
        if f.name == "name":
            continue
        values = " | ".join(str(getattr(hw, f.name)) for hw in hws)
        limit = LIMITS.get(f.name, "")
        what = comments.get(f.name, "").replace("|", "\\|")
        rows.append(f"| `{f.name}` | {values} | {limit} | {'yes' if f.name in TIMING else ''} | {what} |")
    return "\n".join(rows)


def on_page_markdown(markdown: str, **_: object) -> str:
    markdown = API.sub(_api, markdown)
    if "<!-- cli-help -->" in markdown:
        with redirect_stdout(io.StringIO()):
            markdown = markdown.replace("<!-- cli-help -->", cli_help())
    if "<!-- hardware-fields -->" in markdown:
        markdown = markdown.replace("<!-- hardware-fields -->", hardware_fields())
    return markdown
