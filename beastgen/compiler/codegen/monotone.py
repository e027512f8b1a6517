"""Filters that end their loop: a filter placed at a range level whose test, once true for one value
of the level's iterator, stays true for every later value (``threads > max_threads_per_block``
with ``threads = dim_m * dim_n``, at the level of ``dim_n``). Rejecting, it may leave the loop
(``break``) instead of trying the rest: they would all be rejected by it. Exact, by proof: integer
expressions only (the interval analysis has proven them inside 64 bits, where compiled arithmetic is
Python's), the level's step proven positive, and the test monotone by the rules of
:class:`Monotonicity`; what it cannot prove is left to the loop.
"""
from __future__ import annotations

from ..analysis.symbolic import SymbolicContext
from ..language import nodes as L
from ..language.mapper import Mapper
from ..plan import Plan
from ..specialize import infer_type

_INTEGERS = ("int", "bool")
#: comparisons whose truth grows with the left side (and shrinks with the right) or the reverse
_GROWS_WITH_LEFT = {">": 1, ">=": 1, "<": -1, "<=": -1}


def loop_ending_filters(plan: Plan, symbolic: SymbolicContext) -> dict[str, str]:
    """The filters that end their level's loop when they reject (see the module): filter name ->
    the level's iterator."""
    ending = {}
    for level in plan.levels:
        it = level.iterator
        if level.solved or it.function is not None or it.domain[0] != "range" \
                or not _positive(symbolic, it.domain[3]):
            continue
        monotonicity = Monotonicity(plan.specialized.items, it.name, symbolic)
        for item in level.body:
            if item.kind == "filter" and item.function is None and monotonicity.truth(item.expr) == 1:
                ending[item.name] = it.name
    return ending


def _positive(symbolic: SymbolicContext, expr: L.Expr) -> bool:
    return symbolic.provably_nonnegative(expr) and symbolic.provably_nonzero(expr)


class Monotonicity(Mapper):
    """How an integer expression moves as ``variable`` grows, the other iterators fixed: 1 never
    down, -1 never up, 0 not at all (it does not read it), None unknown. A derived value is read
    through its expression."""

    def __init__(self, items: dict, variable: str, symbolic: SymbolicContext):
        self.items, self.variable, self.symbolic = items, variable, symbolic
        self.reads: dict[str, bool] = {}

    def _reads(self, name: str) -> bool:
        """Whether item ``name`` depends on ``variable``, transitively."""
        if name not in self.reads:
            item = self.items.get(name)
            self.reads[name] = name == self.variable or (
                item is not None and any(self._reads(dep) for dep in item.deps))
        return self.reads[name]

    def truth(self, expr: L.Expr):
        """How a test's truth moves: its value's way for a bool only (an int's truth, ``x != 0``,
        is not monotone in x: ``b - 3`` is false at 3 alone)."""
        return self(expr) if infer_type(expr, self.items) == "bool" else None

    def __call__(self, expr: L.Expr):
        if infer_type(expr, self.items) not in _INTEGERS:
            return None
        if not any(isinstance(node, L.Ref) and self._reads(node.target) for node in L.walk(expr)):
            return 0
        return super().__call__(expr)

    def map_Expr(self, expr: L.Expr):
        return None

    def map_Const(self, expr: L.Const):
        return 0

    def map_Ref(self, expr: L.Ref):
        if expr.target == self.variable:
            return 1
        if not self._reads(expr.target):
            return 0
        item = self.items[expr.target]
        return self(item.expr) if item.kind == "derived" and item.function is None else None

    def map_UnaryOp(self, expr: L.UnaryOp):
        inner = self(expr.operand)
        return None if inner is None or expr.op != "-" else -inner

    def map_BinOp(self, expr: L.BinOp):
        left, right = self(expr.left), self(expr.right)
        if left is None or right is None:
            return None
        if expr.op == "+":
            return _together(left, right)
        if expr.op == "-":
            return _together(left, -right)
        if expr.op == "*":
            return self._product(expr.left, left, expr.right, right)
        if expr.op == "//" and _positive(self.symbolic, expr.right):
            if right == 0:
                return left  # floor division by a positive constant keeps the order
            if left == 0 and self.symbolic.provably_nonnegative(expr.left):
                return -right  # a nonnegative constant over a growing positive divisor shrinks
        return None

    def _product(self, a: L.Expr, ma: int, b: L.Expr, mb: int):
        if ma == 0 and mb == 0:
            return 0
        if ma == 0 or mb == 0:
            constant, moving = (a, mb) if ma == 0 else (b, ma)
            if self.symbolic.provably_nonnegative(constant):
                return moving
            return -moving if self.symbolic.provably_nonnegative(L.UnaryOp("-", constant)) else None
        if ma == mb == 1 and self.symbolic.provably_nonnegative(a) and self.symbolic.provably_nonnegative(b):
            return 1
        return None

    def map_Call(self, expr: L.Call):
        if expr.func not in ("min", "max"):
            return None
        result = 0
        for arg in expr.args:
            result = _together(result, self(arg))
        return result

    def map_Compare(self, expr: L.Compare):
        """A test's truth as it grows: 1 when, once true, it stays true."""
        grows = _GROWS_WITH_LEFT.get(expr.op)
        left, right = self(expr.left), self(expr.right)
        if grows is None or left is None or right is None:
            return None
        return _together(left * grows, -right * grows)

    def map_BoolOp(self, expr: L.BoolOp):
        if any(infer_type(o, self.items) != "bool" for o in expr.operands):
            return None
        result = 0
        for operand in expr.operands:  # and/or of tests that only turn true: the same
            result = _together(result, self(operand))
        return result

    def map_Not(self, expr: L.Not):
        inner = self.truth(expr.operand)
        return None if inner is None else -inner


def _together(a, b):
    """The direction of a sum (or min, max, and, or) of two terms moving as ``a`` and ``b``."""
    if a is None or b is None:
        return None
    if a == 0 or a == b:
        return b
    return a if b == 0 else None
