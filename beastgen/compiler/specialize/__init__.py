"""Stage 3, specialization: one device profile and one set of settings fixed, constants folded,
and every variable that still varies an :class:`Item` of the specialized IR."""
from .folding import (Item, SpaceFunction, Specialized, check_compilable, dependency_graph,
                      function_globals, infer_type, resolve_settings, specialize_space)

__all__ = ["Item", "SpaceFunction", "Specialized", "check_compilable", "dependency_graph",
           "function_globals", "infer_type", "resolve_settings", "specialize_space"]
