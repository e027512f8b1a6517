"""Runtime: write the generated module (only when it changed), import it, let Numba compile it
(cached on disk), and run ``count`` / ``count_with_stats`` / ``fill``; where the C target prints
the plan (:mod:`.native`), count and enumerate run its library instead. A nest whose loop
iterations are bounded small (:data:`SMALL_NEST_ITERATIONS`) runs in the calling thread; a larger
one in threads that Ctrl-C does not wait for.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import ctypes
import glob
import hashlib
import importlib.util
import math
import os
import re
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from .language import nodes as L
from ..bounds import Comparison, LevelCuts, Threshold
from ..deep import deeply
from ..errors import BeastError
from .model import Space as SpaceModel
from ..interrupt import POLL_SECONDS, call_interruptibly, wait_interruptibly
from ..trust import (GENERATED_DIR_ENV, check_generated_directory, generated_directory, private_directory,
                     trusted_file)
from . import native
from .native import NativeNest

# specialize, plan and codegen (sympy, networkx) are imported where they are used, so that a plan
# answered from the plan cache never imports them; so is numpy, which a native count does not need
if TYPE_CHECKING:
    from .plan import Plan
    from .specialize import Specialized

_WHOLE = (0, 2 ** 62)  # a chunk holding every split node
_CHUNKS_PER_JOB = 8  # threads take balanced chunks as they finish: several each evens out the estimates
_FIRST_BUFFER_BYTES = 256 << 20  # a native enumeration's first buffer per thread (virtual memory)
_CENSUS_SAMPLES_PER_NODE = 8  # a rough census is enough for that, and costs little next to the work
#: loop iterations a nest may take and still run in the calling thread, with no thread started:
#: at about 3 ns each (the flagship's nest takes 1 to 3.5), the POLL_SECONDS that Ctrl-C waits
#: anyway (:mod:`beastgen.interrupt`)
SMALL_NEST_ITERATIONS = 1 << 25
#: loop iterations below which the C library is compiled at -O0: several times faster to compile
#: (dedispersion 0.24 s against 0.39 s, gemm_clblast 0.24 s against 0.85 s, under load), its nest at
#: most about 3 times slower (gemm: 0.54 s against 0.25 s), so at most tens of milliseconds here
QUICK_COMPILE_ITERATIONS = 1 << 22
#: generated functions whose work is at most a walk of the nest (not so Knuth's or Chen's samples)
_NEST_WALKS = frozenset({"count", "count_with_stats", "split_nodes", "fill", "count_pruned", "rank",
                         "cut_analysis"})
#: column types by value type (string values are stored as indices into their constant tuple)
_DTYPES = {"int": "int64", "str": "int64", "float": "float64", "bool": "bool"}


def generated_path(spec: Specialized, generated_dir: str | None = None) -> str:
    """``<space>__<device>__<settings-hash>.py`` in :func:`generated_directory`."""
    return os.path.join(generated_directory(generated_dir), f"{file_name_part(spec.space.name)}__{file_name_part(spec.device.key)}__"
                                   f"{spec.settings_hash()}.py")


def file_name_part(text: str) -> str:
    """``text`` as a plain file name part (letters, digits, ``_``; never a path): other characters
    become ``_``, and then a short hash of the text keeps different texts apart."""
    plain = re.sub(r"[^A-Za-z0-9_]", "_", text)
    if plain == text:
        return text
    return f"{plain[:40]}_{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def write_if_changed(path: str, source: str) -> bool:
    """Write ``source`` unless the file already holds it (keeps Numba's cache valid) and is one of
    yours no one else may write. True if written: whole (through a temporary file, removed when the
    write fails) and writable by you alone; its directory created private where missing."""
    if trusted_file(path):
        try:
            with open(path, encoding="utf-8") as f:
                if f.read() == source:
                    return False
        except (OSError, UnicodeDecodeError):
            pass
    private_directory(os.path.dirname(path))
    tmp = f"{path}.{os.getpid()}.tmp"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)  # left by a killed process of the same pid: its mode is not ours to trust
    try:
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644), "w",
                       encoding="utf-8") as f:
            f.write(source)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return True


def compile_space(space, device=None, settings=None, generated_dir=None, order=None) -> "CompiledPlan":
    """Specialize, plan, generate and import: the compiled plan of ``space`` for one device."""
    from .plan import make_plan
    from .specialize import specialize_space

    def build():
        spec = specialize_space(space, device, settings or {})
        plan = make_plan(spec, order) if not spec.empty_reason else None
        return CompiledPlan(spec, plan, generated_dir)
    return deeply(build)


@dataclass(frozen=True)
class Target:
    """What a compiled plan was compiled for, as plain data (the plan cache stores it as JSON)."""

    space: str
    path: str
    device: str
    device_name: str
    device_source: str
    settings: dict

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Stats:
    """Per-level loop iterations and per-item rejections (filters) or errors (division by zero...)."""

    count: int
    levels: list[tuple[str, int]]  # (iterator, iterations executed at that level)
    rejections: dict[str, int]  # filter -> configurations (or subtrees) it rejected
    errors: dict[str, int]  # iterator/derived/filter -> times it raised (rejected)
    seconds: float

    def as_dict(self) -> dict:
        return {"count": self.count, "levels": [{"iterator": n, "iterations": v} for n, v in self.levels],
                "filters": self.rejections, "errors": self.errors, "seconds": self.seconds}


@dataclass
class Estimate:
    """An estimated number of valid configurations and its 95% confidence interval."""

    count: float
    low: float
    high: float
    samples: int  # Knuth: random descents; Chen: runs
    seconds: float
    method: str = "knuth"  # "knuth", "chen", or "exact" (counted within the time budget)

    @classmethod
    def of_sums(cls, total: float, total_sq: float, samples: int, seconds: float,
                method: str) -> "Estimate":
        """The mean of ``samples`` estimates and its 95% confidence interval (normal
        approximation), from their sum and sum of squares."""
        import numpy as np
        mean = total / samples
        spread = math.sqrt(max(total_sq / samples - mean * mean, 0.0) / samples)
        return cls(mean, max(mean - 1.96 * spread, 0.0), mean + 1.96 * spread, samples, seconds, method)


@dataclass
class Census:
    """Estimates per split node: valid configurations below it, and loop iterations to reach them."""

    configurations: np.ndarray
    iterations: np.ndarray

    def __len__(self) -> int:
        return len(self.configurations)


class CompiledPlan:
    """A space specialized to one device and settings, with its generated, Numba-compiled enumerator."""

    _split_nodes: int | None = None  # split_node_count() once known (it never changes)
    _rows_hint = 0  # rows of the last whole native enumeration: the room the next one's buffers get

    def __init__(self, spec: Specialized, plan: Plan | None, generated_dir: str | None = None):
        from .analysis.symbolic import SymbolicContext

        self.specialized = spec
        self.plan = plan
        self.path = generated_path(spec, generated_dir) if plan else None
        self._symbolic = SymbolicContext(spec.items)  # the proofs, shared by both code writers
        self._source = None  # the Numba module's text, generated when first needed
        self._module = None
        self._native = None  # not looked for yet; False: none (Numba counts)
        self.last_seconds = 0.0

    # -- description -----------------------------------------------------------------------------
    @property
    def empty_reason(self) -> str | None:
        return self.specialized.empty_reason

    @property
    def columns(self) -> list[str]:
        """Iterator names in declaration order: the columns of :meth:`enumerate`."""
        return list(self.specialized.space.iterators)  # items are in dependency order

    @property
    def target(self) -> Target:
        spec = self.specialized
        return Target(spec.space.name, spec.space.path, spec.device.key, spec.device.name,
                      spec.device.source, dict(spec.settings))

    @property
    def source(self) -> str:
        """The generated Numba module's text: generated on first use (a count that the C library
        runs never needs it)."""
        if self._source is None:
            from .codegen.module import generate_module
            self._source = deeply(generate_module, self.plan, self._symbolic) if self.plan else ""
        return self._source

    @source.setter
    def source(self, text: str) -> None:
        self._source = text

    def write(self) -> str | None:
        """Write the generated module (if it changed); its path."""
        if self.path:
            self._writing(lambda: write_if_changed(self.path, self.source))
        return self.path

    def _writing(self, action):
        """``action()`` once the generated directory passes the trust check; what it cannot write
        there (a full disk, a read-only directory) is one clear error."""
        check_generated_directory(os.path.dirname(self.path))
        try:
            return action()
        except OSError as e:
            raise BeastError(f"cannot write the generated enumerator: {e.strerror or e}; choose "
                             f"another directory with --generated-dir or {GENERATED_DIR_ENV}",
                             self.path) from None

    @property
    def module(self):
        if self._module is None:
            self.write()
            name = "beastgen_generated_" + re.sub(r"\W", "_", os.path.basename(self.path)[:-3])
            module_spec = importlib.util.spec_from_file_location(name, self.path)
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[name] = module
            module_spec.loader.exec_module(module)
            self._module = module
        return self._module

    def numba_cached(self, function_name: str) -> bool:
        """Whether Numba's on-disk cache holds ``function_name`` of the generated module (its index
        file ``__pycache__/<module>.<function>-<line>.pyXY.nbi``): a warm run does not compile it."""
        if not self.path:
            return False
        stem = os.path.splitext(os.path.basename(self.path))[0]
        return bool(glob.glob(os.path.join(glob.escape(os.path.dirname(self.path)), "__pycache__",
                                           f"{glob.escape(stem)}.{function_name}-*.nbi")))

    # -- the native count (C target) ---------------------------------------------------------
    @property
    def native(self) -> NativeNest | None:
        """The C target's ``count`` and ``split_nodes``, compiled and loaded (see
        :mod:`beastgen.compiler.native`); None where Numba counts instead."""
        if self._native is None:
            self._native = self._load_native() or False
        return self._native or None

    def _load_native(self) -> NativeNest | None:
        if self.path is None or not native.enabled():
            return None
        source = self.native_source()
        if source is None:
            return None
        directory = os.path.dirname(self.path)  # the Numba module is not needed: not written

        def build():
            private_directory(directory)
            return native.build_library(directory, file_name_part(self.specialized.space.name),
                                        source, self.c_optimization)
        built = self._writing(build)
        return native.load(*built) if built else None

    @property
    def c_optimization(self) -> str:
        """How the C library is optimized: ``-O0`` for a nest of at most
        :data:`QUICK_COMPILE_ITERATIONS` loop iterations, else ``-O2``."""
        bound = self.iteration_bound
        return "-O0" if bound is not None and bound <= QUICK_COMPILE_ITERATIONS else "-O2"

    def native_source(self) -> str | None:
        """The plan's count as C (:mod:`.codegen.c_nest`); None when the C target cannot print it."""
        from .codegen.c_nest import Unsupported, generate_c_module

        try:
            return deeply(generate_c_module, self.plan, self._symbolic)
        except Unsupported:
            return None

    @property
    def iteration_bound(self) -> int | None:
        """An upper bound on the nest's loop iterations (see :meth:`.plan.Plan.iteration_bound`);
        None where it is not known."""
        return self.plan.iteration_bound() if self.plan else 0

    @property
    def small(self) -> bool:
        """Whether a walk of the nest is so short that it runs in the calling thread: no thread
        pool, no split-node census, and Ctrl-C heard as soon as it returns."""
        bound = self.iteration_bound
        return bound is not None and bound <= SMALL_NEST_ITERATIONS

    def count_needs_compiling(self) -> bool:
        """Whether the next count compiles for a while (Numba's cache lacks it and no C library
        counts: building one takes a fraction of a second)."""
        return (self.path is not None and self.native is None and not self.numba_cached("count")
                and not _numpy_nest(self))  # speed3 (issue 26): the NumPy walk compiles nothing

    def estimate_needs_compiling(self, method: str) -> bool:
        """Whether a time-budgeted estimate compiles first (Numba's cache lacks its functions)."""
        functions = ("probe" if method == "knuth" else "chen", "probe", "census")
        return self.path is not None and not all(map(self.numba_cached, functions))

    def _nest_function(self, function_name: str, *args):
        """A generated function: the native count or split_nodes when there is one, else Numba's."""
        if function_name in native.FUNCTIONS and self.native is not None:
            return self.native.function(function_name)
        return self._compiled(function_name, *args)

    def _compiled(self, function_name: str, *args):
        """The generated function, compiled for these arguments' types (a readable error if not)."""
        function = getattr(self.module, function_name)
        try:
            function.compile(tuple(_numba_typeof(a) for a in args)) if args else function.compile(())
        except Exception as e:  # noqa: BLE001 - Numba's errors are long; point at the cause
            if _interrupted(e):  # Ctrl-C while Numba compiled: an interruption, not an error
                raise KeyboardInterrupt from None
            raise self._compile_error(e) from None
        return function

    def _run(self, function_name: str, *args):
        function = self._nest_function(function_name, *args)
        start = time.perf_counter()
        result = self._call(function_name, function, *args)
        self.last_seconds = time.perf_counter() - start
        return result

    def _call(self, function_name: str, function, *args):
        """``function(*args)``: in the calling thread when it walks a small nest, else in a thread
        that Ctrl-C does not wait for (:func:`~beastgen.interrupt.call_interruptibly`)."""
        if function_name in _NEST_WALKS and self.small:
            return function(*args)
        return call_interruptibly(function, *args)

    def _compile_error(self, error: Exception) -> BeastError:
        text = re.sub(r"\x1b\[[0-9;]*m", "", str(error)) or f"{type(error).__name__} inside Numba"
        lines = [int(m) for m in re.findall(re.escape(os.path.basename(self.path)) + r'", line (\d+)', text)]
        where, culprit = self.path, ""
        source_lines = self.source.splitlines()
        if not lines:  # an internal Numba error: blame the innermost generated function compiling
            names = [frame.f_locals["self"].py_func.__name__ for frame, _ in
                     traceback.walk_tb(error.__traceback__)
                     if hasattr(frame.f_locals.get("self"), "py_func")]
            lines = [i + 1 for name in names[-1:] for i, line in enumerate(source_lines)
                     if line.startswith(f"def {name}(")]
        for lineno in lines[-1:]:
            for back in range(lineno - 1, -1, -1):
                m = re.match(r"\s*# (?:loop \d+: )?(iterator|derived|filter|bound) (\w+) \(([^)]*)\)",
                             source_lines[back])
                if m:
                    culprit, where = f"{m.group(1)} '{m.group(2)}': ", m.group(3)
                    break
        summary = next((ln.strip() for ln in text.splitlines()
                        if ln.strip() and not ln.strip().startswith(("File", "During", "Failed in"))),
                       text)
        return BeastError(f"{culprit}Numba cannot compile the generated enumerator "
                          f"({self.path}): {summary}", where)

    # -- running ---------------------------------------------------------------------------------
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
        # speed3 (issue 26): a small nest that no C library counts and Numba has not compiled: NumPy
        if threshold is None and chunk is None and self.native is None and (nest := _numpy_nest(self)):
            return self._vectorised(nest.count, progress)
        if threshold is None:
            if self.small:  # in the calling thread, whole (or the chunk), timed alone
                count = int(self._run("count", *_chunk(chunk))) * self.counted_tail
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

    def _vectorised(self, walk, progress):  # speed3 (issue 26): the NumPy walk, timed
        start = time.perf_counter()
        result = walk()
        self.last_seconds = time.perf_counter() - start
        if progress is not None:
            progress(1.0, self.last_seconds)
        return result

    @property
    def counted_tail(self) -> int:
        """The configurations each prefix the generated ``count`` (and ``count_pruned``) counts
        stands for (:func:`~beastgen.compiler.codegen.nest.counted_tail_size`): multiplied here, in
        Python's exact integers, so that a count past 2**63 never wraps."""
        from .codegen.nest import counted_tail_size

        return counted_tail_size(self.plan.levels) if self.plan else 1

    # -- lower bounds ----------------------------------------------------------------------------
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

    #: default ``samples`` per method: a Chen run expands whole depths, far more work than a descent
    ESTIMATE_SAMPLES = {"knuth": 100_000, "chen": 30_000}

    def estimate(self, samples: int | None = None, seed: int = 0, method: str = "chen",
                 seconds: float | None = None) -> "Estimate":
        """An unbiased estimate of the number of valid configurations, with a 95% confidence interval
        (normal approximation over the ``samples`` independent estimates), for spaces too large to
        count. ``method="chen"``: runs of Chen's heuristic sampling (the generated ``chen``), each far
        more work than a descent and far less variable; ``method="knuth"``: random descents (Knuth's
        estimator, the generated ``probe``). ``samples=None`` takes :attr:`ESTIMATE_SAMPLES` of the
        method. Chen is the default: on gemm (h100) at equal time its interval is 4 to 5 times
        narrower, but a run costs about, per stratum, the product of two consecutive levels' domain
        sizes (the lookahead), where a descent costs their sum.

        With ``seconds`` (and no ``samples``), a time budget: the exact count (method ``"exact"``,
        an interval of one point) when the split census predicts it fits in half the budget and it
        does, else batches of runs until the budget is spent (at most :attr:`ESTIMATE_SAMPLES`)."""
        self._check_estimate(1 if samples is None else int(samples), method)
        if seconds is not None and samples is None:
            return self._estimate_within(float(seconds), seed, method)
        samples = self.ESTIMATE_SAMPLES[method] if samples is None else int(samples)
        if self.path is None:  # an empty space (its plan is not needed to know that)
            return Estimate(0.0, 0.0, 0.0, samples, 0.0, method)
        total, total_sq = self.estimate_sums(samples, seed, method)
        return Estimate.of_sums(total, total_sq, samples, self.last_seconds, method)

    def _check_estimate(self, samples: int, method: str) -> None:
        if method not in self.ESTIMATE_SAMPLES:
            raise BeastError(f"unknown estimation method {method!r} (knuth or chen)")
        if samples < 1:
            raise BeastError("an estimate needs at least one sample")
        self.check_estimable()

    def check_estimable(self) -> None:
        """Refuse (one line naming the iterator and its place) a space whose descents would scan a
        level of more than :attr:`SCAN_LIMIT` values: an estimate would never end."""
        huge = self.huge_scanned_level()
        if huge is not None:
            item, size = huge
            raise BeastError(
                f"{item.origin}: cannot estimate: iterator '{item.name}' has {size:,} values, and every "
                "random descent (and run of Chen's sampling) scans each value of its level; narrow "
                "its domain, or count the space (beastgen count)")

    #: values of one level past which a descent's scan of it (estimates, the census) is refused
    SCAN_LIMIT = 2 ** 31

    def huge_scanned_level(self) -> tuple | None:
        """(iterator, size) of a level whose domain has more than :attr:`SCAN_LIMIT` values that
        descents scan value by value, or None: estimates refuse such a space, and the census that
        balances chunks is skipped (equal chunks of split nodes instead)."""
        from .codegen.nest import largest_scanned_domain

        largest = largest_scanned_domain(self.plan) if self.plan else None
        return largest if largest is not None and largest[1] > self.SCAN_LIMIT else None

    def estimate_sums(self, samples: int, seed: int, method: str) -> tuple[float, float]:
        """(sum, sum of squares) of ``samples`` independent estimates drawn with ``seed``: what
        :meth:`estimate` summarises (the sums of several seeds merge into one estimate)."""
        self._check_estimate(samples, method)
        total, total_sq = self._run("probe" if method == "knuth" else "chen", int(samples), int(seed))
        return float(total), float(total_sq)

    def _estimate_within(self, budget: float, seed: int, method: str) -> Estimate:
        if self.path is None:
            return Estimate(0.0, 0.0, 0.0, 0, 0.0, "exact")
        import numpy as np
        function = "probe" if method == "knuth" else "chen"
        for name, args in ((function, (1, 0)), ("probe", (1, 0)),
                           ("census", (0, 0, np.zeros(0), np.zeros(0)))):
            self._compiled(name, *args)  # all compiling before the clock starts
        self._compile_chunking(jobs=1)
        self.split_node_count()
        start = time.perf_counter()
        exact = self._count_if_cheap(budget / 2, start) if self._census_fits(budget / 4) else None
        if exact is not None:
            return Estimate(float(exact), float(exact), float(exact), 0, time.perf_counter() - start,
                            "exact")
        total = total_sq = 0.0
        samples, batch, limit = 0, 1, self.ESTIMATE_SAMPLES[method]
        sampling = time.perf_counter()
        while samples < self.ESTIMATE_MIN_SAMPLES or (samples < limit and
                                                      time.perf_counter() - start < budget):
            # each batch its own stream: independent of the others, reproducible from ``seed``
            part, part_sq = self._run(function, batch, (int(seed) << 24) + samples)
            total, total_sq, samples = total + part, total_sq + part_sq, samples + batch
            per_sample = (time.perf_counter() - sampling) / samples
            left = budget - (time.perf_counter() - start)
            batch = int(max(1, min(2 * batch, left / per_sample if per_sample > 0 else 2 * batch,
                                   limit - samples)))
        return Estimate.of_sums(total, total_sq, samples, time.perf_counter() - start, method)

    #: runs or descents a time-budgeted estimate takes even past its budget (two make no interval)
    ESTIMATE_MIN_SAMPLES = 10
    #: Knuth descents timed to predict the cost of the split census
    _TIMED_DESCENTS = 32

    def _census_fits(self, budget: float) -> bool:
        """Whether the split census (``_CENSUS_SAMPLES_PER_NODE`` descents below each split node)
        should end within ``budget`` seconds, predicted from timed whole descents (an overestimate:
        a census descent starts at the split level). A wide space has millions of split nodes, and
        its census would take minutes before the estimate even starts."""
        start = time.perf_counter()
        self._run("probe", self._TIMED_DESCENTS, 0)
        per_descent = (time.perf_counter() - start) / self._TIMED_DESCENTS
        return self.split_node_count() * _CENSUS_SAMPLES_PER_NODE * per_descent <= budget

    #: loop iterations per second assumed before the first chunk of an exact count has run
    _ASSUMED_RATE = 1e8

    def _count_if_cheap(self, budget: float, start: float) -> int | None:
        """The exact count, in chunks balanced by the census's estimated work (loop iterations), if
        it takes less than ``budget`` seconds: None as soon as the next chunk, at the rate measured
        so far, would end past the budget. (A census far below the real work can overrun it.)"""
        import numpy as np
        census = self.split_census(samples_per_node=_CENSUS_SAMPLES_PER_NODE)
        work = np.maximum(np.nan_to_num(census.iterations, nan=0.0, posinf=np.inf), 0.0)
        count = done_work = 0
        for lo, hi in balanced_chunks(work, 64):
            spent = time.perf_counter() - start
            rate = done_work / spent if done_work and spent > 0 else self._ASSUMED_RATE
            chunk_work = float(work[lo:hi].sum())
            if spent + chunk_work / rate > budget:
                return None
            count += int(self._run("count", lo, hi))
            done_work += chunk_work
        return int(count) * self.counted_tail

    def stats(self, chunk: tuple[int, int] | None = None) -> Stats:
        """Count with per-level iterations and per-filter rejections. With ``chunk``, the levels
        above :attr:`split_level` (and what their filters reject) are still counted whole."""
        import numpy as np
        if self.plan is None:
            return Stats(0, [], {}, {}, 0.0)
        from .codegen.nest import stat_slots

        slots = stat_slots(self.plan)
        visits = np.zeros(len(self.plan.levels), dtype=np.int64)
        rejections = np.zeros(len(slots), dtype=np.int64)
        n = int(self._run("count_with_stats", visits, rejections, *_chunk(chunk)))
        by_filter = {s.name: int(r) for s, r in zip(slots, rejections) if s.kind == "filter"}
        errors = {s.name: int(r) for s, r in zip(slots, rejections) if s.kind != "filter" and r}
        return Stats(n, list(zip(self.plan.order, map(int, visits))), by_filter, errors,
                     self.last_seconds)

    # -- chunks of the work --------------------------------------------------------------------
    @property
    def split_level(self) -> int:
        """Outer levels every chunk walks; the valid prefixes of that depth are the split nodes."""
        from .codegen.nest import split_level

        return split_level(self.plan) if self.plan else 0

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

    def split_node_count(self) -> int:
        """How many split nodes there are (a walk of the levels above the split, no descents)."""
        if self.path is None:
            return 0
        if self._split_nodes is None:
            self._split_nodes = int(self._run("split_nodes"))
        return self._split_nodes

    def _compile_chunking(self, jobs: int) -> None:
        """Compile the count, and the census only when several threads balance their chunks (a
        native count needs neither)."""
        if self.native is not None:
            return
        import numpy as np
        self._compiled("count", *_WHOLE)
        if jobs > 1:
            self._compiled("census", 0, 0, np.zeros(0), np.zeros(0))

    def _chunks(self, jobs: int, chunk: tuple[int, int] | None) -> list[tuple[int, int]]:
        """``chunk`` (or every split node) for one job; balanced chunks for several."""
        if jobs <= 1:
            return [_chunk(chunk)]
        if self.huge_scanned_level() is not None:  # a census would scan that level 8 times a node
            import numpy as np
            return balanced_chunks(np.zeros(self.split_node_count()), _CHUNKS_PER_JOB * jobs)
        census = self.split_census(samples_per_node=_CENSUS_SAMPLES_PER_NODE)
        return balanced_chunks(census.iterations, _CHUNKS_PER_JOB * jobs)

    def _count_claimed(self, jobs: int, progress, start: float) -> list[int]:
        """A whole native count on ``jobs`` threads claiming split nodes as they go (uneven nodes
        balance themselves); ``progress`` hears the share of split nodes claimed."""
        nodes = max(self.split_node_count(), 1)
        next_node = (ctypes.c_int64 * 1)(0)
        count = self.native.count_claimed

        def report():
            progress(min(next_node[0] / nodes, 1.0), time.perf_counter() - start)
        counts = _claiming(jobs, lambda _thread: count(ctypes.addressof(next_node), 0, _WHOLE[1]),
                           next_node, report if progress is not None else None)
        if progress is not None:
            progress(1.0, time.perf_counter() - start)
        return counts

    def _count_in_growing_chunks(self, nodes: int, progress, start: float) -> list[int]:
        """A whole count on one thread, in chunks of 1, 2, 4... of its ``nodes`` split nodes:
        ``progress`` hears the share done after each (Ctrl-C is heard during each: see _run)."""
        counts, lo, size = [], 0, 1
        while lo < max(nodes, 1):
            hi = lo + size if lo + size < nodes else _WHOLE[1]
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

    def why_empty(self) -> str | None:
        """For an empty space: which filter (or error) emptied it."""
        if self.empty_reason:
            return self.empty_reason
        stats = self.stats()
        if stats.count:
            return None
        from .codegen.nest import stat_slots

        slots = stat_slots(self.plan)
        culprits = [(s, stats.rejections.get(s.name) or stats.errors.get(s.name, 0)) for s in slots]
        culprits = [(s, n) for s, n in culprits if n]
        if not culprits:
            return "some iterator has an empty domain"
        last, n = culprits[-1]
        what = "raised for" if last.kind != "filter" else "rejected"
        return (f"the last {last.kind} to cut it was '{last.name}' ({last.origin}), "
                f"which {what} {n:,} of the remaining candidates")

    def enumerate(self, chunk: tuple[int, int] | None = None, jobs: int = 1,
                  progress=None) -> np.ndarray:
        """Every valid configuration, as a structured array with one field per iterator
        (declaration order); string values are mapped back. With ``chunk=(lo, hi)``, those below the
        split nodes lo <= i < hi: chunks partitioning the nodes concatenate to the whole, in order.
        With ``jobs`` > 1, on that many threads (same rows, same order): natively in one pass (see
        :meth:`_enumerate_native`), else counted then written in chunks balanced by a census.
        ``progress(done, seconds)`` hears the share done (natively: of the split nodes begun;
        Numba's: of its chunks counted, then written, on more than one thread)."""
        import numpy as np
        if self.plan is None:
            return np.zeros(0, dtype=[(n, np.int64) for n in self.columns])
        jobs = jobs if chunk is None and not self.small else 1
        if chunk is None and self.native is None and (nest := _numpy_nest(self)):  # speed3, as in count
            return self._vectorised(lambda: self._structured({name: column.astype(self._column_dtype(
                self.specialized.items[name])) for name, column in nest.columns().items()}), progress)
        if self.native is not None:
            return self._enumerate_native(_chunk(chunk), jobs, progress)
        items = self.specialized.items
        strings = {name for name in self.columns if items[name].value_type == "str"}
        dtype = [(name, self._column_dtype(items[name])) for name in self.columns if name not in strings]
        result = np.empty(0, dtype=dtype)  # compile fill for the result's (strided) field views
        self._compiled("fill", *(np.empty(0, np.int64) if name in strings else result[name]
                                 for name in self.plan.order), 0, 0)
        self._compile_chunking(jobs)
        start = time.perf_counter()
        chunks = self._chunks(jobs, chunk)
        def half(first: int):  # the counts are the first half of the work, the fills the second
            return None if progress is None else lambda done, s: progress((first + done) / 2, s)
        counts = [n * self.counted_tail
                  for n in self._in_threads(jobs, [("count", *c) for c in chunks], half(0), start)]
        offsets = np.cumsum([0] + counts)
        result = np.empty(offsets[-1], dtype=dtype)
        # fill writes straight into the result's fields; string values go through their indices
        columns = {name: (np.empty(offsets[-1], dtype=np.int64) if name in strings else result[name])
                   for name in self.columns}
        filled = self._in_threads(jobs, [
            ("fill", *(columns[name][offsets[i]:offsets[i + 1]] for name in self.plan.order), *c)
            for i, c in enumerate(chunks)], half(1), start)
        assert filled == counts, "fill and count disagree"
        self.last_seconds = time.perf_counter() - start
        if progress is not None:
            progress(1.0, self.last_seconds)
        if not strings:
            return result
        return self._structured({name: columns[name] for name in self.columns})

    def _enumerate_native(self, chunk: tuple[int, int], jobs: int, progress=None) -> np.ndarray:
        """:meth:`enumerate` through the native ``fill``, in one pass: each thread claims the next
        split node as it reaches it (uneven nodes balance themselves) and writes its rows, already
        in the result's layout, into the thread's own buffer; the nodes' rows are then gathered in
        walk order into one of these buffers."""
        import numpy as np
        items = self.specialized.items
        dtype = np.dtype([(name, self._column_dtype(items[name])) for name in self.columns])
        lo, hi = chunk
        start = time.perf_counter()
        nodes = max(min(hi, self.split_node_count()) - lo, 0)
        next_node = (ctypes.c_int64 * 1)(lo)  # the next split node to claim
        node_rows, node_owner = np.zeros(nodes, dtype=np.int64), np.zeros(nodes, dtype=np.int64)
        fill = self.native.fill

        def rows_of(thread: int) -> np.ndarray:
            state = np.array([-1, 0], dtype=np.int64)  # the node to redo (-1: none), rows kept
            # room untouched costs no memory (pages arrive as rows are written): start with plenty
            rows = np.empty(max(self._rows_hint, _FIRST_BUFFER_BYTES // max(dtype.itemsize, 1)), dtype=dtype)
            while not fill(ctypes.addressof(next_node), lo, hi, state.ctypes.data, rows.ctypes.data, len(rows),
                           node_rows.ctypes.data, node_owner.ctypes.data, thread):
                grown = np.empty(4 * len(rows), dtype=dtype)  # a node did not fit: redo it
                ctypes.memmove(grown.ctypes.data, rows.ctypes.data, int(state[1]) * dtype.itemsize)
                rows = grown
            return rows

        def report():
            progress(min((next_node[0] - lo) / max(nodes, 1), 1.0), time.perf_counter() - start)
        buffers = ([rows_of(0)] if self.small else
                   _claiming(max(jobs, 1), rows_of, next_node, report if progress is not None else None))
        if progress is not None:
            progress(1.0, time.perf_counter() - start)
        total = int(node_rows.sum())
        if chunk == _WHOLE:
            self._rows_hint = total
        owners = np.unique(node_owner[node_rows > 0])
        # the buffer of the thread with the most rows becomes the result where it has room for
        # them all (else a new array): the other threads' rows join it node by node from the last
        # (memmove), each node's moving to or past where it is, above the rows still to move
        base = max(owners, key=lambda thread: node_rows[node_owner == thread].sum(), default=0)
        result = buffers[base]
        if len(owners) > 1:
            if len(result) < total:
                result = np.empty(total, dtype=dtype)  # growing the buffer would copy it
            source_ends = np.zeros(nodes, dtype=np.int64)
            for thread in owners:
                mine = node_owner == thread
                source_ends[mine] = np.cumsum(node_rows[mine]) * dtype.itemsize + buffers[thread].ctypes.data
            ends = np.cumsum(node_rows) * dtype.itemsize + result.ctypes.data
            sizes = node_rows * dtype.itemsize
            for node in np.flatnonzero(node_rows)[::-1].tolist():
                size, target, source = int(sizes[node]), int(ends[node]), int(source_ends[node])
                if target != source:
                    ctypes.memmove(target - size, source - size, size)
        result.resize(total, refcheck=False)  # drops the room left over (no copy)
        if any(items[name].value_type == "str" for name in self.columns):
            result = self._structured({name: result[name] for name in self.columns})  # indices mapped back
        self.last_seconds = time.perf_counter() - start
        return result

    def _structured(self, columns: dict, extra=()) -> np.ndarray:
        """One structured array: iterator fields in declaration order (strings mapped back), then
        ``extra`` (name, array) fields."""
        import numpy as np
        items = self.specialized.items
        fields = []
        for name in self.columns:
            column = columns[name]
            if items[name].value_type == "str":
                column = np.array([p.value for p in items[name].domain[1:]])[column.astype(np.int64)]
            fields.append((name, column))
        fields += list(extra)
        n = len(fields[0][1]) if fields else 0
        result = np.empty(n, dtype=[(name, col.dtype) for name, col in fields])
        for name, col in fields:
            result[name] = col
        return result

    def dataframe(self):
        """:meth:`enumerate` as a pandas DataFrame (needs pandas: ``pip install 'beastgen[data]'``)."""
        try:
            import pandas as pd  # optional (beastgen[data])
        except ImportError:
            raise BeastError("plan.dataframe() needs pandas: pip install 'beastgen[data]' (or use "
                             "plan.enumerate(), a NumPy structured array)") from None
        return pd.DataFrame(self.enumerate())

    def _column_dtype(self, item) -> np.dtype:
        import numpy as np
        if item.value_type in _DTYPES:
            return np.dtype(_DTYPES[item.value_type])
        if item.function is not None:
            return _function_value_dtype(getattr(self.module, item.function.name))
        # values(...) (or a derived value) reading function values: the types Numba gave them
        from .specialize import infer_type

        items = self.specialized.items
        parts = item.domain[1:] if item.domain else [item.expr]
        return np.result_type(*(self._column_dtype(items[p.target]) if isinstance(p, L.Ref)
                                else np.dtype(_DTYPES.get(infer_type(p, items), "float64"))
                                for p in parts))


def balanced_chunks(estimates, n_chunks: int) -> list[tuple[int, int]]:
    """Contiguous ranges ``(lo, hi)`` covering ``range(len(estimates))``, at most ``n_chunks`` of
    them and never empty, with about equal sums of ``estimates``: the cuts are the prefix sums
    closest to the multiples of total / n_chunks. Negative and NaN estimates count as 0; when every
    estimate is 0, the nodes are cut into equal numbers."""
    import numpy as np
    values = np.nan_to_num(np.asarray(estimates, dtype=float), nan=0.0, posinf=0.0, neginf=0.0)
    values = np.maximum(values, 0.0)
    n = len(values)
    if n == 0:
        return []
    m = max(1, min(int(n_chunks), n))
    prefix = np.concatenate([[0.0], np.cumsum(values)])
    total = prefix[-1]
    if total <= 0:
        cuts = [round(j * n / m) for j in range(1, m)]
    else:
        cuts = []
        for j in range(1, m):
            target = total * j / m
            i = int(np.searchsorted(prefix, target))  # prefix[i - 1] < target <= prefix[i]
            if 0 < i <= n and target - prefix[i - 1] < prefix[i] - target:
                i -= 1
            cuts.append(i)
    # strictly increasing, inside [1, n - 1], leaving room for the chunks after each cut
    for j in range(len(cuts)):
        low = cuts[j - 1] + 1 if j else 1
        cuts[j] = min(max(cuts[j], low), n - (m - 1 - j))
    bounds = [0, *cuts, n]
    return [(bounds[j], bounds[j + 1]) for j in range(m)]


def _claiming(jobs: int, work, next_node, progress=None) -> list:
    """``work(thread)`` on threads 0 to ``jobs - 1``, which claim split nodes from ``next_node[0]``
    (see :class:`.codegen.c_nest.CClaimingWriter`); their results in order. ``progress()`` is
    called every :data:`POLL_SECONDS` while they run; Ctrl-C leaves them no node to claim (each
    ends with its node) and raises."""
    pool = ThreadPoolExecutor(jobs)
    futures = [pool.submit(work, thread) for thread in range(jobs)]
    try:
        while concurrent.futures.wait(futures, POLL_SECONDS).not_done:
            if progress is not None:
                progress()
    except KeyboardInterrupt:
        next_node[0] = _WHOLE[1]
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return [future.result() for future in futures]


def _interrupted(error: BaseException) -> bool:
    """Whether ``error`` (or what it was raised from or during) is a KeyboardInterrupt."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


def _numpy_nest(compiled):  # speed3 (issue 26): NumPy imported only where no C library counts
    from .vectorised import chosen_nest
    return chosen_nest(compiled)


def _chunk(chunk: tuple[int, int] | None) -> tuple[int, int]:
    lo, hi = chunk or _WHOLE
    if not 0 <= lo <= hi:
        raise BeastError(f"a chunk is a range of split nodes lo <= i < hi, got {chunk!r}")
    return int(lo), int(hi)


def _numba_typeof(value):
    import numba  # lazy: a quarter of a second, needed only once compiled code runs
    return numba.typeof(value)


def _function_value_dtype(dispatcher) -> np.dtype:
    """The element type of what a compiled function iterator returns or yields."""
    import numpy as np
    from numba.core import types  # lazy, as in _numba_typeof

    signatures = dispatcher.nopython_signatures
    if not signatures:
        return np.dtype(np.float64)
    returned = signatures[0].return_type
    element = getattr(returned, "yield_type", None) or getattr(returned, "dtype", None) or returned
    if isinstance(element, types.Boolean):
        return np.dtype(np.bool_)
    if isinstance(element, types.Integer):
        return np.dtype(np.int64)
    return np.dtype(np.float64)


class Space(SpaceModel):
    """A loaded space with the compiler at hand (what :func:`beastgen.load` returns)."""

    @classmethod
    def of(cls, space: SpaceModel) -> Space:
        return cls(space.name, space.path, space.source, space.variables, space.module_globals)

    def specialize(self, device=None, generated_dir=None, **settings) -> CompiledPlan:
        """Specialize to one device and settings, plan, generate and compile: a :class:`CompiledPlan`
        with ``count()``, ``enumerate()``, ``stats()``, ``source``."""
        return compile_space(self, device=device, settings=settings, generated_dir=generated_dir)
