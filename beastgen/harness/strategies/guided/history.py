"""What the guided search knows during a run, shared by every model and proposer: the candidates
(each varying parameter's value index, the lower bound and the term that dominates it), which are
still open (neither measured nor proposed), the valid bounds (0 where a measurement violated the
term), the measurements in order, and the neighbour index (the candidates one parameter away).
"""
from __future__ import annotations

import math

import numpy as np


class History:
    """``codes[i, j]``: candidate i's value index of parameter j among that parameter's values in
    increasing order; ``bounds[i]``: its lower bound in seconds (nan: none); ``terms[i]``: the
    index of its dominating bound term."""

    def __init__(self, codes: np.ndarray, bounds: np.ndarray, terms: np.ndarray):
        n = len(bounds)
        self.bounds = np.where(np.isnan(bounds), 0.0, np.asarray(bounds, dtype=float))
        self.terms = np.asarray(terms, dtype=np.int64)
        self.violated = np.zeros(int(self.terms.max(initial=0)) + 1, dtype=bool)
        self.violations = 0  # terms violated so far
        self.valid = self.bounds.copy()
        self.open = np.ones(n, dtype=bool)
        self.measured: list[int] = []  # candidates with a time, in measurement order
        self.log_times: list[float] = []
        codes = np.asarray(codes, dtype=np.int64).reshape(n, -1)
        #: the parameters that take more than one value, their value indices and value counts
        self.varying = [j for j in range(codes.shape[1]) if codes[:, j].max(initial=0) > 0]
        self.codes = codes[:, self.varying]
        self.sizes = np.array([int(codes[:, j].max()) + 1 for j in self.varying], dtype=np.int64)
        #: closed without an answer from the backend (a replay file lacks them): never measured,
        #: so still possibly faster than the best
        self.unanswered = np.zeros(n, dtype=bool)
        self._neighbour_index(codes)

    # -- what is open --------------------------------------------------------------------------
    def alive(self, best: float) -> np.ndarray:
        """Open and not cut by ``best`` (a valid bound below it)."""
        return self.open & (self.valid < best)

    def lower_bound(self, best: float) -> float:
        """The smallest valid bound among the open candidates not cut by ``best`` (inf: none): the
        optimum among them is at least that."""
        alive = self.alive(best)
        return float(self.valid[alive].min()) if alive.any() else math.inf

    def unknown(self, best: float) -> np.ndarray:
        """Never measured (open, or closed without an answer) and not cut by ``best``: where the
        space's optimum may still be faster than ``best``."""
        return (self.open | self.unanswered) & (self.valid < best)

    def floor(self, indices: np.ndarray, log_times: np.ndarray) -> np.ndarray:
        """Predicted ``log_times`` of ``indices``, never below their valid bound."""
        with np.errstate(divide="ignore"):
            return np.maximum(log_times, np.log(self.valid[indices]))

    # -- what happened -------------------------------------------------------------------------
    def observe(self, i: int, time: float | None) -> None:
        """Candidate ``i`` was measured in ``time`` seconds (inf: failed; None: no time)."""
        self.open[i] = False
        self.unanswered[i] = time is None
        if time is not None and math.isfinite(time) and time > 0:
            self.measured.append(i)
            self.log_times.append(math.log(time))

    def violate(self, term: int) -> None:
        """A measurement proved term ``term`` wrong: it cuts nothing any more."""
        if not self.violated[term]:
            self.violated[term] = True
            self.violations += 1
            self.valid = np.where(self.violated[self.terms], 0.0, self.bounds)

    # -- neighbours ----------------------------------------------------------------------------
    def _neighbour_index(self, codes: np.ndarray) -> None:
        """The candidates sorted by a random 64-bit hash of their codes: the candidates one
        parameter away from i are found by hashing i's codes with that parameter's value changed
        (a collision would only add a far candidate to the proposals, never change a result)."""
        weights = np.random.default_rng(0).integers(1, 2**63, codes.shape[1], dtype=np.uint64) | np.uint64(1)
        varying = codes.max(axis=0, initial=0) > 0
        with np.errstate(over="ignore"):
            self.full = (codes.astype(np.uint64) * weights).sum(axis=1, dtype=np.uint64)
        self.full_weights = weights[varying]
        self.full_order = np.argsort(self.full, kind="stable")
        self.full_sorted = self.full[self.full_order]
        self.near: dict[int, np.ndarray] = {}

    def neighbours(self, i: int) -> np.ndarray:
        """The candidates one parameter away from candidate ``i`` (and any with the same codes,
        once per parameter): those of the first varying parameter first, each parameter's in
        increasing index."""
        if i in self.near:
            return self.near[i]
        parts = []
        for j, (weight, size) in enumerate(zip(self.full_weights, self.sizes)):
            with np.errstate(over="ignore"):
                changed = (self.full[i] - np.uint64(self.codes[i, j]) * weight
                           + np.arange(size, dtype=np.uint64) * weight)
            low = np.searchsorted(self.full_sorted, changed, "left")
            count = np.searchsorted(self.full_sorted, changed, "right") - low
            at = np.repeat(low - np.cumsum(count) + count, count) + np.arange(count.sum())
            parts.append(np.sort(self.full_order[at]))
        near = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        self.near[i] = near[near != i]
        return self.near[i]

    def find(self, codes: np.ndarray) -> np.ndarray:
        """The candidates whose varying parameters' value indices are rows of ``codes`` (rows that
        are no candidate are left out), in the rows' order."""
        with np.errstate(over="ignore"):
            hashes = (codes.astype(np.uint64) * self.full_weights).sum(axis=1, dtype=np.uint64)
        at = np.minimum(np.searchsorted(self.full_sorted, hashes), len(self.full_sorted) - 1)
        return self.full_order[at[self.full_sorted[at] == hashes]]
