"""Exhaustive search: every valid configuration, in enumeration order."""
from __future__ import annotations

from .base import Strategy


class Exhaustive(Strategy):
    name = "exhaustive"

    def propose(self, state):
        candidates = self._list_all()
        yield from candidates
