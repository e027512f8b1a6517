"""Kernel Tuner restrictions that cannot be compiled, evaluated in Python on the candidates.

:func:`beastgen.interop.from_kernel_tuner` compiles every restriction it can into the generated
enumerator. A callable it cannot compile (a ``functools.partial``, a callable object, a function
without source, or one using what the generator cannot compile) becomes a
:class:`PythonRestriction`, and the space a :class:`KernelTunerSpace`. Its compiled plan
(:class:`PostFilteredPlan`) enumerates the configurations that the compiled restrictions let through
and calls each Python restriction on them, the way Kernel Tuner calls it. The result is exact;
``count``, ``enumerate``, ``stats`` and everything built on them (``dataframe``, the exports) see
only the configurations every restriction accepts. The cost is one Python call per candidate, so
a warning names each such restriction when the space is built.
"""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from ..errors import BeastError
from ..compiler.plan import make_plan
from ..compiler.runtime import BuiltExecutable, CompiledPlan, Space, Stats
from ..compiler.specialize import specialize_space

if TYPE_CHECKING:  # NumPy is imported where rows are filtered: a space without them never needs it
    import numpy as np


class PythonRestrictionWarning(UserWarning):
    """A restriction is evaluated in Python on each candidate (exact, slower)."""


class PythonRestriction:
    """One restriction called in Python: ``call(func, values)`` is how Kernel Tuner calls it."""

    def __init__(self, name: str, func, call, context: str, where: str, why: str):
        self.name, self.func, self.call = name, func, call
        self.context, self.where, self.why = context, where, why
        # the message's subject, unless the place (<kernel_tuner>:restrictions[i]) already names it
        self.label = "the restriction" if where.endswith(context) else context

    def valid(self, values: dict) -> bool:
        """Whether the configuration ``values`` (parameter -> value) passes. A restriction that
        raises an arithmetic error (division by zero) rejects it, as everywhere in beastgen; any
        other exception is the restriction's bug, reported with the configuration."""
        try:
            return bool(self.call(self.func, values))
        except ArithmeticError:
            return False
        except Exception as e:  # noqa: BLE001 - the user's function: one clear error, not a traceback
            raise BeastError(f"{self.label} raised {type(e).__name__}: {e} on "
                             f"the configuration {values}", self.where) from None


class KernelTunerSpace(Space):
    """A space with restrictions evaluated in Python after the compiled enumeration."""

    def __init__(self, space: Space, restrictions: list[PythonRestriction], tune_params: dict):
        super().__init__(space.name, space.path, space.source, space.variables, space.module_globals)
        self.python_restrictions = list(restrictions)
        self.tune_params = tune_params
        for restriction in restrictions:
            warnings.warn(f"{restriction.where}: {restriction.label} is evaluated in Python on each "
                          "configuration the compiled restrictions let through (exact, slower): "
                          f"{restriction.why}", PythonRestrictionWarning, stacklevel=3)

    def specialize(self, device=None, generated_dir=None, **settings) -> PostFilteredPlan:
        spec = specialize_space(self, device, settings)
        plan = make_plan(spec) if not spec.empty_reason else None
        return PostFilteredPlan(spec, plan, generated_dir, self.python_restrictions, self.tune_params)


class PostFilteredPlan(CompiledPlan):
    """A compiled plan whose results are filtered by the space's Python restrictions."""

    def __init__(self, spec, plan, generated_dir, restrictions: list[PythonRestriction], tune_params: dict):
        super().__init__(BuiltExecutable(spec, plan, generated_dir))
        self.python_restrictions = restrictions
        # the values as given: the compiled columns hold 1.0 for a 1 mixed with floats
        self._originals = {name: {v: v for v in values} for name, values in tune_params.items()}

    def _passing(self, rows: np.ndarray) -> tuple[np.ndarray, dict[str, int]]:
        """Which rows every Python restriction accepts, and how many each one rejected."""
        import numpy as np
        names = list(rows.dtype.names)
        keep = np.ones(len(rows), dtype=bool)
        rejected = dict.fromkeys((r.name for r in self.python_restrictions), 0)
        for i, row in enumerate(rows.tolist()):
            values = {n: self._originals[n].get(v, v) for n, v in zip(names, row)}
            for restriction in self.python_restrictions:
                if not restriction.valid(values):
                    keep[i] = False
                    rejected[restriction.name] += 1
                    break
        return keep, rejected

    def count(self, threshold: float | None = None, chunk: tuple[int, int] | None = None,
              jobs: int = 1) -> int:
        """Number of valid configurations (the compiled candidates, then the Python restrictions)."""
        if threshold is not None:
            raise BeastError("a bound-pruned count needs bound terms, and a Kernel Tuner space has none")
        return len(self.enumerate(chunk, jobs))

    def enumerate(self, chunk: tuple[int, int] | None = None, jobs: int = 1) -> np.ndarray:
        rows = super().enumerate(chunk, jobs)
        return rows[self._passing(rows)[0]]

    def stats(self, chunk: tuple[int, int] | None = None) -> Stats:
        """The compiled statistics, with the rejections of each Python restriction added."""
        stats = super().stats(chunk)
        _, rejected = self._passing(super().enumerate(chunk))
        stats.rejections.update(rejected)
        stats.count -= sum(rejected.values())
        return stats

    def estimate(self, samples: int | None = None, seed: int = 0, method: str = "chen"):
        names = ", ".join(r.context for r in self.python_restrictions)
        raise BeastError(f"no size estimate for a space with restrictions evaluated in Python ({names}): "
                         "count() is exact")
