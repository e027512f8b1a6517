"""Runtime: the compiled plan and the driver of the stages.

``files`` (the generated files' names, written only when changed), ``results`` (plain data
answers), ``chunking`` (split-node chunks, shared with :mod:`beastgen.distributed`), ``executable``
(the generated module and C library, compiled and run: :class:`BuiltExecutable`; the plan cache
has a second kind), the roles that run it, ``counter``, ``enumerator``, ``estimator``, ``ranker``,
and ``compiled_plan``, the :class:`CompiledPlan` that faces them; ``driver`` holds
``compile_space`` and ``Space``.
"""
from .chunking import balanced_chunks
from .compiled_plan import CompiledPlan
from .driver import Space, compile_space
from .executable import QUICK_COMPILE_ITERATIONS, SMALL_NEST_ITERATIONS, BuiltExecutable, Executable
from .files import file_name_part, generated_path, write_if_changed
from .results import Census, Estimate, Stats, Target

__all__ = ["BuiltExecutable", "CompiledPlan", "Census", "Estimate", "Executable",
           "QUICK_COMPILE_ITERATIONS", "SMALL_NEST_ITERATIONS", "Space", "Stats", "Target",
           "balanced_chunks", "compile_space", "file_name_part", "generated_path", "write_if_changed"]
