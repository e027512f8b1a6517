"""The benchmark harness: backends (OpenCL, CUDA, replay) behind one interface, a SQLite results
store, search strategies (branch and bound on the space's lower bounds, and the exhaustive, random
and genetic baselines) and the tuning loop."""
from .kernel import Kernel, kernel
from .tune import TuneResult, tune

__all__ = ["Kernel", "kernel", "tune", "TuneResult"]
