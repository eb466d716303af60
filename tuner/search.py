"""Search strategies over a :class:`~tuner.space.Space`: model-guided, and random, grid, genetic baselines.

Every tuner speaks in point indices: ``next_batch(n)`` proposes up to ``n``
unmeasured points, ``update(points, cycles, stopped)`` reports what they measured
(``inf`` for a failure; ``stopped``: which ran into the cycle cap, their cycles the cap, a lower
bound, which the model tuner learns as such). All randomness comes from one seeded generator, so a
run is reproducible for a given seed and measurement outcome.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from .model import CostModel, spearman
from .space import Space

Featurizer = Callable[[Sequence[int]], np.ndarray]


def _flags(stopped: Sequence[bool], n: int) -> list[bool]:
    """``stopped`` as ``n`` flags (none given: none stopped)."""
    return [bool(s) for s in stopped] + [False] * (n - len(stopped))


class Tuner:
    """Base: bookkeeping of what has been measured."""

    name = "base"

    def __init__(self, space: Space, seed: int = 0) -> None:
        self.space = space
        self.rng = np.random.default_rng(seed)
        self.measured: dict[int, float] = {}
        self.stopped: set[int] = set()  # measured points whose cycles are the cap they stopped at
        self.covered: set[int] = set()  # points measured in another form (TwinTuner): never proposed
        self.seeds: list[int] = []  # points to try first (the default, transferred schedules)

    def next_batch(self, n: int) -> list[int]:
        raise NotImplementedError

    def update(self, points: Sequence[int], cycles: Sequence[float], stopped: Sequence[bool] = ()) -> None:
        for p, c in zip(points, cycles):
            self.measured[int(p)] = float(c)
        self.stopped.update(int(p) for p, s in zip(points, stopped) if s)

    def exhausted(self) -> bool:
        return len(self.measured.keys() | self.covered) >= len(self.space)

    def _take_seeds(self, n: int) -> list[int]:
        out: list[int] = []
        while self.seeds and len(out) < n:
            p = self.seeds.pop(0)
            if p not in self.measured and p not in out:
                out.append(p)
        return out

    def _fill_random(self, batch: list[int], n: int) -> list[int]:
        if len(batch) < n:
            batch += self.space.sample(self.rng, n - len(batch), exclude=set(self.measured) | self.covered | set(batch))
        return batch


class RandomTuner(Tuner):
    name = "random"

    def next_batch(self, n: int) -> list[int]:
        return self._fill_random(self._take_seeds(n), n)


class GridTuner(Tuner):
    """Points in index order (the knob product, fit knobs outermost), as AutoTVM's grid search."""

    name = "grid"

    def __init__(self, space: Space, seed: int = 0) -> None:
        super().__init__(space, seed)
        self._next = 0

    def next_batch(self, n: int) -> list[int]:
        batch = self._take_seeds(n)
        while len(batch) < n and self._next < len(self.space):
            if self._next not in self.measured and self._next not in batch:
                batch.append(self._next)
            self._next += 1
        return batch


class GeneticTuner(Tuner):
    """Elitist genetic search over genomes (one value index per knob)."""

    name = "ga"

    def __init__(self, space: Space, seed: int = 0, elite_share: float = 0.25, mutation: float = 0.15) -> None:
        super().__init__(space, seed)
        self.elite_share, self.mutation = elite_share, mutation

    def next_batch(self, n: int) -> list[int]:
        batch = self._take_seeds(n)
        good = sorted((c, p) for p, c in self.measured.items() if math.isfinite(c))
        if len(good) < 2:
            return self._fill_random(batch, n)
        parents = [p for _, p in good[:max(2, int(len(good) * self.elite_share))]]
        weights = 1.0 / np.arange(1, len(parents) + 1)  # rank-based selection
        weights /= weights.sum()
        taken = set(self.measured) | set(batch)
        for _ in range(20 * n):
            if len(batch) >= n:
                break
            a, b = (self.space.genome(parents[i]) for i in self.rng.choice(len(parents), 2, p=weights))
            child = [x if self.rng.random() < 0.5 else y for x, y in zip(a, b)]
            for k, name in enumerate(self.space.names):
                if self.rng.random() < self.mutation:
                    child[k] = int(self.rng.integers(len(self.space.domains[name])))
            p = self.space.index(child)
            if p is not None and p not in taken:
                batch.append(p)
                taken.add(p)
        return self._fill_random(batch, n)


class ModelTuner(Tuner):
    """AutoTVM-style: a cost model ranks candidates that simulated annealing proposes.

    Parallel annealing chains walk the space on the model's predictions and
    persist across batches (each batch resumes them on the refit model). The
    batch takes the best-predicted unmeasured points, skipping near duplicates
    of points already picked (diversity), plus a share of uniform random picks.
    Before any measurement the model is the analytical prior of
    :func:`~tuner.model.prior` (``use_prior=False``: the first batch is random).

    ``warm``: (features, cycles) of other workloads' records, or (features, cycles, stopped), the
    stopped ones' cycles their caps. ``censored``: the model learns a stopped candidate's cap as the
    lower bound it is (:class:`~tuner.model.CostModel`); False, as its cost.
    """

    name = "model"

    def __init__(self, space: Space, featurize: Featurizer, seed: int = 0, *, n_chains: int = 16,
                 feature_budget: int = 512, random_share: float = 0.15, min_distance: int = 2,
                 warm: tuple[np.ndarray, ...] | None = None, warm_weight: float = 0.5,
                 use_prior: bool = True, censored: bool = True) -> None:
        super().__init__(space, seed)
        self.featurize = featurize
        self.use_prior = use_prior
        self.model = CostModel(seed, use_prior=use_prior, censored=censored)
        self.n_chains, self.feature_budget = n_chains, feature_budget
        self.random_share, self.min_distance = random_share, min_distance
        self.warm = warm
        self.warm_weight = warm_weight
        self.chains: list[int] = []
        self.spearman_history: list[float] = []  # held-out: predictions made before each batch was measured
        self._predicted: dict[int, float] = {}
        self._outside: list[tuple[np.ndarray, float, bool]] = []  # measured outside the space (learn), stopped
        self._refit()

    def learn(self, points: Sequence[int], X: np.ndarray, cycles: Sequence[float],
              stopped: Sequence[bool] = ()) -> None:
        """Measurements of other forms of ``points`` (their twins outside the space, with features ``X``): the
        model trains on them from its next fit on, and the points are not proposed again."""
        self.covered.update(int(p) for p in points)
        self._outside += [(x, float(c), s) for x, c, s in zip(X, cycles, _flags(stopped, len(cycles)))
                          if math.isfinite(c)]

    def _refit(self) -> None:
        """Fit the model on every finite measurement: the space's, the twins' and the warm start's."""
        pts = [p for p, c in self.measured.items() if math.isfinite(c)]
        parts = [(self.featurize(pts), [self.measured[p] for p in pts], [p in self.stopped for p in pts], 1.0)] \
            if pts else []
        if self._outside:
            X, cycles, stopped = zip(*self._outside)
            parts.append((np.array(X), cycles, stopped, 1.0))
        if self.warm is not None and len(self.warm[0]):
            warm_stopped = self.warm[2] if len(self.warm) > 2 else np.zeros(len(self.warm[1]), bool)
            parts.append((self.warm[0], self.warm[1], warm_stopped, self.warm_weight))
        if parts:
            self.model.fit(np.vstack([X for X, *_ in parts]), np.concatenate([y for _, y, _, _ in parts]),
                           np.concatenate([np.full(len(y), w) for _, y, _, w in parts]),
                           np.concatenate([np.asarray(s, bool) for _, _, s, _ in parts]))

    def update(self, points: Sequence[int], cycles: Sequence[float], stopped: Sequence[bool] = ()) -> None:
        """Take in measurements and refit. The held-out Spearman leaves out the stopped ones: a cap is no
        measured cost to rank against."""
        capped = {int(p) for p, s in zip(points, stopped) if s}
        pred = [(self._predicted[p], c) for p, c in zip(points, cycles)
                if p in self._predicted and math.isfinite(c) and p not in capped]
        if pred:
            self.spearman_history.append(spearman(*map(np.array, zip(*pred))))
        super().update(points, cycles, stopped)
        self._refit()

    def next_batch(self, n: int) -> list[int]:
        batch = self._take_seeds(n)
        if not self.model.fitted and not self.use_prior:
            return self._fill_random(batch, n)
        n_model = n - len(batch) - int(round(self.random_share * n))
        scores = self._anneal()
        taken = set(self.measured) | self.covered | set(batch)
        ranked = [p for p in sorted(scores, key=scores.get) if p not in taken]
        picked = self._diverse(ranked, max(0, n_model))
        self._predicted = {p: scores[p] for p in picked}
        return self._fill_random(batch + picked, n)

    def _anneal(self) -> dict[int, float]:
        """Run the chains on the current model; return predicted score of every point visited."""
        space, rng = self.space, self.rng
        finite = sorted((c, p) for p, c in self.measured.items() if math.isfinite(c))
        # fewer chains when each candidate's features are dear (a small budget), so that they still
        # take a few steps each instead of spending the budget on random starting points
        n_chains = max(2, min(self.n_chains, self.feature_budget // 4))
        self.chains = self.chains[:n_chains]
        if not self.chains:  # start from the best measured points, topped up with random ones
            self.chains = [p for _, p in finite[:n_chains // 2]]
            self.chains += space.sample(rng, n_chains - len(self.chains), exclude=set(self.chains))
        cur = self.model.predict(self.featurize(self.chains))
        scores = dict(zip(self.chains, cur.tolist()))
        steps = max(2, self.feature_budget // max(1, len(self.chains)))
        temps = np.geomspace(0.5, 0.01, steps)  # in log2(cycles) units: 0.5 accepts ~40% worse early on
        for t in temps:
            props = [space.neighbor(p, rng) for p in self.chains]
            pred = self.model.predict(self.featurize(props))
            scores.update(zip(props, pred.tolist()))
            accept = rng.random(len(props)) < np.exp(np.minimum(0.0, (cur - pred) / t))
            self.chains = [q if a else p for p, q, a in zip(self.chains, props, accept)]
            cur = np.where(accept, pred, cur)
        return scores

    def _diverse(self, ranked: list[int], n: int) -> list[int]:
        """Greedy picks in rank order: first the best of each shape (Space.shape: tiles, buffering,
        dataflow), then points at least ``min_distance`` knobs from every pick, then the next best.
        Shapes first because the prior ranks shapes, not the placements and pipeline knobs inside one:
        on the gemmini 64^3 matmul table it ties most of a shape's points, and a first batch taken by
        knob distance alone spent 7 of its 8 trials on one shape."""
        picked: list[int] = []
        shapes: set[tuple[int, ...]] = set()
        for p in ranked:
            if len(picked) >= n:
                break
            shape = self.space.shape(p)
            if shape not in shapes:
                shapes.add(shape)
                picked.append(p)
        genomes = [np.array(self.space.genome(p)) for p in picked]
        chosen = set(picked)
        for p in ranked:
            if len(picked) >= n:
                break
            g = np.array(self.space.genome(p))
            if p not in chosen and all((g != h).sum() >= self.min_distance for h in genomes):
                picked.append(p)
                chosen.add(p)
                genomes.append(g)
        for p in ranked:  # not enough diverse points: take the next best anyway
            if len(picked) >= n:
                break
            if p not in chosen:
                picked.append(p)
                chosen.add(p)
        return picked


class TwinTuner(Tuner):
    """The model tuner over one value of a knob, with the model choosing each pick's value of that knob.

    The dataflow splits a space in two halves of the same shapes, and one half is far slower on most
    workloads (output-stationary lost to weight-stationary on every layer and table measured, by 1.3x
    to 5.9x). Walked as one more knob, it halves the budget the walk spends on the better half: at 8
    trials on ResNet-50's convs the full space lost to the weight-stationary half alone on 2 of 5
    layers. So the chains walk the default's half, exactly as a search of that half alone would (same
    indices, seed and features), and each pick runs as whichever twin (the same point at another
    value of the knob) the model predicts fastest. A twin measured trains the model and stands for its
    point, which the walk then leaves alone. Before any measurement the call is the prior's: the
    closed-form estimate (matmul, conv2d) or the stand-in (depthwise), both of which time either dataflow.
    """

    name = "model"

    def __init__(self, space: Space, featurize: Featurizer, seed: int = 0, *, twins: str = "dataflow",
                 **options: object) -> None:
        super().__init__(space, seed)
        self.featurize, self.knob = featurize, twins
        self.pos = space.names.index(twins)
        # the default's value (a default without the knob, a loop schedule of a space of both families, has none)
        walk = space.default.to_dict().get(twins, space.domains[twins][0]) if space.default is not None \
            and space.index_of(space.default) is not None else space.domains[twins][0]
        self.value = space.domains[twins].index(walk)
        self.half = space.restrict(twins, space.domains[twins][self.value])
        self.inner = ModelTuner(self.half, lambda qs: featurize([self.up(q) for q in qs]), seed,
                                **options)  # type: ignore[arg-type]
        self.twins_taken = 0  # picks that ran as a twin

    @property
    def feature_budget(self) -> int:
        return self.inner.feature_budget

    @feature_budget.setter
    def feature_budget(self, value: int) -> None:
        self.inner.feature_budget = value

    @property
    def spearman_history(self) -> list[float]:
        return self.inner.spearman_history

    def up(self, q: int) -> int:
        """The space's index of the half's point ``q``."""
        g = list(self.half.genome(q))
        g[self.pos] = self.value
        p = self.space.index(g)
        assert p is not None
        return p

    def down(self, p: int) -> int | None:
        """The half's index of the space's point ``p``; None outside the half. (A point without the knob, a
        loop schedule among flat ones, is in every half: its home is itself.)"""
        q = self._home(p)
        return q if q is not None and self.up(q) == p else None

    def _home(self, p: int) -> int | None:
        """The half's index of ``p`` with the knob at the walk's value; None where that does not fit."""
        g = list(self.space.genome(p))
        g[self.pos] = 0   # the half's one value
        return self.half.index(g)

    def _value(self, p: int) -> int:
        """The knob's value index at ``p``."""
        return self.space.genome(p)[self.pos]

    def twins(self, p: int) -> list[int]:
        """``p`` at each other value of the knob that fits (none for a point without the knob)."""
        return [t for v in range(len(self.space.domains[self.knob])) if v != self._value(p)
                and (t := self._at(p, v)) is not None and t != p]

    def _at(self, p: int, v: int) -> int | None:
        """``p`` with the knob at value index ``v``; None where that does not fit."""
        g = list(self.space.genome(p))
        g[self.pos] = v
        return self.space.index(g)

    def next_batch(self, n: int) -> list[int]:
        own: list[int] = []  # seeds outside the half (another run's best): measured as they are
        for p in self._take_seeds(len(self.seeds)):
            q = self.down(p)
            if q is None:
                own.append(p)
            else:
                self.inner.seeds.append(q)
        self.seeds = own[n:]
        batch = own[:n]
        seeded = set(self.inner.seeds)
        seen = {self._value(p) for p, c in self.measured.items() if math.isfinite(c)}   # values with a measurement
        for q in self.inner.next_batch(n - len(batch)):
            batch.append(self.up(q) if q in seeded else self._choose(self.up(q), batch, seen))
        return self._fill_random(batch, n)  # the half measured whole: the rest of the space

    def _choose(self, p: int, batch: list[int], seen: set[int]) -> int:
        """``p`` or the twin the model predicts fastest (``p`` on a tie); a twin already in the batch is out.
        ``seen``: the knob's values the model has measurements in."""
        twins = [t for t in self.twins(p) if t not in batch]
        if not twins:
            return p
        X = self.featurize([p, *twins])
        pred, base = self.inner.model.predict(X), self.inner.model.base(X)
        # the trees learn the prior's error only where they saw measurements: in a dataflow with none, their
        # output is an extrapolation (on make demo's depthwise conv it ran 7 of 16 trials as OS twins 1.7-2.7x
        # slower), so a twin in one takes p's error, and the call between them is the prior's
        blind = [self._value(t) not in seen for t in twins]
        pred[1:] = np.where(blind, base[1:] + pred[0] - base[0], pred[1:])
        best = int(np.argmin(pred))
        self.twins_taken += best > 0
        return [p, *twins][best]

    def update(self, points: Sequence[int], cycles: Sequence[float], stopped: Sequence[bool] = ()) -> None:
        super().update(points, cycles, stopped)
        flags = _flags(stopped, len(points))
        halves = [self.down(p) for p in points]
        twins = [(p, c, s) for p, c, s, q in zip(points, cycles, flags, halves) if q is None]
        self.inner.learn([q for p, _, _ in twins if (q := self._home(p)) is not None],   # the points they stood for
                         self.featurize([p for p, _, _ in twins]), [c for _, c, _ in twins], [s for *_, s in twins])
        inside = [(q, c, s) for q, c, s in zip(halves, cycles, flags) if q is not None]
        self.inner.update([q for q, _, _ in inside], [c for _, c, _ in inside], [s for *_, s in inside])


TUNERS = {"model": ModelTuner, "random": RandomTuner, "grid": GridTuner, "ga": GeneticTuner}


def make_tuner(name: str, space: Space, featurize: Featurizer, seed: int = 0, **options: object) -> Tuner:
    """A tuner by name: "model", "random", "grid" or "ga". The model tuner's option ``twins`` names a knob
    whose value the model picks for each candidate instead of the walk (default "dataflow": a
    :class:`TwinTuner`, where the space has more than one); None walks every knob."""
    if name not in TUNERS:
        raise ValueError(f"tuner={name!r} is not one of {sorted(TUNERS)}")
    if name == "model":
        twins = options.pop("twins", "dataflow")
        if twins in space.names and len(space.domains[twins]) > 1:
            return TwinTuner(space, featurize, seed, twins=twins, **options)  # type: ignore[arg-type]
        return ModelTuner(space, featurize, seed, **options)  # type: ignore[arg-type]
    return TUNERS[name](space, seed, **options)  # type: ignore[arg-type]
