"""Runtime: the compiled plan and the driver of the stages, one module per role.

``files`` (the generated files' names, written only when changed), ``results`` (plain data
answers), ``chunking`` (split-node chunks, shared with :mod:`beastgen.distributed`), ``core`` (the
generated module and C library, compiled and run), then the plan's roles, each a subclass of the
one before: ``counting``, ``enumeration``, ``estimation``, ``ranking``; ``driver`` joins them in
:class:`CompiledPlan` and holds ``compile_space`` and ``Space``.
"""
from .chunking import balanced_chunks
from .core import QUICK_COMPILE_ITERATIONS, SMALL_NEST_ITERATIONS
from .driver import CompiledPlan, Space, compile_space
from .files import file_name_part, generated_path, write_if_changed
from .results import Census, Estimate, Stats, Target

__all__ = ["CompiledPlan", "Census", "Estimate", "QUICK_COMPILE_ITERATIONS", "SMALL_NEST_ITERATIONS",
           "Space", "Stats", "Target", "balanced_chunks", "compile_space", "file_name_part",
           "generated_path", "write_if_changed"]
