"""Branch and bound in a learnt order (the default): the same proof as Telamon's Algorithm 2, with
the configurations whose bound is below the best time visited fastest-predicted first
(:class:`~.learnt_order.LearntOrder`), so the best time drops early and cuts more.

Every configuration is either measured or cut (its valid bound is not below the best time) before
the best is claimed optimal; a term that a measurement violated cuts nothing. At any moment
``state.lower_bound`` holds the smallest valid bound among the configurations still open: the
optimum is at least that, so the best time is within ``best / lower_bound - 1`` of optimal.
"""
from __future__ import annotations

import numpy as np

from ...errors import BeastError
from ..store import config_key
from .base import Strategy
from .learnt_order import LearntOrder


class GuidedBranchAndBound(Strategy):
    name = "branch_and_bound"

    def propose(self, state):
        if not self.plan.bound_terms:
            raise BeastError(f"branch_and_bound needs bound terms; space "
                             f"'{self.plan.specialized.space.name}' declares none (use --strategy "
                             "exhaustive, random or genetic)")
        candidates = self._list_all()
        columns = self.plan.columns
        codes = np.stack([np.unique([c.config[name] for c in candidates], return_inverse=True)[1]
                          for name in columns], axis=1) if candidates else \
            np.zeros((0, len(columns)), dtype=np.int64)
        terms = list(self.plan.bound_terms)
        order = LearntOrder(codes, self.scanned_bounds,
                            np.array([terms.index(c.bottleneck) for c in candidates], dtype=np.int64),
                            self.seed)
        keys = [config_key(c.config) for c in candidates]
        for i, key in enumerate(keys):  # resumed after a restart: what is known is not open
            if key in state.times:
                order.observe(i, state.times[key])
        while True:
            for term in state.violated_terms:
                order.violate(terms.index(term))
            state.lower_bound = order.lower_bound(state.best_time)
            i = order.next(state.best_time)
            if i is None:
                state.proven = True  # every configuration was measured or cut by a valid bound
                return
            yield candidates[i]
            order.observe(i, state.times.get(keys[i]))
