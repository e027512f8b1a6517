"""What strategies share: candidates (a configuration with its lower bound) and the search state."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .options import resolve


@dataclass
class Candidate:
    config: dict
    bound: float = math.nan  # seconds (nan: the space declares no bound terms)
    bottleneck: str | None = None


@dataclass
class SearchState:
    """What the tuning loop has learnt so far; strategies read it between proposals."""

    best_time: float = math.inf
    best_key: str | None = None
    violated_terms: set = field(default_factory=set)  # bound terms a measurement proved wrong
    times: dict = field(default_factory=dict)  # config_key -> seconds (inf: failed)
    proven: bool = False  # branch and bound: no unrun configuration can beat best_time
    lower_bound: float = math.nan  # branch and bound: the optimum is at least this (seconds)
    #: a model's estimate (not a proof) of the probability that no configuration left is more
    #: than ``tolerance`` faster than best_time (nan: the strategy makes none)
    confidence: float = math.nan
    tolerance: float = 0.01
    model_seconds: float = 0.0  # CPU time of the strategy's models and proposals so far
    proposals: int = 0  # configurations proposed so far (by a strategy that counts them)


def row_config(row, columns) -> dict:
    return {c: row[c].item() for c in columns}


def all_rows(plan):
    """Every valid configuration as one structured array in enumeration (nest) order, with the
    ``bound`` and ``bottleneck`` fields when the space has bound terms (``rank_all``)."""
    if not plan.bound_terms:
        return plan.enumerate()
    ranked = plan.rank_all()
    order = plan.plan.order if plan.plan else plan.columns
    return ranked[np.lexsort([ranked[c] for c in reversed(order)])] if len(ranked) else ranked


def candidate_of(row, columns, with_bound: bool) -> Candidate:
    """The :class:`Candidate` of one row of :func:`all_rows`."""
    if not with_bound:
        return Candidate(row_config(row, columns))
    return Candidate(row_config(row, columns), float(row["bound"]), str(row["bottleneck"]))


def all_candidates(plan) -> list[Candidate]:
    """Every valid configuration, with its bound when the space has bound terms, in nest order."""
    columns, bounded = plan.columns, bool(plan.bound_terms)
    return [candidate_of(row, columns, bounded) for row in all_rows(plan)]


class Strategy:
    """``propose(state)`` yields candidates; the tuning loop measures each (or answers it from the
    store) and updates ``state`` before asking for the next."""

    name = "?"
    #: whether it reads ``priors`` (measurements from elsewhere that order its proposals)
    uses_priors = False
    #: whether it is branch and bound: a candidate whose valid bound is not below the best time
    #: need not run (a Dask worker then cuts it); any other strategy runs every candidate it proposes
    prunes = False
    #: whether it keeps ``state.confidence`` (a model's estimate of how sure it is of the best)
    estimates_confidence = False

    def __init__(self, plan, seed: int = 0, priors=None, options: dict | None = None):
        self.plan = plan
        self.seed = seed
        #: None, or a function (columns, rows) -> prior matrix (:func:`..priors.prior_matrix`)
        self.priors = priors
        #: the user's options ({name: value or its text}), checked against the strategy's table
        self.given_options = dict(options or {})
        self.options = self.resolve_options(self.given_options, priors is not None)
        self.known_count: int | None = None  # valid configurations, when the strategy listed them all
        self.scanned_bounds = None  # bounds of the configurations it listed (numpy array)

    @classmethod
    def resolve_options(cls, given: dict, priors: bool):
        """Every option of the strategy (:mod:`.options`), ``given`` ones replacing the defaults;
        a clear error for a name it does not have. ``priors``: whether it runs with priors."""
        return resolve({}, given, f"strategy {cls.name}")

    def _list_all(self) -> list[Candidate]:
        candidates = all_candidates(self.plan)
        self.known_count = len(candidates)
        self.scanned_bounds = np.array([c.bound for c in candidates], dtype=float)
        return candidates

    def _list_rows(self):
        """:func:`all_rows`, noting their count and bounds."""
        rows = all_rows(self.plan)
        self.known_count = len(rows)
        self.scanned_bounds = (rows["bound"].astype(float) if self.plan.bound_terms
                               else np.full(len(rows), np.nan))
        return rows

    def propose(self, state: SearchState):
        raise NotImplementedError
