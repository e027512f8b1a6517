"""What the guided search's models see of a configuration, computed once per run for every
candidate from the :class:`~.history.History`, each parameter's numeric values (``values``: n x
the varying parameters, nan where not numeric) and, with priors, the sources' scores (``sources``:
n x sources, nan where a source lacks a configuration).

- the regression (:class:`~..models.ridge.ThompsonRidge`): one-hot per parameter value and per
  pair of parameter values (interactions such as tile size x thread count), each parameter's
  value index scaled to [0, 1], each numeric parameter's log value and the products of those (a
  smooth trend that reaches values not yet measured), the log of the lower bound; with priors,
  per source whether it lacks the configuration and its score;
- the forest (:class:`~..models.extra_trees.Forest`): the value indices and the log bound; without
  priors also the pairwise sums and differences of the numeric parameters' log values (log
  products and ratios: threads = block x times block y, work per thread = tile x times tile y);
  with priors the sources' scores (a lacking one past the source's slowest);
- the Gaussian process (:class:`~..models.gaussian_process.Process`): the value indices scaled to
  [0, 1]; with priors the sources' scores beside them (:func:`source_process_inputs`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class RegressionFeatures:
    """``hot``: n x h column numbers of the ones (below ``hot_width``; the pairs' columns from
    ``pairs_from``); ``dense``: n x d columns after them."""
    hot: np.ndarray
    hot_width: int
    pairs_from: int
    dense: np.ndarray

    @property
    def width(self) -> int:
        return self.hot_width + self.dense.shape[1]


def regression_features(history, values: np.ndarray) -> RegressionFeatures:
    codes, sizes, n = history.codes, history.sizes, len(history.open)
    hot, offset = [], 0
    for j, size in enumerate(sizes):
        hot.append(offset + codes[:, j])
        offset += int(size)
    pairs_from = offset
    for a in range(len(sizes)):
        for b in range(a + 1, len(sizes)):
            hot.append(offset + codes[:, a] * sizes[b] + codes[:, b])
            offset += int(sizes[a] * sizes[b])
    dense = [codes[:, j] / (size - 1) for j, size in enumerate(sizes)]
    logs = [_standard(np.log2(np.maximum(values[:, j], 0) + 1)) for j in range(values.shape[1])
            if not np.isnan(values[:, j]).any()]
    dense += logs
    dense += [logs[a] * logs[b] for a in range(len(logs)) for b in range(a, len(logs))]
    dense += log_bound(history)
    return RegressionFeatures(np.stack(hot, axis=1).astype(np.int32) if hot else np.zeros((n, 0), np.int32),
                              offset, pairs_from, np.stack(dense, axis=1) if dense else np.zeros((n, 0)))


def with_sources(features: RegressionFeatures, sources: np.ndarray) -> RegressionFeatures:
    """``features`` and, last, per source whether it lacks the configuration (only sources that
    lack some) and its score (0 where lacking)."""
    missing = np.isnan(sources)
    extra = [column for column in missing.T.astype(float) if column.any()]
    extra += list(np.where(missing, 0.0, sources).T)
    dense = np.concatenate([features.dense, np.stack(extra, axis=1)], axis=1)
    return RegressionFeatures(features.hot, features.hot_width, features.pairs_from, dense)


def log_bound(history) -> list[np.ndarray]:
    """The standardised log of the lower bound (the smallest positive one where none), or nothing
    when no bound is positive."""
    bounds = history.bounds
    positive = bounds > 0
    if not positive.any():
        return []
    return [_standard(np.log(np.where(positive, bounds, bounds[positive].min())))]


def forest_inputs(history) -> list[np.ndarray]:
    """The value indices and the log bound."""
    return [history.codes[:, j] for j in range(history.codes.shape[1])] + log_bound(history)


def derived_inputs(values: np.ndarray) -> list[np.ndarray]:
    """Pairwise sums and differences of the numeric parameters' log values."""
    logs = [np.log2(np.maximum(values[:, j], 0) + 1) for j in range(values.shape[1])
            if not np.isnan(values[:, j]).any()]
    return [logs[a] + sign * logs[b] for a in range(len(logs)) for b in range(a + 1, len(logs))
            for sign in (1, -1)]


def source_inputs(sources: np.ndarray) -> list[np.ndarray]:
    """Each source's score, a configuration it lacks past its slowest."""
    return [np.where(np.isnan(c), np.nanmax(c, initial=0.0) + 1, c) for c in sources.T]


def stacked(columns: list[np.ndarray], n: int) -> np.ndarray:
    """The columns side by side as floats (one column of zeros when there is none)."""
    return np.stack(columns, axis=1).astype(float) if columns else np.zeros((n, 1))


def process_inputs(history) -> np.ndarray:
    """The value indices scaled to [0, 1]."""
    return history.codes / np.maximum(history.sizes - 1, 1)


def source_process_inputs(indices: np.ndarray, sources: np.ndarray) -> np.ndarray:
    """n x (parameters + sources + sources lacking some): ``indices`` (:func:`process_inputs`),
    each source's score scaled to [0, 1] with a lacking configuration at the source's mean, and
    for each source that lacks some configurations an indicator of lacking.

    With one length scale per input column, the process learns from this run's measurements how
    far each source's ranking carries to this GPU (a short length scale on a source: its score
    matters here; a long one: it does not) and, through the parameters' own length scales, where
    in the space the sources stop carrying (an optimum that no other GPU ranks first)."""
    columns = [indices]
    lacking = np.isnan(sources)
    for s in range(sources.shape[1]):
        known = sources[~lacking[:, s], s]
        if not len(known):
            continue
        low, high = known.min(), known.max()
        scaled = (sources[:, s] - low) / (high - low) if high > low else sources[:, s] * 0.0
        columns.append(np.where(lacking[:, s], scaled[~lacking[:, s]].mean(), scaled)[:, None])
        if lacking[:, s].any():
            columns.append(lacking[:, s, None].astype(float))
    return np.concatenate(columns, axis=1)


def _standard(column: np.ndarray) -> np.ndarray:
    """``column`` shifted to mean 0 and scaled to spread 1 (constant: zeros)."""
    spread = column.std()
    return (column - column.mean()) / spread if spread > 0 else column * 0.0
