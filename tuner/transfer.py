"""Transfer: what tuning other workloads on the same hardware teaches about a new one.

* :func:`warm_start` gathers the ok records of other workloads of the same op
  kind, hardware and backend (with their cached feature vectors) to pre-train
  the cost model; the model's target is log cycles per ideal cycle, so shapes of
  any size share one scale.
* :func:`seed_points` takes the best schedules of the most similar workloads
  (distance over log-shape) and adapts them to the new space: each becomes the
  nearest valid point (knobs compared in log2), so a tile that no longer fits
  shrinks to one that does.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from isa import HardwareConfig
from toolkit.ops import Op
from toolkit.kinds import from_dict as op_from_dict

from .database import Database
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


def warm_start(db: Database, op: Op, hw: HardwareConfig, backend: str, *, workloads: int = 8,
               per_workload: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """(features, cycles) of ok records of the nearest other workloads; features cached in the db."""
    X: list[np.ndarray] = []
    y: list[float] = []
    for key, op_dict, _ in similar_workloads(db, op, hw, backend, workloads):
        recs = [r for r in db.records(workload=key, hw_hash=hw.config_hash(), backend=backend, status="ok")
                if r.cycles is not None]
        recs = sorted(recs, key=lambda r: r.cycles)[:per_workload]
        cached = db.features([r.id for r in recs], FEATURE_VERSION)
        todo = [r for r in recs if r.id not in cached]
        if todo:
            rows = featurize(op_from_dict(op_dict), hw, [r.make_schedule() for r in todo])
            for r, row in zip(todo, rows):
                db.put_features(r.id, FEATURE_VERSION, row)
                cached[r.id] = row
        X += [cached[r.id] for r in recs]
        y += [float(r.cycles) for r in recs]
    if not X:
        return np.zeros((0, 0), dtype=np.float32), np.zeros(0)
    return np.stack(X), np.array(y)


def seed_points(db: Database, space: Space, backend: str, *, workloads: int = 3, per_workload: int = 2) -> list[int]:
    """Points of ``space`` adapted from the best schedules of the most similar workloads."""
    out: list[int] = []
    hw_hash = space.hw.config_hash()
    for key, _, _ in similar_workloads(db, space.op, space.hw, backend, workloads):
        recs = sorted((r for r in db.records(workload=key, hw_hash=hw_hash, backend=backend, status="ok")
                       if r.cycles is not None), key=lambda r: r.cycles)
        for rec in recs[:per_workload]:
            p = space.nearest(rec.schedule)
            if p not in out:
                out.append(p)
    return out
