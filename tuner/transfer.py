"""Transfer: what tuning other workloads on the same hardware teaches about a new one.

* :func:`warm_start` gathers the ok records of other workloads of the same op
  kind, hardware and backend (with their cached feature vectors) to pre-train
  the cost model; the model's target is log cycles per ideal cycle, so shapes of
  any size share one scale. Their candidates stopped at the cycle cap (status slow)
  come too, flagged: the model learns their caps as lower bounds, as in their own run.
* :func:`seed_points` takes the best schedules of the most similar workloads
  (distance over log-shape) and adapts them to the new space: each becomes the
  nearest valid point (knobs compared in log2), so a tile that no longer fits
  shrinks to one that does.
* Across hardware (``tk.explore``): the same workload's records on the nearest other hardware
  points (distance over the log2 hardware sizes) join both, the warm start (the features name
  each record's hardware) and the seeds (their best schedules, adapted the same way).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from isa import HardwareConfig
from toolkit.ops import Op
from toolkit.kinds import from_dict as op_from_dict

from .database import Database, Record, schedule_key
from .features import FEATURE_VERSION, featurize
from .space import Space


def shape_distance(a: dict[str, Any], b: dict[str, Any]) -> float:
    """L1 distance of log2 numeric parameters, +1 for each other parameter that differs."""
    if a.get("kind") != b.get("kind"):
        return math.inf
    dist = 0.0
    for key in set(a) | set(b):
        x, y = a.get(key), b.get(key)
        if isinstance(x, (int, float)) and isinstance(y, (int, float)) and not isinstance(x, bool):
            dist += abs(math.log2(1 + abs(x)) - math.log2(1 + abs(y)))
        elif isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)) and len(x) == len(y):
            dist += sum(abs(math.log2(1 + abs(u)) - math.log2(1 + abs(v))) for u, v in zip(x, y))
        elif x != y:
            dist += 1.0
    return dist


def similar_workloads(db: Database, op: Op, hw: HardwareConfig, backend: str, k: int = 3
                      ) -> list[tuple[str, dict[str, Any], float]]:
    """The ``k`` nearest other workloads with ok records: (key, op dict, distance), nearest first."""
    mine = op.to_dict()
    found = [(w, o, shape_distance(mine, o)) for w, o in db.workloads(hw.config_hash(), backend) if w != op.key]
    return sorted((t for t in found if math.isfinite(t[2])), key=lambda t: (t[2], t[0]))[:k]


def _fastest(recs: list[Record]) -> list[Record]:
    """Records fastest first; ties by schedule (as Database.best breaks them), never by which landed
    first: workers finish in any order, and the order decides which records warm-start and seed a search."""
    return sorted(recs, key=lambda r: (r.cycles, schedule_key(r.schedule)))


def hardware_distance(a: HardwareConfig, b: HardwareConfig) -> float:
    """L1 distance of the log2 hardware sizes; a field that may be 0 (an on/off extension such as
    store_requant) counts 1 where the two differ."""
    return sum(abs(math.log2(x) - math.log2(y)) if x > 0 and y > 0 else float(x != y)
               for x, y in zip(a.hardware_fields(), b.hardware_fields()))


def other_hardware(db: Database, op: Op, hw: HardwareConfig, backend: str, k: int = 3
                   ) -> list[tuple[HardwareConfig, list[Record]]]:
    """The ok records of ``op`` on the ``k`` nearest other hardware points, fastest first, nearest point first."""
    by_hw: dict[str, list[Record]] = {}
    for r in db.records(workload=op.key, backend=backend, status="ok"):
        if r.hw_hash != hw.config_hash() and r.cycles is not None:
            by_hw.setdefault(r.hw_hash, []).append(r)
    found = [(HardwareConfig.from_dict(recs[0].hw), _fastest(recs)) for recs in by_hw.values()]
    return sorted(found, key=lambda t: (hardware_distance(hw, t[0]), t[0].config_hash()))[:k]


def _featurized(db: Database, op_dict: dict[str, Any], hw: HardwareConfig, recs: list[Record]) -> list[np.ndarray]:
    """The records' feature rows, cached in the db."""
    cached = db.features([r.id for r in recs], FEATURE_VERSION)
    todo = [r for r in recs if r.id not in cached]
    if todo:
        rows = featurize(op_from_dict(op_dict), hw, [r.make_schedule() for r in todo])
        for r, row in zip(todo, rows):
            db.put_features(r.id, FEATURE_VERSION, row)
            cached[r.id] = row
    return [cached[r.id] for r in recs]


def _learnt(db: Database, **scope: Any) -> list[Record]:
    """The records of ``scope`` a model learns from: ok ones, and slow ones (their caps: lower bounds)."""
    return [r for status in ("ok", "slow") for r in db.records(**scope, status=status) if r.cycles is not None]


def warm_start(db: Database, op: Op, hw: HardwareConfig, backend: str, *, workloads: int = 8,
               per_workload: int = 256, hardware: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(features, cycles, stopped) of the ok and slow records of the nearest other workloads on ``hw`` and
    of ``op`` on the nearest other hardware points, ``per_workload`` of each, fastest first; a slow one's
    cycles are its cap, and ``stopped`` flags it. Features cached in the db."""
    X: list[np.ndarray] = []
    y: list[float] = []
    stopped: list[bool] = []
    sources = [(o, hw, _learnt(db, workload=key, hw_hash=hw.config_hash(), backend=backend))
               for key, o, _ in similar_workloads(db, op, hw, backend, workloads)]
    sources += [(op.to_dict(), other, _learnt(db, workload=op.key, hw_hash=recs[0].hw_hash, backend=backend))
                for other, recs in other_hardware(db, op, hw, backend, hardware)]
    for op_dict, rec_hw, recs in sources:
        recs = _fastest(recs)[:per_workload]
        X += _featurized(db, op_dict, rec_hw, recs)
        y += [float(r.cycles) for r in recs]
        stopped += [r.status == "slow" for r in recs]
    if not X:
        return np.zeros((0, 0), dtype=np.float32), np.zeros(0), np.zeros(0, bool)
    return np.stack(X), np.array(y), np.array(stopped)


def seed_points(db: Database, space: Space, backend: str, *, workloads: int = 3, per_workload: int = 2,
                hardware: int = 3) -> list[int]:
    """Points of ``space`` adapted from the best schedules of the most similar workloads on its hardware,
    then of its workload on the nearest other hardware points."""
    out: list[int] = []
    hw_hash = space.hw.config_hash()
    ranked = [_fastest([r for r in db.records(workload=key, hw_hash=hw_hash, backend=backend, status="ok")
                        if r.cycles is not None])
              for key, _, _ in similar_workloads(db, space.op, space.hw, backend, workloads)]
    ranked += [recs for _, recs in other_hardware(db, space.op, space.hw, backend, hardware)]
    for recs in ranked:
        for rec in recs[:per_workload]:
            p = space.nearest(rec.schedule)
            if p not in out:
                out.append(p)
    return out
