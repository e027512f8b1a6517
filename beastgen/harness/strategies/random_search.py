"""Random search: the valid configurations in a random order (seeded), without repetition."""
from __future__ import annotations

import random

from .base import Strategy


class RandomSearch(Strategy):
    name = "random_search"

    def propose(self, state):
        candidates = self._list_all()
        random.Random(self.seed).shuffle(candidates)
        yield from candidates
