"""What strategies share: candidates (a configuration with its lower bound) and the search state."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


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


def row_config(row, columns) -> dict:
    return {c: row[c].item() for c in columns}


def all_candidates(plan, start: int = 4096) -> list[Candidate]:
    """Every valid configuration, with its bound when the space has bound terms, in enumeration
    (nest) order. With bounds, one compiled ``rank`` gives both (no second enumerator to compile)."""
    columns = plan.columns
    if not plan.bound_terms:
        rows = plan.enumerate()
        return [Candidate(row_config(r, columns)) for r in rows]
    k = start
    while True:
        ranked = plan.rank(k)
        if len(ranked) < k:
            break
        k *= 4
    order = plan.plan.order if plan.plan else columns
    index = np.lexsort([ranked[c] for c in reversed(order)]) if len(ranked) else []
    return [Candidate(row_config(ranked[i], columns), float(ranked[i]["bound"]),
                      str(ranked[i]["bottleneck"])) for i in index]


class Strategy:
    """``propose(state)`` yields candidates; the tuning loop measures each (or answers it from the
    store) and updates ``state`` before asking for the next."""

    name = "?"

    def __init__(self, plan, seed: int = 0):
        self.plan = plan
        self.seed = seed
        self.known_count: int | None = None  # valid configurations, when the strategy listed them all
        self.scanned_bounds = None  # bounds of the configurations it listed (numpy array)

    def _list_all(self) -> list[Candidate]:
        candidates = all_candidates(self.plan)
        self.known_count = len(candidates)
        self.scanned_bounds = np.array([c.bound for c in candidates], dtype=float)
        return candidates

    def propose(self, state: SearchState):
        raise NotImplementedError
