"""Symbolic reasoning over specialized expressions: proves facts the generated code can then skip
testing (e.g. that a divisor can never be zero, so no division guard is needed). Integer interval
arithmetic answers first; sympy (half a second to import) only what intervals cannot prove.
"""
from __future__ import annotations

from ..language import nodes as L
from ..language.mapper import Mapper
from ..language.printer import expr_source
from ..specialize.value_types import infer_type
from .intervals import binop_interval, call_interval, negated, shifted_quotient


class SymbolicContext:
    """Translates IR expressions to sympy, with each iterator's sign and integrality as assumptions."""

    def __init__(self, items: dict):
        self.items = items
        self._cache: dict = {}  # name -> sympy expression
        self._proofs: dict = {}  # (question, expression source) -> answer: both code writers ask

    def provably_nonzero(self, expr: L.Expr) -> bool:
        if isinstance(expr, L.Const):  # the common cases need no sympy (nor its import time)
            return bool(expr.value) and not isinstance(expr.value, str)
        if isinstance(expr, L.Ref) and self._positive_without_sympy(expr.target):
            return True
        if infer_type(expr, self.items) not in ("int", "bool"):
            return False  # sympy reasons with exact reals: (a + 1e-17) - a is 0.0 in doubles
        return self._proof("is_nonzero", expr)

    def provably_nonnegative(self, expr: L.Expr) -> bool:
        if isinstance(expr, L.Const):
            return isinstance(expr.value, (int, float)) and expr.value >= 0
        if isinstance(expr, L.Ref) and self._positive_without_sympy(expr.target):
            return True
        return self._proof("is_nonnegative", expr)

    def _proof(self, question: str, expr: L.Expr) -> bool:
        key = (question, expr_source(expr))
        if key not in self._proofs:
            self._proofs[key] = self._interval_proof(question, expr) or self._sympy_proof(question, expr)
        return self._proofs[key]

    def _interval_proof(self, question: str, expr: L.Expr) -> bool:
        span = self.interval(expr)
        if span is None:
            return False
        low, high = span
        return low > 0 or high < 0 if question == "is_nonzero" else low >= 0

    def _sympy_proof(self, question: str, expr: L.Expr) -> bool:
        if not self._sympy_may_answer(expr):  # its answer known without importing it (issue 26)
            return False
        value = self.to_sympy(expr)
        return value is not None and getattr(value, question) is True

    def _sympy_may_answer(self, expr: L.Expr) -> bool:
        """False where sympy's answer is "not proven" for certain: ``expr`` has a part sympy is not
        given (a comparison, ``where``, a power: :meth:`to_sympy` is None), or it is a name that
        becomes a symbol with no assumptions (a derived value sympy is not given)."""
        if not _Translatable(self)(expr):
            return False
        while isinstance(expr, L.Ref):
            item = self.items.get(expr.target)
            if item is None or item.kind == "iterator":
                return item is not None
            if item.expr is None or not _Translatable(self)(item.expr):
                return False
            expr = item.expr
        return True

    def interval(self, expr: L.Expr) -> tuple[int, int] | None:
        """(low, high) holding every value of an integer (or boolean) expression; None when not
        known (floats, Python functions, powers, ...)."""
        return _Intervals(self)(expr)

    def item_interval(self, name: str) -> tuple[int, int] | None:
        """The interval of a named integer item: an iterator's domain, a derived value's expression."""
        key = ("interval", name)
        if key not in self._cache:
            self._cache[key] = None  # guards against self-reference
            item = self.items.get(name)
            if item is not None and item.function is None and item.value_type in ("int", "bool"):
                self._cache[key] = (self._domain_interval(item.domain) if item.kind == "iterator"
                                    else self.interval(item.expr) if item.expr is not None else None)
        return self._cache[key]

    def _domain_interval(self, domain) -> tuple[int, int] | None:
        kind, *parts = domain or ("function",)
        spans = [self.interval(p) for p in parts]
        if not spans or None in spans:
            return None
        if kind == "values":
            return min(s[0] for s in spans), max(s[1] for s in spans)
        if kind == "range" and spans[2][0] > 0:  # start <= value <= stop - 1, whatever the step
            return spans[0][0], spans[1][1] - 1
        return None

    def _positive_without_sympy(self, name: str) -> bool:
        item = self.items.get(name)
        if item is None or item.kind != "iterator":
            return False
        if item.positive:
            return True
        kind, *parts = item.domain or ("function",)
        consts = [p.value for p in parts if isinstance(p, L.Const)]
        if kind == "range":
            return len(consts) == 3 and consts[0] >= 1 and consts[2] >= 1
        return kind == "values" and len(consts) == len(parts) and all(
            isinstance(v, (int, float)) and v > 0 for v in consts)

    def to_sympy(self, node: L.Expr):
        """A sympy expression equal to ``node`` for every configuration, or None."""
        import sympy  # imported on first use: it costs half a second

        try:
            value = _Translator(self)(node)
        except (TypeError, ValueError, ZeroDivisionError):  # e.g. Min() of an infinity
            return None
        return None if value is not None and value.has(sympy.zoo, sympy.nan) else value

    def variable(self, name: str):
        """A named item in sympy: an iterator as a symbol with its assumptions, a derived value as its
        definition, anything else as a plain symbol."""
        import sympy  # lazy, as in to_sympy

        if name not in self._cache:
            self._cache[name] = None  # guards against self-reference while translating
            item = self.items.get(name)
            if item is None:
                value = None
            elif item.kind == "iterator":
                value = sympy.Symbol(name, **self._assumptions(item))
            elif item.expr is not None:
                value = self.to_sympy(item.expr)
            else:
                value = None
            self._cache[name] = value if value is not None else sympy.Symbol(name)
        return self._cache[name]

    def _assumptions(self, item) -> dict:
        facts = {}
        if item.value_type == "int":
            facts["integer"] = True
        elif item.value_type == "float":
            facts["real"] = True
        elif item.value_type != "bool":
            return facts
        if item.positive:
            facts["positive"] = True
        if item.domain is None:
            return facts
        kind, *parts = item.domain
        if kind == "range":
            start, step = self.to_sympy(parts[0]), self.to_sympy(parts[2])
            if start is not None and step is not None and step.is_positive:
                if start.is_positive:
                    facts["positive"] = True
                elif start.is_nonnegative:
                    facts["nonnegative"] = True
        elif kind == "values" and all(isinstance(p, L.Const) and isinstance(p.value, (int, float))
                                      for p in parts):  # listed numbers: their sign at once
            low = min(p.value for p in parts)
            if low > 0:
                facts["positive"] = True
            elif low >= 0:
                facts["nonnegative"] = True
        elif kind == "values":
            values = [self.to_sympy(p) for p in parts]
            if all(v is not None and v.is_positive for v in values):
                facts["positive"] = True
            elif all(v is not None and v.is_nonnegative for v in values):
                facts["nonnegative"] = True
        return facts


class _OverContext(Mapper):
    """A pass that answers None for node types it has no method for."""

    def __init__(self, context: SymbolicContext):
        self.context = context

    def map_Expr(self, node):
        return None


class _Translator(_OverContext):
    """One ``map_`` method per node type: the sympy form, or None where there is none."""

    def map_Const(self, node):
        import sympy  # lazy, as in SymbolicContext.to_sympy

        value = node.value
        if isinstance(value, bool) or isinstance(value, int):
            return sympy.Integer(int(value))
        return sympy.Float(value) if isinstance(value, float) else None

    def map_Ref(self, node):
        return self.context.variable(node.target)

    def map_UnaryOp(self, node):
        operand = self.context.to_sympy(node.operand)
        return None if operand is None else -operand

    def map_BinOp(self, node):
        import sympy  # lazy, as in SymbolicContext.to_sympy

        if node.op == "**":
            return None
        left, right = self.context.to_sympy(node.left), self.context.to_sympy(node.right)
        if left is None or right is None:
            return None
        if node.op == "+":
            return left + right
        if node.op == "-":
            return left - right
        if node.op == "*":
            return left * right
        if node.op == "/":
            return left / right
        if node.op == "//":
            return sympy.floor(left / right)
        return sympy.Mod(left, right)

    def map_Call(self, node):
        import sympy  # lazy, as in SymbolicContext.to_sympy

        if node.func not in ("min", "max", "abs", "ceil", "floor"):
            return None
        args = [self.context.to_sympy(a) for a in node.args]
        if any(a is None for a in args):
            return None
        function = {"min": sympy.Min, "max": sympy.Max, "abs": sympy.Abs,
                    "ceil": sympy.ceiling, "floor": sympy.floor}[node.func]
        return function(*args)


class _Translatable(_OverContext):
    """Whether :class:`_Translator` gives ``node`` a sympy form (a name always has one: its
    definition or a plain symbol), without importing sympy."""

    def map_Const(self, node):
        return isinstance(node.value, (bool, int, float))

    def map_Ref(self, node):
        return True

    def map_UnaryOp(self, node):
        return self(node.operand)

    def map_BinOp(self, node):
        return node.op != "**" and self(node.left) and self(node.right)

    def map_Call(self, node):
        return node.func in ("min", "max", "abs", "ceil", "floor") and all(map(self, node.args))


class _Intervals(_OverContext):
    """One ``map_`` method per node type: the (low, high) of an integer expression, or None; the
    arithmetic is :mod:`.intervals`' (which raises past 64 bits in its own checks, never here)."""

    def map_Const(self, node):
        value = node.value
        return (int(value), int(value)) if isinstance(value, (bool, int)) else None

    def map_Ref(self, node):
        return self.context.item_interval(node.target)

    def map_Compare(self, node):
        return (0, 1)

    map_Not = map_Compare

    def map_UnaryOp(self, node):
        span = self(node.operand)
        return None if span is None else negated(span)

    def map_BoolOp(self, node):  # `a or b` is one of its operands
        return _union([self(o) for o in node.operands])

    def map_IfExp(self, node):
        return _union([self(node.body), self(node.orelse)])

    def map_Call(self, node):
        spans = [self(a) for a in node.args]
        return None if None in spans else call_interval(node.func, spans)

    def map_BinOp(self, node):
        left, right = self(node.left), self(node.right)
        if left is None or right is None or node.op in ("/", "**"):
            return None  # a float; a power's far end stands for "past 64 bits", not a bound
        span = binop_interval(node.op, left, right)
        shifted = shifted_quotient(node, self) if node.op == "//" and span is not None else None
        if shifted is not None:  # (r + d) // d: r // d + 1, tighter than the corners
            span = (max(span[0], shifted[0]), min(span[1], shifted[1]))
        return span


def _union(spans: list) -> tuple[int, int] | None:
    if not spans or None in spans:
        return None
    return min(s[0] for s in spans), max(s[1] for s in spans)
