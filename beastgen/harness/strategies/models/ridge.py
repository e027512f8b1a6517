"""A Bayesian ridge regression of log run time, scored by a posterior draw (Thompson sampling).

Features (:mod:`..guided.features`) are one-hot indices (``hot``: n x h column numbers of the
ones) and dense columns; each weight has a Gaussian prior (``variance``, ``mean``: the recipe's
ridge penalties and, with priors, the sources' equal share). A fit draws one weight vector from
the posterior (dual form, since the measurements are few next to the features; Matheron's rule: a
prior draw corrected towards the data) with its spread scaled by ``exploration``, and scores every
candidate by it: uncertain regions come first now and then. The score's spread is 0 (the
exploration is in the draw). On a space of at most ``everywhere`` candidates a fit predicts every
one of them at once; on a larger one (where that would cost more than the rest of a proposal) it
keeps the weights and predicts the candidates a proposer scores when it asks.
"""
from __future__ import annotations

import math

import numpy as np

from .base import Model, Schedule

#: added to the residual sum of squares before the noise is estimated from it (a perfect fit of
#: a handful of measurements would otherwise explore nothing)
NOISE_FLOOR = 1e-4


class ThompsonRidge(Model):
    """The regression over ``hot`` (rows of h one-hot column numbers, below ``hot_width``) and
    ``dense`` (rows of d) features (:class:`~..guided.features.Rows` of the ``n`` candidates),
    refitted on ``schedule`` from at most ``training`` measurements (drawn at random with ``rng``);
    every candidate predicted at each fit when ``n`` is at most ``everywhere``."""

    def __init__(self, hot, hot_width: int, dense, n: int, variance: np.ndarray,
                 mean: np.ndarray, exploration: float, training: int, schedule: Schedule,
                 rng: np.random.Generator, everywhere: int):
        super().__init__(schedule)
        self.hot, self.hot_width, self.dense = hot, hot_width, dense
        self.variance, self.mean = variance, mean
        self.exploration, self.training, self.rng = exploration, training, rng
        self.width = hot_width + dense.width
        self.n = n
        self.every = (hot[np.arange(n)], dense[np.arange(n)]) if n <= everywhere else None
        self.predicted = np.zeros(n) if self.every is not None else None  # (None: scored when asked)
        self.weights, self.offset = None, 0.0

    def learn(self, history) -> None:
        """Draw weights from the posterior given at most ``training`` measurements: prior
        N(mean, noise^2 variance), noise the residual spread (and predict every candidate, where
        the space is small enough)."""
        measured = np.asarray(history.measured)
        chosen = np.arange(len(measured))
        if len(chosen) > self.training:
            chosen = np.sort(self.rng.choice(chosen, self.training, replace=False))
        rows = measured[chosen]
        x = (_Dense if self.every is not None else _OneHot)(self.hot[rows], self.hot_width,
                                                            self.dense[rows], self.variance)
        y = np.asarray(history.log_times)[chosen] - x.times(self.mean)
        offset = y.mean()
        y = y - offset
        draw_weights = np.sqrt(self.variance) * self.rng.standard_normal(self.width)
        draw_noise = self.rng.standard_normal(len(y))
        solved = np.linalg.solve(x.gram() + np.eye(len(y)),
                                 np.stack([y, x.times(draw_weights), draw_noise], axis=1))
        noise = math.sqrt((y @ solved[:, 0] + NOISE_FLOOR) / len(y))  # residual spread
        explore = self.exploration * noise
        dual = solved[:, 0] - explore * (solved[:, 1] + solved[:, 2])
        self.weights = explore * draw_weights + x.scaled_transposed(dual) + self.mean
        self.offset = offset
        if self.every is not None:
            self.predicted = self._predict(*self.every)

    def _predict(self, hot: np.ndarray, dense: np.ndarray) -> np.ndarray:
        weights = self.weights
        return weights[hot].sum(axis=1) + dense @ weights[self.hot_width:] + self.offset

    def score(self, indices):
        if self.predicted is not None:
            return self.predicted[indices], np.zeros(len(indices))
        if self.weights is None:  # not fitted yet
            return np.zeros(len(indices)), np.zeros(len(indices))
        return self._predict(self.hot[indices], self.dense[indices]), np.zeros(len(indices))


class _Dense:
    """The training rows as one dense matrix x (m x width) and the products the fit needs, with
    ``scaled`` = x times the prior variance: x @ v, scaled @ x', scaled' @ u."""

    def __init__(self, hot, hot_width, dense, variance):
        self.x = np.zeros((len(hot), hot_width + dense.shape[1]))
        np.put_along_axis(self.x, hot, 1.0, axis=1)
        self.x[:, hot_width:] = dense
        self.scaled = self.x * variance

    def times(self, v):
        return self.x @ v

    def gram(self):
        return self.scaled @ self.x.T

    def scaled_transposed(self, u):
        return self.scaled.T @ u


class _OneHot(_Dense):
    """The same products from the ones' column numbers, in O(m h) and O(m^2 h) instead of O(m
    width) and O(m^2 width) (a space of many parameter values has tens of thousands of pair
    columns); equal to :class:`_Dense`'s up to rounding."""

    def __init__(self, hot, hot_width, dense, variance):
        self.hot, self.hot_width, self.dense, self.variance = hot, hot_width, dense, variance

    def times(self, v):
        return v[self.hot].sum(axis=1) + self.dense @ v[self.hot_width:]

    def gram(self):
        hot, variance = self.hot, self.variance
        gram = (self.dense * variance[self.hot_width:]) @ self.dense.T
        for g in range(hot.shape[1]):  # one-hot group g: a shared column adds its variance
            gram += (hot[:, g, None] == hot[None, :, g]) * variance[hot[:, g]][:, None]
        return gram

    def scaled_transposed(self, u):
        hot = self.hot
        ones = np.bincount(hot.reshape(-1), np.repeat(u, hot.shape[1]), self.hot_width)
        return self.variance * np.concatenate([ones, self.dense.T @ u])
