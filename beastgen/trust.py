"""The generated directory: where it is by default (the one owner of that default), and whether it,
and a file in it, may be trusted: its modules are imported, its C libraries loaded and Numba's cache
under it holds pickles, so anyone who can put a file there (or replace the directory) can run code
as you.

A trusted directory belongs to you (or root) and no one else may write into it, sticky bit or
not: in a sticky world-writable directory such as ``/tmp`` another user cannot replace your files,
but can create one under the name beastgen is about to load. Each directory above it belongs to
you or root and is not writable by others unless it is sticky (others cannot then rename yours).
"""
from __future__ import annotations

import os
import stat

from .errors import BeastError

_FIX = "set BEASTGEN_GENERATED_DIR (or --generated-dir) to a private directory of yours (chmod go-w)"
GENERATED_DIR_ENV = "BEASTGEN_GENERATED_DIR"
#: what ``--help`` says about the default of ``--generated-dir``
GENERATED_DIR_HELP = "$BEASTGEN_GENERATED_DIR, else ~/.cache/beastgen/generated"


def generated_directory(generated_dir: str | None = None) -> str:
    """Where generated code goes, the one owner of its default: ``generated_dir``, else
    $BEASTGEN_GENERATED_DIR, else the user's cache (``$XDG_CACHE_HOME/beastgen/generated``, by
    default ``~/.cache/beastgen/generated``): never the working directory, so that a command run in
    a checkout or a shared directory leaves nothing there."""
    if generated_dir or os.environ.get(GENERATED_DIR_ENV):
        return generated_dir or os.environ[GENERATED_DIR_ENV]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "beastgen", "generated")


def check_generated_directory(directory: str) -> None:
    """Refuse (one :class:`BeastError`) a generated directory, its ``__pycache__`` (Numba's cache)
    or ``$NUMBA_CACHE_DIR`` that another user could write into, or a directory above one of them
    through which another user could replace it."""
    places = [directory, os.path.join(directory, "__pycache__")]
    if os.environ.get("NUMBA_CACHE_DIR"):
        places.append(os.environ["NUMBA_CACHE_DIR"])
    for place in places:
        try:
            info = os.stat(place)
        except OSError:
            continue  # not there yet: created private by beastgen (see private_directory)
        problem = _writable_by_others(info, allow_sticky=False)
        if problem:
            raise BeastError(f"the generated directory {problem}, so another user could make "
                             f"beastgen load a module or library of theirs as you; {_FIX}", place)
        _check_ancestors(place)


def _check_ancestors(place: str) -> None:
    """``place`` and every directory above it, as written (a symbolic link on the way must be
    yours or root's) and as resolved."""
    absolute = os.path.abspath(place)
    for path in (absolute, os.path.realpath(absolute)):
        parent = path
        while True:
            try:
                info = os.lstat(parent)
            except OSError:
                break
            problem = _writable_by_others(info, allow_sticky=True)
            if problem:
                raise BeastError(f"the path to the generated directory goes through {parent}, "
                                 f"which {problem}, so another user could replace what it "
                                 f"leads to; {_FIX}", place)
            if parent == os.path.dirname(parent):
                break
            parent = os.path.dirname(parent)


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


def trusted_file(path: str) -> bool:
    """Whether ``path`` is a regular file of yours (or root's) that no one else may write (the
    directory holding it was checked by :func:`check_generated_directory`)."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and _writable_by_others(info, allow_sticky=False) is None


def private_directory(directory: str) -> None:
    """Create ``directory`` (and what is missing above it) writable by you alone, whatever the umask."""
    missing = []
    path = os.path.abspath(directory)
    while not os.path.isdir(path) and path != os.path.dirname(path):
        missing.append(path)
        path = os.path.dirname(path)
    for path in [*reversed(missing), os.path.join(directory, "__pycache__")]:
        try:
            os.mkdir(path, 0o700 if path.endswith("__pycache__") else 0o755)
        except FileExistsError:
            pass
