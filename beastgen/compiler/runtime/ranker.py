"""Ranking by lower bounds: the best configurations by bound, the best bound, and the bound-pruned
count compared with the exhaustive one level by level."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ...errors import BeastError
from ...support.units import Threshold, format_seconds
from .comparison import Comparison, LevelCuts
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

    def rank_all(self) -> np.ndarray:
        """Every valid configuration with its bound, best first: :meth:`rank` with ``k`` at least
        the count, in the same order. Where NumPy computes the bound terms
        (:func:`~beastgen.compiler.vectorised.bound_values`), the enumeration (the C library's where
        there is one) and one pass of NumPy over it, with no Numba compile of ``rank`` (a minute on a
        loaded machine for a new device profile); else ``rank`` with a growing ``k``."""
        import numpy as np

        from ..vectorised import bounds_computable  # NumPy's: imported where it is used
        run = self.executable
        run.require_bounds()
        if run.plan is not None and bounds_computable(run.plan):
            rows = self.enumerator.enumerate()
            bounds, terms = self.bounds_of(rows)
            order = np.lexsort([rows[name] for name in reversed(run.plan.order)] + [bounds])
            return self.enumerator.structured({name: rows[name][order] for name in run.columns}, extra=[
                ("bound", bounds[order]), ("bottleneck", np.array(run.bound_terms)[terms[order]])])
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
        run = self.executable
        run.require_bounds()
        if run.plan is None or not len(rows):
            return np.zeros(0), np.zeros(0, dtype=np.int64)
        if bounds_computable(run.plan):
            return bound_values(run.plan, {name: rows[name] for name in run.plan.order})
        every = self.rank_all()
        index = {key: i for i, key in enumerate(zip(*(every[name].tolist() for name in run.columns)))}
        found = np.array([index[key] for key in zip(*(rows[name].tolist() for name in run.columns))],
                         dtype=np.int64)
        terms = {term: i for i, term in enumerate(run.bound_terms)}
        return every["bound"][found], np.array([terms[t] for t in every["bottleneck"][found]], dtype=np.int64)

    def best_bound(self) -> float:
        """The smallest bound of any valid configuration (inf for an empty space)."""
        best = self.rank(1)
        return float(best["bound"][0]) if len(best) else math.inf

    def threshold_seconds(self, threshold: Threshold) -> float:
        """``threshold`` in seconds: a time as it is, a factor of the best bound resolved; a factor
        of a best bound below zero is refused, naming the negative term and its place."""
        if threshold.factor is None:
            return threshold.seconds
        best = self.rank(1)
        if len(best) and best["bound"][0] < 0:
            term = str(best["bottleneck"][0])
            raise BeastError(f"threshold {threshold}: the best bound, {format_seconds(best['bound'][0])},"
                             f" is below zero (bound term '{term}' is that negative), and "
                             f"{threshold.factor:g}x of it is below every bound: give the threshold "
                             "as a time", self.executable.specialized.space.variables[term].origin)
        return threshold.resolve(float(best["bound"][0]) if len(best) else math.inf)

    def compare(self, threshold: Threshold) -> Comparison:
        """Exhaustive versus bound-pruned counts, and per loop level where the cuts happen: exact
        for any threshold and bound values, negative ones included."""
        import numpy as np
        run = self.executable
        run.require_bounds()
        spec = run.specialized
        best = self.best_bound()
        seconds = self.threshold_seconds(threshold)
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
