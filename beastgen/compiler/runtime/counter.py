"""Counting: the whole space or a chunk of its split nodes, per-level statistics, and why a space is
empty. A small nest is counted whole in the calling thread; a larger one begins there too, split
node by split node, and starts helper threads only when work remains after
:data:`HELPERS_AFTER_SECONDS` (natively, threads claiming split nodes; Numba's, chunks balanced by
a census)."""
from __future__ import annotations

import ctypes
import time

from ...errors import BeastError
from ...support.interrupt import SMALL_NEST_ITERATIONS
from .chunking import CENSUS_SAMPLES_PER_NODE, WHOLE, as_chunk, balanced_chunks, claiming
from .executable import Executable, bounded_small
from .results import Census, Stats

_CHUNKS_PER_JOB = 8  # threads take balanced chunks as they finish: several each evens out the estimates
#: how long the calling thread counts split nodes before helper threads take what remains: a count
#: done by then starts no thread (starting one on a busy core can take milliseconds)
HELPERS_AFTER_SECONDS = 0.05
#: the first step of the calling thread's count is bounded by 1/32 of SMALL_NEST_ITERATIONS loop
#: iterations (a few milliseconds at most): every step walks the levels above the split again
_FIRST_STEP_SHARE = 32


class Counter:
    """``count``, ``stats``, ``why_empty`` and the split census that balances chunks, on one
    :class:`~.executable.Executable`."""

    #: values of one level past which a descent's scan of it (estimates, the census) is refused
    SCAN_LIMIT = 2 ** 31

    def __init__(self, executable: Executable):
        self.executable = executable
        self._whole_native = (None, None, 1)  # (library, its count, counted tail): see _native_whole_count

    def count(self, threshold: float | None = None, chunk: tuple[int, int] | None = None,
              jobs: int = 1, progress=None) -> int:
        """Number of valid configurations; with a threshold (seconds), only those whose bound is at
        most the threshold (bound-pruned; the threshold is a run-time argument: nothing recompiles).
        With ``chunk=(lo, hi)``, only below the split nodes lo <= i < hi (see :meth:`split_census`);
        with ``jobs`` > 1, on that many helper threads once the calling thread has counted for
        :data:`HELPERS_AFTER_SECONDS`: the native count's threads claim split nodes as they go,
        Numba's take chunks balanced by a census. ``progress(done, seconds)`` hears the share of
        the work done (0 to 1) as a whole count goes (of the split nodes begun)."""
        run = self.executable
        if threshold is None and chunk is None and (whole := self._native_whole_count()) is not None:
            count, tail = whole
            start = time.perf_counter()
            counted = count(*WHOLE) * tail
            run.last_seconds = time.perf_counter() - start
            if progress is not None:
                progress(1.0, run.last_seconds)
            return counted
        if run.path is None:  # an empty space (its plan is not needed to know that)
            return 0
        # a small nest that no C library counts and Numba has not compiled: NumPy, no compiler
        if threshold is None and chunk is None and run.native is None and (nest := run.numpy_nest()):
            return run.run_vectorised(nest.count, progress)
        if threshold is not None:
            if chunk is not None:
                raise BeastError("a bound-pruned count runs whole, not in chunks")
            run.require_bounds()
            return int(run.run("count_pruned", float(threshold))) * run.counted_tail
        if run.small:  # in the calling thread, whole (or the chunk), timed alone
            count = int(run.run("count", *as_chunk(chunk))) * run.counted_tail
            if progress is not None:
                progress(1.0, run.last_seconds)
            return count
        if chunk is not None:
            self.compile_chunking(1)
            return sum(run.in_threads(1, [("count", *as_chunk(chunk))])) * run.counted_tail
        self.compile_chunking(jobs)
        start = time.perf_counter()
        first, counted = self._count_here(start, progress)
        if first is not None:  # work remains: helper threads take it
            counted += sum(self._count_helped(max(jobs, 1), first, progress, start))
        run.last_seconds = time.perf_counter() - start  # the census included
        if progress is not None:
            progress(1.0, run.last_seconds)
        return counted * run.counted_tail

    def _native_whole_count(self) -> tuple | None:
        """(the C library's ``count``, the counted tail) where a whole count is one call of it in
        this thread (a small nest that a library counts), looked up once a library: a tiny space's
        count is mostly this lookup otherwise; None where it is not."""
        run = self.executable
        nest = run.native if run.path is not None else None
        if nest is None or not run.small:
            return None
        if self._whole_native[0] is not nest:
            self._whole_native = (nest, nest.function("count"), run.counted_tail)
        return self._whole_native[1:]

    def _count_here(self, start: float, progress) -> tuple[int | None, int]:
        """The first split nodes counted in the calling thread, in steps of growing size (the first
        at most 1/:data:`_FIRST_STEP_SHARE` of :data:`~beastgen.support.interrupt.SMALL_NEST_ITERATIONS`
        loop iterations by the nest's bound, each next one twice as many up to all of them, so
        that Ctrl-C is heard between them) until :data:`HELPERS_AFTER_SECONDS` have passed:
        (the first node not counted, or None when none is left; the count so far). Where a split
        node's walk is not bounded small, nothing is counted here."""
        run = self.executable
        node_bound = run.node_iteration_bound
        if not bounded_small(node_bound):
            return 0, 0
        step_limit = max(1, SMALL_NEST_ITERATIONS // max(node_bound, 1))
        size = max(1, step_limit // _FIRST_STEP_SHARE)
        if run.native is not None:
            next_node = (ctypes.c_int64 * 1)(0)
            count_claimed, address = run.native.count_claimed, ctypes.addressof(next_node)

            def walk(lo: int, hi: int) -> tuple[int, bool]:  # (count, whether every node is walked)
                next_node[0] = lo  # no other thread claims: the claims run lo, lo + 1...
                return count_claimed(address, 0, hi), next_node[0] <= hi  # (a claim past hi returns)
        else:
            count, nodes = run.nest_function("count", *WHOLE), run.split_node_count()

            def walk(lo: int, hi: int) -> tuple[int, bool]:
                return count(lo, hi), hi >= nodes
        counted, lo = 0, 0
        while True:
            part, finished = walk(lo, lo + size)
            counted, lo = counted + int(part), lo + size
            if finished:
                return None, counted
            if progress is not None:
                progress(min(lo / max(run.split_node_count(), 1), 1.0), time.perf_counter() - start)
            if time.perf_counter() - start >= HELPERS_AFTER_SECONDS:
                return lo, counted
            size = min(2 * size, step_limit)

    def _count_helped(self, jobs: int, first: int, progress, start: float) -> list[int]:
        """The split nodes from ``first`` on, counted by ``jobs`` helper threads."""
        run = self.executable
        if run.native is not None:
            return self._count_claimed(jobs, first, progress, start)
        if jobs <= 1:
            # split_nodes compiles before the clock starts: the long-count warning extrapolates
            # the run alone
            return self._count_in_growing_chunks(first, run.split_node_count(), progress, start)
        calls = [("count", *c) for c in self.chunks(jobs, (first, WHOLE[1]))]
        return run.in_threads(jobs, calls, progress, start)

    def stats(self, chunk: tuple[int, int] | None = None) -> Stats:
        """Count with per-level iterations and per-filter rejections. With ``chunk``, the levels
        above :attr:`split_level` (and what their filters reject) are still counted whole."""
        import numpy as np
        run = self.executable
        if run.plan is None:
            return Stats(0, [], {}, {}, 0.0)
        from ..codegen.facts import stat_slots

        slots = stat_slots(run.plan)
        visits = np.zeros(len(run.plan.levels), dtype=np.int64)
        rejections = np.zeros(len(slots), dtype=np.int64)
        n = int(run.run("count_with_stats", visits, rejections, *as_chunk(chunk)))
        by_filter = {s.name: int(r) for s, r in zip(slots, rejections) if s.kind == "filter"}
        errors = {s.name: int(r) for s, r in zip(slots, rejections) if s.kind != "filter" and r}
        return Stats(n, list(zip(run.plan.order, map(int, visits))), by_filter, errors,
                     run.last_seconds)

    def why_empty(self, stats=None) -> str | None:
        """For an empty space: which filter (or error) emptied it. ``stats()`` (default
        :meth:`stats`) gives the statistics it reads."""
        run = self.executable
        if run.empty_reason:
            return run.empty_reason
        stats = (stats or self.stats)()
        if stats.count:
            return None
        from ..codegen.facts import stat_slots

        slots = stat_slots(run.plan)
        culprits = [(s, stats.rejections.get(s.name) or stats.errors.get(s.name, 0)) for s in slots]
        culprits = [(s, n) for s, n in culprits if n]
        if not culprits:
            return "some iterator has an empty domain"
        last, n = culprits[-1]
        what = "raised for" if last.kind != "filter" else "rejected"
        return (f"the last {last.kind} to cut it was '{last.name}' ({last.origin}), "
                f"which {what} {n:,} of the remaining candidates")

    def count_needs_compiling(self) -> bool:
        """Whether the next count compiles for a while (Numba's cache lacks it and no C library
        counts: building one takes a fraction of a second)."""
        run = self.executable
        return (run.path is not None and run.native is None and not run.numba_cached("count")
                and not run.numpy_nest())  # the NumPy walk compiles nothing

    def split_census(self, samples_per_node: int = 32, seed: int = 0) -> Census:
        """Per split node, in walk order (the numbering of ``chunk=(lo, hi)``), Knuth descents'
        estimates of the valid configurations below it and of the loop iterations (work) they take."""
        import numpy as np
        run = self.executable
        if run.path is None:
            return Census(np.zeros(0), np.zeros(0))
        nodes = run.split_node_count()
        census = Census(np.zeros(nodes), np.zeros(nodes))
        run.run("census", int(samples_per_node), int(seed), census.configurations, census.iterations)
        return census

    def huge_scanned_level(self) -> tuple | None:
        """(iterator, size) of a level whose domain has more than :attr:`SCAN_LIMIT` values that
        descents scan value by value, or None: estimates refuse such a space, and the census that
        balances chunks is skipped (equal chunks of split nodes instead)."""
        from ..codegen.facts import largest_scanned_domain

        plan = self.executable.plan
        largest = largest_scanned_domain(plan) if plan else None
        return largest if largest is not None and largest[1] > self.SCAN_LIMIT else None

    def compile_chunking(self, jobs: int) -> None:
        """Compile the count, and the census only when several threads balance their chunks (a
        native count needs neither)."""
        run = self.executable
        if run.native is not None:
            return
        import numpy as np
        run.compiled("count", *WHOLE)
        if jobs > 1:
            run.compiled("census", 0, 0, np.zeros(0), np.zeros(0))

    def chunks(self, jobs: int, chunk: tuple[int, int] | None) -> list[tuple[int, int]]:
        """``chunk`` (or every split node) for one job; balanced chunks of it for several."""
        if jobs <= 1:
            return [as_chunk(chunk)]
        import numpy as np
        lo, hi = as_chunk(chunk)
        nodes = self.executable.split_node_count()
        if self.huge_scanned_level() is not None:  # a census would scan that level 8 times a node
            work = np.zeros(nodes)
        else:
            work = self.split_census(samples_per_node=CENSUS_SAMPLES_PER_NODE).iterations
        parts = balanced_chunks(work[lo:min(hi, nodes)], _CHUNKS_PER_JOB * jobs)
        return [(lo + a, lo + b) for a, b in parts[:-1]] + [(lo + parts[-1][0], hi)] if parts else [(lo, hi)]

    def _count_claimed(self, jobs: int, first: int, progress, start: float) -> list[int]:
        """A native count of the split nodes from ``first`` on, by ``jobs`` threads claiming them as
        they go (uneven nodes balance themselves); ``progress`` hears the share of split nodes
        claimed."""
        run = self.executable
        next_node = (ctypes.c_int64 * 1)(first)
        count = run.native.count_claimed
        nodes = max(run.split_node_count(), 1) if progress is not None else 1

        def report():
            progress(min(next_node[0] / nodes, 1.0), time.perf_counter() - start)
        return claiming(jobs, lambda _thread: count(ctypes.addressof(next_node), 0, WHOLE[1]),
                        next_node, report if progress is not None else None)

    def _count_in_growing_chunks(self, lo: int, nodes: int, progress, start: float) -> list[int]:
        """The split nodes from ``lo`` on (of ``nodes``) counted on one helper thread, in chunks of
        1, 2, 4... nodes: ``progress`` hears the share done after each (Ctrl-C is heard during
        each: see :meth:`.Executable.call`)."""
        run = self.executable
        counts, size = [], 1
        while lo < max(nodes, 1):
            hi = lo + size if lo + size < nodes else WHOLE[1]
            counts.append(int(run.run("count", lo, hi)))
            lo, size = hi, 2 * size
            if progress is not None:
                progress(min(lo / max(nodes, 1), 1.0), time.perf_counter() - start)
        return counts
