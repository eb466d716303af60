"""Measurement: run candidates in parallel on a backend, each checked bit-exact against the reference.

Candidates go to any ``concurrent.futures.Executor``: a local process pool by
default, a Dask cluster's executor when a scheduler address is given. On the
verilator backend each task is a group of candidates that one harness process
runs in turn (``simulators.verilator.run_many``): small programs then cost their
simulation, not a process start each. A candidate that fails (wrong output,
exception), hangs (timeout) or kills its worker (crash) comes back as a result
with that status and reason; it never stops the tuning, nor the others of its group.

The local pool's workers are forked when the pool is made, and die with their parent: a
run killed with ``kill -9`` leaves no worker behind. ``tune`` makes the pool before it opens
the tuning database, so that its workers hold none of it (a pool made again after a crash
is forked with the database open; its workers never touch it).
"""
from __future__ import annotations

import concurrent.futures as cf
import contextlib
import ctypes
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from isa import HardwareConfig
from simulators.base import CycleLimit, SimulationTimeout, ToolchainError
from toolkit.kinds import roofline_cycles, schedule_from_dict
from toolkit.kinds import from_dict as op_from_dict
from toolkit.ops import Op
from toolkit.schedule import Schedule, ScheduleError

from .space import fits

_GRACE_S = 30.0  # past the timeout, a worker that ignores SIGALRM ends itself
_CONNECT_S = 10.0  # how long reaching a Dask scheduler may take
_PARENT_POLL_S = 0.5  # how often a worker looks whether its parent is still there
_PR_SET_PDEATHSIG = 1  # prctl(2): the signal this process gets when its parent dies
# Simulated cycles (roofline bound) of a group of candidates in one harness process: a
# process start costs about as much as simulating a few hundred cycles of the gemmini model.
GROUP_CYCLES = 20_000


@dataclass
class MeasureResult:
    status: str                      # ok, wrong, error, timeout, crash, invalid, slow
    cycles: int | None = None        # slow: the cycle cap it ran into, a lower bound
    counters: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class _Timeout(Exception):
    pass


def backend_name(backend: str | Callable[..., Any]) -> str:
    """The name records carry for a backend (a callable's BACKEND attribute or its name)."""
    if isinstance(backend, str):
        return backend
    return getattr(backend, "BACKEND", getattr(backend, "__name__", "custom"))


def _backend_fn(backend: str | Callable[..., Any]) -> Callable[..., Any]:
    if callable(backend):
        return backend
    from simulators.base import get_backend
    return get_backend(backend)


def backend_many(backend: str | Callable[..., Any]) -> Callable[..., list[Any]] | None:
    """The backend's ``run_many(jobs, timeout=...)`` (many programs in one simulator process), if it has one."""
    if callable(backend):
        return None
    return getattr(sys.modules[_backend_fn(backend).__module__], "run_many", None)


def _mismatch(name: str, got: np.ndarray, want: np.ndarray) -> str:
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"output {name}: got {got.dtype}{got.shape}, expected {want.dtype}{want.shape}"
    bad = np.argwhere(got != want)
    first = tuple(int(x) for x in bad[0])
    return (f"output {name} differs from the reference at {len(bad)} of {want.size} elements; first at {first}: "
            f"got {got[first]}, expected {want[first]}")


@contextlib.contextmanager
def _deadline(timeout: float | None, native: bool = True) -> Iterator[None]:
    """Raise _Timeout in this block after ``timeout`` seconds (main thread only: SIGALRM).

    native: the block may call native code that never returns to the interpreter (a
    backend), so a thread ends the process if the alarm has not ended the block soon after."""
    if timeout is None or threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(*_: object) -> None:
        raise _Timeout()
    watchdog = threading.Timer(timeout + _GRACE_S, os._exit, args=(124,)) if native else None
    if watchdog is not None:   # started before the alarm is set: an alarm must not cut a thread's start short
        watchdog.daemon = True
        watchdog.start()
    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        yield
    finally:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
        finally:   # the alarm fires once: if it fires just now, the watchdog is still cancelled
            if watchdog is not None:
                watchdog.cancel()


@dataclass
class _Lowered:
    """A candidate ready to run: its op, program, inputs, and when its measurement started."""

    op: Op
    program: Any
    inputs: dict[str, np.ndarray]
    start: float


def _lower(op: dict[str, Any], hw: dict[str, Any], knobs: dict[str, Any], seed: int) -> _Lowered | MeasureResult:
    """The candidate's program and inputs, or its result when it does not fit (invalid)."""
    from toolkit.kinds import lower
    start = time.perf_counter()
    the_op = op_from_dict(op)
    the_hw = HardwareConfig.from_dict(hw)
    schedule = schedule_from_dict(the_op.KIND, knobs)
    try:
        fits(schedule, the_op, the_hw)
    except ScheduleError as exc:
        return MeasureResult("invalid", error=str(exc), wall_s=time.perf_counter() - start)
    return _Lowered(the_op, lower(the_op, schedule, the_hw), the_op.random_inputs(seed), start)


def _judge(cand: _Lowered, res: Any, backend: str | Callable[..., Any]) -> MeasureResult:
    """A backend's result, checked bit-exact against the op's reference."""
    for name, ref in cand.op.reference(cand.inputs).items():
        got = res.outputs.get(name)
        if got is None:
            return MeasureResult("wrong", error=f"backend returned no output {name!r}",
                                 wall_s=time.perf_counter() - cand.start)
        if not np.array_equal(got, ref) or got.dtype != ref.dtype:
            return MeasureResult("wrong", res.cycles, dict(res.counters), _mismatch(name, got, ref),
                                 time.perf_counter() - cand.start)
    if res.cycles is None:
        return MeasureResult("error", None, dict(res.counters),
                             f"backend {backend_name(backend)!r} reports no cycles; tune on a timing backend",
                             time.perf_counter() - cand.start)
    return MeasureResult("ok", int(res.cycles), dict(res.counters), "", time.perf_counter() - cand.start)


def _failed(exc: BaseException, start: float, timeout: float | None, cycle_limit: int | None = None
            ) -> MeasureResult:
    """What a candidate's exception makes of it: a record, not the end of tuning."""
    wall = time.perf_counter() - start
    if isinstance(exc, ToolchainError):
        raise exc             # the backend cannot run anything here: no candidate's fault, no record
    if isinstance(exc, (_Timeout, SimulationTimeout)):
        return MeasureResult("timeout", error=f"no result within {timeout:g} s", wall_s=wall)
    if isinstance(exc, CycleLimit) and cycle_limit is not None:
        return MeasureResult("slow", cycle_limit, error=f"stopped at the cycle cap, {cycle_limit:,} cycles",
                             wall_s=wall)
    return MeasureResult("error", error=f"{type(exc).__name__}: {exc}"[:2000], wall_s=wall)


def run_candidate(op: dict[str, Any], hw: dict[str, Any], knobs: dict[str, Any],
                  backend: str | Callable[..., Any], timeout: float | None, seed: int = 0) -> MeasureResult:
    """Lower, run and check one candidate. Runs in a worker; never raises for a bad candidate."""
    start = time.perf_counter()
    try:
        with _deadline(timeout):
            cand = _lower(op, hw, knobs, seed)
            if isinstance(cand, MeasureResult):
                return cand
            return _judge(cand, _backend_fn(backend)(cand.program, cand.inputs), backend)
    except Exception as exc:  # noqa: BLE001  (sorted by _failed; ToolchainError goes on up)
        return _failed(exc, start, timeout)


def run_candidates(op: dict[str, Any], hw: dict[str, Any], knobs: Sequence[dict[str, Any]],
                   backend: str | Callable[..., Any], timeout: float | None, seed: int = 0,
                   cycle_limit: int | None = None) -> list[MeasureResult]:
    """Candidates in turn, in one worker: through the backend's ``run_many`` where it has one
    (the verilator backend runs them all in one harness process), else one by one. Each is
    checked bit-exact on its own, and a bad one fails only itself. ``cycle_limit`` stops a run
    that reaches it (status slow), on a backend whose ``run_many`` takes one; the others ignore it."""
    many = backend_many(backend)
    if many is None:
        return [run_candidate(op, hw, k, backend, timeout, seed) for k in knobs]
    results: list[MeasureResult | None] = [None] * len(knobs)
    lowered: list[tuple[int, _Lowered]] = []
    for i, k in enumerate(knobs):
        start = time.perf_counter()
        try:
            with _deadline(timeout, native=False):   # lowering is Python: the alarm ends it
                cand = _lower(op, hw, k, seed)
        except Exception as exc:  # noqa: BLE001
            results[i] = _failed(exc, start, timeout)
            continue
        if isinstance(cand, MeasureResult):
            results[i] = cand
        else:
            lowered.append((i, cand))
    limit = {"cycle_limit": cycle_limit} if cycle_limit is not None else {}
    outs = many([(c.program, c.inputs) for _, c in lowered], timeout=timeout, **limit)
    for (i, cand), out in zip(lowered, outs):
        if isinstance(out, Exception):
            results[i] = _failed(out, cand.start, timeout, cycle_limit)
        else:
            try:
                results[i] = _judge(cand, out, backend)
            except Exception as exc:  # noqa: BLE001
                results[i] = _failed(exc, cand.start, timeout)
    return results  # type: ignore[return-value]  (every position is filled above)


def connect_dask(client: Callable[..., Any], scheduler: str) -> Any:
    """A Dask client of ``scheduler``, or a one-line error soon: a plain TCP address is tried first,
    so that nothing listening there fails at once (Dask itself retries until its timeout)."""
    parts = urllib.parse.urlsplit(scheduler if "://" in scheduler else f"tcp://{scheduler}")
    try:
        if parts.scheme == "tcp" and parts.hostname and parts.port:
            socket.create_connection((parts.hostname, parts.port), timeout=_CONNECT_S).close()
        return client(scheduler, timeout=_CONNECT_S)
    except (OSError, ValueError) as exc:   # ValueError: no port number
        reason = getattr(exc, "strerror", None) or exc
        raise RuntimeError(f"cannot reach the Dask scheduler {scheduler!r}: {reason}") from None


def _die_with_parent() -> None:
    """A pool worker outlives no parent: on Linux the kernel kills it when its parent ends; elsewhere
    (no prctl) a thread sees the parent gone within _PARENT_POLL_S and ends the process."""
    parent = os.getppid()
    try:
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    threading.Thread(target=_watch_parent, args=(parent,), name="watch-parent", daemon=True).start()


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(_PARENT_POLL_S)
    os._exit(1)


def local_pool(workers: int) -> cf.ProcessPoolExecutor:
    """A local pool whose workers start now, forked from this process as it is (fork: they need
    no importable main module, and their parent is this process, with whom they die)."""
    pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"),
                                  initializer=_die_with_parent)
    pool.submit(int).result()   # a fork pool starts all its workers with its first task
    return pool


class Measurer:
    """Runs candidates of one op on ``backend`` through an executor.

    executor: any ``concurrent.futures.Executor`` (used as given, never shut down here);
    scheduler: a Dask scheduler address ("tcp://host:8786") whose cluster runs the candidates;
    otherwise a local process pool of ``workers`` processes (default: CPU count).
    """

    def __init__(self, backend: str | Callable[..., Any] = "verilator", *, workers: int | None = None,
                 scheduler: str | None = None, executor: cf.Executor | None = None, timeout: float | None = 600.0,
                 seed: int = 0) -> None:
        self.backend, self.timeout, self.seed = backend, timeout, seed
        self.workers = workers or os.cpu_count() or 1
        self._client = None
        self._owned = executor is None and scheduler is None  # a local pool we may rebuild
        if executor is not None:
            self.executor = executor
        elif scheduler is not None:
            try:
                from dask.distributed import Client
            except ImportError:
                raise RuntimeError(f"measuring on the Dask scheduler {scheduler!r} needs dask.distributed: "
                                   "pip install 'dask[distributed]'") from None
            self._client = connect_dask(Client, scheduler)
            self.executor = self._client.get_executor(pure=False)
        else:
            self.executor = self._new_pool()

    @property
    def name(self) -> str:
        return backend_name(self.backend)

    @property
    def parallelism(self) -> int:
        if self._client is not None:
            return max(1, sum(w.get("nthreads", 1) for w in self._client.scheduler_info()["workers"].values()))
        return self.workers

    def _new_pool(self) -> cf.Executor:
        return local_pool(self.workers)

    def _submit(self, op: Op, hw: HardwareConfig, schedules: Sequence[Schedule],
                cycle_limit: int | None = None) -> cf.Future:
        return self.executor.submit(run_candidates, op.to_dict(), hw.as_dict(), [s.to_dict() for s in schedules],
                                    self.backend, self.timeout, self.seed, cycle_limit)

    def _groups(self, op: Op, hw: HardwareConfig, n: int) -> list[list[int]]:
        """Positions of the candidates each task runs. On a backend that runs many programs in
        one simulator process, small programs go in groups big enough that a process start is a
        small share of a group's simulation (GROUP_CYCLES), interleaved, in a multiple of the
        workers so that none idles in the last round; programs that simulate long enough alone
        go one a task, as on every other backend, so that the pool balances the load."""
        if backend_many(self.backend) is None:
            return [[i] for i in range(n)]
        per_group = -(-GROUP_CYCLES // max(1, roofline_cycles(op, hw)))
        groups = -(-n // per_group)
        groups = min(n, -(-groups // self.parallelism) * self.parallelism)
        return [list(range(g, n, groups)) for g in range(groups)]

    def measure(self, op: Op, hw: HardwareConfig, schedules: Sequence[Schedule], cycle_limit: int | None = None
                ) -> Iterator[tuple[int, MeasureResult]]:
        """Yield (position in ``schedules``, result) as each task of candidates finishes; a candidate that
        reaches ``cycle_limit`` stops there (status slow, on a backend that takes a limit)."""
        futures = {self._submit(op, hw, [schedules[i] for i in group], cycle_limit): group
                   for group in self._groups(op, hw, len(schedules))}
        broken: list[int] = []
        for fut in cf.as_completed(futures):
            group = futures[fut]
            try:
                yield from zip(group, fut.result())
            except cf.BrokenExecutor:
                broken += group  # some candidate killed the pool: find out which, one at a time
            except Exception as exc:
                # run_candidates returns every fault of a candidate; what escapes it is the
                # measurement's own failure (toolchain, pickling, executor), never recorded as the
                # candidates', except a Dask worker that died running them more than Dask allows
                # (a worker that dies once is replaced and the task runs again elsewhere)
                if type(exc).__name__ != "KilledWorker":
                    raise
                for i in group:
                    yield i, MeasureResult("crash", error=f"{type(exc).__name__}: {exc}"[:2000])
        for i in sorted(broken):
            yield i, self._isolated(op, hw, schedules[i], cycle_limit)

    def _isolated(self, op: Op, hw: HardwareConfig, schedule: Schedule, cycle_limit: int | None) -> MeasureResult:
        """Rerun one candidate alone in a fresh pool, so a crash is pinned on the one that crashes."""
        if not self._owned:
            return MeasureResult("crash", error="the executor broke while this candidate was in flight")
        self.executor.shutdown(wait=False, cancel_futures=True)
        self.executor = self._new_pool()
        start = time.perf_counter()
        try:
            (result,) = self._submit(op, hw, [schedule], cycle_limit).result()
            return result
        except cf.BrokenExecutor:
            wall = time.perf_counter() - start
            self.executor = self._new_pool()
            if self.timeout is not None and wall >= self.timeout:
                return MeasureResult("timeout", error=f"hung past {self.timeout:g} s and was killed", wall_s=wall)
            return MeasureResult("crash", error="the simulator process died (killed by a signal or exited) "
                                                "while running this candidate", wall_s=wall)

    def close(self) -> None:
        if self._owned:
            self.executor.shutdown(wait=True, cancel_futures=True)
        elif self._client is not None:
            self.executor.shutdown(wait=False)
        if self._client is not None:
            self._client.close()

    def __enter__(self) -> "Measurer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
