"""How sure the guided search is that its best is within a tolerance of the space's optimum: a
model's estimate, never a proof (the bounds' certificate is the proof where there are bounds).

A configuration can only be more than ``tolerance`` faster than the best time ``b`` if it is
open and its valid bound is below ``b / (1 + tolerance)``; for each such one the Gaussian process
gives the probability ``p`` that its log time is below ``log(b / (1 + tolerance))`` (its mean and
spread, the spread scaled by ``spread``), and ``a``, how likely the backend is to answer it at all
(a replay file lacks most configurations of some spaces: :meth:`.history.History.answerable`).
The expected number of such configurations is ``E = sum(a p)`` (over the process's candidates,
scaled to all that are open), and the estimate is ``exp(-E)``: the chance that there is none if
they come independently. ``spread`` is meant to be calibrated by leave-one-GPU-out over the
replay files (``benchmarks/search/confidence.py``) so that of the runs that stop at 95%, 95% or more
have a best within 1% of their file's optimum; no spread tried does that yet (issue 41's record in
``benchmarks/search/RESEARCH.md``), so the estimate is not calibrated.
"""
from __future__ import annotations

import math

import numpy as np


class Confidence:
    """``estimate(best)``: the probability, by the model of ``proposer`` (a
    :class:`~.proposers.ModelMinimum` of the Gaussian process), that no configuration left is more
    than ``tolerance`` faster than ``best``."""

    def __init__(self, history, proposer, tolerance: float, spread: float):
        self.history, self.proposer = history, proposer
        self.tolerance, self.spread = tolerance, spread

    def expected_better(self, best: float, spreads=None) -> float | list[float]:
        """``E`` (module docstring): 0 when no configuration can be better, inf when the model
        cannot tell yet (before its hyperparameters are first fitted); with ``spreads``, a list:
        ``E`` for each spread instead of the option's."""
        history = self.history
        threshold = best / (1 + self.tolerance)
        alive = history.alive(threshold)
        chosen = [self.spread] if spreads is None else list(spreads)
        if not alive.any():
            found = [0.0] * len(chosen)
        elif not math.isfinite(best) or not self.proposer.model.ready(history):
            found = [math.inf] * len(chosen)
        else:
            found = self._expected(best, threshold, alive, chosen)
        return found[0] if spreads is None else found

    def _expected(self, best, threshold, alive, spreads) -> list[float]:
        from scipy.special import ndtr  # SciPy where used: a tune's start-up stays fast
        history = self.history
        self.proposer.model.refresh(history)
        if not self.proposer.model.tuned:
            return [math.inf] * len(spreads)
        pool, mean, deviation = self.proposer.scores(best)
        keep = alive[pool]
        if not keep.any():
            return [math.inf] * len(spreads)
        pool, mean, deviation = pool[keep], mean[keep], deviation[keep]
        weight = history.answerable(pool)
        scale = history.answerable(np.flatnonzero(alive)).sum() / weight.sum()
        below = math.log(threshold) - mean
        return [float((weight * ndtr(below / (deviation * s))).sum() * scale) for s in spreads]

    def estimate(self, best: float) -> float:
        return math.exp(-self.expected_better(best))
