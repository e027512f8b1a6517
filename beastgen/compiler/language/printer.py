"""The expression printer: Python source for a space expression (a language object or specialized
IR), with the fewest parentheses that keep Python's precedence. Every stage prints with it (error
messages, the generated code, the exports)."""
from __future__ import annotations

import math

from .mapper import Mapper

#: Python operator precedence (higher binds tighter)
PRECEDENCE = {"or": 1, "and": 2, "not": 3, "cmp": 4, "+": 6, "-": 6, "*": 7, "/": 7, "//": 7,
              "%": 7, "neg": 8, "**": 9}
ATOM = 10


def expr_source(node, root: bool = False) -> str:
    """Python source for ``node``; a named node prints as its name unless it is the ``root``."""
    return _PRINTER.source(node, root)[0]


def wrap(node, parent: int, strict: bool = False) -> str:
    """``node``'s source, in parentheses where its precedence is below ``parent`` (or equal, if ``strict``)."""
    text, p = _PRINTER.source(node)
    return f"({text})" if p < parent or (strict and p == parent) else text


def literal(value) -> str:
    """A constant as Python source (infinities and NaN through ``math``)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "math.nan" if value != value else "math.inf" if value > 0 else "-math.inf"
    return repr(value)


def _negative(value) -> bool:
    """Whether a constant prints with a minus sign: ``-0.0`` too (``(-0.0) ** x`` is not
    ``-(0.0 ** x)``), not NaN."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.copysign(1, value) < 0 \
        and value == value


class Printer(Mapper):
    """Each ``map_`` method answers (source, precedence)."""

    def source(self, node, root: bool = False) -> tuple[str, int]:
        if not root and getattr(node, "name", None) is not None:
            return node.name, ATOM
        return self(node)

    def map_Ref(self, node):
        return node.target, ATOM

    def map_Const(self, node):
        shown = getattr(node, "shown", None)
        if shown:
            return shown, (ATOM if shown.isidentifier() else 0)
        return literal(node.value), (PRECEDENCE["neg"] if _negative(node.value) else ATOM)

    def map_DeviceProperty(self, node):
        return f"beast.device.{node.prop}", ATOM

    def map_Setting(self, node):
        return f"setting({node.default!r})", ATOM

    def map_BinOp(self, node):
        p = PRECEDENCE[node.op]
        right_assoc = node.op == "**"
        return f"{wrap(node.left, p, strict=right_assoc)} {node.op} {wrap(node.right, p, strict=not right_assoc)}", p

    def map_Compare(self, node):
        p = PRECEDENCE["cmp"]
        return f"{wrap(node.left, p, strict=True)} {node.op} {wrap(node.right, p, strict=True)}", p

    def map_UnaryOp(self, node):
        return f"-{wrap(node.operand, PRECEDENCE['neg'])}", PRECEDENCE["neg"]

    def map_Not(self, node):
        return f"not {wrap(node.operand, PRECEDENCE['not'])}", PRECEDENCE["not"]

    def map_BoolOp(self, node):
        p = PRECEDENCE[node.op]
        return f" {node.op} ".join(wrap(o, p, strict=True) for o in node.operands), p

    def map_IfExp(self, node):
        return f"{wrap(node.body, 1)} if {wrap(node.test, 1)} else {wrap(node.orelse, 0)}", 0

    def map_Call(self, node):
        func = {"ceil": "math.ceil", "floor": "math.floor"}.get(node.func, node.func)
        return f"{func}({', '.join(expr_source(a) for a in node.args)})", ATOM

    def map_RangeIterator(self, node):
        return f"range({', '.join(expr_source(a) for a in node.children())})", ATOM

    def map_ValuesIterator(self, node):
        return f"values({', '.join(expr_source(a) for a in node.values)})", ATOM

    def map_FunctionIterator(self, node):
        return f"{node.func.__name__}()", ATOM

    map_Derived = map_FunctionIterator


_PRINTER = Printer()
