"""Estimation: Knuth's random descents and Chen's heuristic sampling (the generated ``probe`` and
``chen``) of the number of valid configurations, with a 95% confidence interval, or within a time
budget (the exact count where it fits)."""
from __future__ import annotations

import time

from ...errors import BeastError
from .chunking import CENSUS_SAMPLES_PER_NODE, balanced_chunks
from .counter import Counter
from .executable import Executable
from .results import Estimate


class Estimator:
    """``estimate`` and ``estimate_sums`` on one :class:`~.executable.Executable` (its
    :class:`~.counter.Counter` for the exact count within a time budget)."""

    def __init__(self, executable: Executable, counter: Counter):
        self.executable = executable
        self.counter = counter

    #: default ``samples`` per method: a Chen run expands whole depths, far more work than a descent
    ESTIMATE_SAMPLES = {"knuth": 100_000, "chen": 30_000}

    def estimate(self, samples: int | None = None, seed: int = 0, method: str = "chen",
                 seconds: float | None = None) -> "Estimate":
        """An unbiased estimate of the number of valid configurations, with a 95% confidence interval
        (normal approximation over the ``samples`` independent estimates), for spaces too large to
        count. ``method="chen"``: runs of Chen's heuristic sampling (the generated ``chen``), each far
        more work than a descent and far less variable; ``method="knuth"``: random descents (Knuth's
        estimator, the generated ``probe``). ``samples=None`` takes :attr:`ESTIMATE_SAMPLES` of the
        method. Chen is the default: on gemm (h100) at equal time its interval is 4 to 5 times
        narrower, but a run costs about, per stratum, the product of two consecutive levels' domain
        sizes (the lookahead), where a descent costs their sum.

        With ``seconds`` (and no ``samples``), a time budget: the exact count (method ``"exact"``,
        an interval of one point) when the split census predicts it fits in half the budget and it
        does, else batches of runs until the budget is spent (at most :attr:`ESTIMATE_SAMPLES`)."""
        run = self.executable
        self._check_estimate(1 if samples is None else int(samples), method)
        if seconds is not None and samples is None:
            return self._estimate_within(float(seconds), seed, method)
        samples = self.ESTIMATE_SAMPLES[method] if samples is None else int(samples)
        if run.path is None:  # an empty space (its plan is not needed to know that)
            return Estimate(0.0, 0.0, 0.0, samples, 0.0, method)
        total, total_sq = self.estimate_sums(samples, seed, method)
        return Estimate.of_sums(total, total_sq, samples, run.last_seconds, method)

    def _check_estimate(self, samples: int, method: str) -> None:
        if method not in self.ESTIMATE_SAMPLES:
            raise BeastError(f"unknown estimation method {method!r} (knuth or chen)")
        if samples < 1:
            raise BeastError("an estimate needs at least one sample")
        self.check_estimable()

    def check_estimable(self) -> None:
        """Refuse (one line naming the iterator and its place) a space whose descents would scan a
        level of more than :attr:`.Counter.SCAN_LIMIT` values: an estimate would never end."""
        huge = self.counter.huge_scanned_level()
        if huge is not None:
            item, size = huge
            raise BeastError(
                f"{item.origin}: cannot estimate: iterator '{item.name}' has {size:,} values, and every "
                "random descent (and run of Chen's sampling) scans each value of its level; narrow "
                "its domain, or count the space (beastgen count)")

    def estimate_sums(self, samples: int, seed: int, method: str) -> tuple[float, float]:
        """(sum, sum of squares) of ``samples`` independent estimates drawn with ``seed``: what
        :meth:`estimate` summarises (the sums of several seeds merge into one estimate)."""
        run = self.executable
        self._check_estimate(samples, method)
        total, total_sq = run.run("probe" if method == "knuth" else "chen", int(samples), int(seed))
        return float(total), float(total_sq)

    def _estimate_within(self, budget: float, seed: int, method: str) -> Estimate:
        run = self.executable
        if run.path is None:
            return Estimate(0.0, 0.0, 0.0, 0, 0.0, "exact")
        import numpy as np
        function = "probe" if method == "knuth" else "chen"
        for name, args in ((function, (1, 0)), ("probe", (1, 0)),
                           ("census", (0, 0, np.zeros(0), np.zeros(0)))):
            run.compiled(name, *args)  # all compiling before the clock starts
        self.counter.compile_chunking(jobs=1)
        run.split_node_count()
        start = time.perf_counter()
        exact = self._count_if_cheap(budget / 2, start) if self._census_fits(budget / 4) else None
        if exact is not None:
            return Estimate(float(exact), float(exact), float(exact), 0, time.perf_counter() - start,
                            "exact")
        total = total_sq = 0.0
        samples, batch, limit = 0, 1, self.ESTIMATE_SAMPLES[method]
        sampling = time.perf_counter()
        while samples < self.ESTIMATE_MIN_SAMPLES or (samples < limit and
                                                      time.perf_counter() - start < budget):
            # each batch its own stream: independent of the others, reproducible from ``seed``
            part, part_sq = run.run(function, batch, (int(seed) << 24) + samples)
            total, total_sq, samples = total + part, total_sq + part_sq, samples + batch
            per_sample = (time.perf_counter() - sampling) / samples
            left = budget - (time.perf_counter() - start)
            batch = int(max(1, min(2 * batch, left / per_sample if per_sample > 0 else 2 * batch,
                                   limit - samples)))
        return Estimate.of_sums(total, total_sq, samples, time.perf_counter() - start, method)

    #: runs or descents a time-budgeted estimate takes even past its budget (two make no interval)
    ESTIMATE_MIN_SAMPLES = 10
    #: Knuth descents timed to predict the cost of the split census
    _TIMED_DESCENTS = 32

    def _census_fits(self, budget: float) -> bool:
        """Whether the split census (``CENSUS_SAMPLES_PER_NODE`` descents below each split node)
        should end within ``budget`` seconds, predicted from timed whole descents (an overestimate:
        a census descent starts at the split level). A wide space has millions of split nodes, and
        its census would take minutes before the estimate even starts."""
        run = self.executable
        start = time.perf_counter()
        run.run("probe", self._TIMED_DESCENTS, 0)
        per_descent = (time.perf_counter() - start) / self._TIMED_DESCENTS
        return run.split_node_count() * CENSUS_SAMPLES_PER_NODE * per_descent <= budget

    #: loop iterations per second assumed before the first chunk of an exact count has run
    _ASSUMED_RATE = 1e8

    def estimate_needs_compiling(self, method: str) -> bool:
        """Whether a time-budgeted estimate compiles first (Numba's cache lacks its functions)."""
        run = self.executable
        functions = ("probe" if method == "knuth" else "chen", "probe", "census")
        return run.path is not None and not all(map(run.numba_cached, functions))

    def _count_if_cheap(self, budget: float, start: float) -> int | None:
        """The exact count, in chunks balanced by the census's estimated work (loop iterations), if
        it takes less than ``budget`` seconds: None as soon as the next chunk, at the rate measured
        so far, would end past the budget. (A census far below the real work can overrun it.)"""
        import numpy as np
        run = self.executable
        census = self.counter.split_census(samples_per_node=CENSUS_SAMPLES_PER_NODE)
        work = np.maximum(np.nan_to_num(census.iterations, nan=0.0, posinf=np.inf), 0.0)
        count = done_work = 0
        for lo, hi in balanced_chunks(work, 64):
            spent = time.perf_counter() - start
            rate = done_work / spent if done_work and spent > 0 else self._ASSUMED_RATE
            chunk_work = float(work[lo:hi].sum())
            if spent + chunk_work / rate > budget:
                return None
            count += int(run.run("count", lo, hi))
            done_work += chunk_work
        return int(count) * run.counted_tail
