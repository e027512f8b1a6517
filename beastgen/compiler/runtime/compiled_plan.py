"""The compiled plan: one face over the roles (counting, enumerating, estimating, ranking), which
share one :class:`~.executable.Executable`, the generated module and C library that they run."""
from __future__ import annotations

import math

from .counter import Counter
from .enumerator import Enumerator
from .estimator import Estimator
from .executable import Executable
from .ranker import Ranker


def _executable_fact(name: str, settable: bool = False) -> property:
    """A property of the plan read from (and, if ``settable``, written to) its executable."""
    def read(plan):
        return getattr(plan.executable, name)

    def write(plan, value):
        setattr(plan.executable, name, value)
    return property(read, write if settable else None, doc=f"The executable's ``{name}``.")


class CompiledPlan:
    """A space specialized to one device and settings, with its generated enumerator (the C target's
    library, Numba's module or NumPy's walk): count, enumerate, stats, estimate, rank. The work is
    done by :attr:`counter`, :attr:`enumerator`, :attr:`estimator` and :attr:`ranker`, on
    :attr:`executable`."""

    #: default ``samples`` per estimation method (see :meth:`estimate`)
    ESTIMATE_SAMPLES = Estimator.ESTIMATE_SAMPLES
    #: runs or descents a time-budgeted estimate takes even past its budget
    ESTIMATE_MIN_SAMPLES = Estimator.ESTIMATE_MIN_SAMPLES
    #: values of one level past which a descent's scan of it is refused
    SCAN_LIMIT = Counter.SCAN_LIMIT

    def __init__(self, executable: Executable):
        self.executable = executable
        self.counter = Counter(executable)
        self.enumerator = Enumerator(executable, self.counter)
        self.estimator = Estimator(executable, self.counter)
        self.ranker = Ranker(executable, self.counter, self.enumerator)

    # what it was compiled for, its sources and the nest's shape: the executable's
    specialized = _executable_fact("specialized")
    plan = _executable_fact("plan")
    path = _executable_fact("path")
    source = _executable_fact("source", settable=True)
    module = _executable_fact("module")
    native = _executable_fact("native")
    empty_reason = _executable_fact("empty_reason")
    columns = _executable_fact("columns")
    target = _executable_fact("target")
    bound_terms = _executable_fact("bound_terms")
    counted_tail = _executable_fact("counted_tail")
    split_level = _executable_fact("split_level")
    iteration_bound = _executable_fact("iteration_bound")
    small = _executable_fact("small")
    c_optimization = _executable_fact("c_optimization")
    count_functions = _executable_fact("count_functions")
    last_seconds = _executable_fact("last_seconds", settable=True)

    def write(self) -> str | None:
        """Write the generated module (if it changed); its path."""
        return self.executable.write()

    def module_text(self) -> str:
        """The text of the generated module, as it is run (and written)."""
        return self.executable.module_text()

    def native_source(self, functions=None) -> str | None:
        """The plan's ``functions`` (default: the count's) as C; None when the C target cannot
        print the plan."""
        return self.executable.native_source(functions)

    def numba_cached(self, function_name: str) -> bool:
        """Whether Numba's on-disk cache holds ``function_name`` of the generated module."""
        return self.executable.numba_cached(function_name)

    def load_every_native_function(self) -> None:
        """Before a command that enumerates: load (or build) the library of every C function."""
        self.executable.load_every_native_function()

    def split_node_count(self) -> int:
        """How many split nodes there are (the chunks' numbering)."""
        return self.executable.split_node_count()

    # -- counting ----------------------------------------------------------------------------------
    def count(self, threshold: float | None = None, chunk: tuple[int, int] | None = None,
              jobs: int = 1, progress=None) -> int:
        """Number of valid configurations (see :meth:`.Counter.count`)."""
        return self.counter.count(threshold, chunk, jobs, progress)

    def stats(self, chunk: tuple[int, int] | None = None):
        """Count with per-level iterations and per-filter rejections (see :meth:`.Counter.stats`)."""
        return self.counter.stats(chunk)

    def why_empty(self) -> str | None:
        """For an empty space: which filter (or error) emptied it (from :meth:`stats`)."""
        return self.counter.why_empty(self.stats)

    def split_census(self, samples_per_node: int = 32, seed: int = 0):
        """Per split node, estimates of the configurations and work below it."""
        return self.counter.split_census(samples_per_node, seed)

    def huge_scanned_level(self) -> tuple | None:
        """(iterator, size) of a level too large for descents to scan, or None."""
        return self.counter.huge_scanned_level()

    def count_needs_compiling(self) -> bool:
        """Whether the next count compiles for a while."""
        return self.counter.count_needs_compiling()

    # -- enumerating -------------------------------------------------------------------------------
    def enumerate(self, chunk: tuple[int, int] | None = None, jobs: int = 1, progress=None):
        """Every valid configuration as a NumPy structured array (see :meth:`.Enumerator.enumerate`)."""
        return self.enumerator.enumerate(chunk, jobs, progress)

    def dataframe(self):
        """:meth:`enumerate` as a pandas DataFrame (needs pandas: ``pip install 'beastgen[data]'``)."""
        return self.enumerator.dataframe()

    # -- estimating --------------------------------------------------------------------------------
    def estimate(self, samples: int | None = None, seed: int = 0, method: str = "chen",
                 seconds: float | None = None):
        """An estimate of the number of valid configurations with a 95% confidence interval (see
        :meth:`.Estimator.estimate`)."""
        return self.estimator.estimate(samples, seed, method, seconds)

    def estimate_sums(self, samples: int, seed: int, method: str) -> tuple[float, float]:
        """(sum, sum of squares) of ``samples`` independent estimates drawn with ``seed``."""
        return self.estimator.estimate_sums(samples, seed, method)

    def check_estimable(self) -> None:
        """Refuse a space whose descents would scan a level of more than :attr:`SCAN_LIMIT` values."""
        self.estimator.check_estimable()

    def estimate_needs_compiling(self, method: str) -> bool:
        """Whether a time-budgeted estimate compiles first."""
        return self.estimator.estimate_needs_compiling(method)

    # -- ranking -----------------------------------------------------------------------------------
    def rank(self, k: int = 10, threshold: float = math.inf):
        """The ``k`` valid configurations with the smallest bounds (see :meth:`.Ranker.rank`)."""
        return self.ranker.rank(k, threshold)

    def rank_all(self):
        """Every valid configuration with its bound, best first (see :meth:`.Ranker.rank_all`)."""
        return self.ranker.rank_all()

    def bounds_of(self, rows):
        """(bound, index of the dominating term) of the configurations ``rows``, as :meth:`rank`
        gives them (see :meth:`.Ranker.bounds_of`)."""
        return self.ranker.bounds_of(rows)

    def best_bound(self) -> float:
        """The smallest bound of any valid configuration (inf for an empty space)."""
        return self.ranker.best_bound()

    def threshold_seconds(self, threshold) -> float:
        """``threshold`` in seconds (a factor of the best bound resolved; see
        :meth:`.Ranker.threshold_seconds`)."""
        return self.ranker.threshold_seconds(threshold)

    def compare(self, threshold):
        """Exhaustive versus bound-pruned counts, and per loop level where the cuts happen."""
        return self.ranker.compare(threshold)
