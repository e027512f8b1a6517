"""What the guided search's models see of a configuration, computed when a model asks for it
(:class:`Rows`: on a space of half a million configurations a proposal reads a few thousand rows)
from the :class:`~.history.History`, each parameter's numeric values (``values``: n x
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


class Rows:
    """A feature matrix computed on demand: ``rows[indices]`` is its rows ``indices`` (a list or
    array of candidates), ``make(indices)`` computed then; every entry is a function of its own
    candidate (and of statistics of the whole column, computed once), so a row is the same
    whichever rows are asked with it. On a large space a model thus reads only the rows it scores."""

    def __init__(self, make, width: int):
        self.make, self.width = make, width

    def __getitem__(self, indices) -> np.ndarray:
        return self.make(np.asarray(indices, dtype=np.int64).reshape(-1))


@dataclass
class RegressionFeatures:
    """``hot``: rows of h column numbers of the ones (below ``hot_width``; the pairs' columns from
    ``pairs_from``); ``dense``: rows of d columns after them."""
    hot: Rows
    hot_width: int
    pairs_from: int
    dense: Rows

    @property
    def width(self) -> int:
        return self.hot_width + self.dense.width


def regression_features(history, values: np.ndarray) -> RegressionFeatures:
    codes, sizes = history.codes, history.sizes
    starts, offset = [], 0
    for size in sizes:
        starts.append(offset)
        offset += int(size)
    pairs_from, pairs = offset, []
    for a in range(len(sizes)):
        for b in range(a + 1, len(sizes)):
            pairs.append((a, b, offset))
            offset += int(sizes[a] * sizes[b])

    def hot(indices):
        c = codes[indices]
        columns = [start + c[:, j] for j, start in enumerate(starts)]
        columns += [start + c[:, a] * sizes[b] + c[:, b] for a, b, start in pairs]
        return (np.stack(columns, axis=1).astype(np.int32) if columns
                else np.zeros((len(indices), 0), np.int32))

    logs = _numeric_logs(values, standard=True)
    bound = log_bound(history)

    def dense(indices):
        c = codes[indices]
        columns = [c[:, j] / (size - 1) for j, size in enumerate(sizes)]
        own = [column(indices) for column in logs]
        columns += own
        columns += [own[a] * own[b] for a in range(len(own)) for b in range(a, len(own))]
        columns += [column(indices) for column in bound]
        return np.stack(columns, axis=1) if columns else np.zeros((len(indices), 0))

    width = len(sizes) + len(logs) + len(logs) * (len(logs) + 1) // 2 + len(bound)
    return RegressionFeatures(Rows(hot, len(starts) + len(pairs)), offset, pairs_from,
                              Rows(dense, width))


def with_sources(features: RegressionFeatures, sources: np.ndarray) -> RegressionFeatures:
    """``features`` and, last, per source whether it lacks the configuration (only sources that
    lack some) and its score (0 where lacking)."""
    missing = np.isnan(sources)
    lacking = [s for s in range(sources.shape[1]) if missing[:, s].any()]

    def dense(indices):
        own, gone = sources[indices], missing[indices]
        extra = [gone[:, s].astype(float) for s in lacking] + list(np.where(gone, 0.0, own).T)
        return np.concatenate([features.dense[indices], np.stack(extra, axis=1)], axis=1)

    return RegressionFeatures(features.hot, features.hot_width, features.pairs_from,
                              Rows(dense, features.dense.width + len(lacking) + sources.shape[1]))


def log_bound(history) -> list:
    """The standardised log of the lower bound (the smallest positive one where none) as a
    function of the candidates, or nothing when no bound is positive."""
    bounds = history.bounds
    positive = bounds > 0
    if not positive.any():
        return []
    return [_rows_of(_standard(np.log(np.where(positive, bounds, bounds[positive].min()))))]


def forest_inputs(history) -> list:
    """The value indices and the log bound, as functions of the candidates."""
    codes = history.codes
    return [lambda indices, j=j: codes[indices, j] for j in range(codes.shape[1])] + log_bound(history)


def derived_inputs(values: np.ndarray) -> list:
    """Pairwise sums and differences of the numeric parameters' log values, as one function of
    the candidates giving all of them (each log value read once)."""
    logs = _numeric_logs(values, standard=False)
    if len(logs) < 2:
        return []

    def block(indices):
        own = [log(indices) for log in logs]
        return np.stack([own[a] + sign * own[b] for a in range(len(own))
                         for b in range(a + 1, len(own)) for sign in (1, -1)], axis=1)
    return [block]


def source_inputs(sources: np.ndarray) -> list:
    """Each source's score, a configuration it lacks past its slowest, as functions of the
    candidates."""
    past = [np.nanmax(c, initial=0.0) + 1 for c in sources.T]
    return [lambda indices, s=s: np.where(np.isnan(sources[indices, s]), past[s], sources[indices, s])
            for s in range(sources.shape[1])]


def stacked(columns: list) -> Rows:
    """The columns (functions of the candidates giving one value, or a block of values, per
    candidate) side by side as floats (one column of zeros when there is none)."""
    def make(indices):
        if not columns:
            return np.zeros((len(indices), 1))
        parts = [column(indices) for column in columns]
        return np.concatenate([(part[:, None] if part.ndim == 1 else part).astype(float)
                               for part in parts], axis=1)
    return Rows(make, make(np.zeros(0, np.int64)).shape[1])


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


def _numeric_logs(values: np.ndarray, standard: bool) -> list:
    """Per parameter numeric in every candidate, its log value (standardised over every candidate
    when ``standard``) as a function of the candidates."""
    logs = []
    for j in range(values.shape[1]):
        if np.isnan(values[:, j]).any():
            continue
        log = np.log2(np.maximum(values[:, j], 0) + 1)
        logs.append(_rows_of(_standard(log) if standard else log))
    return logs


def _rows_of(column: np.ndarray):
    """``column`` (one value per candidate) as a function of the candidates."""
    return lambda indices: column[indices]


def _standard(column: np.ndarray) -> np.ndarray:
    """``column`` shifted to mean 0 and scaled to spread 1 (constant: zeros)."""
    spread = column.std()
    return (column - column.mean()) / spread if spread > 0 else column * 0.0
