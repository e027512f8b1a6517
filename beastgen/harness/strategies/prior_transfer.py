"""Rank transfer from prior sources (other GPUs' or problem sizes' measurements of the same space),
trusted by how well each source ranks this run's own measurements.

Each source is a column of normal scores of its ranks (:func:`beastgen.harness.priors.source_column`;
nan where it lacks a configuration). After
every few measurements here, each source's Spearman rank correlation with the measured log times
(over the configurations both know) becomes its trust: ``exp((rho - best rho) / temperature)``,
so a source that disagrees with what is measured here loses its say fast. The consensus of a
configuration is the trust-weighted mean of the sources' values (a source lacking it counts it at
its median, 0: no say). :class:`Transfer` proposes
the open configurations in consensus order; :mod:`.learnt_order` mixes those proposals with its
models'. Nothing here cuts or proves anything.
"""
from __future__ import annotations

import numpy as np


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


class Transfer:
    """The open configurations in the order of the sources' trust-weighted consensus.

    ``prior``: n x sources (see the module docstring); ``temperature``: how fast trust falls
    with a source's rank correlation below the best one's."""

    def __init__(self, prior: np.ndarray, temperature: float):
        self.prior = prior
        self.known = ~np.isnan(prior)
        self.temperature = temperature
        self.trust = np.full(prior.shape[1], 1.0 / prior.shape[1])
        self.queue, self.position, self.fitted = self._order(), 0, 0

    def _order(self) -> np.ndarray:
        """Configurations by consensus: a source lacking one counts it at its median (0)."""
        return np.argsort(np.nan_to_num(self.prior) @ self.trust, kind="stable")

    def refit(self, measured: list[int], log_times: list[float]) -> None:
        """Re-weigh the sources by their rank correlation with this run's measurements."""
        measured, y = np.asarray(measured, dtype=np.int64), np.asarray(log_times)
        rho = np.array([rank_correlation(self.prior[measured[k], s], y[k])
                        for s in range(self.prior.shape[1])
                        for k in [self.known[measured, s]]])
        trust = np.exp((rho - rho.max()) / self.temperature)
        self.trust = trust / trust.sum()
        self.queue, self.position, self.fitted = self._order(), 0, len(measured)

    def next(self, available: np.ndarray) -> int | None:
        """The first configuration in consensus order that ``available`` allows, or None."""
        while self.position < len(self.queue):
            i = int(self.queue[self.position])
            if available[i]:
                return i
            self.position += 1
        return None

