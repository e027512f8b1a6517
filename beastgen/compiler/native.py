"""The native count and enumeration: the C target (:mod:`.codegen.c_nest`) compiled by the system C
compiler into a shared library beside the generated module, and called through ctypes (which
releases the GIL, so threads share the work as the Numba nest's do).

The library's file name holds the sha256 of its C source, so a changed plan never loads a stale
library; its own sha256 is recorded beside it (``<library>.sha256``, written by the build) and in
the plan cache, and checked before the library is loaded: a file under that name that was not
built here, or was damaged since, is compiled again, never loaded. Where no C
compiler is found (``$CC``, ``cc``, ``gcc``, ``clang``), the plan is one the C target does not print,
or ``BEASTGEN_NATIVE=0``, counting and enumerating go through Numba as before.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import sys

from ..trust import trusted_file

NATIVE_ENV = "BEASTGEN_NATIVE"
#: -fwrapv: 64-bit integers wrap as Numba's do; no -ffast-math (NaN and infinities must follow IEEE);
#: -pipe: the assembler reads the compiler's output as it comes (4% off a cold count's gcc, loaded)
C_FLAGS = ["-fwrapv", "-pipe", "-shared", "-fPIC"]
#: the optimization of a library: -O0 compiles a small nest several times faster (see
#: :data:`beastgen.compiler.runtime.QUICK_COMPILE_ITERATIONS`), -O2 counts a large one faster
OPTIMIZATIONS = ("-O0", "-O2")
SOURCE_SUFFIX, LIBRARY_SUFFIX, DIGEST_SUFFIX = ".c", ".so", ".sha256"
FUNCTIONS = ("count", "split_nodes")


def enabled() -> bool:
    return os.environ.get(NATIVE_ENV, "1").strip().lower() not in ("0", "no", "off", "false")


def c_compiler() -> str | None:
    chosen = os.environ.get("CC")
    if chosen:
        return shutil.which(chosen.split()[0])
    return next((found for name in ("cc", "gcc", "clang") if (found := shutil.which(name))), None)


def library_path(directory: str, space_name: str, c_source: str, optimization: str = "-O2") -> str:
    """Where the library of ``c_source`` lives: named by its sha256 (and the optimization), so
    settings that change only what the count does not read (a problem size read by bound terms
    alone) share one library."""
    if optimization not in OPTIMIZATIONS:
        raise ValueError(f"unknown optimization {optimization!r}")
    digest = hashlib.sha256(f"{optimization}\n{c_source}".encode()).hexdigest()[:16]
    return os.path.join(directory, f"{space_name}__c{digest}{LIBRARY_SUFFIX}")


def library_digest(path: str) -> str | None:
    """The sha256 of the file at ``path``; None when it cannot be read."""
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def recorded_library(directory: str, entry) -> str | None:
    """The path of the library a plan record's entry names (``{"library", "sha256", "functions"}``)
    when it is a plain file name in ``directory``, the file is this user's alone and its sha256 is
    the recorded one; None otherwise (the plan cache and the warm count's short way share it)."""
    if (not isinstance(entry, dict) or not isinstance(entry.get("library"), str)
            or not isinstance(entry.get("functions"), list)
            or not set(entry["functions"]) <= set(SIGNATURES)):
        return None
    name = entry["library"]
    path = os.path.join(directory, name)
    if os.path.basename(name) == name and trusted_file(path) and library_digest(path) == entry.get("sha256"):
        return path
    return None


def recorded_digest(target: str) -> str | None:
    """The sha256 that this user recorded beside ``target`` when building it (``<target>.sha256``),
    when the library still matches it; None otherwise (not built here, changed, truncated)."""
    record = target + DIGEST_SUFFIX
    if not (trusted_file(record) and trusted_file(target)):
        return None
    try:
        with open(record, encoding="ascii") as f:
            recorded = f.read().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return recorded if library_digest(target) == recorded else None


def build_library(directory: str, space_name: str, c_source: str, optimization: str = "-O2",
                  while_compiling=None) -> tuple[str, str] | None:
    """The compiled library of ``c_source`` and its sha256: the one already there when its recorded
    sha256 matches, else compiled afresh (a file under that name that this user did not build, or
    that changed since, is replaced unread); None when there is no C compiler, or it fails (said on
    stderr: counting goes on with Numba). An OSError writing the source (a full disk, a read-only
    directory) is raised: Numba could not write its module there either. ``while_compiling()`` is
    called while the compiler runs (in another process, so on another core): work the caller needs
    next; if it raises, the compiler is stopped and its files removed."""
    import subprocess  # here: a count whose library is built never starts the compiler

    target = library_path(directory, space_name, c_source, optimization)
    known = recorded_digest(target)
    if known is not None:
        return target, known
    compiler = c_compiler()
    if compiler is None:
        return None
    stem = os.path.splitext(target)[0]
    # per process, renamed into place: workers on one machine may compile it at once
    tmp_source, tmp = f"{stem}.{os.getpid()}{SOURCE_SUFFIX}", f"{target}.{os.getpid()}.tmp"
    tmp_digest = f"{target}.{os.getpid()}{DIGEST_SUFFIX}.tmp"
    try:
        _write_private(tmp_source, c_source)
    except OSError:
        _remove(tmp_source)
        raise
    try:
        _compile([compiler, optimization, *C_FLAGS, "-o", tmp, tmp_source, "-lm"], while_compiling)
        os.chmod(tmp, 0o755)
        digest = library_digest(tmp)
        _write_private(tmp_digest, digest + "\n")
        os.replace(tmp_source, stem + SOURCE_SUFFIX)
        os.replace(tmp, target)
        os.replace(tmp_digest, target + DIGEST_SUFFIX)
    except WorkBesideFailed as e:  # not the compiler's failure: the caller's own error, as it was
        raise e.error from None
    except (OSError, subprocess.CalledProcessError) as e:
        detail = (getattr(e, "stderr", "") or getattr(e, "strerror", "") or "").strip().splitlines()
        reason = detail[0] if detail else getattr(e, "returncode", None) and f"exit status {e.returncode}"
        print(f"beastgen: the C compiler ({compiler}) failed on {tmp_source}: {reason or e}; "
              "counting with Numba", file=sys.stderr)
        return None
    finally:  # an error or SIGTERM (see beastgen.interrupt) leaves no temporary file
        for path in (tmp_source, tmp, tmp_digest):
            _remove(path)
    return target, digest


class WorkBesideFailed(Exception):
    """An error of the work done while the compiler ran (``error``): not the compiler's."""

    def __init__(self, error: Exception):
        super().__init__(str(error))
        self.error = error


def _compile(command: list[str], while_compiling=None) -> None:
    """Run the C compiler, ``while_compiling()`` meanwhile; CalledProcessError (its stderr) when it
    fails. An exception in ``while_compiling`` (Ctrl-C too) stops the compiler before it goes on;
    an error there comes as :class:`WorkBesideFailed`."""
    import subprocess

    compiling = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, errors="replace")
    try:
        try:
            if while_compiling is not None:
                while_compiling()
        except Exception as error:  # noqa: BLE001 - handed on as it was, after the compiler stops
            raise WorkBesideFailed(error) from None
        output, errors = compiling.communicate()
    except BaseException:
        compiling.kill()
        compiling.wait()
        raise
    if compiling.returncode != 0:
        raise subprocess.CalledProcessError(compiling.returncode, command, output, errors)


def _write_private(path: str, text: str) -> None:
    """A new file ``path`` holding ``text``, writable by this user alone."""
    _remove(path)
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644), "w",
                   encoding="utf-8") as f:
        f.write(text)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


_I64, _PTR = ctypes.c_int64, ctypes.c_void_p
#: the library's functions (:data:`~beastgen.compiler.codegen.c_nest.C_FUNCTIONS`): argument
#: types; each returns an int64
SIGNATURES = {"count": [_I64, _I64, _PTR], "split_nodes": [],
              "fill": [_PTR, _I64, _I64, _PTR, _PTR, _I64, _PTR, _PTR, _I64],  # rows of claimed split nodes
              "count_claimed": [_PTR, _I64, _I64, _PTR]}
#: the functions that count in two words: their last argument is the high word (see exact_count)
TWO_WORDS = ("count", "count_claimed")


def exact_count(function, *args) -> int:
    """``function(*args, high)``, a generated count in two words (the low one returned, the high one,
    in units of 2**62, added to ``high[0]``: :attr:`~beastgen.compiler.codegen.nest.NestWalker.CARRIES`),
    as one exact Python integer; ``high`` an int64 array of one (a NumPy array for Numba, ctypes' for C)."""
    if getattr(function, "argtypes", None) is not None:  # ctypes: no NumPy for a warm count
        high = (ctypes.c_int64 * 1)(0)
        low = function(*args, ctypes.addressof(high))
    else:
        import numpy as np
        high = np.zeros(1, np.int64)
        low = function(*args, high)
    return int(low) % 2 ** 64 + (int(high[0]) << 62)


class NativeNest:
    """The library's ``count(lo, hi)`` (an exact integer: :func:`exact_count`) and ``split_nodes()``,
    as the runtime calls the Numba nest's, and
    its ``fill`` and ``count_claimed``, which threads share by claiming split nodes (see
    :class:`beastgen.compiler.codegen.c_nest.CClaimingWriter`). A library may hold only some of
    them (``functions``: a cold count compiles only what it calls); ``more()``, the library of
    them all, built on first use, answers the others."""

    def __init__(self, path: str, sha256: str, functions=tuple(SIGNATURES), more=None):
        self.path, self.sha256, self.functions, self._more = path, sha256, tuple(functions), more
        library = ctypes.CDLL(os.path.abspath(path))
        for name in self.functions:
            setattr(self, name, _bound(library, name))

    def __getattr__(self, name: str):
        """A function this library lacks, from the library of them all (built once)."""
        if name not in SIGNATURES or self.__dict__.get("_more") is None:
            raise AttributeError(name)
        function = getattr(self._more(), name)
        setattr(self, name, function)
        return function

    @property
    def source_path(self) -> str:
        """The C source the library was compiled from (beside it)."""
        return os.path.splitext(self.path)[0] + SOURCE_SUFFIX

    def function(self, name: str):
        if name not in FUNCTIONS:
            raise KeyError(name)
        return getattr(self, name)


def _bound(library, name: str):
    """The library's function ``name``, typed; a count in two words returns one exact integer
    (:func:`exact_count`), so that callers see the Numba nest's signature."""
    function = getattr(library, name)
    function.argtypes, function.restype = SIGNATURES[name], _I64
    if name in TWO_WORDS:
        return lambda *args: exact_count(function, *args)
    return function


def load(path: str, sha256: str, functions=tuple(SIGNATURES), more=None) -> NativeNest | None:
    """The library at ``path`` (holding ``functions``; ``more``: see :class:`NativeNest`), once its
    content is checked to be ``sha256`` (before it is mapped: a damaged library is never loaded);
    None (said on stderr: counting goes on with Numba) when it does not match or does not load."""
    if library_digest(path) != sha256:
        print(f"beastgen: {path} changed since it was built; counting with Numba", file=sys.stderr)
        return None
    try:
        return NativeNest(path, sha256, functions, more)
    except (OSError, AttributeError) as e:
        print(f"beastgen: cannot load {path} ({e}); counting with Numba", file=sys.stderr)
        return None
