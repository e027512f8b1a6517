"""A Gaussian process of log run time in NumPy (the model of Kernel Tuner's Bayesian optimisation,
Willemsen et al. 2021); :class:`Process` is the guided search's model on it.

Inputs are each parameter's value index scaled to [0, 1]; the kernel is Matern-5/2 with one length
scale per parameter (ARD); outputs are the log times standardised. The hyperparameters (length
scales, signal and noise variance) maximise the log marginal likelihood by a few steps of Adam
on its analytic gradient, from the previous fit and from a default start; every fit is a Cholesky
factorisation with jitter.
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


class GaussianProcess:
    """``GaussianProcess().fit(x, y, steps)`` then ``predict(rows)`` -> (mean, standard deviation)."""

    def __init__(self):
        self.theta: np.ndarray | None = None  # log length scales..., log signal, log noise

    def fit(self, x: np.ndarray, y: np.ndarray, steps: int = 0) -> "GaussianProcess":
        """Condition on (``x``, ``y``); with ``steps`` > 0 first refit the hyperparameters."""
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        self.offset, self.scale = y.mean(), y.std() if y.std() > 0 else 1.0
        z = (y - self.offset) / self.scale
        default = np.concatenate([np.full(x.shape[1], START_LENGTH), [0.0, START_NOISE]])
        if self.theta is None or len(self.theta) != len(default):
            self.theta = default
        if steps:
            starts = [self.theta, default]
            fits = [_adam(x, z, start, steps) for start in starts]
            self.theta = max(fits, key=lambda fit: fit[1])[0]
        self.x, self.z = x, z
        chol, self.alpha = _factor(x, z, self.theta)
        self.half_inverse = np.linalg.solve(chol, np.eye(len(z)))  # L^-1
        return self

    def predict(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and standard deviation of log time at ``rows``."""
        length, signal = np.exp(self.theta[:-2]), math.exp(self.theta[-2])
        cross = signal * _matern(_distance(np.asarray(rows, dtype=float) / length, self.x / length))
        mean = cross @ self.alpha
        half = self.half_inverse @ cross.T  # L^-1 k*, (train, rows)
        variance = np.maximum(signal - (half * half).sum(axis=0), 1e-12)
        return self.offset + self.scale * mean, self.scale * np.sqrt(variance)


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


def _factor(x, z, theta):
    """(Cholesky factor of the kernel matrix with noise and jitter, its solve of ``z``)."""
    length, signal, noise = np.exp(theta[:-2]), math.exp(theta[-2]), math.exp(theta[-1])
    chol = np.linalg.cholesky(_kernel(x / length, signal, noise)[0])
    alpha = np.linalg.solve(chol.T, np.linalg.solve(chol, z))
    return chol, alpha


def likelihood(x: np.ndarray, z: np.ndarray, theta: np.ndarray) -> tuple[float, np.ndarray]:
    """Log marginal likelihood of ``z`` at hyperparameters ``theta`` and its gradient."""
    length, signal, noise = np.exp(theta[:-2]), math.exp(theta[-2]), math.exp(theta[-1])
    scaled = x / length
    k, r = _kernel(scaled, signal, noise)
    chol = np.linalg.cholesky(k)
    inverse = np.linalg.solve(chol.T, np.linalg.solve(chol, np.eye(len(z))))
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
    """The guided search's Gaussian process on ``inputs`` (n x columns in [0, 1]), conditioned on
    the best half of at most ``training`` measurements and a random rest (``rng``) whenever it
    proposes; its hyperparameters refitted by ``steps`` of Adam after ``refit`` more measurements
    (at least ``least``). Failures are never measurements, so never trained on."""

    def __init__(self, inputs: np.ndarray, training: int, refit: float, least: int, steps: int,
                 rng: np.random.Generator):
        super().__init__(Schedule(0.0, 0))  # conditioned anew whenever asked
        self.inputs, self.training, self.steps, self.rng = inputs, training, steps, rng
        self.tuning = Schedule(refit, least, restart_on_violation=False)
        self.process = GaussianProcess()

    def ready(self, history) -> bool:
        return len(history.measured) >= 2 and history.codes.shape[1] > 0

    def learn(self, history) -> None:
        y = np.asarray(history.log_times)
        chosen = np.argsort(y, kind="stable")
        if len(chosen) > self.training:
            half = self.training // 2
            rest = self.rng.choice(chosen[half:], self.training - half, replace=False)
            chosen = np.concatenate([chosen[:half], rest])
        steps = self.steps if self.tuning.due(history) else 0
        self.process.fit(self.inputs[np.asarray(history.measured)[chosen]], y[chosen], steps)
        if steps:
            self.tuning.done(history)

    def score(self, indices):
        return self.process.predict(self.inputs[indices])
