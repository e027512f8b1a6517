"""Spaces from and to other tools: T1 JSON (the auto-tuning community's benchmark format) and
Kernel Tuner's ``tune_params`` / ``restrictions``.

* :func:`load_t1` reads a T1 JSON file as a beastgen space (``beastgen.load("x.json")`` too).
* :func:`from_kernel_tuner` builds a space from Kernel Tuner's ``tune_params`` and restrictions.
* :func:`to_kernel_tuner` / :func:`write_kernel_tuner` export a compiled plan's valid
  configurations for Kernel Tuner; :func:`to_t1` writes a space as T1 JSON.

JSON and restriction strings are data: they are parsed by a restricted evaluator
(:mod:`beastgen.interop.restricted`), never passed to ``eval``.
"""
from .t1 import load_t1

__all__ = ["load_t1"]
