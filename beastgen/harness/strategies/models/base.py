"""What a model of the guided search is: fitted on this run's measurements (the search's
:class:`~..guided.history.History`), it scores candidates by a mean and a spread of their log run
time; proposers (:mod:`..guided.proposers`) choose among the open candidates by those scores. As
TVM's cost models and Optuna's Gaussian process, a model knows nothing of how it is used.

Each model refits on its own :class:`Schedule`; ``fits`` counts its fits, so a proposer that queued
candidates by its scores knows when to queue them again, and ``generation`` its fits from scratch
(a model that updates itself cheaply between them, as the Gaussian process does, scores the same
candidates again until the next).
"""
from __future__ import annotations

import numpy as np


class Schedule:
    """When a model is due for a refit: after ``fraction`` more measurements than at its last fit,
    at least ``least`` more. After a bound term is violated (configurations it ranked may be open
    again) it counts as never fitted, unless ``restart_on_violation`` is false."""

    def __init__(self, fraction: float, least: int, restart_on_violation: bool = True):
        self.fraction, self.least, self.restart_on_violation = fraction, least, restart_on_violation
        self.at = -1  # measurements at the last fit (-1: never)
        self.violations = 0

    def due(self, history) -> bool:
        if self.restart_on_violation and history.violations != self.violations:
            self.at, self.violations = -1, history.violations
        measured = len(history.measured)
        return measured >= self.at + max(self.least, int(self.fraction * measured))

    def done(self, history) -> None:
        self.at, self.violations = len(history.measured), history.violations


class Model:
    """``fit(history)`` on this run's measurements, then ``score(indices)`` -> (mean, spread)."""

    #: its scores are log run times, so a configuration's valid lower bound floors them (False: a
    #: ranking on another scale)
    log_times = True

    def __init__(self, schedule: Schedule):
        self.schedule = schedule
        self.fits = 0

    @property
    def generation(self) -> int:
        """Fits from scratch so far (here every fit)."""
        return self.fits

    def ready(self, history) -> bool:
        """Whether it can be fitted on what is measured (at least one measurement)."""
        return bool(history.measured)

    def refresh(self, history) -> None:
        """Fit it if its schedule says so."""
        if self.schedule.due(history):
            self.fit(history)

    def fit(self, history) -> None:
        self.learn(history)
        self.schedule.done(history)
        self.fits += 1

    def learn(self, history) -> None:
        """Fit on ``history``'s measurements (each model's own)."""
        raise NotImplementedError

    def score(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(mean, spread) of the candidates ``indices``."""
        raise NotImplementedError
