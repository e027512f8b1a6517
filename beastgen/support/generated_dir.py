"""The generated directory: where it is by default (the one owner of that default), and whether it,
and a file in it, may be trusted: its modules are run, its C libraries loaded and Numba's cache
under it holds pickles, so anyone who can put a file there (or replace the directory) can run code
as you.

A trusted directory belongs to you (or root) and no one else may write into it, sticky bit or
not: in a sticky world-writable directory such as ``/tmp`` another user cannot replace your files,
but can create one under the name beastgen is about to load. Each directory above it belongs to
you or root and is not writable by others unless it is sticky (others cannot then rename yours); a
symbolic link on the way belongs to you or root.

Trust by construction, not by a check on a name: :func:`open_private_directory` walks the path one
directory at a time, each opened relative to the one above it (``O_DIRECTORY | O_NOFOLLOW``) and
checked as opened (``fstat``); what is missing is created first and then checked like the rest (so
a directory another user made first, or swapped in, is refused). The :class:`PrivateDirectory` it
gives is held open, and every file beastgen reads, writes, compiles into or loads there goes
through that descriptor (``dir_fd``, ``/proc/self/fd/N``): no name is looked up again between the
check and the use.
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat

from ..errors import BeastError

_FIX = "set BEASTGEN_GENERATED_DIR (or --generated-dir) to a private directory of yours (chmod go-w)"
GENERATED_DIR_ENV = "BEASTGEN_GENERATED_DIR"
#: what ``--help`` says about the default of ``--generated-dir``
GENERATED_DIR_HELP = "$BEASTGEN_GENERATED_DIR, else ~/.cache/beastgen/generated"
#: Numba's on-disk cache (pickles) beside the generated modules
NUMBA_CACHE = "__pycache__"
#: symbolic links followed on the way to a directory (the kernel's own limit)
_MAX_LINKS = 40
_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: a file opened to be read: never through a link, never waiting on a FIFO
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def generated_directory(generated_dir: str | None = None) -> str:
    """Where generated code goes, the one owner of its default: ``generated_dir``, else
    $BEASTGEN_GENERATED_DIR, else the user's cache (``$XDG_CACHE_HOME/beastgen/generated``, by
    default ``~/.cache/beastgen/generated``): never the working directory, so that a command run in
    a checkout or a shared directory leaves nothing there."""
    if generated_dir or os.environ.get(GENERATED_DIR_ENV):
        return generated_dir or os.environ[GENERATED_DIR_ENV]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "beastgen", "generated")


class PrivateDirectory:
    """A directory that passed the trust check, held open (``fd``): files in it are read, written,
    renamed and loaded through the descriptor, never through its path again. ``path`` is for
    messages and for what must name a path (Numba's cache of a module, a shipped space's import)."""

    def __init__(self, fd: int, path: str):
        self.fd, self.path = fd, path

    def __del__(self):
        with contextlib.suppress(OSError, AttributeError, TypeError):
            os.close(self.fd)

    def __repr__(self) -> str:
        return f"PrivateDirectory({self.path!r}, fd={self.fd})"

    def file_path(self, name: str) -> str:
        """``name`` in this directory, as a path."""
        return os.path.join(self.path, name)

    def fd_path(self, name: str = "") -> str:
        """A path that reaches this very directory, whatever happened to its name since it was
        checked (``/proc/self/fd/N``; the checked path where there is no ``/proc``), or ``name``
        in it. Another process (a compiler) can use it when it inherits ``fd``."""
        base = f"/proc/self/fd/{self.fd}" if _PROC_FD else self.path
        return os.path.join(base, name) if name else base

    def names(self) -> list[str]:
        return os.listdir(self.fd)

    def open_trusted(self, name: str) -> int | None:
        """A read-only descriptor of ``name`` when it is a regular file (not a link) of yours (or
        root's) that no one else may write; None otherwise (missing, anything else)."""
        if os.path.basename(name) != name or name in ("", ".", ".."):
            return None
        try:
            fd = os.open(name, _READ_FLAGS, dir_fd=self.fd)
        except OSError:
            return None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or _writable_by_others(info, allow_sticky=False):
            os.close(fd)
            return None
        return fd

    def read(self, name: str, limit: int | None = None) -> bytes | None:
        """The content of ``name`` when :meth:`open_trusted` accepts it (and it holds at most
        ``limit`` bytes); None otherwise."""
        fd = self.open_trusted(name)
        if fd is None:
            return None
        try:
            if limit is not None and os.fstat(fd).st_size > limit:
                return None
            return read_all(fd)
        except OSError:
            return None
        finally:
            os.close(fd)

    def write(self, name: str, data: bytes, mode: int = 0o644) -> None:
        """``name`` holding ``data`` (writable by you alone), whole: written to a temporary file
        of this process and renamed onto ``name``; the temporary file is removed when that fails."""
        tmp = f"{name}.{os.getpid()}.tmp"
        self.remove(tmp)  # left by a killed process of the same pid: its mode is not ours to trust
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                         mode & 0o755, dir_fd=self.fd)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            self.remove(tmp)
            raise

    def write_if_changed(self, name: str, text: str) -> bool:
        """Write ``text`` unless ``name`` already holds it (keeps Numba's cache valid) and is one of
        yours no one else may write; True if written."""
        data = text.encode("utf-8")
        if self.read(name, limit=len(data)) == data:
            return False
        self.write(name, data)
        return True

    def replace(self, source: str, target: str) -> None:
        os.replace(source, target, src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def remove(self, name: str) -> None:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=self.fd)

    def subdirectory(self, name: str, create: bool = True) -> PrivateDirectory | None:
        """The directory ``name`` in this one, checked as this one was (created first when missing
        and ``create``); None when it is missing and not created."""
        fd = _open_directory(self.fd, name, create, os.path.join(self.path, name), 0o700)
        if fd is None:
            return None
        try:
            _check_private(os.fstat(fd), os.path.join(self.path, name))
        except BaseException:
            os.close(fd)
            raise
        return PrivateDirectory(fd, os.path.join(self.path, name))


_PROC_FD = os.path.isdir("/proc/self/fd")


def read_all(fd: int) -> bytes:
    """What is left in the open file ``fd``."""
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def open_private_directory(directory: str, create: bool = True) -> PrivateDirectory | None:
    """``directory`` opened and checked (one :class:`BeastError` when another user could write
    into it or replace it; see the module docstring): what is missing of it is created first
    (writable by you alone, whatever the umask) and then checked like the rest. Without ``create``,
    None when it is missing (the part of the path that is there is checked). Its ``__pycache__``
    (Numba's cache) is checked too when there, and ``$NUMBA_CACHE_DIR`` when set."""
    fd = _walk(directory, create)
    if fd is None:
        return None
    try:
        _check_private(os.fstat(fd), directory)
        opened = PrivateDirectory(fd, directory)
    except BaseException:
        os.close(fd)
        raise
    opened.subdirectory(NUMBA_CACHE, create=False)  # checked when there; created when a module is
    if os.environ.get("NUMBA_CACHE_DIR"):
        cache = _walk(os.environ["NUMBA_CACHE_DIR"], create=False)
        if cache is not None:
            try:
                _check_private(os.fstat(cache), os.environ["NUMBA_CACHE_DIR"])
            finally:
                os.close(cache)
    return opened


def _check_private(info: os.stat_result, place: str) -> None:
    problem = _writable_by_others(info, allow_sticky=False)
    if problem:
        raise BeastError(f"the generated directory {problem}, so another user could make "
                         f"beastgen load a module or library of theirs as you; {_FIX}", place)


def _walk(directory: str, create: bool) -> int | None:
    """A descriptor of ``directory``, reached from ``/`` one name at a time, each directory
    opened relative to the one above it and checked as a directory above the generated one when a
    name is looked up in it, each symbolic link checked and followed by hand; missing directories
    created when ``create`` (else None). The directory reached is the caller's to check."""
    pending = [part for part in os.path.abspath(directory).split("/") if part][::-1]
    stack = [[os.open("/", _DIRECTORY_FLAGS), "/", False]]  # each opened: fd, path, checked
    links = 0
    try:
        while pending:
            name = pending.pop()
            if name == ".":
                continue
            if name == "..":
                if len(stack) > 1:
                    os.close(stack.pop()[0])
                continue
            parent = stack[-1]
            if not parent[2]:
                _check_ancestor(os.fstat(parent[0]), parent[1], directory)
                parent[2] = True
            shown = os.path.join(parent[1], name)
            try:
                info = os.stat(name, dir_fd=parent[0], follow_symlinks=False)
            except FileNotFoundError:
                info = None
            except OSError as e:
                raise BeastError(f"cannot reach the generated directory: {e.strerror}", shown) from None
            if info is not None and stat.S_ISLNK(info.st_mode):
                _check_ancestor(info, shown, directory)
                links += 1
                if links > _MAX_LINKS:
                    raise BeastError("too many symbolic links on the way to the generated "
                                     "directory", directory)
                target = os.readlink(name, dir_fd=parent[0])
                if target.startswith("/"):
                    while len(stack) > 1:
                        os.close(stack.pop()[0])
                pending.extend([part for part in target.split("/") if part][::-1])
                continue
            fd = _open_directory(parent[0], name, create, shown, 0o755)
            if fd is None:
                return None
            stack.append([fd, shown, False])
        fd = os.dup(stack[-1][0])
        os.set_inheritable(fd, False)
        return fd
    finally:
        for fd, _, _ in stack:
            os.close(fd)


def _open_directory(parent: int, name: str, create: bool, shown: str, mode: int) -> int | None:
    """``name`` in the directory ``parent``, opened as a directory and never through a link;
    created first (``mode``, less the umask) when missing and ``create``, else None."""
    for _ in range(8):  # another process may create or remove it meanwhile: look again
        try:
            return os.open(name, _DIRECTORY_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            if not create:
                return None
        except OSError as e:
            if e.errno == errno.ENOTDIR:
                raise BeastError("the generated directory's path goes through a file, not a "
                                 "directory", shown) from None
            if e.errno == errno.ELOOP:  # (a link on the way is followed by hand, never here)
                raise BeastError("a symbolic link stands where the generated directory keeps a "
                                 "directory of its own", shown) from None
            raise BeastError(f"cannot open the generated directory: {e.strerror}", shown) from None
        try:
            os.mkdir(name, mode, dir_fd=parent)
        except FileExistsError:
            pass
        except OSError as e:
            raise BeastError(f"cannot create the generated directory: {e.strerror}", shown) from None
    raise BeastError("the generated directory keeps changing while it is created", shown)


def _check_ancestor(info: os.stat_result, shown: str, directory: str) -> None:
    problem = _writable_by_others(info, allow_sticky=True)
    if problem:
        raise BeastError(f"the path to the generated directory goes through {shown}, which "
                         f"{problem}, so another user could replace what it leads to; {_FIX}",
                         directory)


def _writable_by_others(info: os.stat_result, allow_sticky: bool) -> str | None:
    """Why another user could change what is in a directory (or a file, or a symbolic link), or None."""
    if info.st_uid not in (os.getuid(), 0):
        return f"belongs to another user (uid {info.st_uid})"
    if stat.S_ISLNK(info.st_mode):
        return None  # a link's own mode means nothing; its owner and directory are checked
    if allow_sticky and info.st_mode & stat.S_ISVTX:
        return None
    if info.st_mode & stat.S_IWOTH:
        return "is writable by everyone" + (" (the sticky bit does not help: anyone may create "
                                             "the file names beastgen loads)"
                                             if info.st_mode & stat.S_ISVTX else "")
    if info.st_mode & stat.S_IWGRP:
        return "is writable by its group"
    return None
