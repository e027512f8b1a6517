"""A package's public names imported from their modules on first use (PEP 562 ``__getattr__``),
so that importing the package imports only what the caller touches."""
from __future__ import annotations

import importlib


def lazy_getattr(package: str, where: dict[str, str], namespace: dict):
    """The package's ``__getattr__``: ``name`` from its module ``where[name]`` (relative to
    ``package``), kept in ``namespace`` (the package's globals) once imported."""
    def __getattr__(name: str):
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{where[name]}", package), name)
        namespace[name] = value
        return value
    return __getattr__
