"""The default search, on any space: configurations visited fastest-predicted first
(:class:`~.learnt_order.LearntOrder`, warm-started by priors when given), with the proof of branch
and bound (Telamon's Algorithm 2) when the space has bound terms.

With bound terms, every configuration is either measured or cut (its valid bound is not below the
best time) before the best is claimed optimal; a term that a measurement violated cuts nothing. At
any moment ``state.lower_bound`` holds the smallest valid bound among the configurations still
open (refreshed every few proposals, and at once when a term is violated; in between it only gets
more conservative): the optimum is at least that, so the best time is at most ``best / lower_bound`` times the
optimum. Without bound terms nothing is cut: the search ends when every configuration is measured
(or the budget is spent) and proves nothing before that.
"""
from __future__ import annotations

import json

import numpy as np

from ..store import config_key
from .base import Strategy, candidate_of
from .learnt_order import LearntOrder


#: proposals between updates of the certificate's lower bound (a scan of every candidate)
LOWER_BOUND_EVERY = 16


class Guided(Strategy):
    name = "guided"
    prunes = True
    uses_priors = True

    def propose(self, state):
        rows = self._list_rows()
        columns, terms = self.plan.columns, list(self.plan.bound_terms)
        codes = np.stack([_codes(rows[name]) for name in columns], axis=1) if len(rows) else \
            np.zeros((0, len(columns)), dtype=np.int64)
        values = np.stack([_numbers(rows[name]) for name in columns], axis=1) if len(rows) else None
        bottlenecks = (np.unique(rows["bottleneck"].astype(str), return_inverse=True) if terms
                       else (np.zeros(0, dtype=str), np.zeros(len(rows), dtype=np.int64)))
        term_index = np.array([terms.index(t) for t in bottlenecks[0]], dtype=np.int64)[
            bottlenecks[1].reshape(-1)] if terms and len(rows) else np.zeros(len(rows), np.int64)
        prior = None
        if self.priors:
            prior = self.priors(columns, rows)
        order = LearntOrder(codes, self.scanned_bounds, term_index, self.seed, values=values,
                            prior=prior)
        if state.times:  # known before the search (resumed): not open
            index = {values: i for i, values in enumerate(zip(*(rows[c].tolist() for c in columns)))}
            for key, time in state.times.items():
                config = json.loads(key)
                i = index.get(tuple(config.get(c) for c in columns))
                if i is not None:
                    order.observe(i, time)
        proposals, violated = 0, -1
        while True:
            for term in state.violated_terms:
                order.violate(terms.index(term))
            if terms and (proposals % LOWER_BOUND_EVERY == 0 or violated != len(state.violated_terms)):
                violated = len(state.violated_terms)  # a violated term lowers it: at once
                # between updates the value only gets more conservative: closing configurations
                # and lowering the best time can only raise the true smallest open bound
                state.lower_bound = order.lower_bound(state.best_time)
            proposals += 1
            i = order.next(state.best_time)
            if i is None:
                state.proven = True  # every configuration was measured or cut by a valid bound
                return
            candidate = candidate_of(rows[i], columns, bool(terms))
            yield candidate
            order.observe(i, state.times.get(config_key(candidate.config)))


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
