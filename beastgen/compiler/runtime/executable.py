"""The executable a compiled plan runs: the generated Numba module (its text generated, written
only when it changed, imported, compiled on first use and cached on disk) and the C target's library
(:mod:`..native`) where it prints the plan; the generated functions run through
:meth:`Executable.run`. A nest whose loop iterations are bounded small
(:data:`SMALL_NEST_ITERATIONS`) runs in the calling thread; a larger one in threads that Ctrl-C does
not wait for.

Two kinds: :class:`BuiltExecutable`, compiled from the specialized space and its plan, and the plan
cache's (:class:`beastgen.loading.plancache.CachedExecutable`), known from its record, which builds one only
for what the record does not hold. The roles (:mod:`.counter`, :mod:`.enumerator`,
:mod:`.estimator`, :mod:`.ranker`) share one executable in :class:`.compiled_plan.CompiledPlan`.
"""
from __future__ import annotations

import functools
import os
import re
import sys
import time
import types
from typing import TYPE_CHECKING

from ...errors import BeastError
from ...support.deep import deeply
from ...support.generated_dir import GENERATED_DIR_ENV, NUMBA_CACHE, PrivateDirectory, open_private_directory
from ...support.interrupt import (SMALL_NEST_ITERATIONS, call_interruptibly, interruptions_noted,
                                  wait_interruptibly)
from .. import native
from ..native import NativeNest
from .files import file_name_part, generated_path
from .results import Target

# specialize, plan and codegen (sympy, networkx) are imported where they are used, so that a plan
# answered from the plan cache never imports them; so is numpy, which a native count does not need
if TYPE_CHECKING:
    from ..plan import Plan
    from ..specialize.ir import Specialized

#: loop iterations below which the C library is compiled at -O0: several times faster to compile,
#: its nest at most about 3 times slower, so at most tens of milliseconds here (benchmarks/README.md)
QUICK_COMPILE_ITERATIONS = 1 << 22
#: Numba's generated counts in two words (their last argument the high word: native.exact_count)
TWO_WORDS = frozenset({"count", "count_with_stats", "count_pruned"})
#: generated functions whose work is at most a walk of the nest (not so Knuth's or Chen's samples)
_NEST_WALKS = frozenset({"count", "count_with_stats", "split_nodes", "fill", "count_pruned", "rank",
                         "cut_analysis"})


class Executable:
    """The generated functions of one specialized space, compiled and run: what every kind shares.
    A kind gives :attr:`specialized`, :attr:`plan`, :attr:`source`, :meth:`write`,
    :meth:`native_source` and :meth:`library_of_every_function`; the facts read from them here
    (:attr:`columns`, :attr:`counted_tail`...) a kind may know otherwise (the plan cache's record)."""

    specialized: Specialized
    plan: Plan | None
    source: str

    def __init__(self, path: str | None, directory: PrivateDirectory | None = None):
        self.path = path  # the generated module's; None for an empty space
        self._directory = directory  # the generated directory, opened and checked when first needed
        self._module = None
        self._native = None  # not looked for yet; False: none (Numba counts)
        self._split_nodes = None  # split_node_count() once known (it never changes)
        self.last_seconds = 0.0

    # -- description -----------------------------------------------------------------------------
    @property
    def empty_reason(self) -> str | None:
        return self.specialized.empty_reason

    @property
    def columns(self) -> list[str]:
        """Iterator names in declaration order: the columns of an enumeration."""
        return list(self.specialized.space.iterators)  # items are in dependency order

    @property
    def target(self) -> Target:
        spec = self.specialized
        return Target(spec.space.name, spec.space.path, spec.device.key, spec.device.name,
                      spec.device.source, dict(spec.settings))

    @property
    def bound_terms(self) -> list[str]:
        return self.specialized.bound_terms

    def require_bounds(self) -> None:
        """Refuse (naming the space file) a space that declares no bound terms."""
        if not self.bound_terms:
            raise BeastError(f"space '{self.target.space}' declares no bound terms "
                             "(beast.bound / @beast.bound)", self.target.path)

    @property
    def directory(self) -> PrivateDirectory:
        """The generated directory, created where missing, checked and held open
        (:func:`~beastgen.support.generated_dir.open_private_directory`): what is written, compiled and loaded
        there goes through it."""
        if self._directory is None:
            self._directory = open_private_directory(os.path.dirname(self.path))
        return self._directory

    def write(self) -> str | None:
        """Write the generated module (if it changed); its path."""
        raise NotImplementedError

    def native_source(self, functions=None) -> str | None:
        """The plan's ``functions`` (default :attr:`count_functions`) as C; None when the C target
        cannot print the plan."""
        raise NotImplementedError

    def library_of_every_function(self) -> NativeNest | None:
        """The library of every C function, built once; None where it cannot be."""
        raise NotImplementedError

    def writing(self, action):
        """``action()`` in the generated directory once it passes the trust check; what it cannot
        write there (a full disk, a read-only directory) is one clear error."""
        self.directory  # noqa: B018 - opened and checked: a refusal is its own error
        try:
            return action()
        except OSError as e:
            raise BeastError(f"cannot write the generated enumerator: {e.strerror or e}; choose "
                             f"another directory with --generated-dir or {GENERATED_DIR_ENV}",
                             self.path) from None

    def module_text(self) -> str:
        """The text of the generated module, as it is run (and written)."""
        return self.source

    @property
    def module_loaded(self) -> bool:
        """Whether the generated Numba module was run in this process (a C count never needs it)."""
        return self._module is not None

    @property
    def module(self):
        """The generated module, run from the text this process generated (or checked: see
        :meth:`module_text`), never imported from a file another could have put in its place; its
        file, written through the generated directory's descriptor, is what Numba's cache (its
        ``__pycache__``, created and checked first) is keyed by."""
        if self._module is None:
            self.write()
            code = self._module_code(self.module_text())
            name = "beastgen_generated_" + re.sub(r"\W", "_", os.path.basename(self.path)[:-3])
            module = types.ModuleType(name)
            module.__file__ = self.path
            sys.modules[name] = module
            exec(code, module.__dict__)  # noqa: S102 - the text generated here, or checked
            self._module = module
        return self._module
    def _module_code(self, text: str):
        """``text`` compiled (a module of 300 kB takes a tenth of a second), kept in the checked
        ``__pycache__`` under the sha256 of the text and Python's bytecode version, and read back
        through its descriptor: Python's own ``.pyc`` would be found by name."""
        import hashlib
        import importlib.util
        import marshal

        cache = self.writing(lambda: self.directory.subdirectory(NUMBA_CACHE))
        header = importlib.util.MAGIC_NUMBER + hashlib.sha256(text.encode("utf-8")).digest()
        name = (f"{os.path.splitext(os.path.basename(self.path))[0]}.{header[-32:].hex()[:16]}."
                f"{sys.implementation.cache_tag}.code")
        data = cache.read(name)
        if data is not None and data.startswith(header):
            try:
                return marshal.loads(data[len(header):])
            except (EOFError, ValueError, TypeError):
                pass
        code = compile(text, self.path, "exec")
        try:
            cache.write(name, header + marshal.dumps(code))
        except OSError:
            pass  # compiled again next time
        return code

    def numba_cached(self, function_name: str) -> bool:
        """Whether Numba's on-disk cache holds ``function_name`` of the generated module (its index
        file ``__pycache__/<module>.<function>-<line>.pyXY.nbi``): a warm run does not compile it."""
        if not self.path:
            return False
        directory = self._directory or open_private_directory(os.path.dirname(self.path), create=False)
        cache = directory.subdirectory(NUMBA_CACHE, create=False) if directory else None
        stem = os.path.splitext(os.path.basename(self.path))[0]
        prefix = f"{stem}.{function_name}-"
        return cache is not None and any(n.startswith(prefix) and n.endswith(".nbi") for n in cache.names())

    # -- the native count (C target) ---------------------------------------------------------
    @property
    def native(self) -> NativeNest | None:
        """The C target's ``count`` and ``split_nodes``, compiled and loaded (see
        :mod:`beastgen.compiler.native`); None where Numba counts instead."""
        if self._native is None:
            self._native = self.load_native() or False
        return self._native or None

    def use_numba(self) -> None:
        """From here on, Numba runs what the C library would (as where the C target cannot)."""
        self._native = False

    def forget_native(self) -> None:
        """The C library looked for again when next needed (after :meth:`use_numba`)."""
        self._native = None

    def load_native(self) -> NativeNest | None:
        """The library of :attr:`count_functions`, loaded (built where it must be); None where
        Numba counts."""
        source = self.native_source() if self.path is not None and native.enabled() else None
        built = self.build_native(source) if source is not None else None
        return native.load(built, self.count_functions, self.every_native_function) if built else None

    def build_native(self, source: str) -> native.Library | None:
        """The library of ``source`` beside the generated module (:func:`.native.build_library`;
        the Numba module is not needed: not written)."""
        return self.writing(lambda: native.build_library(
            self.directory, file_name_part(self.target.space), source,
            self.c_optimization, self.while_compiling))

    def while_compiling(self) -> None:
        """What runs while the C compiler does (another process: on a second core, hidden): the
        imports of the threads that a count of a nest that is not small may run on next."""
        if not self.small:
            import concurrent.futures  # noqa: F401 - with logging, some milliseconds

    def every_native_function(self) -> NativeNest:
        """The library of every C function (``fill``, a chunk's ``count``...), built on first use:
        the library a count loads holds only :attr:`count_functions`."""
        nest = self.library_of_every_function()
        if nest is None:  # the C compiler's failure was said on stderr
            raise BeastError("cannot build the C library of the whole enumerator", self.path)
        return nest

    def load_every_native_function(self) -> None:
        """Before a command that enumerates: where no library is loaded yet, load (or build) that
        of every C function, not the count's (one compile where there would be two)."""
        if self._native is None and self.path is not None and native.enabled():
            self._native = self.library_of_every_function() or False

    @property
    def count_functions(self) -> tuple[str, ...]:
        """The C functions a whole count calls: ``count`` for a small nest (the calling thread),
        else ``split_nodes`` and ``count_claimed`` (split nodes claimed, by the calling thread and
        by helper threads). Compiling only these roughly halves a cold count's C compile; the
        others are built when first called."""
        return ("count",) if self.small else ("split_nodes", "count_claimed")

    @property
    def c_optimization(self) -> str:
        """How the C library is optimized: ``-O0`` for a nest of at most
        :data:`QUICK_COMPILE_ITERATIONS` loop iterations, else ``-O2``."""
        bound = self.iteration_bound
        return "-O0" if bound is not None and bound <= QUICK_COMPILE_ITERATIONS else "-O2"

    @property
    def iteration_bound(self) -> int | None:
        """An upper bound on the nest's loop iterations (see :meth:`.plan.Plan.iteration_bound`);
        None where it is not known."""
        return self.plan.iteration_bound() if self.plan else 0

    @property
    def small(self) -> bool:
        """Whether a walk of the nest is so short that it runs in the calling thread: no thread
        pool, no split-node census, and Ctrl-C heard as soon as it returns."""
        return bounded_small(self.iteration_bound)

    def numpy_nest(self):
        """The NumPy walk of a small nest that no C library counts and Numba has not compiled
        (:func:`~beastgen.compiler.vectorised.chosen_nest`), or None. NumPy is imported only here."""
        from ..vectorised import chosen_nest
        return chosen_nest(self)

    def run_vectorised(self, walk, progress):
        """``walk()`` (a NumPy walk of the nest), timed as a count is."""
        start = time.perf_counter()
        result = walk()
        self.last_seconds = time.perf_counter() - start
        if progress is not None:
            progress(1.0, self.last_seconds)
        return result

    # -- running the generated functions ---------------------------------------------------------
    def nest_function(self, function_name: str, *args):
        """A generated function: the native count or split_nodes when there is one, else Numba's; a
        count in two words (:data:`TWO_WORDS`) as one that returns an exact integer."""
        if function_name in native.FUNCTIONS and self.native is not None:
            return self.native.function(function_name)
        function = self.compiled(function_name, *args)
        return functools.partial(native.exact_count, function) if function_name in TWO_WORDS else function

    def compiled(self, function_name: str, *args):
        """The generated Numba function, compiled for these arguments' types (a readable error if
        not; a count in two words, :data:`TWO_WORDS`, for its high word too)."""
        function = getattr(self.module, function_name)
        if function_name in TWO_WORDS:
            import numpy as np
            args = (*args, np.zeros(1, np.int64))
        types = tuple(_numba_typeof(a) for a in args)
        if types in function.overloads:  # compiled: no signal handler to swap on a warm run
            return function
        with interruptions_noted() as interruptions:
            try:
                function.compile(types)
            except Exception as e:  # noqa: BLE001 - Numba's errors are long; point at the cause
                interruption = interruptions[0] if interruptions else _interruption(e)
                if interruption is not None:  # Ctrl-C or SIGTERM while Numba compiled: not an error
                    raise interruption from None
                raise self._compile_error(e) from None
        if interruptions:  # swallowed by a callback of llvmlite's, the compile finishing anyway
            raise interruptions[0]
        return function

    def run(self, function_name: str, *args):
        """A generated function run (:meth:`call`), timed alone (:attr:`last_seconds`)."""
        function = self.nest_function(function_name, *args)
        start = time.perf_counter()
        result = self.call(function_name, function, *args)
        self.last_seconds = time.perf_counter() - start
        return result

    def call(self, function_name: str, function, *args):
        """``function(*args)``: in the calling thread when it walks a small nest, else in a thread
        that Ctrl-C does not wait for (:func:`~beastgen.support.interrupt.call_interruptibly`)."""
        if function_name in _NEST_WALKS and (self.small or function_name == "split_nodes"
                                             and bounded_small(self.split_iteration_bound)):
            return function(*args)
        return call_interruptibly(function, *args)

    def in_threads(self, jobs: int, calls: list[tuple], progress=None, start=None) -> list[int]:
        """Run generated functions (name, *args) on ``jobs`` threads (they release the GIL); their
        integer results in order. Compiles first, then times the runs alone (``last_seconds``).
        Ctrl-C is heard while they run; ``progress(done, seconds)`` hears the share of calls done."""
        functions = [self.nest_function(name, *args) for name, *args in calls]
        start = time.perf_counter() if start is None else start
        if jobs <= 1 or len(calls) <= 1:
            results = [self.call(name, f, *args) for f, (name, *args) in zip(functions, calls)]
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

    def _compile_error(self, error: Exception) -> BeastError:
        text = re.sub(r"\x1b\[[0-9;]*m", "", str(error)) or f"{type(error).__name__} inside Numba"
        lines = [int(m) for m in re.findall(re.escape(os.path.basename(self.path)) + r'", line (\d+)', text)]
        where, culprit = self.path, ""
        source_lines = self.source.splitlines()
        if not lines:  # an internal Numba error: blame the innermost generated function compiling
            import traceback
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

    # -- the nest's shape, which every role reads ------------------------------------------------
    @property
    def counted_tail(self) -> int:
        """The configurations each prefix the generated ``count`` (and ``count_pruned``) counts
        stands for (:func:`~beastgen.compiler.codegen.facts.counted_tail_size`): multiplied here, in
        Python's exact integers, so that a count past 2**63 never wraps."""
        from ..codegen.facts import counted_tail_size

        return counted_tail_size(self.plan.levels) if self.plan else 1

    @property
    def split_level(self) -> int:
        """Outer levels every chunk walks; the valid prefixes of that depth are the split nodes."""
        from ..codegen.facts import split_level

        return split_level(self.plan) if self.plan else 0

    def split_node_count(self) -> int:
        """How many split nodes there are (a walk of the levels above the split, no descents)."""
        if self.path is None:
            return 0
        if self._split_nodes is None:
            self._split_nodes = int(self.run("split_nodes"))
        return self._split_nodes

    @property
    def node_iteration_bound(self) -> int | None:
        """An upper bound on the loop iterations below one split node (the levels from
        :attr:`split_level` down); None where it is not known."""
        return self.plan.iteration_bound(self.split_level) if self.plan else 0

    @property
    def split_iteration_bound(self) -> int | None:
        """An upper bound on the loop iterations of the levels above the split (the walk that
        finds the split nodes); None where it is not known."""
        return self.plan.iteration_bound(0, self.split_level) if self.plan else 0


class BuiltExecutable(Executable):
    """The executable compiled from a specialized space and its plan (``plan`` None: an empty
    space). ``recorder``, where one is set (the plan cache's), hears :meth:`compiling` while the C
    compiler runs and :meth:`learnt` each time the module is written or a library is known."""

    def __init__(self, spec: Specialized, plan: Plan | None, generated_dir: str | None = None):
        from ..analysis.symbolic import SymbolicContext

        super().__init__(generated_path(spec, generated_dir) if plan else None)
        self.specialized = spec
        self.plan = plan
        self._symbolic = SymbolicContext(spec.items)  # the proofs, shared by both code writers
        self._source = None  # the Numba module's text, generated when first needed
        self._native_all = None  # the library of every C function, once built (False: none)
        self.written = False  # the module's file written by this process
        self.recorder = None

    @property
    def source(self) -> str:
        """The generated Numba module's text: generated on first use (a count that the C library
        runs never needs it)."""
        if self._source is None:
            from ..codegen.numba.module import generate_module
            self._source = deeply(generate_module, self.plan, self._symbolic) if self.plan else ""
        return self._source

    @source.setter
    def source(self, text: str) -> None:
        self._source = text

    def write(self) -> str | None:
        if self.path:
            self.writing(lambda: self.directory.write_if_changed(os.path.basename(self.path),
                                                                 self.source))
            self.written = True
            self._tell_recorder()
        return self.path

    def native_source(self, functions=None) -> str | None:
        """The plan's ``functions`` (default :attr:`count_functions`) as C (:mod:`.codegen.c`);
        None when the C target cannot print the plan."""
        from ..codegen.c.expression import Unsupported
        from ..codegen.c.module import generate_c_module

        try:
            return deeply(generate_c_module, self.plan, self._symbolic, functions or self.count_functions)
        except Unsupported:
            return None

    def load_native(self) -> NativeNest | None:
        nest = super().load_native()
        if self.path and native.enabled():  # the recorder learns the library (or that there is none)
            self._native = nest or False
            self._tell_recorder()
        return nest

    def library_of_every_function(self) -> NativeNest | None:
        if self._native_all is None:
            source = self.native_source(tuple(native.SIGNATURES))
            built = self.build_native(source) if source is not None else None
            self._native_all = (native.load(built) if built else None) or False
            self._tell_recorder()
        return self._native_all or None

    def load_every_native_function(self) -> None:
        super().load_every_native_function()
        if self._native is not None:
            self._tell_recorder()

    @property
    def native_state(self) -> tuple:
        """(the count's library, the library of every function): each a
        :class:`~beastgen.compiler.native.NativeNest`, False for none, None while not looked for."""
        return self._native, self._native_all

    def while_compiling(self) -> None:
        super().while_compiling()
        if self.recorder is not None:
            self.recorder.compiling(self)

    def _tell_recorder(self) -> None:
        if self.recorder is not None:
            self.recorder.learnt(self)


def bounded_small(iterations: int | None) -> bool:
    """Whether a walk of at most ``iterations`` loop iterations (None: not known) is short enough
    to run in the calling thread (:data:`SMALL_NEST_ITERATIONS`)."""
    return iterations is not None and iterations <= SMALL_NEST_ITERATIONS


def _interruption(error: BaseException):
    """The KeyboardInterrupt (or :class:`~beastgen.support.interrupt.Terminated`) that ``error`` is, or was
    raised from or during; None if none."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def _numba_typeof(value):
    import numba  # lazy: a quarter of a second, needed only once compiled code runs
    return numba.typeof(value)
