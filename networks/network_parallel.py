"""A network's accelerator layers run all at once, in a pool of workers.

Every accelerator layer's inputs are known bit-exactly before any layer runs: an op's numpy
reference computes what the accelerator computes (Gemmini's numeric semantics), so one pass over
the network in numpy (float BLAS, fast) gives every layer its inputs, and the layers then run on
the backend side by side, not one after another. Each layer's output from the backend must
equal its reference's (else an error names the layer), so the result is the serial run's.

Each worker compiles the programs of the layers it runs, once per op (a forked worker keeps them
between its tasks), so lowering runs in parallel too.
"""
from __future__ import annotations

import time
from concurrent.futures import Executor, Future
from typing import Any, Callable

import numpy as np

from simulators.base import BackendError
from simulators.base import run as run_program
from toolkit.ops import Op

from .compiling import LayerCompiler
from .network import AccelLayer, HostLayer, LayerRow, Network, execute_accel

Calls = list[dict[str, np.ndarray]]   # an accelerator layer's op inputs, one dict per repeat
RunLayer = Callable[[AccelLayer | HostLayer], LayerRow]
AccelRow = Callable[[AccelLayer, "int | None", float, str], LayerRow]   # layer, cycles, wall s, note
_COMPILERS: dict[str, LayerCompiler] = {}   # a worker's compilers by their spec, kept between its tasks


def run_layers(layers: Any, net: Network, env: dict[str, np.ndarray], fetch: Callable[[str, str], np.ndarray],
               run_host: RunLayer, compiler: LayerCompiler, backend: str, executor: Executor, row: AccelRow
               ) -> list[LayerRow]:
    """Rows of ``layers`` in order. Host layers run here as they come (``run_host``); accelerator
    layers get their output from the reference here (the next layers' inputs) and run on
    ``backend`` in ``executor``; ``row`` makes their rows."""
    pending: list[LayerRow | tuple[AccelLayer, np.ndarray, Future]] = []
    for layer in layers:
        if isinstance(layer, HostLayer):
            pending.append(run_host(layer))
            continue
        calls: Calls = []

        def reference(op: Op, op_inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            calls.append(op_inputs)
            return op.reference(op_inputs)
        out, _ = execute_accel(layer, fetch, reference)
        env[layer.output] = out.reshape(net.tensors[layer.output].stored_shape)
        pending.append((layer, out, executor.submit(run_calls, compiler.spec, layer.op, calls, backend)))
    return [done if isinstance(done, LayerRow) else _checked(*done, compiler, backend, row) for done in pending]


def _checked(layer: AccelLayer, expected: np.ndarray, future: Future, compiler: LayerCompiler, backend: str,
             row: AccelRow) -> LayerRow:
    """The layer's row, once its output from the backend is known to be the reference's."""
    out, cycles, wall_s, note = future.result()
    if out.shape != expected.shape or not np.array_equal(out, expected):
        bad = int(np.count_nonzero(out != expected)) if out.shape == expected.shape else expected.size
        raise BackendError(f"layer {layer.name!r} on {backend!r} differs from its op's reference at {bad} of "
                           f"{expected.size} elements; layers run in parallel only where they are bit-exact "
                           f"(workers=1 runs the network one layer after another)")
    if note:
        compiler.notes[layer.op] = note
    return row(layer, cycles, wall_s, note)


def run_calls(spec: tuple[Any, ...], op: Op, calls: Calls, backend: str
              ) -> tuple[np.ndarray, int | None, float, str]:
    """Worker side: one accelerator layer's repeats on ``backend``: its output (repeats stacked),
    cycles (None on an untimed backend), wall seconds and the compiler's note on its schedule."""
    start = time.perf_counter()
    compiler = _COMPILERS.setdefault(repr(spec), LayerCompiler(*spec))
    prog = compiler(op)
    results = [run_program(prog, inputs, backend) for inputs in calls]
    outs = [next(iter(r.outputs.values())) for r in results]
    steps = [r.cycles for r in results]
    cycles = None if None in steps else sum(steps)
    return ((np.stack(outs) if len(outs) > 1 else outs[0]), cycles, time.perf_counter() - start,
            compiler.notes.get(op, ""))
