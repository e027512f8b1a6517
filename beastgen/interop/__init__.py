"""Spaces from and to other tools: T1 JSON (the auto-tuning community's benchmark format) and
Kernel Tuner's ``tune_params`` / ``restrictions``.

* :func:`load_t1` reads a T1 JSON file as a beastgen space (``beastgen.load("x.json")`` does too).
* :func:`from_kernel_tuner` builds a space from Kernel Tuner's ``tune_params`` and restrictions.
* :func:`to_kernel_tuner` / :func:`write_kernel_tuner` export a compiled plan's valid
  configurations for Kernel Tuner; :func:`to_t1` writes a space as T1 JSON.

JSON and restriction strings are data: the restricted evaluator (:mod:`beastgen.interop.restricted`)
parses them with :mod:`ast`; nothing is passed to ``eval``.
"""
from ..support.lazy import lazy_getattr

#: where each public name lives: imported on first use, so that reading a T1 file (``.t1``)
#: imports neither NumPy (``.kernel_tuner``'s Python restrictions) nor the code writers (``.export``)
_WHERE = {
    "from_kernel_tuner": "kernel_tuner",
    "kernel_tuner_key": "export",
    "load_t1": "t1",
    "t1_space": "t1",
    "to_kernel_tuner": "export",
    "to_t1": "export",
    "write_kernel_tuner": "export",
}

__all__ = sorted(_WHERE)


__getattr__ = lazy_getattr(__name__, _WHERE, globals())


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
