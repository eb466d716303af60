"""Hardware-software co-design: every point of a hardware space with its schedules tuned, its cycles
from the RTL and its area from synthesis, and the Pareto front of cycles against area.

For each point (a :class:`HardwareConfig` from ``base`` with the space's fields replaced) the
workload's tasks are checked to fit; then the RTL is built (cached) and each task tuned by
:func:`tuner.api.tune` with ``trials`` trials, its first trial the default schedule. The logic is
synthesized (cached, :mod:`networks.synthesis`) in a thread of its own, point after point, beside
the builds and the tuning; with a Dask ``scheduler``, on its workers, many points at once. Every
record goes in one database, where the tuner's transfer finds the same workload's records on the
points already explored (their features name the hardware); ``trials`` counts records already
there, so a killed explore resumes from the database. The points run in turn; each tuning spreads
its measurements over the process pool or the Dask cluster (``scheduler``), and a lost worker loses
only a measurement the tuner retries.
"""
from __future__ import annotations

import dataclasses
import itertools
import time
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from isa import HardwareConfig
from isa.config import ConfigError, check_field
from simulators.base import ToolchainError
from toolkit.kinds import dram_cycles, flat_schedule, ideal_cycles
from toolkit.limits import SizeError, check_size
from toolkit.ops import Op
from toolkit.schedule import Schedule, ScheduleError

from .area import area as area_of
from .network import Network

__all__ = ["explore", "ExplorePoint", "ExploreResult"]   # the public names (docs/reference/networks.md)

Task = tuple[Op, int]   # an op and how often the workload runs it


@dataclass(frozen=True)
class ExplorePoint:
    """One hardware point: the space's ``values`` and the config they make (None where they make
    none). ``reason`` says why it cannot hold the workload ("" when it can; then cycles, schedule
    and area are set). ``seconds``: time by stage (build, tuning; synthesis, which runs beside them, and
    "synthesis_wait", what it added to the wall time)."""

    values: Mapping[str, int]
    hw: HardwareConfig | None
    cycles: int | None = None
    default_cycles: int | None = None
    schedule: Schedule | tuple[Schedule, ...] | None = None
    area: Mapping[str, Any] = field(default_factory=dict)
    ideal_cycles: int | None = None
    dram_cycles: int | None = None
    reason: str = ""
    seconds: Mapping[str, float] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return point_label(self.values)

    @property
    def fits(self) -> bool:
        return not self.reason

    @property
    def speedup(self) -> float | None:
        """Default cycles over tuned cycles."""
        return self.default_cycles / self.cycles if self.cycles and self.default_cycles else None

    @property
    def utilization(self) -> float | None:
        return self.ideal_cycles / self.cycles if self.cycles and self.ideal_cycles else None

    @property
    def transistors(self) -> int | None:
        return self.area.get("transistors")

    @property
    def bound(self) -> str | None:
        """What bounds the workload at its best: the array ("compute") or the DMA ("dram")."""
        if self.ideal_cycles is None or self.dram_cycles is None:
            return None
        return "compute" if self.ideal_cycles >= self.dram_cycles else "dram"


@dataclass(frozen=True)
class ExploreResult:
    """What ``tk.explore`` returns: every hardware point of the space (``points``, each an
    :class:`ExplorePoint`, with a ``reason`` where it cannot hold the workload) and the Pareto front of cycles
    against area (``pareto``)."""

    workload: str
    space: Mapping[str, tuple[int, ...]]
    points: tuple[ExplorePoint, ...]
    preset: HardwareConfig          # the point labelled as the reference (the base config)

    @property
    def pareto(self) -> tuple[ExplorePoint, ...]:
        """The points that fit and that no other point beats on both cycles and area, fewest cycles first."""
        done = [p for p in self.points if p.fits and p.cycles is not None and p.transistors is not None]
        front = [p for p in done if not any(
            q.cycles <= p.cycles and q.transistors <= p.transistors and (q.cycles, q.transistors)
            != (p.cycles, p.transistors) for q in done)]
        return tuple(sorted(front, key=lambda p: (p.cycles, p.transistors)))

    def is_preset(self, point: ExplorePoint) -> bool:
        return point.hw is not None and point.hw.hardware_fields() == self.preset.hardware_fields()


def workload_tasks(workload: Op | Sequence[Op] | Network) -> tuple[str, list[Task]]:
    """The workload's name and its unique ops with their counts."""
    if isinstance(workload, Network):
        return workload.name, [(t.op, t.count) for t in workload.tasks]
    ops = [workload] if isinstance(workload, Op) else list(workload) if isinstance(workload, (list, tuple)) else None
    if not ops or not all(isinstance(o, Op) for o in ops):
        raise ValueError("workload must be an op (tk.matmul(...)), a non-empty list of ops or a tk.Network, "
                         f"got {type(workload).__name__}")
    counts: dict[str, list[Any]] = {}
    for o in ops:
        counts.setdefault(o.key, [o, 0])[1] += 1
    name = ops[0].key if len(counts) == 1 else f"{len(counts)} ops"
    return name, [(o, n) for o, n in counts.values()]


def hardware_points(space: Mapping[str, Sequence[int]]) -> tuple[dict[str, tuple[int, ...]], list[dict[str, int]]]:
    """The space checked (fields of HardwareConfig, non-empty lists of integers that some HardwareConfig
    can take) and its points; a point whose values do not go together stays, reported as a misfit."""
    if not isinstance(space, Mapping) or not space:
        raise ValueError(f"space must be a non-empty dict of HardwareConfig field -> values, got {space!r:.80}")
    known = [f.name for f in dataclasses.fields(HardwareConfig) if f.name != "name"]
    checked: dict[str, tuple[int, ...]] = {}
    for name, values in space.items():
        if name not in known:
            raise ValueError(f"space field {name!r} is no HardwareConfig field; choose from {', '.join(known)}")
        vals = [values] if isinstance(values, int) else values
        if not isinstance(vals, (list, tuple)) or not vals or not all(
                isinstance(v, int) and not isinstance(v, bool) for v in vals):
            raise ValueError(f"space[{name!r}] must be a non-empty list of integers, got {values!r}")
        for v in vals:
            try:
                check_field(name, v)
            except ConfigError as exc:
                raise ValueError(f"space[{name!r}] has {v}, which no hardware can take: {exc}") from None
        checked[name] = tuple(dict.fromkeys(vals))
    return checked, [dict(zip(checked, combo)) for combo in itertools.product(*checked.values())]


def point_label(values: Mapping[str, int]) -> str:
    return "-".join(f"{k}{v}" for k, v in values.items()).replace("_", "")


def point_hardware(base: HardwareConfig, values: Mapping[str, int]) -> HardwareConfig:
    return dataclasses.replace(base, name=point_label(values), **values)


def misfit(tasks: Sequence[Task], hw: HardwareConfig) -> str:
    """Why ``hw`` cannot run the tasks ("" when it can): the first that is too large or has no
    schedule that fits."""
    for op, _ in tasks:
        try:
            check_size(op, hw)
            flat_schedule(op, hw).memory_plan(hw, op)   # the toolkit's own heuristic fits, or nothing does
        except (ScheduleError, SizeError) as exc:
            return f"{op.key}: {exc}"
    return ""


AreaModel = Callable[[HardwareConfig], Mapping[str, Any]]


def timed_area(area_model: AreaModel, hw: HardwareConfig) -> tuple[dict[str, Any], float]:
    start = time.perf_counter()
    return dict(area_model(hw)), time.perf_counter() - start


def explore_point(tasks: Sequence[Task], values: Mapping[str, int], hw: HardwareConfig, trials: int,
                  backend: str, db: str, options: Mapping[str, Any], area: Future) -> ExplorePoint:
    """Build and tune one point that fits (see the module's docstring); ``area``: its
    :func:`timed_area`, under way beside the tuning."""
    from tuner.api import tune   # the tuner is slow to import: on first use, as the face does

    seconds: dict[str, float] = {}
    start = time.perf_counter()
    if backend == "verilator":
        from simulators.verilator import build
        build(hw)
    seconds["build"] = time.perf_counter() - start
    start = time.perf_counter()
    results = [tune(op, hw, trials=trials, backend=backend, db=db, progress=False, **options) for op, _ in tasks]
    seconds["tuning"] = time.perf_counter() - start
    start = time.perf_counter()
    area_parts, seconds["synthesis"] = area.result()
    seconds["synthesis_wait"] = time.perf_counter() - start
    failed = [op.key for (op, _), r in zip(tasks, results) if r.cycles is None or r.default_cycles is None]
    if failed:
        return ExplorePoint(values, hw, area=area_parts, reason=f"no schedule ran on {backend}: {', '.join(failed)}",
                            seconds=seconds)
    schedules = tuple(r.schedule for r in results)
    return ExplorePoint(
        values, hw, cycles=sum(n * r.cycles for (_, n), r in zip(tasks, results)),
        default_cycles=sum(n * r.default_cycles for (_, n), r in zip(tasks, results)),
        schedule=schedules[0] if len(schedules) == 1 else schedules, area=area_parts,
        ideal_cycles=sum(n * ideal_cycles(op, hw) for op, n in tasks),
        dram_cycles=sum(n * dram_cycles(op, hw) for op, n in tasks), seconds=seconds)


def explore(workload: Op | Sequence[Op] | Network, space: Mapping[str, Sequence[int]], trials: int = 20,
            backend: str = "verilator", workers: int | None = None, scheduler: str | None = None,
            db: str | Path = "explore.db", *, base: HardwareConfig | str = "gemmini", progress: bool = True,
            seed: int = 0, tile_policy: str = "pow2", timeout: float | None = 600.0,
            area_model: AreaModel = area_of) -> ExploreResult:
    """Explore ``space`` (HardwareConfig field -> values, over ``base``) for ``workload``: per point the
    best of ``trials`` tuning trials per task, on ``backend`` ("verilator": the RTL; "stand-in": the
    analytical model, for tests), records in ``db``. ``area_model``: hardware -> area dict (default:
    :func:`networks.area.area`, synthesis plus the SRAM model). Returns an :class:`ExploreResult`."""
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ValueError(f"trials must be a positive integer, got {trials!r}")
    if backend not in ("verilator", "stand-in"):
        raise ValueError(f"backend must be 'verilator' or 'stand-in', got {backend!r}")
    base_hw = HardwareConfig.resolve(base)
    name, tasks = workload_tasks(workload)
    checked, values = hardware_points(space)
    options = dict(workers=workers, scheduler=scheduler, seed=seed, tile_policy=tile_policy, timeout=timeout)
    points: dict[int, ExplorePoint] = {}
    fitting: list[tuple[int, HardwareConfig]] = []
    for i, vals in enumerate(values):   # a point that cannot be built or hold the workload says why
        try:
            hw = point_hardware(base_hw, vals)
        except ConfigError as exc:
            points[i] = ExplorePoint(vals, None, reason=str(exc))
            continue
        reason = misfit(tasks, hw)
        if reason:
            points[i] = ExplorePoint(vals, hw, reason=reason)
        else:
            fitting.append((i, hw))
    with _synthesis_pool(scheduler) as synth:
        areas = [synth.submit(timed_area, area_model, hw) for _, hw in fitting]
        try:
            for (i, hw), area in _progress(list(zip(fitting, areas)), progress):
                try:
                    points[i] = explore_point(tasks, values[i], hw, trials, backend, str(db), options, area)
                except ToolchainError as exc:   # no Yosys, no Verilator: the points before keep their records
                    fields = ", ".join(f"{k}={v}" for k, v in values[i].items())
                    raise ToolchainError(f"hardware point {fields} ({hw.name}): {exc}") from exc
        finally:
            for future in areas:
                future.cancel()
    return ExploreResult(name, checked, tuple(points[i] for i in range(len(values))), base_hw)


@contextmanager
def _synthesis_pool(scheduler: str | None) -> Iterator[Executor]:
    """Where the points are synthesized: in a thread of its own, point after point beside the tuning,
    which it would otherwise hold up for minutes a point (Yosys is one process); with a Dask
    scheduler, on its workers, as many points at once as they take."""
    if scheduler is None:
        with ThreadPoolExecutor(max_workers=1) as pool:
            yield pool
        return
    from dask.distributed import Client

    from tuner.measure import connect_dask
    client = connect_dask(Client, scheduler)
    try:
        yield client.get_executor(pure=False)
    finally:
        client.close()


def _progress(values: list[Any], show: bool) -> Any:
    if not show:
        return values
    from tqdm import tqdm
    return tqdm(values, desc="hardware points", unit="point")
