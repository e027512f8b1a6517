"""Python's ``ast`` of one expression -> the expression tree, with Python's semantics: the operator
tables and the walk shared by the two translators, each keeping its own policy in a subclass of
:class:`AstTranslator`: the function path of specialization (a function body with an expression
form becomes an expression item) and the restricted reader of conditions that arrive as data
(``interop/restricted.py``, which never executes anything and names what it refuses)."""
from __future__ import annotations

import ast
from typing import NoReturn

from . import nodes as L

#: Python's arithmetic operators that the language has, by their ``ast`` type
BINARY_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
                    ast.Mod: "%", ast.Pow: "**"}
#: Python's comparisons that the language has, by their ``ast`` type
COMPARE_OPERATORS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
                     ast.NotEq: "!="}
#: how a message names a Python operator that the language lacks
OPERATOR_WORDS = {ast.BitAnd: "'&' (bitwise and; write 'and')", ast.BitOr: "'|' (bitwise or; write 'or')",
                  ast.BitXor: "'^' (bitwise xor)", ast.LShift: "'<<'", ast.RShift: "'>>'",
                  ast.MatMult: "'@'", ast.Invert: "'~' (bitwise not; write 'not')",
                  ast.Is: "'is'", ast.IsNot: "'is not'"}


def operator_words(op: ast.AST) -> str:
    """The operator ``op`` (an ``ast`` operator node) as a message names it."""
    return OPERATOR_WORDS.get(type(op), type(op).__name__)


class AstTranslator:
    """``translate(node)``: the expression an ``ast`` expression stands for.

    The walk covers constants, ``+ - * / // % **``, unary ``not - +``, ``and``/``or``, comparisons
    (a chain is an ``and`` of comparisons sharing the middle operand, as Python evaluates it) and
    ``a if c else b``. A subclass decides the rest: :meth:`name`, :meth:`call`, :meth:`other` (any
    other node type), ``in`` (:meth:`membership`), unary minus (:meth:`negative`), and a check of each binary
    operation (:meth:`binary`); :meth:`reject` refuses a node by raising. ``translate`` is one
    method, so an operator chain costs one stack frame per term (a condition of 500 terms that
    arrives as data is read without :func:`beastgen.support.deep.deeply`).
    """

    def reject(self, node: ast.AST, what: str | None = None) -> NoReturn:
        """Refuse ``node`` (``what`` names the refused construct, for messages): raises."""
        raise NotImplementedError

    def name(self, node: ast.Name) -> L.Expr:
        """What a name stands for."""
        self.reject(node)

    def call(self, node: ast.Call) -> L.Expr:
        """What a call stands for."""
        self.reject(node)

    def other(self, node: ast.AST) -> L.Expr:
        """What a node of a type the walk does not cover stands for."""
        self.reject(node)

    def binary(self, node: ast.BinOp, op: str, left: L.Expr, right: L.Expr) -> L.Expr:
        """``left op right`` (a subclass may check it first)."""
        return L.BinOp(op, left, right)

    def negative(self, operand: L.Expr) -> L.Expr:
        """``-operand``."""
        return L.UnaryOp("-", operand)

    def membership(self, node: ast.Compare, op: ast.cmpop, left: L.Expr, container: ast.AST) -> L.Expr:
        """``left in container`` (``not in`` when ``op`` is ``ast.NotIn``)."""
        self.reject(node, f"the operator {operator_words(op)}")

    def translate(self, node: ast.AST) -> L.Expr:
        """The expression ``node`` stands for."""
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (bool, int, float, str)):
                return L.Const(node.value)
            self.reject(node, f"the constant {node.value!r}")
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.BinOp):
            op = BINARY_OPERATORS.get(type(node.op))
            if op is None:
                self.reject(node, f"the operator {operator_words(node.op)}")
            return self.binary(node, op, self.translate(node.left), self.translate(node.right))
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                return L.Not(self.translate(node.operand))
            if isinstance(node.op, ast.USub):
                return self.negative(self.translate(node.operand))
            if isinstance(node.op, ast.UAdd):
                operand = self.translate(node.operand)
                if isinstance(operand, L.Const) and isinstance(operand.value, (int, float)) \
                        and not isinstance(operand.value, bool):
                    return operand
                return L.BinOp("+", L.Const(0), operand)  # +x: a number (+True is 1)
            self.reject(node, f"the operator {operator_words(node.op)}")
        if isinstance(node, ast.BoolOp):
            return L.BoolOp("and" if isinstance(node.op, ast.And) else "or",
                            [self.translate(v) for v in node.values])
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.IfExp):
            return L.IfExp(self.translate(node.test), self.translate(node.body), self.translate(node.orelse))
        if isinstance(node, ast.Call):
            return self.call(node)
        return self.other(node)

    def compare(self, node: ast.Compare) -> L.Expr:
        """A comparison; a chain is an ``and`` of comparisons sharing the middle operand."""
        left = self.translate(node.left)
        parts = []
        for op, comparator in zip(node.ops, node.comparators):
            if isinstance(op, (ast.In, ast.NotIn)):
                parts.append(self.membership(node, op, left, comparator))
                left = None  # a container cannot be chained on
                continue
            symbol = COMPARE_OPERATORS.get(type(op))
            if symbol is None:
                self.reject(node, f"the operator {operator_words(op)}")
            if left is None:
                self.reject(node, "chaining a comparison after 'in'")
            right = self.translate(comparator)
            parts.append(L.Compare(symbol, left, right))
            left = right
        return parts[0] if len(parts) == 1 else L.BoolOp("and", parts)
