"""The default search, on any space: configurations visited fastest-predicted first by models
learnt during the run (warm-started by priors when given), with the proof of branch and bound
(Telamon's Algorithm 2) when the space has bound terms.

Branch and bound proves the best once every configuration whose lower bound is below the best
time is measured or cut; the order in which they are measured is free (on a space without bound
terms nothing is ever cut, and the order is the whole search). Measuring fast ones first lowers the
best time early, so more configurations are cut and the proof comes sooner. The order comes from
one of two recipes (:mod:`.recipes`: without priors, with priors), each a list of proposers
(:mod:`.proposers`) over models (:mod:`..models`) sharing one :class:`~.history.History`, mixed by
shares (:mod:`.mixer`). Priors only order the search: they cut nothing.

With bound terms, every configuration is either measured or cut (its valid bound is not below the
best time) before the best is claimed optimal; a term that a measurement violated cuts nothing. At
any moment ``state.lower_bound`` holds the smallest valid bound among the configurations still
open (refreshed every ``certificate_every`` proposals, and at once when a term is violated; in
between it only gets more conservative): the optimum is at least that, so the best time is at most
``best / lower_bound`` times the optimum. Without bound terms nothing is cut: the search ends when
every configuration is measured (or the budget is spent) and proves nothing before that.
"""
from __future__ import annotations

import json
import math
import time

import numpy as np

from ...store import config_key
from ..base import Strategy, candidate_of
from ..threads import BlasThreads
from . import recipes
from .history import History


class GuidedSearch:
    """The guided search on arrays: what :class:`Guided` runs on a plan's rows (tests and
    ``benchmarks/search/`` run it directly). ``codes``, ``bounds``, ``terms``: see
    :class:`~.history.History`; ``values[i, j]``: candidate i's value of parameter j where numeric
    (nan otherwise); ``sources``: the priors' scores, n x sources (nan where a source lacks the
    configuration; :func:`beastgen.harness.priors.prior_matrix`), or None; ``options``: {name:
    value} of the recipe's table (:mod:`.recipes`). Call :meth:`next` for an index, then
    :meth:`observe` with its time; :meth:`confidence` says how sure it is of the best.
    ``model_seconds``: the CPU time of its models and proposals so far (its BLAS threads
    included: :mod:`..threads`)."""

    def __init__(self, codes: np.ndarray, bounds: np.ndarray, terms: np.ndarray,
                 values: np.ndarray | None = None, sources: np.ndarray | None = None, seed: int = 0,
                 options: dict | None = None):
        started = time.process_time()
        n = len(bounds)
        if sources is not None:
            sources = np.asarray(sources, dtype=float).reshape(n, -1)
        self.options = recipes.options(sources is not None, options or {})
        self.threads = BlasThreads(self.options.model_threads)
        with self.threads():
            self.history = History(codes, bounds, terms)
            varying = self.history.varying
            values = (np.full((n, len(varying)), np.nan) if values is None else
                      np.asarray(values, dtype=float).reshape(n, -1)[:, varying])
            seeds = np.random.SeedSequence(seed)  # the proposals' generator, and the estimate's
            self.recipe = recipes.build(self.history, values, sources, self.options,
                                        np.random.default_rng(seeds),
                                        np.random.default_rng(seeds.spawn(1)[0]))
        self.model_seconds = time.process_time() - started

    def next(self, best: float) -> int | None:
        """The next candidate to measure, or None when every candidate is measured or cut."""
        started = time.process_time()
        with self.threads():
            i = self.recipe.mixer.propose(best)
        self.model_seconds += time.process_time() - started
        return i

    def observe(self, i: int, time: float | None) -> None:
        """Candidate ``i`` was measured in ``time`` seconds (inf: failed; None: no time)."""
        self.recipe.mixer.observe(i, time)

    def confidence(self, best: float) -> float:
        """The models' estimate of the probability that no configuration left is more than the
        ``tolerance`` option faster than ``best`` (:mod:`.confidence`; 1 when the bounds cut
        every such one, 0 before the models can tell)."""
        started = time.process_time()
        with self.threads():
            estimate = self.recipe.confidence.estimate(best)
        self.model_seconds += time.process_time() - started
        return estimate

    def violate(self, term: int) -> None:
        """A measurement proved term ``term`` wrong: it cuts nothing any more."""
        self.history.violate(term)

    def lower_bound(self, best: float) -> float:
        return self.history.lower_bound(best)

    @property
    def open(self) -> np.ndarray:
        """Which candidates are neither measured nor proposed."""
        return self.history.open


class Guided(Strategy):
    name = "guided"
    prunes = True
    uses_priors = True
    estimates_confidence = True

    @classmethod
    def resolve_options(cls, given: dict, priors: bool):
        return recipes.options(priors, given)

    def propose(self, state):
        rows = self._list_rows()
        columns, terms = self.plan.columns, list(self.plan.bound_terms)
        if not len(rows):
            state.lower_bound = math.inf if terms else state.lower_bound
            state.proven = True
            return
        codes = np.stack([_codes(rows[name]) for name in columns], axis=1)
        values = np.stack([_numbers(rows[name]) for name in columns], axis=1)
        term_index = np.zeros(len(rows), np.int64)
        if terms:
            names, index = np.unique(rows["bottleneck"].astype(str), return_inverse=True)
            term_index = np.array([terms.index(t) for t in names], dtype=np.int64)[index.reshape(-1)]
        sources = self.priors(columns, rows) if self.priors else None
        search = GuidedSearch(codes, self.scanned_bounds, term_index, values, sources, self.seed,
                              self.given_options)
        if state.times:  # known before the search (resumed): not open
            index = {values: i for i, values in enumerate(zip(*(rows[c].tolist() for c in columns)))}
            for key, seconds in state.times.items():
                config = json.loads(key)
                i = index.get(tuple(config.get(c) for c in columns))
                if i is not None:
                    search.observe(i, seconds)
        every = search.options.certificate_every
        state.tolerance = search.options.tolerance
        proposals, violated, estimated = 0, -1, -1  # estimated: measurements at the last estimate
        while True:
            for term in state.violated_terms:
                search.violate(terms.index(term))
            if terms and (proposals % every == 0 or violated != len(state.violated_terms)):
                violated = len(state.violated_terms)  # a violated term lowers it: at once
                # between updates the value only gets more conservative: closing configurations
                # and lowering the best time can only raise the true smallest open bound
                state.lower_bound = search.lower_bound(state.best_time)
            measured = len(search.history.measured)
            if measured >= estimated + max(1, measured // 100):  # a new estimate every 1% more
                estimated = measured
                state.confidence = search.confidence(state.best_time)
            state.model_seconds = search.model_seconds
            proposals += 1
            state.proposals += 1
            i = search.next(state.best_time)
            state.model_seconds = search.model_seconds
            if i is None:  # every configuration was closed or cut by a valid bound
                state.proven = True
                # 1 unless a replay file lacked some that the bounds did not cut (the model's
                # estimate for those: they are in the space)
                state.confidence = search.confidence(state.best_time)
                state.model_seconds = search.model_seconds
                return
            candidate = candidate_of(rows[i], columns, bool(terms))
            yield candidate
            search.observe(i, state.times.get(config_key(candidate.config)))


def _codes(column: np.ndarray) -> np.ndarray:
    """Each value's index among the column's distinct values in increasing order."""
    try:
        return np.unique(column, return_inverse=True)[1].reshape(-1)
    except TypeError:  # mixed types (T1 lists such as [1, "a"]): order by their text
        return np.unique([repr(v) for v in column], return_inverse=True)[1].reshape(-1)


def _numbers(column: np.ndarray) -> np.ndarray:
    """The column as floats where it is numeric (not booleans), nan otherwise."""
    if column.dtype.kind in "iuf":
        return column.astype(float)
    return np.full(len(column), np.nan)
