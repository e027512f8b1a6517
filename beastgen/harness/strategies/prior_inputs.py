"""The Gaussian process's inputs with priors: the parameters and the sources' scores side by side.

With one length scale per input column (:mod:`.gaussian_process`), the process learns from this
run's measurements how far each source's ranking carries to this GPU (a short length scale on a
source: its score matters here; a long one: it does not) and, through the parameters' own length
scales, where in the space the sources stop carrying (an optimum that no other GPU ranks first).
Nothing here cuts or proves anything.
"""
from __future__ import annotations

import numpy as np


def gp_inputs(indices: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """n x (parameters + sources + sources lacking some): ``indices`` (each parameter's value
    index scaled to [0, 1]), each source's score (``prior``: n x sources, nan where the source
    lacks a configuration) scaled to [0, 1] with a lacking configuration at the source's mean,
    and for each source that lacks some configurations an indicator of lacking."""
    columns = [indices]
    lacking = np.isnan(prior)
    for s in range(prior.shape[1]):
        known = prior[~lacking[:, s], s]
        if not len(known):
            continue
        low, high = known.min(), known.max()
        scaled = (prior[:, s] - low) / (high - low) if high > low else prior[:, s] * 0.0
        columns.append(np.where(lacking[:, s], scaled[~lacking[:, s]].mean(), scaled)[:, None])
        if lacking[:, s].any():
            columns.append(lacking[:, s, None].astype(float))
    return np.concatenate(columns, axis=1)
