"""Measurement: run candidates in parallel on a backend, each checked bit-exact against the reference.

Candidates go to any ``concurrent.futures.Executor``: a local process pool by
default, a Dask cluster's executor when a scheduler address is given. A
candidate that fails (wrong output, exception), hangs (timeout) or kills its
worker (crash) comes back as a result with that status and reason; it never
stops the tuning.
"""
from __future__ import annotations

import concurrent.futures as cf
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from isa import HardwareConfig
from simulators.base import ToolchainError
from toolkit.kinds import KINDS
from toolkit.kinds import from_dict as op_from_dict
from toolkit.ops import Op
from toolkit.schedule import Schedule, ScheduleError

from .space import fits

_GRACE_S = 30.0  # past the timeout, a worker that ignores SIGALRM ends itself


@dataclass
class MeasureResult:
    status: str                      # ok, wrong, error, timeout, crash, invalid
    cycles: int | None = None
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
    if backend in ("stand-in", "stand_in", "standin"):
        from . import stand_in
        return stand_in.run
    from simulators.base import get_backend
    return get_backend(backend)


def _mismatch(name: str, got: np.ndarray, want: np.ndarray) -> str:
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"output {name}: got {got.dtype}{got.shape}, expected {want.dtype}{want.shape}"
    bad = np.argwhere(got != want)
    first = tuple(int(x) for x in bad[0])
    return (f"output {name} differs from the reference at {len(bad)} of {want.size} elements; first at {first}: "
            f"got {got[first]}, expected {want[first]}")


def run_candidate(op: dict[str, Any], hw: dict[str, Any], knobs: dict[str, Any],
                  backend: str | Callable[..., Any], timeout: float | None, seed: int = 0) -> MeasureResult:
    """Lower, run and check one candidate. Runs in a worker; never raises for a bad candidate."""
    start = time.perf_counter()
    alarm = timeout is not None and threading.current_thread() is threading.main_thread()
    if alarm:
        def on_alarm(*_: object) -> None:
            raise _Timeout()
        signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
        # last resort for a hang in native code that never returns to the interpreter
        watchdog = threading.Timer(timeout + _GRACE_S, os._exit, args=(124,))
        watchdog.daemon = True
        watchdog.start()
    try:
        from toolkit.kinds import lower
        the_op = op_from_dict(op)
        the_hw = HardwareConfig.from_dict(hw)
        schedule = KINDS[the_op.KIND].schedule.from_dict(knobs)
        try:
            fits(schedule, the_op, the_hw)
        except ScheduleError as exc:
            return MeasureResult("invalid", error=str(exc), wall_s=time.perf_counter() - start)
        prog = lower(the_op, schedule, the_hw)
        inputs = the_op.random_inputs(seed)
        res = _backend_fn(backend)(prog, inputs)
        want = the_op.reference(inputs)
        for name, ref in want.items():
            got = res.outputs.get(name)
            if got is None:
                return MeasureResult("wrong", error=f"backend returned no output {name!r}",
                                     wall_s=time.perf_counter() - start)
            if not np.array_equal(got, ref) or got.dtype != ref.dtype:
                return MeasureResult("wrong", res.cycles, dict(res.counters), _mismatch(name, got, ref),
                                     time.perf_counter() - start)
        if res.cycles is None:
            return MeasureResult("error", None, dict(res.counters),
                                 f"backend {backend_name(backend)!r} reports no cycles; tune on a timing backend",
                                 time.perf_counter() - start)
        return MeasureResult("ok", int(res.cycles), dict(res.counters), "", time.perf_counter() - start)
    except _Timeout:
        return MeasureResult("timeout", error=f"no result within {timeout:g} s", wall_s=time.perf_counter() - start)
    except ToolchainError:
        raise                 # the backend cannot run anything here: no candidate's fault, no record
    except Exception as exc:  # a bad candidate is a record, not the end of tuning
        return MeasureResult("error", error=f"{type(exc).__name__}: {exc}"[:2000], wall_s=time.perf_counter() - start)
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            watchdog.cancel()


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
            from dask.distributed import Client
            self._client = Client(scheduler)
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
        return cf.ProcessPoolExecutor(max_workers=self.workers)

    def _submit(self, op: Op, hw: HardwareConfig, schedule: Schedule) -> cf.Future:
        return self.executor.submit(run_candidate, op.to_dict(), hw.as_dict(), schedule.to_dict(), self.backend,
                                    self.timeout, self.seed)

    def measure(self, op: Op, hw: HardwareConfig, schedules: Sequence[Schedule]
                ) -> Iterator[tuple[int, MeasureResult]]:
        """Yield (position in ``schedules``, result) as each candidate finishes."""
        futures = {self._submit(op, hw, s): i for i, s in enumerate(schedules)}
        broken: list[int] = []
        for fut in cf.as_completed(futures):
            i = futures[fut]
            try:
                yield i, fut.result()
            except cf.BrokenExecutor:
                broken.append(i)  # some candidate killed the pool: find out which, one at a time
            except Exception as exc:
                # run_candidate returns every fault of a candidate; what escapes it is the
                # measurement's own failure (toolchain, pickling, executor), never recorded as the
                # candidate's, except a Dask worker the candidate killed
                if type(exc).__name__ != "KilledWorker":
                    raise
                yield i, MeasureResult("crash", error=f"{type(exc).__name__}: {exc}"[:2000])
        for i in sorted(broken):
            yield i, self._isolated(op, hw, schedules[i])

    def _isolated(self, op: Op, hw: HardwareConfig, schedule: Schedule) -> MeasureResult:
        """Rerun one candidate alone in a fresh pool, so a crash is pinned on the one that crashes."""
        if not self._owned:
            return MeasureResult("crash", error="the executor broke while this candidate was in flight")
        self.executor.shutdown(wait=False, cancel_futures=True)
        self.executor = self._new_pool()
        start = time.perf_counter()
        try:
            return self._submit(op, hw, schedule).result()
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
