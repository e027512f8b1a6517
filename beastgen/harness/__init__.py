"""The benchmark harness: backends (OpenCL, CUDA, replay) behind one interface, a SQLite results
store, search strategies (branch and bound on the space's lower bounds, and the exhaustive, random
and genetic baselines) and the tuning loop."""
from .kernel import Kernel, kernel

#: the tuning loop (and the backends, store and strategies it imports) on first use: a space file's
#: ``beast.kernel(...)`` imports only :mod:`.kernel`
_LAZY = {"tune": "tuning", "TuneResult": "tuning"}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'beastgen.harness' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value
    return value


__all__ = ["Kernel", "kernel", "tune", "TuneResult"]
