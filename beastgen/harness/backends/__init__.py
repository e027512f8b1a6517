"""Backends of the benchmark harness, one module each behind :class:`base.Backend`."""
from .base import Backend, KernelFailure, Runner, RunResult

__all__ = ["Backend", "KernelFailure", "Runner", "RunResult"]
