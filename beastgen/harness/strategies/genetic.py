"""A genetic algorithm over the valid configurations (the HPL paper's GA baseline, simplified):
tournament selection, uniform crossover and per-parameter mutation; a child that is not a valid
configuration (or was already measured) is replaced by a random unmeasured valid one, so every
proposal is a new valid configuration and budgets compare equally with the other strategies."""
from __future__ import annotations

import math
import random

from ..store import config_key
from .base import Strategy

POPULATION = 16
MUTATION = 0.15
TRIES = 20


class Genetic(Strategy):
    name = "genetic"

    def propose(self, state):
        rng = random.Random(self.seed)
        candidates = self._list_all()
        by_key = {config_key(c.config): c for c in candidates}
        columns = list(candidates[0].config) if candidates else []
        values = {c: sorted({cand.config[c] for cand in candidates}, key=repr) for c in columns}
        proposed: set[str] = set()

        def fitness(key):
            return state.times.get(key, math.inf)

        def fresh():
            left = [k for k in by_key if k not in proposed]
            return rng.choice(left) if left else None

        population = []
        while len(proposed) < len(by_key):
            if len(population) < POPULATION:
                key = fresh()
            else:
                key = None
                for _ in range(TRIES):
                    a = min(rng.sample(population, 2), key=fitness)
                    b = min(rng.sample(population, 2), key=fitness)
                    child = {c: (by_key[a].config[c] if rng.random() < 0.5 else by_key[b].config[c])
                             for c in columns}
                    for c in columns:
                        if rng.random() < MUTATION:
                            child[c] = rng.choice(values[c])
                    k = config_key(child)
                    if k in by_key and k not in proposed:
                        key = k
                        break
                if key is None:
                    key = fresh()
            if key is None:
                return
            proposed.add(key)
            yield by_key[key]
            population.append(key)
            if len(population) > POPULATION:  # keep the fittest
                population.sort(key=fitness)
                population = population[:POPULATION]
