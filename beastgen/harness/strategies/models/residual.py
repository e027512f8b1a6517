"""The residual model of the priors: this GPU's log time as a linear function of the sources'
scores plus a correction that an extra-trees forest learns from this run's measurements.

Rank transfer (:mod:`.transfer`) can only reorder what the sources already rank well; when
this GPU prefers something no source does (on the A100, one parameter value that every other GPU
ranks low), it needs the correction: the forest, fitted on the residuals of the linear part,
extrapolates "this value is relatively better here" to configurations not measured yet. The
linear part is a ridge regression of the measured log times on the sources' normal scores (one
weight per source, a source lacking a configuration counts it at its median, 0), so a source that
disagrees with this run gets a small or negative weight. Nothing here cuts or proves anything.
"""
from __future__ import annotations

import numpy as np


def linear_part(prior: np.ndarray, measured: np.ndarray, log_times: np.ndarray,
                ridge: float) -> np.ndarray:
    """Every configuration's log time predicted from the sources' scores (``prior``: n x sources,
    nan where a source lacks it) by a ridge regression on the ``measured`` ones' ``log_times``
    (the intercept unpenalised; fewer than two measurements: their mean)."""
    if len(measured) < 2:
        return np.full(len(prior), float(np.mean(log_times)) if len(measured) else 0.0)
    scores = np.nan_to_num(prior)
    x = np.concatenate([np.ones((len(prior), 1)), scores], axis=1)
    penalty = ridge * np.eye(x.shape[1])
    penalty[0, 0] = 0.0
    at = x[measured]
    weights = np.linalg.solve(at.T @ at + penalty, at.T @ log_times)
    return x @ weights


class SourcesBaseline:
    """The forest's baseline with priors (:class:`.extra_trees.Forest`): the sources' linear part
    fitted on the history's measurements with penalty ``ridge``."""

    def __init__(self, sources: np.ndarray, ridge: float):
        self.sources, self.ridge = sources, ridge

    def __call__(self, history) -> np.ndarray:
        return linear_part(self.sources, np.asarray(history.measured), np.asarray(history.log_times),
                           self.ridge)
