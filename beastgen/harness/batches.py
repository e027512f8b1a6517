"""Who measures the search's candidates: the one search loop (:meth:`.tuning.Tuning.search`) holds
the algorithm (the strategy's proposals, the results store, the limits, branch and bound's cuts)
and hands the candidates that must run to a batch runner, a batch at a time; the runner gives back
each candidate's outcome. :class:`MeasureHere` measures them in this process as they are sent (so
the strategy sees every result before its next proposal); the Dask pool
(:class:`beastgen.distributed.pool.OnGPUWorkers`) measures batches on GPU workers, several in flight.
"""
from __future__ import annotations

from abc import ABC, abstractmethod

#: the outcome's status of a candidate a runner did not run: its valid bound was not below the best
#: time the runner knew (a strategy that prunes only); the search loop sends it again should a later
#: result make it a candidate after all
CUT = "cut"


class BatchRunner(ABC):
    """Measures batches of ``(candidate, key)``; an outcome is ``(status, time, times, message)``
    as :func:`.tuning.measure` gives it, or ``(CUT, None, None, None)``."""

    #: candidates sent and not given back yet
    in_flight: int = 0

    @abstractmethod
    def batch_size(self) -> int:
        """The most candidates the next batch should hold."""

    @abstractmethod
    def full(self) -> bool:
        """Whether the next batch must wait until one in flight comes back."""

    @abstractmethod
    def send(self, batch: list) -> None:
        """Start measuring ``batch``: ``[(candidate, key), ...]``."""

    @abstractmethod
    def collect(self, block: bool) -> list:
        """``[(candidate, key, outcome), ...]`` of what came back since the last call; with
        ``block``, after waiting for at least one batch in flight."""

    def close(self) -> None:
        """Give up what is still in flight."""


class MeasureHere(BatchRunner):
    """One candidate at a time, measured in this process when it is sent by ``measure(config) ->
    outcome``: nothing stays in flight."""

    def __init__(self, measure):
        self.measure = measure
        self.done: list = []

    def batch_size(self) -> int:
        return 1

    def full(self) -> bool:
        return False

    def send(self, batch: list) -> None:
        self.done += [(candidate, key, self.measure(candidate.config)) for candidate, key in batch]

    def collect(self, block: bool) -> list:
        done, self.done = self.done, []
        return done
