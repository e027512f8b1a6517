"""A Bayesian ridge regression of log run time, scored by a posterior draw (Thompson sampling).

Features (:mod:`..guided.features`) are one-hot indices (``hot``: n x h column numbers of the
ones) and dense columns; each weight has a Gaussian prior (``variance``, ``mean``: the recipe's
ridge penalties and, with priors, the sources' equal share). A fit draws one weight vector from
the posterior (dual form, since the measurements are few next to the features; Matheron's rule: a
prior draw corrected towards the data) with its spread scaled by ``exploration``, and scores every
candidate by it: uncertain regions come first now and then. The score's spread is 0 (the
exploration is in the draw).
"""
from __future__ import annotations

import math

import numpy as np

from .base import Model, Schedule

#: added to the residual sum of squares before the noise is estimated from it (a perfect fit of
#: a handful of measurements would otherwise explore nothing)
NOISE_FLOOR = 1e-4


class ThompsonRidge(Model):
    """The regression over ``hot`` (n x h one-hot column numbers, below ``hot_width``) and
    ``dense`` (n x d) features, refitted on ``schedule`` from at most ``training`` measurements
    (drawn at random with ``rng``)."""

    def __init__(self, hot: np.ndarray, hot_width: int, dense: np.ndarray, variance: np.ndarray,
                 mean: np.ndarray, exploration: float, training: int, schedule: Schedule,
                 rng: np.random.Generator):
        super().__init__(schedule)
        self.hot, self.hot_width, self.dense = hot, hot_width, dense
        self.variance, self.mean = variance, mean
        self.exploration, self.training, self.rng = exploration, training, rng
        self.width = hot_width + dense.shape[1]
        self.predicted = np.zeros(len(dense))

    def _rows(self, indices: np.ndarray) -> np.ndarray:
        x = np.zeros((len(indices), self.width))
        np.put_along_axis(x, self.hot[indices], 1.0, axis=1)
        x[:, self.hot_width:] = self.dense[indices]
        return x

    def learn(self, history) -> None:
        """Draw weights from the posterior given at most ``training`` measurements: prior
        N(mean, noise^2 variance), noise the residual spread; predict every candidate."""
        measured = np.asarray(history.measured)
        chosen = np.arange(len(measured))
        if len(chosen) > self.training:
            chosen = np.sort(self.rng.choice(chosen, self.training, replace=False))
        x = self._rows(measured[chosen])
        y = np.asarray(history.log_times)[chosen] - x @ self.mean
        offset = y.mean()
        y = y - offset
        draw_weights = np.sqrt(self.variance) * self.rng.standard_normal(self.width)
        draw_noise = self.rng.standard_normal(len(y))
        scaled = x * self.variance
        solved = np.linalg.solve(scaled @ x.T + np.eye(len(y)),
                                 np.stack([y, x @ draw_weights, draw_noise], axis=1))
        noise = math.sqrt((y @ solved[:, 0] + NOISE_FLOOR) / len(y))  # residual spread
        explore = self.exploration * noise
        dual = solved[:, 0] - explore * (solved[:, 1] + solved[:, 2])
        weights = explore * draw_weights + scaled.T @ dual + self.mean
        self.predicted = (weights[self.hot].sum(axis=1) + self.dense @ weights[self.hot_width:]
                          + offset)

    def score(self, indices):
        return self.predicted[indices], np.zeros(len(indices))
