"""Ranking by lower bounds: the best configurations by bound, the best bound, and the bound-pruned
count compared with the exhaustive one level by level."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ...bounds import Comparison, LevelCuts, Threshold
from ...errors import BeastError
from .enumeration import Enumeration

if TYPE_CHECKING:
    import numpy as np


class Ranking(Enumeration):
    """``rank``, ``best_bound``, ``compare`` (and ``bound_terms``)."""

    @property
    def bound_terms(self) -> list[str]:
        return self.specialized.bound_terms

    def _require_bounds(self) -> None:
        if not self.bound_terms:
            raise BeastError(f"space '{self.specialized.space.name}' declares no bound terms "
                             "(beast.bound / @beast.bound)", self.specialized.space.path)

    def rank(self, k: int = 10, threshold: float = math.inf) -> np.ndarray:
        """The ``k`` valid configurations with the smallest bounds (at most ``threshold``), best
        first (equal bounds in loop-nest order of their values, whatever ``k``), with fields
        ``bound`` (seconds) and ``bottleneck`` (the dominating term)."""
        import numpy as np
        self._require_bounds()
        names = self.columns
        if self.plan is None or k <= 0:
            return self._structured({n: np.zeros(0) for n in names}, extra=[
                ("bound", np.zeros(0)), ("bottleneck", np.zeros(0, dtype="U1"))])
        bounds = np.empty(k)
        terms = np.empty(k, dtype=np.int64)
        rows = np.empty((k, len(self.plan.order)))
        size = int(self._run("rank", float(threshold), bounds, terms, rows))
        keys = [rows[:size, j] for j in reversed(range(len(self.plan.order)))]
        order = np.lexsort(keys + [bounds[:size]])  # by bound, then by the values in loop order
        items = self.specialized.items
        columns = {name: rows[order, j].astype(self._column_dtype(items[name]))
                   for j, name in enumerate(self.plan.order)}
        bottleneck = np.array(self.bound_terms)[terms[order]]
        return self._structured(columns, extra=[("bound", bounds[order]), ("bottleneck", bottleneck)])

    def rank_all(self) -> np.ndarray:
        """Every valid configuration with its bound, best first: :meth:`rank` with ``k`` at least
        the count, in the same order. Where NumPy computes the bound terms
        (:func:`~beastgen.compiler.vectorised.bound_values`), the enumeration (the C library's where
        there is one) and one pass of NumPy over it, with no Numba compile of ``rank`` (a minute on a
        loaded machine for a new device profile); else ``rank`` with a growing ``k``."""
        import numpy as np

        from ..vectorised import bounds_computable  # NumPy's: imported where it is used
        self._require_bounds()
        if self.plan is not None and bounds_computable(self.plan):
            rows = self.enumerate()
            bounds, terms = self.bounds_of(rows)
            order = np.lexsort([rows[name] for name in reversed(self.plan.order)] + [bounds])
            return self._structured({name: rows[name][order] for name in self.columns}, extra=[
                ("bound", bounds[order]), ("bottleneck", np.array(self.bound_terms)[terms[order]])])
        k = 4096
        while len(ranked := self.rank(k)) == k:
            k *= 4
        return ranked

    def bounds_of(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(bound, index of the dominating term in ``bound_terms``) of valid configurations
        (``rows``: a structured array with a field per iterator), exactly as :meth:`rank` gives
        them: computed by NumPy for these rows only; where NumPy cannot (a Python function, a
        string), looked up in :meth:`rank_all`."""
        import numpy as np

        from ..vectorised import bound_values, bounds_computable  # NumPy's: imported where it is used
        self._require_bounds()
        if self.plan is None or not len(rows):
            return np.zeros(0), np.zeros(0, dtype=np.int64)
        if bounds_computable(self.plan):
            return bound_values(self.plan, {name: rows[name] for name in self.plan.order})
        every = self.rank_all()
        index = {key: i for i, key in enumerate(zip(*(every[name].tolist() for name in self.columns)))}
        found = np.array([index[key] for key in zip(*(rows[name].tolist() for name in self.columns))],
                         dtype=np.int64)
        terms = {term: i for i, term in enumerate(self.bound_terms)}
        return every["bound"][found], np.array([terms[t] for t in every["bottleneck"][found]], dtype=np.int64)

    def best_bound(self) -> float:
        """The smallest bound of any valid configuration (inf for an empty space)."""
        best = self.rank(1)
        return float(best["bound"][0]) if len(best) else math.inf

    def compare(self, threshold: Threshold) -> Comparison:
        """Exhaustive versus bound-pruned counts, and per loop level where the cuts happen."""
        import numpy as np
        self._require_bounds()
        spec = self.specialized
        best = self.best_bound()
        seconds = threshold.resolve(best)
        exhaustive = self.count()
        if self.plan is None:
            return Comparison(spec.space.name, spec.device.key, threshold, seconds, best, 0, 0, 0, [])
        pruned = self.count(seconds)
        depth = len(self.plan.levels)
        visits, skipped, cuts, removed = (np.zeros(depth + 1, dtype=np.int64) for _ in range(4))
        innermost = int(self._run("cut_analysis", float(seconds), visits, skipped, cuts, removed))
        levels = []
        for index, level in enumerate(self.plan.levels):
            terms = [item.name for item in level.body if item.kind == "bound"]
            levels.append(LevelCuts(level.iterator.name, int(visits[index]),
                                    int(visits[index] - skipped[index]), int(visits[index]),
                                    int(cuts[index]), int(removed[index]), terms))
        return Comparison(spec.space.name, spec.device.key, threshold, seconds, best, exhaustive,
                          pruned, innermost, levels)
