"""The specialized IR that the later stages read: a :class:`Specialized` space (one device profile
and one set of settings fixed) holds an :class:`Item` for each variable that still varies: an
expression with :class:`~beastgen.compiler.language.nodes.Ref` leaves, or a :class:`SpaceFunction`
(function code with constant branches folded away)."""
from __future__ import annotations

import ast
import hashlib
import json
from dataclasses import dataclass, field

from ...devices.profiles import DeviceProfile
from ..language import nodes as L
from ..model import FunctionInfo, Space


@dataclass
class SpaceFunction:
    """A space function after specialization, ready to become a compiled helper."""

    info: FunctionInfo
    node: ast.FunctionDef  # folded copy of the user's function
    params: list[str]  # the non-constant space names it reads, in declaration order
    form: str  # 'range' | 'sequence' | 'generator' (iterators), 'value' (derived values, filters)
    may_raise: bool

    @property
    def name(self) -> str:
        return self.node.name


@dataclass
class Item:
    """A variable that still varies after specialization: a loop, or something computed in one."""

    name: str
    kind: str  # 'iterator' | 'derived' | 'filter' | 'bound'
    origin: str | None
    deps: list[str]  # the items it reads directly
    expr: L.Expr | None = None  # derived/filter/bound written as an expression (IR)
    function: SpaceFunction | None = None
    domain: tuple | None = None  # iterators: ('range', start, stop, step) | ('values', exprs)
    value_type: str = "any"  # 'int' | 'float' | 'bool' | 'str' | 'any'
    source_text: str = ""  # how the user wrote it, for comments and `show`
    positive: bool = False  # every value is >= 1 (known without evaluating; used by sympy proofs)
    unit_step: bool = False  # a function range iterator whose every range() has step 1


@dataclass
class Specialized:
    """A space specialized for one device profile and one set of settings."""

    space: Space
    device: DeviceProfile
    settings: dict  # every setting's value
    constants: dict  # name -> value, for settings, device properties, constant derived values
    items: dict[str, Item]  # non-constant variables, declaration order
    dropped_filters: list[str] = field(default_factory=list)  # always false for these settings
    empty_reason: str | None = None  # why the space is empty before any iteration

    @property
    def bound_terms(self) -> list[str]:
        """Every bound term (constant or not), in declaration order."""
        return [n for n, v in self.space.variables.items() if v.kind == "bound"]

    def key(self) -> str:
        """A short hash of what the generated code depends on."""
        blob = json.dumps([self.space.source_hash, self.device.fingerprint(),
                           sorted((k, repr(v)) for k, v in self.settings.items())])
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def settings_hash(self) -> str:
        blob = json.dumps(sorted((k, repr(v)) for k, v in self.settings.items()))
        return hashlib.sha256(blob.encode()).hexdigest()[:8]


def named_const(value, name) -> L.Const:
    """A folded constant that prints as ``name`` (a setting's, a device property's) when given."""
    const = L.Const(value)
    const.shown = name
    return const
