"""Counting: the whole space or a chunk of its split nodes, on one thread or several (natively,
threads claiming split nodes; Numba's, chunks balanced by a census), per-level statistics, and why
a space is empty."""
from __future__ import annotations

import ctypes
import time

from ...errors import BeastError
from ...interrupt import wait_interruptibly
from .chunking import CENSUS_SAMPLES_PER_NODE, WHOLE, as_chunk, balanced_chunks, claiming
from .core import PlanCore
from .results import Census, Stats

_CHUNKS_PER_JOB = 8  # threads take balanced chunks as they finish: several each evens out the estimates


class Counting(PlanCore):
    """``count``, ``stats``, ``why_empty`` and the split census that balances chunks."""

    def count(self, threshold: float | None = None, chunk: tuple[int, int] | None = None,
              jobs: int = 1, progress=None) -> int:
        """Number of valid configurations; with a threshold (seconds), only those whose bound is at
        most the threshold (bound-pruned; the threshold is a run-time argument: nothing recompiles).
        With ``chunk=(lo, hi)``, only below the split nodes lo <= i < hi (see :meth:`split_census`);
        with ``jobs`` > 1, on that many threads: the native count's threads claim split nodes as
        they go, Numba's take chunks balanced by a census. ``progress(done, seconds)`` hears the
        share of the work done (0 to 1) as a whole count goes (natively: of the split nodes begun)."""
        if self.path is None:  # an empty space (its plan is not needed to know that)
            return 0
        # a small nest that no C library counts and Numba has not compiled: NumPy, no compiler
        if threshold is None and chunk is None and self.native is None and (nest := self.numpy_nest()):
            return self.run_vectorised(nest.count, progress)
        if threshold is None:
            if self.small:  # in the calling thread, whole (or the chunk), timed alone
                count = int(self._run("count", *as_chunk(chunk))) * self.counted_tail
                if progress is not None:
                    progress(1.0, self.last_seconds)
                return count
            jobs = jobs if chunk is None else 1
            self._compile_chunking(jobs)
            if chunk is None and self.native is not None:
                start = time.perf_counter()
                counts = self._count_claimed(max(jobs, 1), progress, start)
            elif jobs <= 1 and chunk is None:
                # split_nodes compiles before the clock starts: the long-count warning
                # extrapolates the run alone
                nodes = self.split_node_count()
                start = time.perf_counter()
                counts = self._count_in_growing_chunks(nodes, progress, start)
            else:
                start = time.perf_counter()
                counts = self._in_threads(jobs, [("count", *c) for c in self._chunks(jobs, chunk)],
                                          progress, start)
            self.last_seconds = time.perf_counter() - start  # the census included
            return sum(counts) * self.counted_tail
        if chunk is not None:
            raise BeastError("a bound-pruned count runs whole, not in chunks")
        self._require_bounds()
        return int(self._run("count_pruned", float(threshold))) * self.counted_tail

    def stats(self, chunk: tuple[int, int] | None = None) -> Stats:
        """Count with per-level iterations and per-filter rejections. With ``chunk``, the levels
        above :attr:`split_level` (and what their filters reject) are still counted whole."""
        import numpy as np
        if self.plan is None:
            return Stats(0, [], {}, {}, 0.0)
        from ..codegen.nest import stat_slots

        slots = stat_slots(self.plan)
        visits = np.zeros(len(self.plan.levels), dtype=np.int64)
        rejections = np.zeros(len(slots), dtype=np.int64)
        n = int(self._run("count_with_stats", visits, rejections, *as_chunk(chunk)))
        by_filter = {s.name: int(r) for s, r in zip(slots, rejections) if s.kind == "filter"}
        errors = {s.name: int(r) for s, r in zip(slots, rejections) if s.kind != "filter" and r}
        return Stats(n, list(zip(self.plan.order, map(int, visits))), by_filter, errors,
                     self.last_seconds)

    def why_empty(self) -> str | None:
        """For an empty space: which filter (or error) emptied it."""
        if self.empty_reason:
            return self.empty_reason
        stats = self.stats()
        if stats.count:
            return None
        from ..codegen.nest import stat_slots

        slots = stat_slots(self.plan)
        culprits = [(s, stats.rejections.get(s.name) or stats.errors.get(s.name, 0)) for s in slots]
        culprits = [(s, n) for s, n in culprits if n]
        if not culprits:
            return "some iterator has an empty domain"
        last, n = culprits[-1]
        what = "raised for" if last.kind != "filter" else "rejected"
        return (f"the last {last.kind} to cut it was '{last.name}' ({last.origin}), "
                f"which {what} {n:,} of the remaining candidates")

    def split_census(self, samples_per_node: int = 32, seed: int = 0) -> "Census":
        """Per split node, in walk order (the numbering of ``chunk=(lo, hi)``), Knuth descents'
        estimates of the valid configurations below it and of the loop iterations (work) they take."""
        import numpy as np
        if self.path is None:
            return Census(np.zeros(0), np.zeros(0))
        nodes = self.split_node_count()
        census = Census(np.zeros(nodes), np.zeros(nodes))
        self._run("census", int(samples_per_node), int(seed), census.configurations, census.iterations)
        return census

    #: values of one level past which a descent's scan of it (estimates, the census) is refused
    SCAN_LIMIT = 2 ** 31

    def huge_scanned_level(self) -> tuple | None:
        """(iterator, size) of a level whose domain has more than :attr:`SCAN_LIMIT` values that
        descents scan value by value, or None: estimates refuse such a space, and the census that
        balances chunks is skipped (equal chunks of split nodes instead)."""
        from ..codegen.nest import largest_scanned_domain

        largest = largest_scanned_domain(self.plan) if self.plan else None
        return largest if largest is not None and largest[1] > self.SCAN_LIMIT else None

    def _compile_chunking(self, jobs: int) -> None:
        """Compile the count, and the census only when several threads balance their chunks (a
        native count needs neither)."""
        if self.native is not None:
            return
        import numpy as np
        self._compiled("count", *WHOLE)
        if jobs > 1:
            self._compiled("census", 0, 0, np.zeros(0), np.zeros(0))

    def _chunks(self, jobs: int, chunk: tuple[int, int] | None) -> list[tuple[int, int]]:
        """``chunk`` (or every split node) for one job; balanced chunks for several."""
        if jobs <= 1:
            return [as_chunk(chunk)]
        if self.huge_scanned_level() is not None:  # a census would scan that level 8 times a node
            import numpy as np
            return balanced_chunks(np.zeros(self.split_node_count()), _CHUNKS_PER_JOB * jobs)
        census = self.split_census(samples_per_node=CENSUS_SAMPLES_PER_NODE)
        return balanced_chunks(census.iterations, _CHUNKS_PER_JOB * jobs)

    def _count_claimed(self, jobs: int, progress, start: float) -> list[int]:
        """A whole native count on ``jobs`` threads claiming split nodes as they go (uneven nodes
        balance themselves); ``progress`` hears the share of split nodes claimed."""
        nodes = max(self.split_node_count(), 1)
        next_node = (ctypes.c_int64 * 1)(0)
        count = self.native.count_claimed

        def report():
            progress(min(next_node[0] / nodes, 1.0), time.perf_counter() - start)
        counts = claiming(jobs, lambda _thread: count(ctypes.addressof(next_node), 0, WHOLE[1]),
                           next_node, report if progress is not None else None)
        if progress is not None:
            progress(1.0, time.perf_counter() - start)
        return counts

    def _count_in_growing_chunks(self, nodes: int, progress, start: float) -> list[int]:
        """A whole count on one thread, in chunks of 1, 2, 4... of its ``nodes`` split nodes:
        ``progress`` hears the share done after each (Ctrl-C is heard during each: see _run)."""
        counts, lo, size = [], 0, 1
        while lo < max(nodes, 1):
            hi = lo + size if lo + size < nodes else WHOLE[1]
            counts.append(int(self._run("count", lo, hi)))
            lo, size = hi, 2 * size
            if progress is not None:
                progress(min(lo / max(nodes, 1), 1.0), time.perf_counter() - start)
        return counts

    def _in_threads(self, jobs: int, calls: list[tuple], progress=None, start=None) -> list[int]:
        """Run generated functions (name, *args) on ``jobs`` threads (they release the GIL); their
        integer results in order. Compiles first, then times the runs alone (``last_seconds``).
        Ctrl-C is heard while they run; ``progress(done, seconds)`` hears the share of calls done."""
        functions = [self._nest_function(name, *args) for name, *args in calls]
        start = time.perf_counter() if start is None else start
        if jobs <= 1 or len(calls) <= 1:
            results = [self._call(name, f, *args) for f, (name, *args) in zip(functions, calls)]
        else:
            from concurrent.futures import ThreadPoolExecutor  # not for a count in this thread
            pool = ThreadPoolExecutor(jobs)
            futures = [pool.submit(f, *args) for f, (_, *args) in zip(functions, calls)]
            finished = []

            def on_done(_future):
                finished.append(_future)
                if progress is not None:
                    progress(len(finished) / len(futures), time.perf_counter() - start)
            try:
                wait_interruptibly(futures, on_done)
            finally:
                pool.shutdown(wait=False, cancel_futures=True)
            results = [f.result() for f in futures]
        self.last_seconds = time.perf_counter() - start
        return [int(r) for r in results]
