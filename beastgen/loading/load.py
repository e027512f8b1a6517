"""Opening a space file: Python (executed by the model stage) or T1 JSON (read as data by interop),
returned with the compiler at hand (``space.specialize(...)``)."""
from __future__ import annotations

import os

from ..compiler import model
from ..compiler.runtime import Space


def load(path: str | os.PathLike) -> Space:
    """The space of a ``.py`` space file or a T1 ``.json`` file. Errors name the file and line."""
    path = model.display_path(os.fspath(path))
    if path.endswith(".json"):
        from ..interop.t1 import load_t1  # here: a .py space never reads T1 JSON
        return load_t1(path)
    return Space.of(model.load(path))
