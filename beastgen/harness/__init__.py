"""The benchmark harness: backends (OpenCL, CUDA, replay) behind one interface, a SQLite results
store, search strategies (branch and bound on the space's lower bounds, and the exhaustive, random
and genetic baselines) and the tuning loop."""
from ..support.lazy import lazy_getattr
from .kernel import Kernel, kernel

#: the tuning loop (and the backends, store and strategies it imports) on first use: a space file's
#: ``beast.kernel(...)`` imports only :mod:`.kernel`
_LAZY = {"tune": "tuning", "TuneResult": "tuning"}


__getattr__ = lazy_getattr(__name__, _LAZY, globals())

__all__ = ["Kernel", "kernel", "tune", "TuneResult"]
