"""The one evaluator of space expressions with Python's semantics (the harness's launch sizes and
the reference enumerator both use it)."""
from __future__ import annotations

from . import nodes as L
from .mapper import Mapper


class Evaluator(Mapper):
    """``evaluator(node)`` is the value of ``node``; a named sub-expression is asked of
    :meth:`named_value` when :meth:`has_value` knows it, and computed otherwise."""

    def __init__(self, profile=None):
        self.profile = profile

    def has_value(self, name: str) -> bool:
        return False

    def named_value(self, name: str):
        raise KeyError(name)

    def evaluate(self, node):
        """The value of a sub-expression (its name looked up first)."""
        name = getattr(node, "name", None)
        if name is not None and self.has_value(name):
            return self.named_value(name)
        return self(node)

    def map_Const(self, node):
        return node.value

    def map_DeviceProperty(self, node):
        return self.profile.get(node.prop)

    def map_BinOp(self, node):
        return L.BINARY_OPS[node.op](self.evaluate(node.left), self.evaluate(node.right))

    def map_Compare(self, node):
        return L.COMPARE_OPS[node.op](self.evaluate(node.left), self.evaluate(node.right))

    def map_UnaryOp(self, node):
        return -self.evaluate(node.operand)

    def map_Not(self, node):
        return not self.evaluate(node.operand)

    def map_BoolOp(self, node):
        value = None
        for operand in node.operands:  # short-circuit: the deciding operand's value, as in Python
            value = self.evaluate(operand)
            if (node.op == "and") != bool(value):
                return value
        return value

    def map_IfExp(self, node):
        return self.evaluate(node.body if self.evaluate(node.test) else node.orelse)

    def map_Call(self, node):
        return L.CALLS[node.func](*(self.evaluate(a) for a in node.args))
