"""``systolic run``, ``asm`` and ``exec``: lower, simulate and check one op or program."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from isa import Program
from isa.program import file_format
from simulators.base import RunResult

from .. import compile as compile_op
from .. import run as run_program
from .errors import output_dir, output_file, positive_float, positive_int, seconds, seed
from .common import add_host_arg, add_op_args, add_schedule_args, hardware, op_from_args

BACKENDS = ("functional", "verilator", "cpu", "gpu")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="lower an op, run it and check it bit-exact against numpy",
                       description="Lower an op with a schedule, run it on a backend and compare the output "
                                   "bit-exactly with the numpy reference.",
                       epilog="example: systolic run matmul --m 64 --n 64 --k 64 --bias row --relu --scale 0.05 "
                              "--backend verilator --trace trace.json")
    add_op_args(p)
    add_schedule_args(p)
    p.add_argument("--backend", choices=BACKENDS, default="functional")
    p.add_argument("--seed", type=seed, default=0, help="seed of the random inputs")
    p.add_argument("--trace", metavar="OUT.json", type=output_file,
                   help="verilator: per-instruction Chrome trace (open in Perfetto)")
    p.add_argument("--wave", metavar="OUT.fst", type=output_file, help="verilator: FST waveform")
    p.add_argument("--clock-ghz", type=positive_float, default=1.0, help="clock used to convert cycles to time")
    add_limit_args(p)
    add_host_arg(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("asm", help="write the assembly of a lowered op",
                       epilog="example: systolic asm matmul --m 30 --n 20 --k 70 --config tiny -o mm.s")
    add_op_args(p)
    add_schedule_args(p)
    p.add_argument("-o", "--output", metavar="FILE", type=program_file,
                   help="write here (.s or .asm: assembly, .bin: binary program file); default: assembly to stdout")
    p.add_argument("--c", metavar="OUT.c", type=output_file,
                   help="also write a self-contained C program: the words on random inputs (--seed) and a check "
                        "against the numpy reference (run it with systolic cc OUT.c)")
    p.add_argument("--seed", type=seed, default=0, help="seed of the C program's random inputs")
    p.set_defaults(func=cmd_asm)

    p = sub.add_parser("exec", help="run an assembly or binary program file on .npy inputs",
                       epilog="example: systolic exec mm.s --input A=a.npy --input B=b.npy --out results/")
    p.add_argument("program", help="assembly (.s) or binary program file")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy", help="one per input buffer")
    p.add_argument("--backend", choices=("functional", "verilator"), default="functional")
    p.add_argument("--out", metavar="DIR", type=output_dir, help="write each output buffer to DIR/NAME.npy")
    add_limit_args(p)
    p.set_defaults(func=cmd_exec)


def add_limit_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("verilator run limits (each must be positive)")
    g.add_argument("--cycle-limit", type=positive_int, metavar="CYCLES", help="stop after this many cycles")
    g.add_argument("--watchdog", type=positive_int, metavar="CYCLES",
                   help="cycles without progress that count as a deadlock (default: 100000 + 4 x dram_latency)")
    g.add_argument("--timeout", type=seconds, metavar="SECONDS", help="wall-clock limit of the simulation")


def _backend_options(args: argparse.Namespace) -> dict:
    opts = {"log": bool(getattr(args, "trace", None)), "wave": getattr(args, "wave", None),
            "cycle_limit": args.cycle_limit, "watchdog": args.watchdog, "timeout": args.timeout}
    opts = {name: value for name, value in opts.items() if value}
    if opts and args.backend != "verilator":
        flags = ", ".join("--trace" if name == "log" else "--" + name.replace("_", "-") for name in opts)
        raise ValueError(f"{flags}: only the verilator backend takes these (add --backend verilator)")
    return opts


def print_result(res: RunResult, prog: Program, clock_ghz: float = 1.0) -> None:
    counts = prog.counts()
    print(f"instructions: {len(prog)}  (" + ", ".join(f"{op} {n}" for op, n in sorted(counts.items())) + ")")
    if res.cycles is not None:
        print(f"cycles: {res.cycles}  ({res.cycles / clock_ghz / 1e3:.2f} us at {clock_ghz:g} GHz)")
        shown = {k: v for k, v in res.counters.items() if not k.startswith("instr_") and k != "cycles"}
        if shown:
            print("counters: " + ", ".join(f"{k}={v}" for k, v in shown.items()))
    print(f"wall time ({res.backend}): {res.wall_s * 1e3:.1f} ms")


def cmd_run(args: argparse.Namespace) -> int:
    opts = _backend_options(args)
    op = op_from_args(args)
    hw = hardware(args)
    prog = compile_op(op, hw, args.schedule, db=args.db, allow_large=args.allow_large)
    inputs = op.random_inputs(args.seed)
    res = run_program(prog, inputs, args.backend, **opts)
    ref = op.reference(inputs)
    print(f"{op.key} on {hw.name} ({args.backend})")
    print_result(res, prog, args.clock_ghz)
    if args.trace:
        from simulators.trace import write_chrome_trace
        write_chrome_trace(res.log or [], args.trace, soc=res.soc_log, cycles=res.cycles or 0)
        print(f"trace: {args.trace} (open in https://ui.perfetto.dev)")
    bad = [name for name in ref if not np.array_equal(res.outputs[name], ref[name])]
    for name in bad:
        diff = np.argwhere(res.outputs[name] != ref[name])
        print(f"MISMATCH {name}: {len(diff)} elements differ, first at {tuple(diff[0])}: "
              f"got {res.outputs[name][tuple(diff[0])]}, expected {ref[name][tuple(diff[0])]}")
    if bad:
        return 1
    print("bit-exact: yes (" + ", ".join(ref) + " match the numpy reference)")
    return 0


def program_file(text: str) -> str:
    """A program file to write: a suffix that names its format, in a writable directory."""
    output_file(text)
    try:
        file_format(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def cmd_asm(args: argparse.Namespace) -> int:
    op = op_from_args(args)
    prog = compile_op(op, hardware(args), args.schedule, db=args.db, allow_large=args.allow_large)
    if args.c:
        inputs = op.random_inputs(args.seed)
        Path(args.c).write_text(prog.to_c(inputs, check=op.reference(inputs)))
        print(f"wrote a C program of {len(prog)} instructions to {args.c}")
    if args.output:
        prog.save(args.output)
        print(f"wrote {len(prog)} instructions to {args.output}")
    elif not args.c:
        print(prog.to_asm(), end="")
    return 0


def _load_inputs(specs: list[str]) -> dict[str, np.ndarray]:
    inputs = {}
    for spec in specs:
        name, eq, path = spec.partition("=")
        if not eq:
            raise ValueError(f"--input {spec!r} must be NAME=FILE.npy")
        try:
            inputs[name] = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise ValueError(f"--input {name}: cannot read {path!r}: {exc}") from None
    return inputs


def cmd_exec(args: argparse.Namespace) -> int:
    opts = _backend_options(args)
    prog = Program.load(args.program)
    res = run_program(prog, _load_inputs(args.input), args.backend, **opts)
    print_result(res, prog)
    for name, arr in res.outputs.items():
        if args.out:
            Path(args.out).mkdir(parents=True, exist_ok=True)
            np.save(Path(args.out) / f"{name}.npy", arr)
            print(f"{name}: {arr.dtype}{list(arr.shape)} -> {Path(args.out) / (name + '.npy')}")
        else:
            print(f"{name}: {arr.dtype}{list(arr.shape)} " + json.dumps(arr.ravel()[:16].tolist())
                  + (" ..." if arr.size > 16 else ""))
    return 0
