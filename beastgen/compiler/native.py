"""The native count and enumeration: the C target (:mod:`.codegen.c`) compiled by the system C
compiler into a shared library beside the generated module, and called through ctypes (which
releases the GIL, so threads share the work as the Numba nest's do).

The library's file name holds the sha256 of its C source, so a changed plan never loads a stale
library; its own sha256 is recorded beside it (``<library>.sha256``, written by the build) and in
the plan cache, and checked before the library is loaded: a file under that name that was not
built here, or was damaged since, is compiled again, never loaded. Everything goes through the
descriptor of the checked generated directory (:class:`beastgen.support.generated_dir.PrivateDirectory`): the
compiler reads the source from a descriptor and writes through ``/proc/self/fd``, and the library
mapped is the descriptor whose bytes were hashed. Where no C
compiler is found (``$CC``, ``cc``, ``gcc``, ``clang``), the plan is one the C target does not print,
or ``BEASTGEN_NATIVE=0``, counting and enumerating go through Numba as before.
"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import os
import shutil
import stat
import sys
from typing import NamedTuple

from ..support.generated_dir import PrivateDirectory, open_private_directory, read_all, sha256_of

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
    """Where the library of ``c_source`` lives (:func:`library_name` in ``directory``)."""
    return os.path.join(directory, library_name(space_name, c_source, optimization))


def library_name(space_name: str, c_source: str, optimization: str = "-O2") -> str:
    """The library's file name: named by the sha256 of its source (and the optimization), so
    settings that change only what the count does not read (a problem size read by bound terms
    alone) share one library."""
    if optimization not in OPTIMIZATIONS:
        raise ValueError(f"unknown optimization {optimization!r}")
    digest = hashlib.sha256(f"{optimization}\n{c_source}".encode()).hexdigest()[:16]
    return f"{space_name}__c{digest}{LIBRARY_SUFFIX}"


class Library(NamedTuple):
    """A library checked before it is mapped: ``fd`` is open on the very file whose bytes hashed
    to ``sha256`` (what :func:`load` maps, through ``/proc/self/fd``); ``path`` names it in
    messages and leads to the C source beside it."""

    path: str
    sha256: str
    fd: int


def _opened(directory: PrivateDirectory, name: str, sha256: str | None = None) -> Library | None:
    """``name`` in ``directory`` when it is a file of yours alone (:meth:`PrivateDirectory.open_trusted`)
    and, when ``sha256`` is given, its bytes hash to it; None otherwise."""
    fd = directory.open_trusted(name)
    if fd is None:
        return None
    try:
        digest = sha256_of(read_all(fd))
    except OSError:
        digest = None
    if digest is None or (sha256 is not None and digest != sha256):
        os.close(fd)
        return None
    return Library(directory.file_path(name), digest, fd)


def recorded_library(directory: PrivateDirectory, entry) -> Library | None:
    """The library a plan record's entry names (``{"library", "sha256", "functions"}``) when it is
    a plain file name in ``directory``, the file is this user's alone and its sha256 is the
    recorded one; None otherwise (the plan cache and the warm count's short way share it)."""
    if (not isinstance(entry, dict) or not isinstance(entry.get("library"), str)
            or not isinstance(entry.get("sha256"), str)
            or not isinstance(entry.get("functions"), list)
            or not set(entry["functions"]) <= set(SIGNATURES)):
        return None
    name = entry["library"]
    if os.path.basename(name) != name or not name.endswith(LIBRARY_SUFFIX):
        return None
    return _opened(directory, name, entry["sha256"])


def recorded_digest(directory: PrivateDirectory, name: str) -> Library | None:
    """The library ``name`` that this user built in ``directory``: its sha256 recorded beside it
    (``<name>.sha256``) when building it still matches it; None otherwise (not built here,
    changed, truncated)."""
    recorded = directory.read(name + DIGEST_SUFFIX, limit=128)
    try:
        recorded = recorded.decode("ascii").strip() if recorded else None
    except UnicodeDecodeError:
        return None
    return _opened(directory, name, recorded) if recorded else None


def build_library(directory: PrivateDirectory | str, space_name: str, c_source: str,
                  optimization: str = "-O2", while_compiling=None) -> Library | None:
    """The compiled library of ``c_source`` in ``directory`` (a path is opened and checked
    first): the one already there when its recorded sha256 matches, else compiled afresh (a file
    under that name that this user did not build, or that changed since, is replaced unread); None
    when there is no C compiler, or it fails (said on stderr: counting goes on with Numba). An
    OSError writing the source (a full disk, a read-only directory) is raised: Numba could not
    write its module there either. ``while_compiling()`` is called while the compiler runs (in
    another process, so on another core): work the caller needs next; if it raises, the compiler
    is stopped and its files removed.

    Nothing is looked up by name outside ``directory``'s descriptor: the compiler reads the source
    from a descriptor (its standard input) and writes the library through ``/proc/self/fd/N`` of
    the directory; the library is then opened, checked (a regular file of yours, one link),
    hashed, and the descriptor hashed is the one loaded."""
    import subprocess  # here: a count whose library is built never starts the compiler

    if isinstance(directory, str):
        directory = open_private_directory(directory)
    name = library_name(space_name, c_source, optimization)
    known = recorded_digest(directory, name)
    if known is not None:
        return known
    compiler = c_compiler()
    if compiler is None:
        return None
    stem = os.path.splitext(name)[0]
    # per process, renamed into place: workers on one machine may compile it at once
    tmp_source, tmp = f"{stem}.{os.getpid()}{SOURCE_SUFFIX}", f"{name}.{os.getpid()}.tmp"
    tmp_names = (tmp_source, tmp)
    for leftover in tmp_names:  # left by a killed process of the same pid
        directory.remove(leftover)
    source_fd = None
    try:  # the source: an OSError here is raised (see above), not the compiler's failure
        source_fd = os.open(tmp_source, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                            | os.O_CLOEXEC, 0o644, dir_fd=directory.fd)
        with os.fdopen(os.dup(source_fd), "w", encoding="utf-8") as f:
            f.write(c_source)
        os.lseek(source_fd, 0, os.SEEK_SET)
    except BaseException:
        if source_fd is not None:
            os.close(source_fd)
        directory.remove(tmp_source)
        raise
    try:
        _compile([compiler, optimization, *C_FLAGS, "-o", directory.fd_path(tmp), "-x", "c", "-",
                  "-lm"], source_fd, directory.fd, while_compiling)
        built = _checked_output(directory, tmp)
        try:
            directory.write(name + DIGEST_SUFFIX, (built.sha256 + "\n").encode("ascii"))
            directory.replace(tmp_source, stem + SOURCE_SUFFIX)
            directory.replace(tmp, name)
        except BaseException:
            os.close(built.fd)
            raise
        return built._replace(path=directory.file_path(name))
    except WorkBesideFailed as e:  # not the compiler's failure: the caller's own error, as it was
        raise e.error from None
    except (OSError, subprocess.CalledProcessError) as e:
        detail = (getattr(e, "stderr", "") or getattr(e, "strerror", "") or "").strip().splitlines()
        reason = detail[0] if detail else getattr(e, "returncode", None) and f"exit status {e.returncode}"
        print(f"beastgen: the C compiler ({compiler}) failed on the C source of "
              f"{directory.file_path(name)}: {reason or e}; counting with Numba", file=sys.stderr)
        return None
    finally:  # an error, Ctrl-C, SIGTERM or SIGHUP (see beastgen.support.interrupt) leaves no temporary file
        os.close(source_fd)
        for leftover in tmp_names:
            directory.remove(leftover)


def _checked_output(directory: PrivateDirectory, name: str) -> Library:
    """The library the compiler just wrote as ``name``, opened (never through a link), checked (a
    regular file of yours with one link, made writable by you alone) and hashed: an OSError when
    it is anything else."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=directory.fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_nlink != 1:
            raise OSError(errno.EPERM, "the compiler's output is not a file of this user's alone")
        os.fchmod(fd, 0o755)
        return Library(directory.file_path(name), sha256_of(read_all(fd)), fd)
    except BaseException:
        os.close(fd)
        raise


class WorkBesideFailed(Exception):
    """An error of the work done while the compiler ran (``error``): not the compiler's."""

    def __init__(self, error: Exception):
        super().__init__(str(error))
        self.error = error


def _compile(command: list[str], source_fd: int, directory_fd: int, while_compiling=None) -> None:
    """Run the C compiler on the source at ``source_fd`` (its standard input), the directory
    ``directory_fd`` passed on (its output goes there through ``/proc/self/fd``), and
    ``while_compiling()`` meanwhile; CalledProcessError (its stderr) when it fails. The compiler
    runs in a process group of its own: an exception in ``while_compiling`` (Ctrl-C, SIGTERM,
    SIGHUP too) kills the whole group (driver, cc1, as, ld) before it goes on; an error there
    comes as :class:`WorkBesideFailed`."""
    import signal
    import subprocess

    compiling = subprocess.Popen(command, stdin=source_fd, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, errors="replace",
                                 pass_fds=(directory_fd,), start_new_session=True)
    try:
        try:
            if while_compiling is not None:
                while_compiling()
        except Exception as error:  # noqa: BLE001 - handed on as it was, after the compiler stops
            raise WorkBesideFailed(error) from None
        output, errors = compiling.communicate()
    except BaseException:
        with contextlib.suppress(OSError):
            os.killpg(compiling.pid, signal.SIGKILL)
        compiling.kill()
        compiling.wait()
        raise
    if compiling.returncode != 0:
        raise subprocess.CalledProcessError(compiling.returncode, command, output, errors)


_I64, _PTR = ctypes.c_int64, ctypes.c_void_p
#: the library's functions (:data:`~beastgen.compiler.codegen.c.functions.C_FUNCTIONS`): argument
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
    :class:`beastgen.compiler.codegen.c.functions.CClaimingWriter`). A library may hold only some of
    them (``functions``: a cold count compiles only what it calls); ``more()``, the library of
    them all, built on first use, answers the others."""

    def __init__(self, library: Library, functions=tuple(SIGNATURES), more=None):
        self.path, self.sha256, self.functions, self._more = library.path, library.sha256, tuple(functions), more
        mapped = _map(library)
        for name in self.functions:
            setattr(self, name, _bound(mapped, name))

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


#: sha256 -> the library mapped with those bytes: each is mapped once a process, and the descriptor
#: it was mapped from stays open while the process lives (the library stays mapped anyway), so its
#: name ``/proc/self/fd/N`` never comes back for another library (the dynamic loader would answer
#: a name it has seen with the library it mapped under it)
_MAPPED: dict[str, ctypes.CDLL] = {}


def _map(library: Library) -> ctypes.CDLL:
    """The library mapped from its descriptor (OSError when it does not load); the descriptor is
    kept (see :data:`_MAPPED`), or closed when the same bytes are mapped already."""
    if library.sha256 in _MAPPED:
        os.close(library.fd)
        return _MAPPED[library.sha256]
    where = f"/proc/self/fd/{library.fd}" if os.path.isdir("/proc/self/fd") else library.path
    try:
        mapped = ctypes.CDLL(where)
    except BaseException:
        os.close(library.fd)
        raise
    _MAPPED[library.sha256] = mapped
    return mapped


def load(library: Library, functions=tuple(SIGNATURES), more=None) -> NativeNest | None:
    """The checked library (its descriptor, hashed when it was opened: :class:`Library`) mapped,
    holding ``functions`` (``more``: see :class:`NativeNest`); None (said on stderr: counting goes
    on with Numba) when it does not load."""
    try:
        return NativeNest(library, functions, more)
    except (OSError, AttributeError) as e:
        print(f"beastgen: cannot load {library.path} ({e}); counting with Numba", file=sys.stderr)
        return None
