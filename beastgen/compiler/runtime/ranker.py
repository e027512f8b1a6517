"""Ranking by lower bounds: the best configurations by bound, the best bound, and the bound-pruned
count compared with the exhaustive one level by level."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ...bounds import Comparison, LevelCuts, Threshold
from .counter import Counter
from .enumerator import Enumerator
from .executable import Executable

if TYPE_CHECKING:
    import numpy as np


class Ranker:
    """``rank``, ``best_bound`` and ``compare`` on one :class:`~.executable.Executable` (its
    :class:`~.counter.Counter` for the counts compared, its :class:`~.enumerator.Enumerator` for
    the columns' types)."""

    def __init__(self, executable: Executable, counter: Counter, enumerator: Enumerator):
        self.executable = executable
        self.counter = counter
        self.enumerator = enumerator

    def rank(self, k: int = 10, threshold: float = math.inf) -> np.ndarray:
        """The ``k`` valid configurations with the smallest bounds (at most ``threshold``), best
        first (equal bounds in loop-nest order of their values, whatever ``k``), with fields
        ``bound`` (seconds) and ``bottleneck`` (the dominating term)."""
        import numpy as np
        run = self.executable
        run.require_bounds()
        names = run.columns
        if run.plan is None or k <= 0:
            return self.enumerator.structured({n: np.zeros(0) for n in names}, extra=[
                ("bound", np.zeros(0)), ("bottleneck", np.zeros(0, dtype="U1"))])
        bounds = np.empty(k)
        terms = np.empty(k, dtype=np.int64)
        rows = np.empty((k, len(run.plan.order)))
        size = int(run.run("rank", float(threshold), bounds, terms, rows))
        keys = [rows[:size, j] for j in reversed(range(len(run.plan.order)))]
        order = np.lexsort(keys + [bounds[:size]])  # by bound, then by the values in loop order
        items = run.specialized.items
        columns = {name: rows[order, j].astype(self.enumerator.column_dtype(items[name]))
                   for j, name in enumerate(run.plan.order)}
        bottleneck = np.array(run.bound_terms)[terms[order]]
        return self.enumerator.structured(columns, extra=[("bound", bounds[order]), ("bottleneck", bottleneck)])

    def best_bound(self) -> float:
        """The smallest bound of any valid configuration (inf for an empty space)."""
        best = self.rank(1)
        return float(best["bound"][0]) if len(best) else math.inf

    def compare(self, threshold: Threshold) -> Comparison:
        """Exhaustive versus bound-pruned counts, and per loop level where the cuts happen."""
        import numpy as np
        run = self.executable
        run.require_bounds()
        spec = run.specialized
        best = self.best_bound()
        seconds = threshold.resolve(best)
        exhaustive = self.counter.count()
        if run.plan is None:
            return Comparison(spec.space.name, spec.device.key, threshold, seconds, best, 0, 0, 0, [])
        pruned = self.counter.count(seconds)
        depth = len(run.plan.levels)
        visits, skipped, cuts, removed = (np.zeros(depth + 1, dtype=np.int64) for _ in range(4))
        innermost = int(run.run("cut_analysis", float(seconds), visits, skipped, cuts, removed))
        levels = []
        for index, level in enumerate(run.plan.levels):
            terms = [item.name for item in level.body if item.kind == "bound"]
            levels.append(LevelCuts(level.iterator.name, int(visits[index]),
                                    int(visits[index] - skipped[index]), int(visits[index]),
                                    int(cuts[index]), int(removed[index]), terms))
        return Comparison(spec.space.name, spec.device.key, threshold, seconds, best, exhaustive,
                          pruned, innermost, levels)
