"""Cost model: gradient-boosted trees over candidate features, predicting log cycles per MAC.

The target is log2(cycles / MACs of the workload): it puts workloads of every
size on one scale, so records of other workloads can train the same model
(transfer), and, the MACs being one number per workload, within one workload it
ranks exactly as cycles do. (The stream's own ideal, compute instructions x dim,
is not such a constant: a conv schedule's tiling changes how many compute
instructions it issues, so cycles per *that* ideal ranks conv schedules badly.)
"""
from __future__ import annotations

import numpy as np
from scipy.stats import spearmanr
from sklearn.ensemble import HistGradientBoostingRegressor
from threadpoolctl import threadpool_limits

from .features import DMA_CYCLES, IDEAL, MACS, NOT_ESTIMATED, PRIOR

MIN_SAMPLES = 4  # below this the model abstains and the search falls back to random picks


def _log_macs(X: np.ndarray) -> np.ndarray:
    """log2 of the workload's MACs, from its shape features (log2(1 + MACs)): one value per workload."""
    return np.log2(np.maximum(np.exp2(np.asarray(X, dtype=np.float64)[:, MACS]) - 1.0, 1.0))


def target(X: np.ndarray, cycles: np.ndarray) -> np.ndarray:
    """log2(cycles / MACs); the MACs come from the features."""
    return np.log2(np.asarray(cycles, dtype=np.float64)) - _log_macs(X)


def prior(X: np.ndarray) -> np.ndarray:
    """An analytical estimate in the target's units, from the features alone: the features' prior
    (log_prior_cycles: the kind's closed-form estimate, any length, for matmul and conv2d; the
    stand-in's cycles for other kinds where the stream was short enough to run it), else
    log2((DMA cycles + compute cycles) / MACs), the stream's transfers and computes with no overlap.

    It needs no measurement, so it ranks the first candidates; the boosted model then learns
    what it gets wrong (its residual).
    """
    X = np.asarray(X, dtype=np.float64)
    roofline = np.exp2(X[:, DMA_CYCLES]) + np.exp2(X[:, IDEAL]) - 2.0  # features hold log2(1 + x)
    est = np.where(X[:, PRIOR] == NOT_ESTIMATED, roofline, np.exp2(X[:, PRIOR]) - 1.0)
    return np.log2(np.maximum(est, 1.0)) - _log_macs(X)


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman rank correlation, nan when it is undefined (fewer than 3 points, or a constant side)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(spearmanr(a, b).statistic)


class CostModel:
    """Refit from scratch on every call to :meth:`fit` (cheap at tuning sizes, and never stale).

    With ``use_prior`` (the default) the trees fit the residual of :func:`prior`, and an
    unfitted model predicts the prior itself; without it, an unfitted model predicts zeros.

    Stopped candidates (``fit(stopped=...)``: run to the cycle cap, their cycles the cap) are
    right-censored: the record says only that the candidate costs at least its cap. Learnt as a cost,
    a cap of 3x the best makes a region 20x slower look 3x, and where the prior knew it slow, the trees
    learn that the prior is too pessimistic there. So, ``censored`` (the default), the model takes one
    EM-like step of censored regression (Schmee and Hahn's iterative estimate, a Tobit model's, in the
    limit of no noise): trees fitted on the completed runs alone predict each stopped one, its target
    becomes the larger of that prediction and its bound, and the final trees fit every point. A
    prediction above the bound is what the rest of the records say and the bound allows; one below it
    is raised to the least the record says. (Tobit's conditional mean would add a margin above the
    bound set by the noise, which trees fitted in-sample give no honest measure of. Further rounds
    change little: the trees reproduce their own training targets.) ``censored=False`` learns the caps
    as costs, as before. Without stopped points the fit is one fit, as it always was.
    """

    def __init__(self, seed: int = 0, max_iter: int = 200, learning_rate: float = 0.08,
                 use_prior: bool = True, censored: bool = True) -> None:
        self.seed, self.max_iter, self.learning_rate = seed, max_iter, learning_rate
        self.use_prior, self.censored = use_prior, censored
        self._model: HistGradientBoostingRegressor | None = None
        self.n_train = 0

    @property
    def fitted(self) -> bool:
        return self._model is not None

    def fit(self, X: np.ndarray, cycles: np.ndarray, weights: np.ndarray | None = None,
            stopped: np.ndarray | None = None) -> "CostModel":
        """``stopped``: per row, whether its cycles are a cycle cap the candidate ran into (a lower bound)."""
        X = np.asarray(X, dtype=np.float64)
        self.n_train = len(X)
        if len(X) < MIN_SAMPLES:
            self._model = None
            return self
        y = target(X, cycles) - self.base(X)
        bound = np.zeros(len(X), bool) if stopped is None else np.asarray(stopped, bool)
        if self.censored and bound.any():
            y = self._complete(X, y, weights, bound)
        self._model = self._trees(X, y, weights)
        return self

    def _complete(self, X: np.ndarray, y: np.ndarray, weights: np.ndarray | None, bound: np.ndarray) -> np.ndarray:
        """``y`` with each stopped row's target raised to what trees fitted on the completed rows predict
        there, where that is above its bound (too few completed rows: the base's prediction, the prior)."""
        done = ~bound
        guess = np.zeros(int(bound.sum()))   # the residual of the base: the base itself
        if done.sum() >= MIN_SAMPLES:
            guess = self._trees(X[done], y[done], None if weights is None else weights[done]).predict(X[bound])
        out = y.copy()
        out[bound] = np.maximum(y[bound], guess)
        return out

    def _trees(self, X: np.ndarray, y: np.ndarray, weights: np.ndarray | None) -> HistGradientBoostingRegressor:
        model = HistGradientBoostingRegressor(
            max_iter=self.max_iter, learning_rate=self.learning_rate, max_leaf_nodes=15,
            min_samples_leaf=int(np.clip(len(X) // 20, 2, 20)), l2_regularization=1e-3,
            early_stopping=False, random_state=self.seed)
        with threadpool_limits(1, "openmp"):  # tuning-sized data: OpenMP only spins against the measuring workers
            model.fit(X, y, sample_weight=weights)
        return model

    def base(self, X: np.ndarray) -> np.ndarray:
        """What the trees correct: the prior, or zeros without one (the prediction while unfitted)."""
        X = np.asarray(X, dtype=np.float64)
        return prior(X) if self.use_prior else np.zeros(len(X))

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Predicted log2(cycles / MACs) (lower is better); the prior (or zeros) while unfitted."""
        X = np.asarray(X, dtype=np.float64)
        if self._model is None:
            return self.base(X)
        with threadpool_limits(1, "openmp"):
            return self.base(X) + self._model.predict(X)

    def predict_cycles(self, X: np.ndarray) -> np.ndarray:
        return np.exp2(_log_macs(X) + self.predict(X))

    def rank_correlation(self, X: np.ndarray, cycles: np.ndarray) -> float:
        """Spearman correlation between predicted and measured cycles on records it did not train on."""
        return spearman(self.predict(X), target(np.asarray(X, dtype=np.float64), cycles))


def holdout_spearman(X: np.ndarray, cycles: np.ndarray, *, seed: int = 0, fraction: float = 0.25) -> float:
    """Fit on a random (1 - fraction) of the records and report Spearman on the rest."""
    n = len(X)
    rng = np.random.default_rng(seed)
    test = rng.permutation(n)[:max(3, int(n * fraction))]
    train = np.setdiff1d(np.arange(n), test)
    model = CostModel(seed).fit(X[train], np.asarray(cycles)[train])
    return model.rank_correlation(X[test], np.asarray(cycles)[test])
