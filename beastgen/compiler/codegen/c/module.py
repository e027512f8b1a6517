"""The C module: the header, the helpers (``prelude.h``, ``divisors.h``), the value tables and the
library's functions (:mod:`.functions`)."""
from __future__ import annotations

from ...analysis.symbolic import SymbolicContext
from ...plan import Plan
from ..facts import split_level
from ..monotone import loop_ending_filters
from .expression import c_comment, c_source, derived_sources, value_tables
from .functions import C_FUNCTIONS


def generate_c_module(plan: Plan, symbolic: SymbolicContext | None = None,
                      functions=tuple(C_FUNCTIONS)) -> str:
    """The C source of the plan's ``functions`` (of :data:`C_FUNCTIONS`: by default all of count,
    split_nodes, fill and count_claimed); raises :class:`Unsupported`."""
    spec = plan.specialized
    symbolic = symbolic or SymbolicContext(spec.items)
    header = [f"// beastgen C target of space {c_comment(spec.space.name)} on {c_comment(spec.device.key)}: "
              "do not edit.",
              f"// loop order: {', '.join(c_comment(name) for name in plan.order)}",
              f"// SPLIT_LEVEL = {split_level(plan)}",
              "// A filter REJECTS a configuration when it is true; so does a guard where Python raises.",
              ""]
    ending, derived = loop_ending_filters(plan, symbolic), derived_sources(plan, symbolic)
    parts = ["\n".join(C_FUNCTIONS[name](plan, symbolic, ending, derived).write())
             for name in C_FUNCTIONS if name in functions]
    tables = value_tables(plan)
    return "\n".join(header + [c_source("prelude.h"), c_source("divisors.h")] + tables
                     + [""] * bool(tables) + ["\n\n".join(parts)]) + "\n"
