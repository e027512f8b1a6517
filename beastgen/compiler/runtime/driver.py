"""The driver of the compiler's stages: ``compile_space`` specializes, plans and wraps the plan's
executable in a :class:`~.compiled_plan.CompiledPlan`, and ``Space.specialize()`` calls it."""
from __future__ import annotations

from ...support.deep import deeply
from ..model import Space as SpaceModel
from .compiled_plan import CompiledPlan
from .executable import BuiltExecutable


def compile_space(space, device=None, settings=None, generated_dir=None, order=None) -> CompiledPlan:
    """Specialize, plan, generate and import: the compiled plan of ``space`` for one device."""
    from ..plan import make_plan
    from ..specialize import specialize_space

    def build():
        spec = specialize_space(space, device, settings or {})
        plan = make_plan(spec, order) if not spec.empty_reason else None
        return CompiledPlan(BuiltExecutable(spec, plan, generated_dir))
    return deeply(build)


class Space(SpaceModel):
    """A loaded space with the compiler at hand (what :func:`beastgen.load` returns)."""

    @classmethod
    def of(cls, space: SpaceModel) -> Space:
        return cls(space.name, space.path, space.source, space.variables, space.module_globals)

    def specialize(self, device=None, generated_dir=None, **settings) -> CompiledPlan:
        """Specialize to one device and settings, plan, generate and compile: a :class:`CompiledPlan`
        with ``count()``, ``enumerate()``, ``stats()``, ``source``."""
        return compile_space(self, device=device, settings=settings, generated_dir=generated_dir)
