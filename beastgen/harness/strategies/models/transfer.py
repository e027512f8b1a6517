"""Rank transfer from prior sources (other GPUs' or problem sizes' measurements of the same space),
trusted by how well each source ranks this run's own measurements.

Each source is a column of normal scores of its ranks (:func:`beastgen.harness.priors.source_column`;
nan where it lacks a configuration). After
every few measurements here, each source's Spearman rank correlation with the measured log times
(over the configurations both know) becomes its trust: ``exp((rho - best rho) / temperature)``,
so a source that disagrees with what is measured here loses its say fast. The consensus of a
configuration is the trust-weighted mean of the sources' values (a source lacking it counts it at
its median, 0: no say). :class:`Transfer` is that consensus as a model; the guided search
proposes the open configurations in its order (its lowest first) for a share of its proposals.
Nothing here cuts or proves anything.
"""
from __future__ import annotations

import numpy as np

from .base import Model, Schedule


def rank_correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho of two equally long vectors (tied values share their mean rank; 0 when
    either is constant or there are fewer than 3 values)."""
    if len(a) < 3:
        return 0.0
    ra, rb = _ranks(a), _ranks(b)
    norm = np.sqrt((ra @ ra) * (rb @ rb))
    return float(ra @ rb / norm) if norm > 0 else 0.0


def _ranks(values: np.ndarray) -> np.ndarray:
    """Each value's rank (ties: their mean rank), centred on 0."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    first = np.cumsum(counts) - counts
    ranks = (first + (counts - 1) / 2.0)[inverse.reshape(-1)]
    return ranks - ranks.mean()


class Transfer(Model):
    """The sources' trust-weighted consensus as a model: its score of a configuration is the
    consensus (a ranking on the normal-score scale, not a time; spread 0).

    ``sources``: n x sources (see the module docstring); ``temperature``: how fast trust falls
    with a source's rank correlation below the best one's. Refitted after every new measurement."""

    log_times = False

    def __init__(self, sources: np.ndarray, temperature: float):
        super().__init__(Schedule(0.0, 1))
        self.sources = sources
        self.known = ~np.isnan(sources)
        self.temperature = temperature
        self.trust = np.full(sources.shape[1], 1.0 / sources.shape[1])
        self.consensus = self._consensus()

    def _consensus(self) -> np.ndarray:
        """A source lacking a configuration counts it at its median (0)."""
        return np.nan_to_num(self.sources) @ self.trust

    def learn(self, history) -> None:
        """Re-weigh the sources by their rank correlation with this run's measurements."""
        measured, y = np.asarray(history.measured, dtype=np.int64), np.asarray(history.log_times)
        rho = np.array([rank_correlation(self.sources[measured[k], s], y[k])
                        for s in range(self.sources.shape[1])
                        for k in [self.known[measured, s]]])
        trust = np.exp((rho - rho.max()) / self.temperature)
        self.trust = trust / trust.sum()
        self.consensus = self._consensus()

    def score(self, indices):
        return self.consensus[indices], np.zeros(len(indices))
