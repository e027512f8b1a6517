"""The base of passes that rewrite part of an expression: :class:`IdentityMapper` copies the tree
only where a child changed, so a subclass overrides just the node types it rewrites."""
from __future__ import annotations

from . import nodes as L
from .mapper import Mapper


class IdentityMapper(Mapper):
    """``mapper(node)`` is ``node`` with every child mapped: the same object when no child changed,
    otherwise a new node of the same kind over the mapped children."""

    def map_Const(self, node):
        return node

    def map_Ref(self, node):
        return node

    def map_BinOp(self, node):
        left, right = self(node.left), self(node.right)
        return node if left is node.left and right is node.right else L.BinOp(node.op, left, right)

    def map_Compare(self, node):
        left, right = self(node.left), self(node.right)
        return node if left is node.left and right is node.right else L.Compare(node.op, left, right)

    def map_UnaryOp(self, node):
        operand = self(node.operand)
        return node if operand is node.operand else L.UnaryOp(node.op, operand)

    def map_Not(self, node):
        operand = self(node.operand)
        return node if operand is node.operand else L.Not(operand)

    def map_BoolOp(self, node):
        operands = [self(operand) for operand in node.operands]
        return node if _same(operands, node.operands) else L.BoolOp(node.op, operands)

    def map_IfExp(self, node):
        parts = [self(part) for part in (node.test, node.body, node.orelse)]
        return node if _same(parts, (node.test, node.body, node.orelse)) else L.IfExp(*parts)

    def map_Call(self, node):
        args = [self(arg) for arg in node.args]
        return node if _same(args, node.args) else L.Call(node.func, args)


def _same(new, old) -> bool:
    return all(a is b for a, b in zip(new, old))
