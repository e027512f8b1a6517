"""The compiled plan's core: the generated Numba module (its text generated, written only when it
changed, imported, compiled on first use and cached on disk) and the C target's library
(:mod:`..native`) where it prints the plan; the generated functions run through :meth:`PlanCore._run`.
A nest whose loop iterations are bounded small (:data:`SMALL_NEST_ITERATIONS`) runs in the calling
thread; a larger one in threads that Ctrl-C does not wait for. The roles built on it (counting,
enumeration, estimation, ranking) are its subclasses, joined in :class:`.driver.CompiledPlan`.
"""
from __future__ import annotations

import os
import re
import sys
import time
import types
from typing import TYPE_CHECKING

from ...deep import deeply
from ...errors import BeastError
from ...interrupt import SMALL_NEST_ITERATIONS, call_interruptibly
from ...trust import GENERATED_DIR_ENV, NUMBA_CACHE, PrivateDirectory, open_private_directory
from .. import native
from ..native import NativeNest
from .files import file_name_part, generated_path
from .results import Target

# specialize, plan and codegen (sympy, networkx) are imported where they are used, so that a plan
# answered from the plan cache never imports them; so is numpy, which a native count does not need
if TYPE_CHECKING:
    from ..plan import Plan
    from ..specialize.ir import Specialized

#: loop iterations below which the C library is compiled at -O0: several times faster to compile
#: (dedispersion 0.24 s against 0.39 s, gemm_clblast 0.24 s against 0.85 s, under load), its nest at
#: most about 3 times slower (gemm: 0.54 s against 0.25 s), so at most tens of milliseconds here
QUICK_COMPILE_ITERATIONS = 1 << 22
#: generated functions whose work is at most a walk of the nest (not so Knuth's or Chen's samples)
_NEST_WALKS = frozenset({"count", "count_with_stats", "split_nodes", "fill", "count_pruned", "rank",
                         "cut_analysis"})


class PlanCore:
    """A space specialized to one device and settings, with its generated enumerator: what it was
    compiled for, its sources, and the generated functions compiled and run."""

    _split_nodes: int | None = None  # split_node_count() once known (it never changes)

    def __init__(self, spec: Specialized, plan: Plan | None, generated_dir: str | None = None):
        from ..analysis.symbolic import SymbolicContext

        self.specialized = spec
        self.plan = plan
        self.path = generated_path(spec, generated_dir) if plan else None
        self._symbolic = SymbolicContext(spec.items)  # the proofs, shared by both code writers
        self._source = None  # the Numba module's text, generated when first needed
        self._module = None
        self._native = None  # not looked for yet; False: none (Numba counts)
        self._native_all = None  # the library of every C function, once built
        self._directory = None  # the generated directory, opened and checked when first needed
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
            from ..codegen.module import generate_module
            self._source = deeply(generate_module, self.plan, self._symbolic) if self.plan else ""
        return self._source

    @source.setter
    def source(self, text: str) -> None:
        self._source = text

    @property
    def directory(self) -> PrivateDirectory:
        """The generated directory, created where missing, checked and held open
        (:func:`~beastgen.trust.open_private_directory`): what is written, compiled and loaded
        there goes through it."""
        if self._directory is None:
            self._directory = open_private_directory(os.path.dirname(self.path))
        return self._directory

    def write(self) -> str | None:
        """Write the generated module (if it changed); its path."""
        if self.path:
            self._writing(lambda: self.directory.write_if_changed(os.path.basename(self.path),
                                                                  self.source))
        return self.path

    def _writing(self, action):
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

        cache = self._writing(lambda: self.directory.subdirectory(NUMBA_CACHE))
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
            self._native = self._load_native() or False
        return self._native or None

    def _load_native(self) -> NativeNest | None:
        source = self.native_source() if self.path is not None and native.enabled() else None
        built = self._build_native(source) if source is not None else None
        return native.load(built, self.count_functions, self._every_native_function) if built else None

    def _build_native(self, source: str) -> native.Library | None:
        """The library of ``source`` beside the generated module (:func:`.native.build_library`;
        the Numba module is not needed: not written)."""
        return self._writing(lambda: native.build_library(
            self.directory, file_name_part(self.specialized.space.name), source,
            self.c_optimization, self._while_compiling))

    def _while_compiling(self) -> None:
        """What runs while the C compiler does (another process: on a second core, hidden): the
        imports of the threads that a count of a nest that is not small runs on next."""
        if not self.small:
            import concurrent.futures  # noqa: F401 - with logging, some milliseconds

    def _every_native_function(self) -> NativeNest:
        """The library of every C function (``fill``, a chunk's ``count``...), built on first use:
        the library a count loads holds only :attr:`count_functions`."""
        nest = self._library_of_all()
        if nest is None:  # the C compiler's failure was said on stderr
            raise BeastError("cannot build the C library of the whole enumerator", self.path)
        return nest

    def _library_of_all(self) -> NativeNest | None:
        """The library of every C function, built once; None where it cannot be."""
        if self._native_all is None:
            source = self.native_source(tuple(native.SIGNATURES))
            built = self._build_native(source) if source is not None else None
            self._native_all = (native.load(built) if built else None) or False
        return self._native_all or None

    def load_every_native_function(self) -> None:
        """Before a command that enumerates: where no library is loaded yet, load (or build) that
        of every C function, not the count's (one compile where there would be two)."""
        if self._native is None and self.path is not None and native.enabled():
            self._native = self._library_of_all() or False

    @property
    def count_functions(self) -> tuple[str, ...]:
        """The C functions a whole count calls: ``count`` for a small nest (the calling thread),
        else ``split_nodes`` and ``count_claimed`` (threads claiming split nodes). Compiling only
        these roughly halves a cold count's C compile; the others are built when first called."""
        return ("count",) if self.small else ("split_nodes", "count_claimed")

    @property
    def c_optimization(self) -> str:
        """How the C library is optimized: ``-O0`` for a nest of at most
        :data:`QUICK_COMPILE_ITERATIONS` loop iterations, else ``-O2``."""
        bound = self.iteration_bound
        return "-O0" if bound is not None and bound <= QUICK_COMPILE_ITERATIONS else "-O2"

    def native_source(self, functions=None) -> str | None:
        """The plan's ``functions`` (default :attr:`count_functions`) as C (:mod:`.codegen.c_nest`);
        None when the C target cannot print the plan."""
        from ..codegen.c_nest import Unsupported, generate_c_module

        try:
            return deeply(generate_c_module, self.plan, self._symbolic, functions or self.count_functions)
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
                and not self.numpy_nest())  # the NumPy walk compiles nothing

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
        stands for (:func:`~beastgen.compiler.codegen.nest.counted_tail_size`): multiplied here, in
        Python's exact integers, so that a count past 2**63 never wraps."""
        from ..codegen.nest import counted_tail_size

        return counted_tail_size(self.plan.levels) if self.plan else 1

    @property
    def split_level(self) -> int:
        """Outer levels every chunk walks; the valid prefixes of that depth are the split nodes."""
        from ..codegen.nest import split_level

        return split_level(self.plan) if self.plan else 0

    def split_node_count(self) -> int:
        """How many split nodes there are (a walk of the levels above the split, no descents)."""
        if self.path is None:
            return 0
        if self._split_nodes is None:
            self._split_nodes = int(self._run("split_nodes"))
        return self._split_nodes


def _interrupted(error: BaseException) -> bool:
    """Whether ``error`` (or what it was raised from or during) is a KeyboardInterrupt."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


def _numba_typeof(value):
    import numba  # lazy: a quarter of a second, needed only once compiled code runs
    return numba.typeof(value)
