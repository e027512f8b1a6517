"""An adaptive share of the model's proposals among their kinds, learnt during the run.

Without priors the learnt order's model proposals come from several kinds (the regression, the
extra-trees forest, the Gaussian process, crossover). :class:`KindBandit` gives each kind a share
of them that follows what its own proposals measured: the reward of a proposal is the fraction of
the configurations measured before it that were slower, to a power (1 for a new best, 0 for a
failure or no time); each kind's reward is a discounted mean (``discount`` per model proposal
measured, one pseudo-measurement at the mean over all kinds); the share of kind k is its base
share times ``exp(gain x mean_k)``, normalised, mixed with a ``floor`` fraction of the base
shares so that no kind is starved. The turns are dealt deterministically (the kind furthest
behind its share is next), so with equal means the kinds alternate in their base shares as
fixed shares would.
"""
from __future__ import annotations

import numpy as np


class KindBandit:
    """Shares of ``len(shares)`` kinds of proposals, adapted to their rewards."""

    def __init__(self, shares, gain: float, discount: float, floor: float):
        self.base = np.asarray(shares, dtype=float)
        self.gain, self.discount, self.floor = gain, discount, floor
        self.total = np.zeros(len(self.base))  # discounted sums of rewards
        self.count = np.zeros(len(self.base))  # discounted numbers of rewards
        self.credit = np.zeros(len(self.base))  # turns owed to each kind

    def shares(self, available: np.ndarray) -> np.ndarray:
        """Each kind's share of the next turn (0 for those not ``available``): a ``floor``
        fraction of the base shares, the rest the base shares weighted by ``exp(gain x mean)``."""
        pooled = (self.total.sum() + 0.5) / (self.count.sum() + 1.0)
        mean = (self.total + pooled) / (self.count + 1.0)
        base = np.where(available, self.base, 0.0)
        weight = base * np.exp(self.gain * (mean - mean.max()))
        return self.floor * base / base.sum() + (1 - self.floor) * weight / weight.sum()

    def choose(self, available: np.ndarray) -> int:
        """The kind of the next model proposal, among those ``available`` (a boolean per kind)."""
        self.credit += self.shares(available)
        kind = int(np.argmax(np.where(available, self.credit, -np.inf)))
        self.credit[kind] -= 1.0
        return kind

    def reward(self, kind: int, value: float) -> None:
        """A proposal of ``kind`` measured with reward ``value`` in [0, 1]."""
        self.total *= self.discount
        self.count *= self.discount
        self.total[kind] += value
        self.count[kind] += 1.0
