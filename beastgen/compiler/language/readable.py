"""A shorter form of a specialized expression for people to read (``beastgen show``): folded
constants print as their values, and what a bound-term library call leaves after folding goes
(``x >= x``, ``a and a``, ``c if True else d``, ``1 * x``, ``max(a, a)``). It is for printing
only; the generated enumerators count with the expression as specialized."""
from __future__ import annotations

import math

from . import nodes as L
from .identity import IdentityMapper
from .printer import expr_source

_ALWAYS = {">=": True, "<=": True, "==": True, ">": False, "<": False, "!=": False}
_DIVISIONS = ("/", "//", "%")


def readable(expr: L.Expr, is_int, test: bool = False) -> L.Expr:
    """``expr`` with the same value wherever it has one (the same truth, for a ``test`` such as a
    filter), shorter; ``is_int(node)`` says whether a sub-expression is an int (so that ``x >= x``
    is true: a float may be NaN)."""
    new = _Readable(is_int)(expr)
    return _as_test(new) if test else new


def _same(a, b) -> bool:
    return expr_source(a) == expr_source(b)


def _cannot_raise(node) -> bool:
    """Whether evaluating ``node`` cannot raise: divisions only by nonzero constants, no powers,
    no conversions of what is not a constant (int(inf) raises)."""
    for sub in L.walk(node):
        if isinstance(sub, L.BinOp) and (sub.op == "**" or sub.op in _DIVISIONS and not (
                isinstance(sub.right, L.Const) and sub.right.value != 0)):
            return False
        if isinstance(sub, L.Call) and sub.func in ("int", "ceil", "floor") and not all(
                isinstance(a, L.Const) for a in sub.args):
            return False
    return True


def _truth(node) -> bool | None:
    """The truth value of ``node`` where it is known without evaluating it, else None."""
    if isinstance(node, L.Const):
        return bool(node.value)
    if not isinstance(node, L.BoolOp):
        return None
    deciding, unknown = node.op == "or", False  # the operand truth that decides the whole
    for operand in node.operands:
        truth = _truth(operand)
        if truth is deciding:
            return deciding
        if not _cannot_raise(operand):
            return None
        unknown |= truth is None
    return None if unknown else not deciding


def _int_const(node, value) -> bool:
    """Whether ``node`` is the int ``value`` written as a number (not a setting's name)."""
    return (isinstance(node, L.Const) and type(node.value) is int and node.value == value
            and not getattr(node, "shown", None))


def _as_test(node):
    """``node`` where only its truth matters (``if`` tests, filters): ``a and True`` is ``a``, and
    ``(a and b) and c`` is ``a and b and c``."""
    if not isinstance(node, L.BoolOp):
        return node
    deciding, kept = node.op == "or", []
    for operand in map(_as_test, node.operands):
        if isinstance(operand, L.BoolOp) and operand.op == node.op:
            kept.extend(operand.operands)
        elif not (isinstance(operand, L.Const) and bool(operand.value) is not deciding):
            kept.append(operand)
    if not kept:
        return L.Const(not deciding)
    return kept[0] if len(kept) == 1 else L.BoolOp(node.op, kept)


def _computed(new, compute):
    """A constant with the value ``compute()`` gives, or ``new`` where it raises or is not finite."""
    try:
        value = compute()
    except (ArithmeticError, TypeError, ValueError):
        return new
    return new if isinstance(value, float) and not math.isfinite(value) else L.Const(value)


class _Readable(IdentityMapper):
    def __init__(self, is_int):
        self.is_int = is_int

    def map_Expr(self, node):
        return node  # any other node prints as it is

    def map_Const(self, node):
        shown = getattr(node, "shown", None)
        return node if not shown or shown.isidentifier() else L.Const(node.value)

    def map_BinOp(self, node):
        new = super().map_BinOp(node)
        op, left, right = new.op, new.left, new.right
        if isinstance(left, L.Const) and isinstance(right, L.Const):
            return _computed(new, lambda: L.BINARY_OPS[op](left.value, right.value))
        if op in ("*", "//", "+", "-") and _int_const(right, int(op in ("*", "//"))) \
                and self.is_int(left):
            return left  # x * 1, x // 1, x + 0, x - 0
        if op in ("*", "+") and _int_const(left, int(op == "*")) and self.is_int(right):
            return right  # 1 * x, 0 + x
        return new

    def map_Compare(self, node):
        new = super().map_Compare(node)
        if isinstance(new.left, L.Const) and isinstance(new.right, L.Const):
            return _computed(new, lambda: L.COMPARE_OPS[new.op](new.left.value, new.right.value))
        if _same(new.left, new.right) and _cannot_raise(new.left) and self.is_int(new.left):
            return L.Const(_ALWAYS[new.op])
        return new

    def map_BoolOp(self, node):
        deciding = node.op == "or"  # the truth of the operand Python stops at
        kept = []
        for operand in (self(o) for o in node.operands):
            if kept and _same(operand, kept[-1]) and _cannot_raise(operand):
                continue  # `a and a` is `a`
            kept.append(operand)
            if isinstance(operand, L.Const) and bool(operand.value) is deciding:
                break  # Python returns this operand or an earlier one: the rest is never read
        kept = [o for i, o in enumerate(kept) if i == len(kept) - 1 or not isinstance(o, L.Const)]
        return kept[0] if len(kept) == 1 else L.BoolOp(node.op, kept)

    def map_Not(self, node):
        operand = _as_test(self(node.operand))
        truth = _truth(operand)
        return L.Const(not truth) if truth is not None and _cannot_raise(operand) else L.Not(operand)

    def map_IfExp(self, node):
        test, body, orelse = _as_test(self(node.test)), self(node.body), self(node.orelse)
        truth = _truth(test)
        if _cannot_raise(test) and (truth is not None or _same(body, orelse)):
            return body if truth is not False else orelse
        return L.IfExp(test, body, orelse)

    def map_Call(self, node):
        args = [self(a) for a in node.args]
        if node.func in ("min", "max"):
            unique = [a for i, a in enumerate(args) if not any(_same(a, b) for b in args[:i])]
            if len(unique) == 1 and len(args) > 1:
                return unique[0]
            args = unique if len(unique) > 1 else args
        new = L.Call(node.func, args)
        if all(isinstance(a, L.Const) for a in args):
            return _computed(new, lambda: L.CALLS[node.func](*(a.value for a in args)))
        return new
