"""Where Python raises: the semantics table's rule (:mod:`..language.semantics`) at each node of an
expression, the raises not proven absent (each a :class:`Guard`) in evaluation order, and a target's
test of a guard (:func:`guard_test`); every target rejects a configuration where one holds.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..analysis.symbolic import SymbolicContext
from ..language import nodes as L
from ..language import semantics
from ..language.mapper import Mapper
from ..specialize import infer_type
from ..specialize.value_types import NodeTypes


def operation_rule(node: L.Expr, items: dict, type_of=None) -> semantics.Rule | None:
    """The rule (:mod:`..language.semantics`) of an operation node on numbers; None for a node that
    never raises (a name, a constant, a comparison, and/or/not, if-else) or one on other kinds.
    ``type_of``: a :class:`~..specialize.value_types.NodeTypes` of ``items`` that a walk asking of
    every node shares (typing each child afresh made the walk quadratic in the depth)."""
    if isinstance(node, (L.BinOp, L.UnaryOp, L.Call)):
        type_of = type_of or NodeTypes(items)
        kinds = [type_of(child) for child in node.children()]
        if not kinds or not set(kinds) <= set(semantics.KINDS):
            return None
        if isinstance(node, L.BinOp):
            return semantics.binary(node.op, *kinds, negative_exponent=negative_constant(node.right))
        if isinstance(node, L.UnaryOp):
            return semantics.unary("neg", kinds[0])
        if node.func in ("min", "max"):
            return semantics.choice(node.func, kinds)
        if node.func in ("abs", "floor", "ceil", "int", "float"):
            return semantics.unary(node.func, kinds[0])
    return None


def negative_constant(expr: L.Expr) -> bool:
    """Whether ``expr`` is a negative integer constant (``x ** -1`` of integers is a float)."""
    return isinstance(expr, L.Const) and type(expr.value) is int and expr.value < 0


@dataclass(frozen=True)
class Guard:
    """A raise of the rule at ``node`` (``check``) not proven absent: the condition reads the
    ``operands`` (``a``, ``b``, and ``r``: the node's value), and evaluation reaches the node only
    on its ``path``, the (test, truth) pairs of the if-else branches and short-circuit operands
    around it. A target rejects the configuration where the path and the condition both hold,
    before it computes the expression: so no operation ever runs on an operand Python would have
    raised for (a zero divisor never reaches a machine division)."""

    node: L.Expr
    check: semantics.Raise
    operands: tuple  # (name, expression) pairs
    path: tuple = ()

    @property
    def why(self) -> str:
        """The comment on a target's test of the guard."""
        return f"{self.check.error} in Python: rejected"


def guards(expr: L.Expr, items: dict, symbolic: SymbolicContext) -> list[Guard]:
    """The guards of ``expr``, in the order Python evaluates it (operands before their operation,
    an if-else's test before its branches, a short-circuit's operands left to right)."""
    return list(_GuardWalk(items, symbolic)(expr, ()))


class _GuardWalk(Mapper):
    """The walk of :func:`guards`: ``path`` holds the (test, truth) pairs that reach the node."""

    def __init__(self, items: dict, symbolic: SymbolicContext):
        self.items, self.symbolic = items, symbolic
        self.types = NodeTypes(items)

    def map_Expr(self, expr: L.Expr, path: tuple):
        for child in expr.children():
            yield from self(child, path)
        rule = operation_rule(expr, self.items, self.types)
        checks = rule.raises if rule is not None else ()
        if rule is None and isinstance(expr, L.BinOp) and expr.op in ("/", "//", "%"):
            # an operand of a kind the table has no rule for (a space function's value): whatever
            # the kinds, Python raises for a zero divisor
            checks = (semantics.ZERO_DIVISOR,)
        for check in checks:
            if not proven_absent(check, expr, self.symbolic):
                children = dict(zip("ab", expr.children()))
                operands = tuple((name, part) for name, part in (*children.items(), ("r", expr))
                                 if name in semantics.condition_names(check.condition))
                yield Guard(expr, check, operands, path)

    def map_Ref(self, expr: L.Ref, path: tuple):
        return iter(())  # another item: guarded where it is computed

    def map_IfExp(self, expr: L.IfExp, path: tuple):
        yield from self(expr.test, path)
        yield from self(expr.body, path + ((expr.test, True),))
        yield from self(expr.orelse, path + ((expr.test, False),))

    def map_BoolOp(self, expr: L.BoolOp, path: tuple):
        reached = path
        for operand in expr.operands:  # each later operand runs where the earlier ones did not decide
            yield from self(operand, reached)
            reached = reached + ((operand, expr.op == "and"),)


def proven_absent(check: semantics.Raise, node: L.Expr, symbolic: SymbolicContext) -> bool:
    """Whether ``check`` (a raise of ``node``'s rule) can never happen: a divisor proven never zero,
    a float power proven to stay a finite real (see :func:`_power_raise_absent`)."""
    if check is semantics.ZERO_DIVISOR:
        return symbolic.provably_nonzero(node.right)
    if check in semantics.FLOAT_POWER_RAISES:
        return _power_raise_absent(check, node.left, node.right, symbolic)
    return False


def _power_raise_absent(check: semantics.Raise, base: L.Expr, exponent: L.Expr,
                        symbolic: SymbolicContext) -> bool:
    """``0.0 ** negative`` needs a zero base and a negative exponent; a complex result a negative
    base and a fractional exponent; an overflow an exponent other than 0 and 1 over a base of
    unknown bounds (a nonzero integer to a negative power is at most 1)."""
    whole = isinstance(exponent, L.Const) and isinstance(exponent.value, (int, float)) \
        and float(exponent.value).is_integer()
    if check.error == "ZeroDivisionError":
        return symbolic.provably_nonnegative(exponent) or symbolic.provably_nonzero(base)
    if check.error == "complex":
        return whole or infer_type(exponent, symbolic.items) in ("int", "bool") \
            or symbolic.provably_nonnegative(base)
    value = exponent.value if isinstance(exponent, L.Const) else None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value:
        return False
    if value in (0, 1):
        return True
    bounds = symbolic.interval(base)
    if bounds is None:
        return False
    try:
        return value < 0 or math.isfinite(float(max(map(abs, bounds))) ** value)
    except OverflowError:
        return False


def guard_test(guard: Guard, source, spelling: semantics.Spelling, truth) -> str:
    """A target's test of ``guard``: its path's tests (``truth(source, expected)`` each), then the
    rule's condition over the operands' ``source``, joined by the target's conjunction (which must
    short-circuit: an operand is computed only where the path reaches it)."""
    parts = [truth(source(test), expected) for test, expected in guard.path]
    parts.append(semantics.print_condition(guard.check.condition,
                                           {name: source(part) for name, part in guard.operands}, spelling))
    text = parts[0]
    for part in parts[1:]:
        text = spelling.conjunction.format(x=text, y=part)
    return text
