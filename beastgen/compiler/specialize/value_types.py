"""Type inference over the specialized IR: the value type of an expression (for range checks, the
generated code's variables and the output columns)."""
from __future__ import annotations

from ..language import nodes as L
from ..language import semantics
from ..language.mapper import Mapper


def common_type(types_: list[str]) -> str:
    """The type of a value that may be of any of ``types_`` ('mixed': strings and numbers)."""
    kinds = set(types_)
    if "any" in kinds:
        return "any"
    if "str" in kinds:
        return "str" if kinds == {"str"} else "mixed"
    if "float" in kinds:
        return "float"
    if kinds == {"bool"}:
        return "bool"
    return "int"


def infer_type(expr: L.Expr, items: dict) -> str:
    """The value type of ``expr``: int, float, bool, str, mixed or any (``items`` types the Refs)."""
    return TypeInference(items)(expr)


class TypeInference(Mapper):
    """The walk of :func:`infer_type`."""

    def __init__(self, items: dict):
        self.items = items

    def map_object(self, expr):
        return "any"

    def map_Const(self, expr):
        v = expr.value
        return "bool" if isinstance(v, bool) else type(v).__name__

    def map_Ref(self, expr):
        return self.items[expr.target].value_type if expr.target in self.items else "any"

    def map_Compare(self, expr):
        return "bool"

    map_Not = map_Compare

    def map_BinOp(self, expr):
        kinds = [self(expr.left), self(expr.right)]
        if set(kinds) <= set(semantics.KINDS):  # numbers: the semantics table's kind
            negative = isinstance(expr.right, L.Const) and type(expr.right.value) is int and expr.right.value < 0
            return semantics.binary(expr.op, *kinds, negative_exponent=negative).result
        if expr.op == "/":
            return "float"
        t = common_type(kinds)
        return "int" if t == "bool" else t

    def map_UnaryOp(self, expr):
        t = self(expr.operand)
        return "int" if t == "bool" else t

    def map_Call(self, expr):
        if expr.func in ("ceil", "floor", "int"):
            return "int"
        if expr.func == "float":
            return "float"
        return common_type([self(a) for a in expr.args])

    def map_IfExp(self, expr):
        return common_type([self(expr.body), self(expr.orelse)])

    def map_BoolOp(self, expr):
        return common_type([self(o) for o in expr.operands])


class NodeTypes(TypeInference):
    """:func:`infer_type` that types each node once: asked of every node of a long chain, the walk
    from each was quadratic (a 900-term condition took seconds). For walks of expressions whose
    items' types no longer change (the analyses and the code writers)."""

    def __init__(self, items: dict):
        super().__init__(items)
        self.known: dict = {}  # id -> (node, type): the node held so that its id stays its own

    def __call__(self, node, *args):
        if id(node) not in self.known:
            self.known[id(node)] = node, super().__call__(node)
        return self.known[id(node)][1]
