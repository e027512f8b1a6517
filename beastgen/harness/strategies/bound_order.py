"""Branch and bound (Telamon's Algorithm 2): run candidates in increasing order of lower bound
(``plan.rank``), and stop when the next candidate's bound is not below the best time measured: no
configuration left can beat it, so the best is proven.

A bound term that a measurement proved wrong (time below bound) can no longer prune: candidates
whose bound is that term's value (their bottleneck) are run even past the proof point."""
from __future__ import annotations

from ...errors import BeastError
from .base import Candidate, Strategy, row_config

FIRST_BATCH = 256


class BoundOrder(Strategy):
    name = "bound_order"
    prunes = True

    def propose(self, state):
        if not self.plan.bound_terms:
            raise BeastError(f"bound_order needs bound terms; space "
                             f"'{self.plan.specialized.space.name}' declares none (the default "
                             "strategy, guided, searches any space)")
        columns = self.plan.columns
        k = FIRST_BATCH
        seen: set[tuple] = set()
        while True:
            ranked = self.plan.rank(k)
            complete = len(ranked) < k
            self.scanned_bounds = ranked["bound"]
            if complete:
                self.known_count = len(ranked)
            past_proof = False
            restart = False
            for row in ranked:
                key = tuple(row[c].item() for c in columns)
                if key in seen:
                    continue
                bound, term = float(row["bound"]), str(row["bottleneck"])
                if bound >= state.best_time:
                    past_proof = True
                    if term not in state.violated_terms:
                        continue  # pruned: its bound is valid and no better than the best
                seen.add(key)
                if not state.violated_terms:
                    state.lower_bound = bound  # the smallest bound not yet run
                violated = len(state.violated_terms)
                yield Candidate(row_config(row, columns), bound, term)
                if past_proof and len(state.violated_terms) > violated:
                    restart = True  # a newly violated term: rescan what was pruned on it
                    break
            if restart:
                continue
            if past_proof and not state.violated_terms:
                state.proven = True
                return
            if complete:
                state.proven = True  # every configuration was run or pruned by a valid bound
                return
            if past_proof:  # violated terms: the rest must be scanned for their bottlenecks
                k *= 4
                continue
            k *= 4
