"""Running a network whole: every accelerator layer compiled and run, host layers in numpy, the
activations kept between layers, and onnxruntime's results beside them on request."""
from __future__ import annotations

import os
import time
from concurrent.futures import Executor
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from isa import HardwareConfig
from simulators.base import positive_limit
from simulators.base import run as run_program
from toolkit.kinds import dram_cycles, ideal_cycles

from .compiling import LayerCompiler
from .network import AccelLayer, HostLayer, LayerRow, Network, NetworkResult, convert_layout, execute_accel, execute_host
from .network_parallel import run_layers
from .ort_reference import compare_with_onnxruntime

__all__ = ["run_network"]   # the public names (docs/reference/networks.md)


def _check_inputs(net: Network, inputs: Mapping[str, np.ndarray]) -> None:
    for name, info in net.inputs.items():
        if name not in inputs:
            raise ValueError(f"inputs: missing {name!r} ({info.dtype} of shape {info.shape})")
        arr = inputs[name]
        if not isinstance(arr, np.ndarray) or arr.shape != info.shape or arr.dtype != np.dtype(info.dtype):
            got = f"{arr.dtype} {arr.shape}" if isinstance(arr, np.ndarray) else type(arr).__name__
            raise ValueError(f"inputs[{name!r}]: expected {info.dtype} of shape {info.shape}, got {got}")
        check_finite(f"inputs[{name!r}]", arr)
    extra = sorted(set(inputs) - set(net.inputs))
    if extra:
        raise ValueError(f"inputs: {extra} are not inputs of {net.name} (it takes {sorted(net.inputs)})")


def check_finite(what: str, arr: np.ndarray) -> None:
    """Refuse NaN and infinities: their quantization is undefined (this toolkit's rounding makes a NaN
    0, onnxruntime's -128), so a run on them would differ silently."""
    if arr.dtype.kind in "fc":
        bad = int(np.count_nonzero(~np.isfinite(arr)))
        if bad:
            raise ValueError(f"{what}: {bad} of {arr.size} values are NaN or infinite; give finite numbers")


# Over 40 lines: checks, the layers (serial or in a pool), the totals, the comparison, in order.
def run_network(net: Network, inputs: Mapping[str, np.ndarray], backend: str = "functional", *,
                hw: HardwareConfig | str = "gemmini", schedule: Any = None, db: str | Path | None = None,
                compare: bool = True, progress: bool = False, workers: int | None = None,
                executor: Executor | None = None) -> NetworkResult:
    """Run ``net`` whole on ``backend`` ("functional" or "verilator"); host ops run in numpy.

    schedule: None/"default", "gemmini", "gemmini-nn" or "best" (with ``db``) for every accelerator layer.
    compare: also run the model on onnxruntime (CPU) with the same input, and report the largest
    deviation per layer and per output, and onnxruntime's latency.
    workers / executor: run the accelerator layers side by side (:mod:`networks.network_parallel`),
    in ``workers`` processes (default: the CPU count on "verilator", 1 on "functional"), in a local
    pool of that many processes or in ``executor``, any concurrent.futures.Executor (a Dask
    client's executor, say); outputs, cycles and rows are those of the serial run (``workers=1``).
    """
    if not isinstance(net, Network):
        raise ValueError(f"net must be a Network from tk.from_onnx, got {type(net).__name__}")
    if backend not in ("functional", "verilator"):
        raise ValueError(f"backend={backend!r} is not one of ('functional', 'verilator')")
    _check_inputs(net, inputs)
    workers = positive_limit("workers", workers)
    hw = HardwareConfig.resolve(hw)
    compiler = LayerCompiler(hw, schedule, db)
    env: dict[str, np.ndarray] = {name: np.asarray(inputs[name]) for name in net.inputs}

    def fetch(name: str, layout: str) -> np.ndarray:
        return convert_layout(env[name], net.tensors[name].layout, layout)

    start = time.perf_counter()
    layers = net.layers
    if progress:
        from tqdm import tqdm
        layers = tqdm(layers, desc=f"{net.name} ({backend})", unit="layer", leave=False)
    run_host = partial(_run_layer, net=net, env=env, fetch=fetch, compiler=compiler, backend=backend)
    if workers is None:
        workers = (os.cpu_count() or 1) if backend == "verilator" else 1
    with ExitStack() as stack:
        if executor is None and workers > 1:
            from tuner.measure import local_pool   # the tuner's pool: forked workers that die with this process
            executor = stack.enter_context(local_pool(workers))
        if executor is None:
            rows = [run_host(layer) for layer in layers]
        else:
            rows = run_layers(layers, net, env, fetch, run_host, compiler, backend, executor,
                              workers, partial(_accel_row, hw=hw))
    wall = time.perf_counter() - start
    total = sum(r.cycles for r in rows if r.cycles is not None) if backend != "functional" else None
    for r in rows:
        if total and r.cycles is not None:
            r.share = r.cycles / total
    outputs = {name: fetch(name, "native") for name in net.outputs}
    result = NetworkResult(net.name, hw.name, backend, str(schedule or "default"), outputs, total, rows,
                           sum(r.host_s or 0.0 for r in rows), wall, notes=sorted(set(compiler.notes.values())))
    if compare and net.model is not None:
        compare_with_onnxruntime(net, inputs, result, {name: fetch(name, "native") for name in env})
        result.compare_s = time.perf_counter() - start - wall
    return result


def _run_layer(layer: AccelLayer | HostLayer, net: Network, env: dict[str, np.ndarray],
               fetch: Callable[[str, str], np.ndarray], compiler: LayerCompiler, backend: str) -> LayerRow:
    """Run one layer (in numpy on the host, or compiled on ``backend``), store its outputs in ``env``."""
    t0 = time.perf_counter()
    if isinstance(layer, HostLayer):
        outs = execute_host(layer, fetch)
        host_s = time.perf_counter() - t0
        for name, arr in zip(layer.outputs, outs):
            env[name] = convert_layout(np.asarray(arr), "native", net.tensors[name].layout)
        return LayerRow(layer.name, layer.kind, layer.op_type, 1, 0, None, None, None, None, "host", None,
                        host_s, host_s, note=layer.reason)
    prog = compiler(layer.op)
    out, cycles = execute_accel(layer, fetch, lambda op, op_inputs: run_program(prog, op_inputs, backend))
    env[layer.output] = out.reshape(net.tensors[layer.output].stored_shape)
    return _accel_row(layer, cycles, time.perf_counter() - t0, compiler.notes.get(layer.op, ""), hw=compiler.hw)


def _accel_row(layer: AccelLayer, cycles: int | None, wall_s: float, note: str, *, hw: HardwareConfig) -> LayerRow:
    op, n = layer.op, layer.repeat
    ideal = ideal_cycles(op, hw) * n
    dram = dram_cycles(op, hw) * n
    bound = "compute" if ideal >= dram else "memory"
    util = ideal / cycles if cycles and ideal else None
    return LayerRow(layer.name, layer.kind, op.key, n, op.macs * n, cycles, ideal, max(ideal, dram), util, bound,
                    None, None, wall_s, note=note)
