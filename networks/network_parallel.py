"""A network's accelerator layers run all at once, in a pool of workers.

Every accelerator layer's inputs are known bit-exactly before any layer runs: an op's numpy
reference computes what the accelerator computes (Gemmini's numeric semantics), so one pass over
the network in numpy (float BLAS, fast) gives every layer its inputs, and the layers then run on
the backend side by side, not one after another. Each layer's output from the backend must
equal its reference's (else an error names the layer), so the result is the serial run's.

The layers go to the executor in runs of consecutive layers, each run as soon as the reference
pass has its inputs, so that the workers simulate while the pass goes on; a worker that is done
takes the next run (layers differ in size by orders of magnitude: ``tasks`` fixed groups left one
worker idle while another still ran). Runs hold about equal MACs, ``RUNS_PER_TASK`` per task, so
that few pay a process start: a worker compiles a run's programs and runs them all in one simulator
process where the backend can (``run_many``).
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
Ran = tuple[np.ndarray, "int | None", float, str]   # a layer's output, cycles, wall s, compiler's note
Job = tuple[int, AccelLayer, np.ndarray, Calls]   # a layer's row, the layer, its reference output, its inputs
RUNS_PER_TASK = 4   # more: better balance and an earlier start; fewer: fewer process starts


def run_layers(layers: Any, net: Network, env: dict[str, np.ndarray], fetch: Callable[[str, str], np.ndarray],
               run_host: RunLayer, compiler: LayerCompiler, backend: str, executor: Executor, tasks: int,
               row: AccelRow) -> list[LayerRow]:
    """Rows of ``layers`` in order. Host layers run here as they come (``run_host``); accelerator
    layers get their output from the reference here (the next layers' inputs), and run on
    ``backend`` in ``executor`` meanwhile, in runs of about 1 / (``tasks`` * RUNS_PER_TASK) of the
    network's MACs; ``row`` makes their rows."""
    budget = sum(layer.op.macs * layer.repeat for layer in net.layers if isinstance(layer, AccelLayer))
    budget /= tasks * RUNS_PER_TASK
    rows: list[LayerRow | None] = []
    runs: list[tuple[list[Job], Future]] = []
    run: list[Job] = []

    def submit(run: list[Job]) -> None:
        runs.append((run, executor.submit(run_group, compiler.spec, [(j[1].op, j[3]) for j in run], backend)))
    for layer in layers:
        if isinstance(layer, HostLayer):
            rows.append(run_host(layer))
            continue
        calls: Calls = []

        def reference(op: Op, op_inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            calls.append(op_inputs)
            return op.reference(op_inputs)
        out, _ = execute_accel(layer, fetch, reference)
        env[layer.output] = out.reshape(net.tensors[layer.output].stored_shape)
        run.append((len(rows), layer, out, calls))
        rows.append(None)
        if sum(job[1].op.macs * job[1].repeat for job in run) >= budget:
            submit(run)
            run = []
    if run:
        submit(run)
    for run, future in runs:
        for (at, layer, expected, _), ran in zip(run, future.result()):
            rows[at] = _checked(layer, expected, ran, compiler, backend, row)
    return rows  # type: ignore[return-value]  (every accelerator position is filled above)


def _checked(layer: AccelLayer, expected: np.ndarray, ran: Ran, compiler: LayerCompiler, backend: str,
             row: AccelRow) -> LayerRow:
    """The layer's row, once its output from the backend is known to be the reference's."""
    out, cycles, wall_s, note = ran
    if out.shape != expected.shape or not np.array_equal(out, expected):
        bad = int(np.count_nonzero(out != expected)) if out.shape == expected.shape else expected.size
        raise BackendError(f"layer {layer.name!r} on {backend!r} differs from its op's reference at {bad} of "
                           f"{expected.size} elements; layers run in parallel only where they are bit-exact "
                           f"(workers=1 runs the network one layer after another)")
    if note:
        compiler.notes[layer.op] = note
    return row(layer, cycles, wall_s, note)


def run_group(spec: tuple[Any, ...], layers: list[tuple[Op, Calls]], backend: str) -> list[Ran]:
    """Worker side: accelerator layers (op, the inputs of each repeat) compiled and run on ``backend``,
    all in one simulator process where it has ``run_many``; per layer what :func:`_checked` takes."""
    from tuner.measure import backend_many
    compiler = LayerCompiler(*spec)
    jobs, compile_s = [], []
    for op, calls in layers:
        start = time.perf_counter()
        prog = compiler(op)
        compile_s.append(time.perf_counter() - start)
        jobs += [(prog, inputs) for inputs in calls]
    many = backend_many(backend)
    results = many(jobs) if many is not None else [run_program(prog, inputs, backend) for prog, inputs in jobs]
    ran, at = [], 0
    for (op, calls), seconds in zip(layers, compile_s):
        mine, at = results[at:at + len(calls)], at + len(calls)
        failed = next((r for r in mine if isinstance(r, Exception)), None)
        if failed is not None:
            raise failed
        outs = [next(iter(r.outputs.values())) for r in mine]
        steps = [r.cycles for r in mine]
        ran.append(((np.stack(outs) if len(outs) > 1 else outs[0]), None if None in steps else sum(steps),
                    seconds + sum(r.wall_s for r in mine), compiler.notes.get(op, "")))
    return ran
