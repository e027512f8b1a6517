"""The guided search's proposers: each names the next configuration to measure among those still
open and not cut by the best time (``propose(best)``: an index into the
:class:`~.history.History`, or None when it has none to offer), and may watch the results
(``observe``). The :class:`~.mixer.Mixer` gives each its share of the proposals.
"""
from __future__ import annotations

import math

import numpy as np


class Proposer:
    def propose(self, best: float) -> int | None:
        raise NotImplementedError

    def observe(self, i: int, time: float | None) -> None:
        """Candidate ``i`` gave ``time`` (see :meth:`.history.History.observe`)."""


class SmallestBoundThenRandom(Proposer):
    """The opening without priors: while nothing is measured, the smallest valid bound (Telamon's
    first step; where some bound is positive), otherwise uniformly at random."""

    def __init__(self, history, rng: np.random.Generator):
        self.history, self.rng = history, rng

    def propose(self, best):
        alive = np.flatnonzero(self.history.alive(best))
        if not len(alive):
            return None
        valid = self.history.valid[alive]
        if not self.history.measured and valid.max() > 0:
            return int(alive[np.argmin(valid)])
        return int(self.rng.choice(alive))


class SourcesFirst(Proposer):
    """The opening with priors: the best by the sources' mean score (those lacking it left out;
    a configuration no source knows comes last)."""

    def __init__(self, history, sources: np.ndarray):
        self.history = history
        known = ~np.isnan(sources)
        total = np.where(known, sources, 0.0).sum(axis=1)
        mean = np.where(known.any(axis=1), total / np.maximum(known.sum(axis=1), 1), np.inf)
        self.order = np.argsort(mean, kind="stable")

    def propose(self, best):
        alive = self.history.alive(best)[self.order]
        return int(self.order[np.argmax(alive)]) if alive.any() else None


class ModelMinimum(Proposer):
    """The open configuration with the smallest lower confidence bound of a model: mean minus
    ``kappa`` spreads (a log-time model's never below the configuration's valid bound), among at
    most ``candidates`` open configurations drawn at random (None: all). They are drawn when the
    model is fitted from scratch (its ``generation``), scored and queued whenever it is fitted,
    and taken in that order; a queue that runs dry while configurations are open (they were not
    drawn) is fitted and queued again."""

    def __init__(self, history, model, kappa: float, candidates: int | None,
                 rng: np.random.Generator):
        self.history, self.model, self.kappa = history, model, kappa
        self.candidates, self.rng = candidates, rng
        self.queue, self.position, self.queued = np.zeros(0, dtype=np.int64), 0, 0  # fits queued
        self.drawn, self.pool = -1, np.zeros(0, dtype=np.int64)  # the generation drawn for

    def propose(self, best):
        history = self.history
        if not self.model.ready(history):
            return None
        self.model.refresh(history)
        for attempt in range(2):
            if self.queued != self.model.fits:
                self._queue(best)
            while self.position < len(self.queue):
                i = int(self.queue[self.position])
                self.position += 1
                if history.open[i] and history.valid[i] < best:
                    return i
            if attempt == 0:
                self.model.fit(history)
        return None

    def scores(self, best: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(the drawn candidates, their mean, their spread) by the model as fitted now; drawn
        anew after a fit from scratch or when none of them is open and not cut by ``best``."""
        alive = self.history.alive(best)
        if self.drawn != self.model.generation or not alive[self.pool].any():
            pool = np.flatnonzero(alive)
            if self.candidates is not None and len(pool) > self.candidates:
                pool = self.rng.choice(pool, self.candidates, replace=False)
            self.pool, self.drawn = pool, self.model.generation
        mean, spread = self.model.score(self.pool)
        return self.pool, mean, spread

    def _queue(self, best: float) -> None:
        pool, mean, spread = self.scores(best)
        score = mean - self.kappa * spread
        if self.model.log_times:
            score = self.history.floor(pool, score)
        order = np.argsort(score, kind="stable")
        self.queue = pool[order[self.history.alive(best)[pool][order]]]
        self.position, self.queued = 0, self.model.fits


class Local(Proposer):
    """The open configuration one parameter away from one of the ``top`` best measured ones (the
    best first) that ``ranking`` (a log-time model kept fitted by the mixer) predicts fastest:
    the last percent is found there."""

    def __init__(self, history, ranking, top: int):
        self.history, self.ranking, self.top = history, ranking, top
        self.best: list[tuple[float, int]] = []  # (time, candidate) of the fastest measured

    def observe(self, i, time):
        measured = time is not None and math.isfinite(time) and time > 0
        if measured and (len(self.best) < self.top or time < self.best[-1][0]):
            self.best = sorted(self.best + [(time, i)])[:self.top]

    def propose(self, best):
        history = self.history
        alive = history.alive(best)
        for _, i in self.best:
            near = history.neighbours(i)
            near = near[alive[near]]
            if len(near):
                return int(near[np.argmin(history.floor(near, self.ranking.score(near)[0]))])
        return None


class Crossover(Proposer):
    """Of ``children`` children of two of the ``top`` best measured configurations (each
    parameter's value from either parent, one in d of them redrawn at random), the open one that
    ``ranking`` predicts fastest. Kernel Tuner's best strategies on the replay files (genetic,
    pso, diff_evo) are such recombinations."""

    def __init__(self, history, ranking, top: int, children: int, rng: np.random.Generator):
        self.history, self.ranking, self.top, self.children, self.rng = history, ranking, top, children, rng

    def propose(self, best):
        history = self.history
        if len(history.measured) < 2 or not history.codes.shape[1]:
            return None
        k = min(self.top, len(history.measured))
        top = np.asarray(history.measured)[np.argsort(history.log_times, kind="stable")[:k]]
        m, d = self.children, history.codes.shape[1]
        first = history.codes[top[self.rng.integers(k, size=m)]]
        second = history.codes[top[self.rng.integers(k, size=m)]]
        child = np.where(self.rng.random((m, d)) < 0.5, first, second)
        redrawn = self.rng.random((m, d)) < 1.0 / d
        child = np.where(redrawn, (self.rng.random((m, d)) * history.sizes).astype(np.int64), child)
        found = history.find(child)
        found = found[history.alive(best)[found]]
        if not len(found):
            return None
        return int(found[np.argmin(history.floor(found, self.ranking.score(found)[0]))])
