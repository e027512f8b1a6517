"""A Gaussian process of log run time (the model of Kernel Tuner's Bayesian optimisation,
Willemsen et al. 2021); :class:`Process` is the guided search's model on it.

Inputs are each parameter's value index scaled to [0, 1]; the kernel is Matern-5/2 with one length
scale per parameter (ARD); outputs are the log times standardised. The hyperparameters (length
scales, signal and noise variance) maximise the log marginal likelihood by a few steps of Adam
on its analytic gradient, from the previous fit and from a default start; a fit is a Cholesky
factorisation with jitter.

Its cost is bounded: a training row is added to the factorisation in O(n^2) (``extend``), and the
posterior of the sets of rows that it watches (``watch``: the proposer's candidates, the
confidence's own) is kept current through each addition in O(n) per row, so scoring them is a
matrix-vector product; only a fit (new hyperparameters, a new training set) refactors and
rewatches, in O(n^3 + n^2 m).
"""
from __future__ import annotations

import math

import numpy as np

from .base import Model, Schedule

SQRT5 = math.sqrt(5.0)
#: the hyperparameters' start (length scale on inputs in [0, 1], noise variance on standardised
#: outputs; signal variance 1) and the box every fit keeps them in, in logs (the hyperprior)
START_LENGTH, START_NOISE = math.log(0.5), math.log(0.1)
LOG_LOW, LOG_HIGH = -7.0, 5.0
#: Adam's step size on the log hyperparameters
RATE = 0.1
#: added to the kernel matrix's diagonal, relative to the signal variance
JITTER = 1e-6
#: the smallest posterior variance (relative to the signal's) a prediction reports
SMALLEST_VARIANCE = 1e-12


class GaussianProcess:
    """``fit(x, y, steps)``, then ``predict(rows)`` -> (mean, standard deviation); ``extend(rows,
    y)`` adds training rows; ``watch(rows, key)`` and ``predict_watched(key)`` keep the posterior of
    a set of rows (one per ``key``, independent of the others) current at O(n) per row and training
    row."""

    def __init__(self):
        self.theta: np.ndarray | None = None  # log length scales..., log signal, log noise
        self.watched: dict = {}  # key: [rows, L^-1 k(train, rows), explained variance per row]

    def fit(self, x: np.ndarray, y: np.ndarray, steps: int = 0) -> "GaussianProcess":
        """Condition on (``x``, ``y``); with ``steps`` > 0 first refit the hyperparameters."""
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        default = np.concatenate([np.full(x.shape[1], START_LENGTH), [0.0, START_NOISE]])
        if self.theta is None or len(self.theta) != len(default):
            self.theta = default
        self._standardise(y)
        if steps:
            fits = [_adam(x, self.z, start, steps) for start in (self.theta, default)]
            self.theta = max(fits, key=lambda fit: fit[1])[0]
        self.length, self.signal = np.exp(self.theta[:-2]), math.exp(self.theta[-2])
        self.noise = math.exp(self.theta[-1])
        self.x = x
        self.chol = np.linalg.cholesky(_kernel(x / self.length, self.signal, self.noise)[0])
        self._condition()
        self.watched = {}
        return self

    def extend(self, rows: np.ndarray, y: np.ndarray) -> None:
        """Add training ``rows``; ``y``: every training output, the earlier ones first."""
        from scipy.linalg import solve_triangular  # SciPy where used: a tune's start-up stays fast
        for row in np.asarray(rows, dtype=float):
            k = self._cross(row[None, :], self.x)[0]
            part = solve_triangular(self.chol, k, lower=True)
            diagonal = math.sqrt(max(self.signal * (1 + JITTER) + self.noise - part @ part,
                                     SMALLEST_VARIANCE * self.signal))
            n = len(self.x)
            chol = np.zeros((n + 1, n + 1))
            chol[:n, :n], chol[n, :n], chol[n, n] = self.chol, part, diagonal
            self.chol, self.x = chol, np.concatenate([self.x, row[None, :]])
            for watched in self.watched.values():
                rows_watched, half, explained = watched
                new = (self._cross(row[None, :], rows_watched)[0] - part @ half) / diagonal
                watched[1] = np.concatenate([half, new[None, :]])
                explained += new * new
        self._standardise(np.asarray(y, dtype=float))
        self._condition()

    def predict(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and standard deviation of log time at ``rows``."""
        from scipy.linalg import solve_triangular
        half = solve_triangular(self.chol, self._cross(np.asarray(rows, dtype=float), self.x).T,
                                lower=True)  # L^-1 k*, (train, rows)
        return self._posterior(half, (half * half).sum(axis=0))

    def watch(self, rows: np.ndarray, key=None) -> None:
        """Keep the posterior of ``rows`` current from now on (:meth:`predict_watched` with the
        same ``key``), in place of the rows watched under that key before."""
        from scipy.linalg import solve_triangular
        rows = np.asarray(rows, dtype=float)
        half = solve_triangular(self.chol, self._cross(rows, self.x).T, lower=True)
        self.watched[key] = [rows, half, (half * half).sum(axis=0)]

    def predict_watched(self, key=None) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`predict` of the rows watched under ``key``, in O(n) per row."""
        _, half, explained = self.watched[key]
        return self._posterior(half, explained)

    def _posterior(self, half, explained):
        variance = np.maximum(self.signal - explained, SMALLEST_VARIANCE * self.signal)
        return self.offset + self.scale * (half.T @ self.w), self.scale * np.sqrt(variance)

    def _standardise(self, y: np.ndarray) -> None:
        self.offset, self.scale = y.mean(), y.std() if y.std() > 0 else 1.0
        self.z = (y - self.offset) / self.scale

    def _condition(self) -> None:
        from scipy.linalg import solve_triangular
        self.w = solve_triangular(self.chol, self.z, lower=True)  # L^-1 z: the mean is k*' L'^-1 w

    def _cross(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self.signal * _matern(_distance(a / self.length, b / self.length))


def _distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Euclidean distances between the rows of ``a`` and of ``b``."""
    squared = (a * a).sum(axis=1)[:, None] + (b * b).sum(axis=1)[None, :] - 2.0 * a @ b.T
    return np.sqrt(np.maximum(squared, 0.0))


def _matern(r: np.ndarray) -> np.ndarray:
    """Matern-5/2 correlation at scaled distance ``r``."""
    return (1.0 + SQRT5 * r + 5.0 / 3.0 * r * r) * np.exp(-SQRT5 * r)


def _kernel(scaled: np.ndarray, signal: float, noise: float):
    """(kernel matrix of the rows ``scaled`` with noise and jitter on its diagonal, their distances
    r)."""
    r = _distance(scaled, scaled)
    k = signal * _matern(r)
    k[np.diag_indices_from(k)] += noise + JITTER * signal
    return k, r


def likelihood(x: np.ndarray, z: np.ndarray, theta: np.ndarray) -> tuple[float, np.ndarray]:
    """Log marginal likelihood of ``z`` at hyperparameters ``theta`` and its gradient."""
    from scipy.linalg import cho_solve
    length, signal, noise = np.exp(theta[:-2]), math.exp(theta[-2]), math.exp(theta[-1])
    scaled = x / length
    k, r = _kernel(scaled, signal, noise)
    chol = np.linalg.cholesky(k)
    inverse = cho_solve((chol, True), np.eye(len(z)))
    alpha = inverse @ z
    value = -0.5 * z @ alpha - np.log(np.diag(chol)).sum() - 0.5 * len(z) * math.log(2 * math.pi)
    outer = np.outer(alpha, alpha) - inverse  # d value = 0.5 tr(outer dK)
    # d k / d log l_d = signal 5/3 (1 + sqrt5 r) exp(-sqrt5 r) (delta_d / l_d)^2
    common = outer * (signal * 5.0 / 3.0 * (1.0 + SQRT5 * r) * np.exp(-SQRT5 * r))
    gradient = np.empty(len(theta))
    for d in range(x.shape[1]):
        delta = scaled[:, d][:, None] - scaled[:, d][None, :]
        gradient[d] = 0.5 * (common * delta * delta).sum()
    gradient[-2] = 0.5 * (outer * (k - noise * np.eye(len(z)))).sum()
    gradient[-1] = 0.5 * noise * np.trace(outer)
    return float(value), gradient


def _adam(x, z, theta, steps, rate=RATE):
    """``steps`` of Adam ascent on the log marginal likelihood from ``theta``: (best theta, value)."""
    theta = np.clip(np.array(theta, dtype=float), LOG_LOW, LOG_HIGH)
    first, second = np.zeros_like(theta), np.zeros_like(theta)
    best = (theta.copy(), -math.inf)
    for step in range(1, steps + 1):
        try:
            value, gradient = likelihood(x, z, theta)
        except np.linalg.LinAlgError:
            break
        if value > best[1]:
            best = (theta.copy(), value)
        first = 0.9 * first + 0.1 * gradient
        second = 0.999 * second + 0.001 * gradient * gradient
        theta = theta + rate * (first / (1 - 0.9 ** step)) / (np.sqrt(second / (1 - 0.999 ** step)) + 1e-8)
        theta = np.clip(theta, LOG_LOW, LOG_HIGH)
    return best


class Process(Model):
    """The guided search's Gaussian process on ``inputs`` (n x columns in [0, 1]).

    Its hyperparameters are refitted by ``steps`` of Adam after ``refit`` more measurements (at
    least ``least``), on a training set of at most ``training`` measurements (the best half and a
    random rest, ``rng``); between those fits every new measurement joins the training set
    (:meth:`GaussianProcess.extend`), which is chosen anew (the hyperparameters kept) once it
    holds twice ``training``. The rows it scores are kept current through the additions
    (``generation`` counts the fits from scratch, after which they are chosen again); each reader
    (``score``'s ``reader``: the proposer, the confidence) has its own. Failures are never
    measurements, so never trained on."""

    def __init__(self, inputs: np.ndarray, training: int, refit: float, least: int, steps: int,
                 rng: np.random.Generator):
        super().__init__(Schedule(0.0, 0))  # every new measurement joins, whenever it is asked
        self.inputs, self.training, self.steps, self.rng = inputs, training, steps, rng
        self.tuning = Schedule(refit, least, restart_on_violation=False)
        self.process = GaussianProcess()
        self.refits = 0
        self.trained: list[int] = []  # positions in the history's measurements
        self.scored: dict = {}  # reader: the indices it scores

    @property
    def generation(self) -> int:
        return self.refits

    def ready(self, history) -> bool:
        return len(history.measured) >= 2 and history.codes.shape[1] > 0

    @property
    def tuned(self) -> bool:
        """Whether its hyperparameters were ever fitted (before, its spread means little)."""
        return self.tuning.at >= 0

    def learn(self, history) -> None:
        y = np.asarray(history.log_times)
        measured = np.asarray(history.measured)
        due = self.tuning.due(history)
        if due or not self.trained or len(self.trained) >= 2 * self.training:
            chosen = np.argsort(y, kind="stable")
            if len(chosen) > self.training:
                half = self.training // 2
                rest = self.rng.choice(chosen[half:], self.training - half, replace=False)
                chosen = np.concatenate([chosen[:half], rest])
            self.trained = [int(k) for k in chosen]
            self.process.fit(self.inputs[measured[chosen]], y[chosen], self.steps if due else 0)
            if due:
                self.tuning.done(history)
            self.refits += 1
            self.scored = {}
        else:
            new = list(range(self.seen, len(measured)))
            self.trained += new
            self.process.extend(self.inputs[measured[new]], y[self.trained])
        self.seen = len(measured)

    def score(self, indices, reader=None):
        """(mean, spread) of ``indices``, kept current for ``reader`` until it asks for others."""
        scored = self.scored.get(reader)
        if scored is None or len(indices) != len(scored) or not np.array_equal(indices, scored):
            self.scored[reader] = np.array(indices)
            self.process.watch(self.inputs[indices], reader)
        return self.process.predict_watched(reader)
