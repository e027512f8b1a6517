"""Stage 3, specialization: one device profile and one set of settings fixed, constants folded,
and every variable that still varies an :class:`~.ir.Item` of the specialized IR.

``ir`` (the IR: ``Item``, ``Specialized``, ``SpaceFunction``) and ``value_types`` (``infer_type``)
are what the later stages read; ``folding`` resolves a space's variables in dependency order
(``specialize_space``, ``ExpressionFolder``); ``functions`` is the path of space functions (their
code folded and checked, or turned into an expression); ``settings`` resolves the settings."""
from .folding import dependency_graph, specialize_space
from .functions import check_compilable, function_globals
from .ir import Item, SpaceFunction, Specialized
from .settings import resolve_settings
from .value_types import infer_type

__all__ = ["Item", "SpaceFunction", "Specialized", "check_compilable", "dependency_graph",
           "function_globals", "infer_type", "resolve_settings", "specialize_space"]
