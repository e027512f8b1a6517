"""Extremely randomised trees (Geurts, Ernst and Wehenkel 2006), a regression forest in NumPy.

Every tree is grown on all the samples; at each node every feature gets one cut drawn uniformly
between its smallest and largest value there, and the cut that reduces the squared error most is
kept; nodes are split until they hold fewer than ``2 * leaf`` samples or no cut separates them.
All trees grow together, level by level, so a fit is a few dozen vectorised passes whatever the
number of trees. :meth:`ExtraTrees.predict_all` gives every tree's prediction: their mean is the
forest's estimate and their spread its uncertainty. :class:`Forest` is the guided search's
model on it.
"""
from __future__ import annotations

import numpy as np

from .base import Model, Schedule


class ExtraTrees:
    """``ExtraTrees(trees, leaf, rng).fit(x, y)`` then ``predict_all(rows)`` -> (trees, rows)."""

    def __init__(self, trees: int = 16, leaf: int = 1, rng: np.random.Generator | None = None):
        self.trees, self.leaf = trees, leaf
        self.rng = rng if rng is not None else np.random.default_rng(0)

    def fit(self, x: np.ndarray, y: np.ndarray) -> "ExtraTrees":
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        n, t = len(y), self.trees
        # one row per (tree, sample); node ids count over all trees, tree k's root is node k
        sample, node = np.tile(np.arange(n), t), np.repeat(np.arange(t), n)
        self.feature, self.threshold = np.full(t, -1), np.zeros(t)
        self.left, self.value = np.full(t, -1), np.full(t, y.mean() if n else 0.0)
        active = np.ones(len(sample), dtype=bool)
        while active.any():
            rows = np.flatnonzero(active)
            nodes, inverse = np.unique(node[rows], return_inverse=True)
            feature, cut = self._cuts(x[sample[rows]], y[sample[rows]], inverse, len(nodes))
            split = feature >= 0
            count = len(self.value)
            child = np.full(len(nodes), -1)
            child[split] = count + 2 * np.arange(int(split.sum()))
            self.feature[nodes[split]], self.threshold[nodes[split]] = feature[split], cut[split]
            self.left[nodes[split]] = child[split]
            moving = split[inverse]
            rows, inverse = rows[moving], inverse[moving]
            right = x[sample[rows], feature[inverse]] > cut[inverse]
            node[rows] = child[inverse] + right
            active[:] = False
            active[rows] = True
            width = 2 * int(split.sum())
            sums = np.bincount(node[rows] - count, y[sample[rows]], width)
            sizes = np.bincount(node[rows] - count, minlength=width)
            self.feature = np.concatenate([self.feature, np.full(width, -1)])
            self.threshold = np.concatenate([self.threshold, np.zeros(width)])
            self.left = np.concatenate([self.left, np.full(width, -1)])
            self.value = np.concatenate([self.value, sums / np.maximum(sizes, 1)])
        return self

    def _cuts(self, x, y, inverse, k):
        """Per node (``inverse``: each row's node among ``k``), the best random cut: (feature, value);
        feature -1 where no cut leaves ``leaf`` samples on both sides and lowers the error."""
        size = np.bincount(inverse, minlength=k)
        total = np.bincount(inverse, y, k)
        best_gain, best_feature, best_cut = np.full(k, 1e-12), np.full(k, -1), np.zeros(k)
        for j in range(x.shape[1]):
            low, high = np.full(k, np.inf), np.full(k, -np.inf)
            np.minimum.at(low, inverse, x[:, j])
            np.maximum.at(high, inverse, x[:, j])
            cut = low + (high - low) * self.rng.random(k)
            goes = x[:, j] <= cut[inverse]
            n_left = np.bincount(inverse, goes, k)
            s_left = np.bincount(inverse, y * goes, k)
            n_right = size - n_left
            usable = (n_left >= self.leaf) & (n_right >= self.leaf) & (high > low)
            with np.errstate(divide="ignore", invalid="ignore"):
                gain = s_left ** 2 / n_left + (total - s_left) ** 2 / n_right - total ** 2 / size
            better = usable & (gain > best_gain)
            best_gain = np.where(better, gain, best_gain)
            best_feature = np.where(better, j, best_feature)
            best_cut = np.where(better, cut, best_cut)
        return best_feature, best_cut

    def predict_all(self, x: np.ndarray) -> np.ndarray:
        """Every tree's prediction for every row of ``x``: shape (trees, rows)."""
        x = np.asarray(x, dtype=float)
        width = x.shape[1]
        flat = x.reshape(-1)
        at = np.repeat(np.arange(self.trees), len(x))  # (tree, row) pairs, tree-major
        row = np.tile(np.arange(len(x)) * width, self.trees)
        moving = np.flatnonzero(self.feature[at] >= 0)
        while len(moving):  # only the pairs still at an inner node move down
            node = at[moving]
            right = flat[row[moving] + self.feature[node]] > self.threshold[node]
            at[moving] = self.left[node] + right
            moving = moving[self.feature[at[moving]] >= 0]
        return self.value[at].reshape(self.trees, len(x))


class Forest(Model):
    """The guided search's forest: ``trees`` extra trees grown on every measurement's ``inputs``
    (n x features), refitted on ``schedule``. The trees learn the log times less a ``baseline``
    (a function of the history giving every candidate's log time from elsewhere, added back to
    their predictions; :func:`no_baseline`: none). Mean: the trees' mean; spread: their spread."""

    def __init__(self, inputs: np.ndarray, trees: int, schedule: Schedule, rng: np.random.Generator,
                 baseline):
        super().__init__(schedule)
        self.inputs, self.trees, self.rng, self.baseline = inputs, trees, rng, baseline

    def learn(self, history) -> None:
        measured, y = np.asarray(history.measured), np.asarray(history.log_times)
        self.base = self.baseline(history)
        self.forest = ExtraTrees(self.trees, rng=self.rng).fit(self.inputs[history.measured],
                                                               y - self.base[measured])

    def score(self, indices):
        each = self.forest.predict_all(self.inputs[indices])
        return self.base[indices] + each.mean(axis=0), each.std(axis=0)


def no_baseline(history) -> np.ndarray:
    """Zero for every candidate: the trees learn the log times themselves."""
    return np.zeros(len(history.open))
