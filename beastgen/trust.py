"""The generated directory: where it is by default (the one owner of that default), and whether it
may be trusted: its modules are imported and Numba's cache under it holds pickles that are loaded,
so anyone who can write there can run code as you."""
from __future__ import annotations

import os
import stat

from .errors import BeastError

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
    """Refuse a generated directory (or its ``__pycache__``, Numba's cache) that another user owns
    or that everyone may write to (without the sticky bit, a file there can be replaced)."""
    for path in (directory, os.path.join(directory, "__pycache__")):
        try:
            info = os.stat(path)
        except OSError:
            continue  # not there yet: it will be created with this user's umask
        if info.st_uid not in (os.getuid(), 0):
            raise BeastError("the generated directory belongs to another user, who could make "
                             "beastgen run any code as you (its modules and Numba's cache are "
                             "loaded); use your own with --generated-dir", path)
        if info.st_mode & stat.S_IWOTH and not info.st_mode & stat.S_ISVTX:
            raise BeastError("everyone may write into the generated directory, so anyone could "
                             "make beastgen run any code as you (its modules and Numba's cache are "
                             f"loaded); chmod o-w {path} or use another with --generated-dir", path)
