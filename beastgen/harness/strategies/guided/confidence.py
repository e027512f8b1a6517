"""How sure the guided search is that its best is within a tolerance of the space's optimum: a
model's estimate, never a proof (the bounds' certificate is the proof where there are bounds).

A configuration can only be more than ``tolerance`` faster than the best time ``b`` if it was
never measured (open, or closed without an answer: a replay file lacks it, yet it is in the space
the user asked for) and its valid bound is below ``b / (1 + tolerance)``. For each such one the
Gaussian process gives the probability ``p`` that its log time is below ``log(b / (1 +
tolerance))`` (its mean and spread, the spread scaled by ``spread``). The expected number of such
configurations is ``E = sum(p)`` (over a random sample of them, scaled to all), and the estimate
is ``exp(-E)``: the chance that there is none if they come independently. It is 0 (the model
cannot tell) before the process's hyperparameters are first fitted, before ``after``
measurements, and until ``quiet`` measurements in a row have not improved the best by more than
``tolerance``: the process fitted on a few points is too sure of itself. ``spread``, ``after``
and ``quiet`` are chosen by leave-one-GPU-out over the replay files
(``benchmarks/search/confidence.py``; the record in ``benchmarks/search/RESEARCH.md``).

The estimate only reads the process as the proposers left it (it never refits it) and draws its
sample with its own generator, so computing it changes nothing the search proposes.
"""
from __future__ import annotations

import math

import numpy as np

#: the sample is drawn anew once fewer than this share of it can still be faster than the best
KEPT = 0.5


class Confidence:
    """``estimate(best)``: the probability, by ``process`` (the recipe's Gaussian process, a
    :class:`~..models.gaussian_process.Process` fitted by its proposer), that no configuration of
    the space left is more than ``tolerance`` faster than ``best``; it scores at most
    ``candidates`` configurations drawn by ``rng``."""

    def __init__(self, history, process, candidates: int, tolerance: float, spread: float,
                 after: int, quiet: int, rng: np.random.Generator):
        self.history, self.process, self.candidates = history, process, candidates
        self.tolerance, self.spread, self.after, self.quiet = tolerance, spread, after, quiet
        self.rng = rng
        self.pool, self.drawn = np.zeros(0, dtype=np.int64), None  # the sample, drawn at (fit, violations)

    def expected_better(self, best: float, spreads=None) -> float | list[float]:
        """``E`` (module docstring): 0 when no configuration can be better, inf when the model
        cannot tell yet (before its hyperparameters are first fitted); with ``spreads``, a list:
        ``E`` for each spread instead of the option's."""
        threshold = best / (1 + self.tolerance)
        possible = self.history.unknown(threshold)
        chosen = [self.spread] if spreads is None else list(spreads)
        if not possible.any():
            found = [0.0] * len(chosen)
        elif not math.isfinite(best) or not self.process.ready(self.history) or not self.process.tuned:
            found = [math.inf] * len(chosen)
        else:
            found = self._expected(threshold, possible, chosen)
        return found[0] if spreads is None else found

    def unimproved(self) -> int:
        """Measurements since the last one that improved the best by more than ``tolerance``."""
        times = np.asarray(self.history.log_times)
        if not len(times):
            return 0
        before = np.concatenate([[math.inf], np.minimum.accumulate(times)[:-1]])
        improved = np.flatnonzero(times < before - math.log1p(self.tolerance))
        return len(times) - 1 - int(improved[-1])

    def estimate(self, best: float) -> float:
        expected = self.expected_better(best)
        if expected > 0 and (len(self.history.measured) < self.after or self.unimproved() < self.quiet):
            return 0.0
        return math.exp(-expected)

    def _expected(self, threshold, possible, spreads) -> list[float]:
        from scipy.special import ndtr  # SciPy where used: a tune's start-up stays fast
        keep = possible[self.pool]
        if self.drawn != (self.process.generation, self.history.violations) or \
                keep.sum() < KEPT * len(self.pool):
            pool = np.flatnonzero(possible)
            if len(pool) > self.candidates:
                pool = np.sort(self.rng.choice(pool, self.candidates, replace=False))
            self.pool, self.drawn = pool, (self.process.generation, self.history.violations)
            keep = possible[pool]
        mean, deviation = self.process.score(self.pool, reader="confidence")
        scale = possible.sum() / keep.sum()
        below = (math.log(threshold) - mean[keep]) / deviation[keep]
        return [float(ndtr(below / s).sum() * scale) for s in spreads]
