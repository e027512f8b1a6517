"""Spaces from and to other tools: T1 JSON (the auto-tuning community's benchmark format) and
Kernel Tuner's ``tune_params`` / ``restrictions``.

* :func:`load_t1` reads a T1 JSON file as a beastgen space (``beastgen.load("x.json")`` does too).
* :func:`from_kernel_tuner` builds a space from Kernel Tuner's ``tune_params`` and restrictions.
* :func:`to_kernel_tuner` / :func:`write_kernel_tuner` export a compiled plan's valid
  configurations for Kernel Tuner; :func:`to_t1` writes a space as T1 JSON.

JSON and restriction strings are data: the restricted evaluator (:mod:`beastgen.interop.restricted`)
parses them with :mod:`ast`; nothing is passed to ``eval``.
"""
from .export import kernel_tuner_key, to_kernel_tuner, to_t1, write_kernel_tuner
from .kernel_tuner import from_kernel_tuner
from .t1 import load_t1, t1_space

__all__ = [
           "from_kernel_tuner",
           "kernel_tuner_key",
           "load_t1",
           "t1_space",
           "to_kernel_tuner",
           "to_t1",
           "write_kernel_tuner",
]
