"""Deep expressions: every pass over an expression tree recurses once per level of nesting, so a
long operator chain (a sum of hundreds of terms) passes Python's default recursion limit.
:func:`deeply` runs such work in a thread with a large stack and a raised limit; a tree deeper
still is one clear error (:class:`~beastgen.errors.SpaceError`), never a traceback or a count."""
from __future__ import annotations

import sys
import threading

from ..errors import SpaceError

STACK_BYTES = 512 << 20  # virtual memory: only the pages a deep walk touches are used
RECURSION_LIMIT = 200_000
_lock = threading.Lock()  # the recursion limit is per process: one deep call raises it at a time
_inside = threading.local()


def deeply(function, *args, **kwargs):
    """``function(*args, **kwargs)`` with room for expressions nested some 10,000 levels deep."""
    if getattr(_inside, "active", False):
        return function(*args, **kwargs)
    outcome: dict = {}

    def run():
        _inside.active = True
        try:
            outcome["value"] = function(*args, **kwargs)
        except BaseException as error:  # noqa: BLE001 - handed to the caller's thread
            outcome["error"] = error

    with _lock:
        limit, stack = sys.getrecursionlimit(), threading.stack_size()
        sys.setrecursionlimit(max(limit, RECURSION_LIMIT))  # before the thread starts: it is global
        try:
            try:
                threading.stack_size(STACK_BYTES)
                worker = threading.Thread(target=run, name="beastgen-deep", daemon=True)
                worker.start()
            finally:
                threading.stack_size(stack)
            worker.join()
        except (RuntimeError, ValueError, MemoryError):  # no room for such a stack: Python's own limit
            sys.setrecursionlimit(limit)
            return function(*args, **kwargs)
        finally:
            sys.setrecursionlimit(limit)
    if "error" in outcome:
        error = outcome["error"]
        if isinstance(error, RecursionError):
            raise too_deep() from None
        raise error
    return outcome["value"]


def too_deep() -> SpaceError:
    """The error for an expression nested past what :func:`deeply` makes room for."""
    return SpaceError("an expression is nested too deeply to compile or evaluate (Python's recursion "
                      "limit); split it into named derived values")
