"""``systolic cc``: compile C programs written for Gemmini's header and run them on our simulators."""
from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from simulators import cosim

from .common import add_hardware_args, add_host_arg, hardware
from .errors import output_file, seconds, terminate_on

EXIT_TIMEOUT = 124   # as coreutils' timeout


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "cc", help="compile C programs that drive the accelerator as gemmini.h does, and run them",
        description="Compile C sources natively against the compatibility include directory (rocc-software's "
                    "xcustom.h mapped to the simulator; the RISC-V fence and rdcycle of gemmini.h work as they "
                    "are) and run the program with the accelerator simulated in its process. The program's "
                    "stdout comes first, then cycles and counters on stderr; the exit status is the "
                    "program's (70: the simulation failed, said on stderr), or 124 when it ran past "
                    "--timeout, or 128+N when it died of signal N (both said on stderr). The program "
                    "and whatever it started die with systolic cc (SIGINT, SIGTERM, SIGHUP), and the "
                    "temporary build folder goes with them.",
        epilog="example: systolic cc bareMetalC/mvin_mvout.c -I gemmini-rocc-tests -I gemmini-rocc-tests/include "
               "--backend verilator")
    p.add_argument("sources", nargs="+", metavar="FILE.c", help="C sources")
    p.add_argument("-I", dest="include", action="append", default=[], metavar="DIR", help="include directory")
    p.add_argument("-D", dest="define", action="append", default=[], metavar="NAME[=VALUE]", help="define a macro")
    p.add_argument("-O2", dest="optimize", action="store_true", help="compile with -O2 (default -O0)")
    p.add_argument("--backend", choices=cosim.ENGINES, default="functional",
                   help="functional (the functional model, no timing) or verilator (the RTL: cycles and counters)")
    add_hardware_args(p)
    add_host_arg(p)
    p.add_argument("-o", dest="output", type=output_file, metavar="BIN",
                   help="keep the program here (not one of the sources)")
    p.add_argument("--timeout", type=seconds, default=600.0, metavar="SECONDS",
                   help="wall-clock seconds the program may run, its build not counted, before it and every "
                        "process it started are killed: exit 124 (default 600)")
    p.add_argument("--data-slack", type=int, default=0, metavar="MIB",
                   help="reserve MIB MiB of zeroed memory right after the program's static data, as a bare-metal "
                        "Gemmini has memory there: a DMA that runs past the program's last static arrays "
                        "then lands in it, as on Gemmini, where it would otherwise stop with 'not memory of "
                        "this program' (gemmini-rocc-tests' transformer.c writes its FFN output 1.2 MB past "
                        "out_buf_acc: --data-slack 4). Default 0")
    p.add_argument("--keep", action="store_true", help="keep the objects and the generated link config (says where)")
    p.add_argument("--quiet", action="store_true", help="no notes on stderr while the runtime is built")
    p.set_defaults(func=cmd_cc)


def cmd_cc(args: argparse.Namespace) -> int:
    cosim.check_sources(args.sources, args.output, names=("FILE.c:", "-o"))
    if not 0 <= args.data_slack <= 4096:
        raise ValueError(f"--data-slack {args.data_slack} must be 0 to 4096 MiB")
    for directory in args.include:
        if not Path(directory).is_dir():
            raise ValueError(f"-I {directory!r} is not a directory")
    hw = hardware(args)
    with terminate_on(signal.SIGTERM, signal.SIGHUP), _workdir(args.keep) as work:
        binary = cosim.compile_c(args.sources, args.output or work / "program", hw=hw, engine=args.backend,
                                 include_dirs=args.include, defines=args.define, optimize=args.optimize,
                                 workdir=work, data_slack_mib=args.data_slack)
        sys.stdout.flush()
        try:
            status = cosim.run_c(binary, timeout=args.timeout).returncode
        except subprocess.TimeoutExpired:
            print(f"systolic cc: the program ran past --timeout {args.timeout:g} s and was killed", file=sys.stderr)
            return EXIT_TIMEOUT
    if status < 0:
        print(f"systolic cc: the program died of {_signal_name(-status)}", file=sys.stderr)
        return 128 - status
    return status


@contextmanager
def _workdir(keep: bool) -> Iterator[Path]:
    """A temporary folder for the objects (and the program, without -o): removed afterwards, however
    the command ends, unless ``keep``."""
    work = Path(tempfile.mkdtemp(prefix="systolic-cc-"))
    try:
        yield work
    finally:
        if keep:
            print(f"systolic cc: kept the build in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
