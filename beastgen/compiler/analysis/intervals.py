"""Value intervals of a specialized space's integer expressions, to prove that the compiled nest's
64-bit integers never overflow where Python's exact integers would go on.

Every iterator's values lie between the extremes of its domain's bounds, and every expression's
between the extremes interval arithmetic gives (filters only narrow this, so it is sound). What
Python functions compute is not analysed (unknown); an integer operation whose interval is known
and leaves the 64-bit range is refused with a clear error rather than compiled to wrap around.
"""
from __future__ import annotations

import math
import re
from itertools import product

from ..language import nodes as L
from ..language import semantics
from ..language.mapper import Mapper
from ..language.printer import expr_source
from ...errors import SpaceError
from ..specialize.ir import Specialized
from ..specialize.value_types import NodeTypes

INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1
_HUGE = 2 ** 80  # stands for "far past 64 bits" where the exact value is not worth computing

Interval = tuple  # (low, high): Python ints, or None for unknown


def check_integer_ranges(spec: Specialized) -> dict[str, Interval | None]:
    """Raise :class:`SpaceError` naming the first integer operation that can overflow int64; the
    interval of every int and bool item (None: not known)."""
    known: dict[str, Interval | None] = {}
    complex_values: dict[str, bool] = {}  # a derived value that may be complex -> whether read yet
    for item in spec.items.values():  # dependency order
        analysis = _Analysis(spec, known, item, complex_values)
        if item.kind == "iterator":
            known[item.name] = analysis.domain(item.domain) if item.function is None else None
            if item.value_type not in ("int", "bool", "float"):
                known[item.name] = None
            elif known[item.name] is not None and item.value_type != "float":
                _check_domain(item, known[item.name])
        elif item.function is None:
            value = analysis.interval(item.expr)
            if id(item.expr) in analysis.complex_powers and item.kind == "derived":
                complex_values[item.name] = False  # its readers decide
            elif id(item.expr) in analysis.complex_powers and item.kind == "filter":
                analysis.refuse_complex(item.expr)  # a truth test
            known[item.name] = value if item.value_type in ("int", "bool", "float") else None
        else:
            known[item.name] = None
    for name, read in complex_values.items():
        if not read:  # Python keeps the row where it is computed and never used
            item = spec.items[name]
            _Analysis(spec, known, item).refuse_complex(item.expr)
    return known


def _check_domain(item, interval: Interval) -> None:
    """An iterator's bounds must be 64-bit integers (a value past them cannot be held)."""
    low, high = interval
    if low < INT64_MIN or high > INT64_MAX:
        extreme = high if high > INT64_MAX else low
        raise SpaceError(f"iterator '{item.name}': its domain reaches {extreme}, outside the 64-bit "
                         "integers of compiled code", item.origin)


def range_fits(spec: Specialized, known: dict, item) -> bool:
    """Whether a range iterator's loop is proven to stay inside 64 bits as compiled: ``stop - start``
    (Numba's ``range`` computes it) and the value past the last one (``x += step`` in C) both fit.
    Otherwise the loops count their trips instead (``nestlib.range_chunk``)."""
    analysis = _Analysis(spec, known, item)
    parts = [analysis.interval(part) for part in item.domain[1:]]
    if None in parts:
        return False
    (lo_min, lo_max), (hi_min, hi_max), (step_min, step_max) = parts
    reach = [hi_max - lo_min, lo_max - hi_min, hi_max + max(step_max, 0), hi_min + min(step_min, 0)]
    return all(INT64_MIN <= value <= INT64_MAX for value in reach)


def unproven_integer_operations(spec: Specialized, known: dict, item, expr) -> list:
    """The ``+ - * //``, unary ``-``, ``abs`` and ``** <whole constant>`` nodes of ``expr`` (an item's
    expression or a part of an iterator's domain) that may compute integers (not floats, by type)
    and whose interval is not known: what a space function computes is not analysed, so an
    operation on its value may leave 64 bits unseen; and the comparisons that may compare such an
    integer with a float."""
    analysis = _Unproven(spec, known, item)
    analysis.interval(expr)
    return analysis.unproven


class _Analysis(Mapper):
    """Interval arithmetic over one item's expressions."""

    def __init__(self, spec: Specialized, known: dict, item, complex_values: dict | None = None):
        self.spec, self.known, self.item = spec, known, item
        self.type_of = NodeTypes(spec.items)
        self.complex_powers: set = set()  # ids of the powers that may be complex numbers in Python
        self.complex_values = {} if complex_values is None else complex_values

    def domain(self, domain) -> Interval | None:
        kind, *parts = domain
        bounds = [self.interval(p) for p in parts]
        if kind == "range":
            bounds = bounds[:2]  # the values lie between start and stop, whatever the step
        if any(b is None for b in bounds):
            return None
        return min(b[0] for b in bounds), max(b[1] for b in bounds)

    def interval(self, expr) -> Interval | None:
        """The interval of an integer (or boolean) expression; every integer operation inside is
        checked against the 64-bit range."""
        children = [self.interval(child) for child in expr.children()]
        value = self(expr, children)
        if value is not None and any(v != v for v in value):
            value = None  # NaN: nothing known
        if isinstance(expr, L.Call) and expr.func in _TO_INT and self.type_of(expr.args[0]) == "float":
            self._check_to_int(expr, value)
        self._check_held(expr, children)
        if self.item.kind != "bound":  # a count's exactness; a bound is not counted
            self._check_rounding(expr, children)
            self._check_complex_uses(expr, children)
        if (value is not None and (isinstance(expr, (L.BinOp, L.UnaryOp))
                                   or (isinstance(expr, L.Call) and expr.func == "abs"))
                and self.type_of(expr) == "int"
                and (value[0] < INT64_MIN or value[1] > INT64_MAX)):
            extreme = value[1] if value[1] > INT64_MAX else value[0]
            size = "far more than" if abs(extreme) >= _HUGE else f"{float(extreme):.3g}, past"
            raise SpaceError(
                f"{self.item.kind} '{self.item.name}': {expr_source(expr)} can reach {size} the 64-bit "
                "integers of compiled code, where Python's integers are exact; narrow the domains "
                "or compute it in floating point (float(...))", self.item.origin)
        return value

    def _check_held(self, expr, children) -> None:
        """Refuse what no compiled target holds (the semantics table's :func:`~..language.semantics.refusal`):
        an integer past 64 bits (a constant, a setting folded in), an integer power whose exponent
        may be negative (Python's result is an int or a float by its value)."""
        why, where = None, expr
        for node in (expr, *expr.children()):
            for value in self._constant_values(node):
                why = why or semantics.refusal("constant", value)
        if (isinstance(expr, L.BinOp) and expr.op == "**" and self.item.kind != "bound"
                and self.type_of(expr.left) in ("int", "bool") and self.type_of(expr.right) in ("int", "bool")
                and not (isinstance(expr.right, L.Const) and expr.right.value < 0)
                and (children[1] is None or children[1][0] < 0)):
            why = semantics.refusal("maybe negative exponent")
        if why:
            raise SpaceError(f"{self.item.kind} '{self.item.name}': in {expr_source(where)}: {why}",
                             self.item.origin)

    def _constant_values(self, node) -> list:
        """The values of a constant and of the settings the compiled code reads for it: a setting
        the plan keeps as a name (a loop bound's), and those a folded constant is printed with
        (``Const.shown``, ``n // 5``: the generated code computes it from the setting's global)."""
        if isinstance(node, L.Ref):
            return [self.spec.constants[node.target]] if node.target in self.spec.constants else []
        if not isinstance(node, L.Const):
            return []
        shown = getattr(node, "shown", None) or ""
        return [node.value] + [self.spec.constants[name] for name in re.findall(r"[A-Za-z_]\w*", shown)
                               if name in self.spec.constants]

    def _check_to_int(self, expr, value) -> None:
        """A float made an integer (``math.floor``, ``math.ceil``, ``int``) must be proven inside 64
        bits: Python's result past them is an exact big integer, which compiled code cannot hold."""
        if value is not None and INT64_MIN <= value[0] and value[1] <= INT64_MAX:
            return
        reach = ("cannot be proven to stay inside" if value is None else
                 f"can reach {float(value[1] if value[1] > INT64_MAX else value[0]):.3g}, past")
        raise SpaceError(
            f"{self.item.kind} '{self.item.name}': {expr_source(expr)} {reach} the 64-bit integers of "
            "compiled code, where Python's integers are exact; bound the float before converting it "
            "(e.g. with min and max)", self.item.origin)

    def _check_complex_uses(self, expr, children) -> None:
        """Python's negative number to a fractional power is a complex number, which compiled code
        cannot hold (its power rejects the configuration). Where Python raises on it too (an ordering,
        ``min``/``max``, a conversion, ``//``, ``%``) both reject; any other use (``==``, ``!=``, a
        truth test, arithmetic, ``abs``) is refused: :attr:`complex_powers` holds the powers met."""
        if isinstance(expr, L.BinOp) and expr.op == "**" and self._may_be_complex(expr, children):
            self.complex_powers.add(id(expr))
        raising = ((isinstance(expr, L.Compare) and expr.op in ("<", "<=", ">", ">="))
                   or (isinstance(expr, L.Call) and expr.func in ("min", "max", "floor", "ceil", "int", "round"))
                   or (isinstance(expr, L.BinOp) and expr.op in ("//", "%")))
        for child in expr.children():
            if isinstance(child, L.Ref) and child.target in self.complex_values:
                if not raising:
                    self.refuse_complex(self.spec.items[child.target].expr)
                self.complex_values[child.target] = True
            elif id(child) in self.complex_powers and not raising:
                self.refuse_complex(child)

    def _may_be_complex(self, expr, children) -> bool:
        base, exponent = children
        if self.type_of(expr.right) not in ("float", "any"):
            return False  # an integer exponent: Python's result is a number
        if isinstance(expr.right, L.Const) and float(expr.right.value).is_integer():
            return False
        return (base is None or base[0] < 0) and not self._nonnegative(expr.left)

    def _nonnegative(self, expr) -> bool:
        """Proven never negative where the interval is not known: a power of a nonnegative base
        (Python's ``x ** y`` of ``x >= 0`` is a nonnegative float, inf or NaN, never complex)."""
        if isinstance(expr, L.Const):
            return isinstance(expr.value, (int, float)) and not expr.value < 0
        if isinstance(expr, L.Ref):
            known = self.map_Ref(expr, [])
            return known is not None and known[0] >= 0
        return isinstance(expr, L.BinOp) and expr.op == "**" and self._nonnegative(expr.left)

    def refuse_complex(self, power) -> None:
        raise SpaceError(
            f"{self.item.kind} '{self.item.name}': {expr_source(power)} may be a complex number in "
            "Python (a negative base to a fractional power), which compiled code cannot hold where it "
            "is compared with == or !=, tested for truth or computed with; keep the base nonnegative "
            "(e.g. max(0, ...)) or the exponent whole", self.item.origin)

    def _check_rounding(self, expr, children) -> None:
        """Python compares an int with a float exactly, divides two ints exactly (rounding the
        quotient once) and keeps an int as an int where ``where``/``and``/``or``/``min`` give it
        or a float; compiled code and NumPy make the int a float first, which differs past 2**53
        (``2**53 + 1 == 2.0**53``): refuse such an int."""
        parts = list(zip(expr.children(), children))
        if isinstance(expr, L.Compare) or isinstance(expr, L.Call) and expr.func in ("min", "max"):
            what, other = "compares {} with a float", "float"
        elif isinstance(expr, (L.IfExp, L.BoolOp)):  # the values it may give (not a where's test)
            what, other = "gives {} or a float", "float"
            parts = parts[1:] if isinstance(expr, L.IfExp) else parts
        elif isinstance(expr, L.BinOp) and expr.op == "/":
            what, other = "divides {} by an integer", "int"
        else:
            return
        kinds = [self.type_of(child) for child, _ in parts]
        if ("float" in kinds) != (other == "float"):
            return
        for (child, value), kind in zip(parts, kinds):
            if kind == "int" and value is not None and max(map(abs, value)) > 2 ** 53:
                raise SpaceError(
                    f"{self.item.kind} '{self.item.name}': {expr_source(expr)} "
                    + what.format(f"the integer {expr_source(child)}, which can pass 2**53,")
                    + ": Python is exact there, compiled code rounds the integer to a float first; "
                    "round it alike with x * 1.0 (or float(x) in a space function)", self.item.origin)

    # one map_ method per node type: the interval of ``expr`` from those of its ``children``
    def map_Expr(self, expr, children) -> Interval | None:
        return None

    def map_Const(self, expr, children):
        return _constant(expr.value)

    def map_Ref(self, expr, children):
        if expr.target in self.spec.constants:
            return _constant(self.spec.constants[expr.target])
        return self.known.get(expr.target)

    def map_Compare(self, expr, children):
        """(0, 1) (an integer past 2**53 compared with a float: :meth:`_check_rounding`)."""
        return (0, 1)

    def map_Not(self, expr, children):
        return (0, 1)

    def map_BinOp(self, expr, children):
        if None in children:
            return None
        types = self.type_of(expr.left), self.type_of(expr.right)
        smallest = 1 if types[1] != "float" else self._smallest_magnitude(expr.right)
        return binop_interval(expr.op, *children, floats="float" in types, smallest=smallest)

    def _smallest_magnitude(self, expr) -> float | None:
        """The smallest size a nonzero float divisor can have: a constant's, or the smallest of an
        iterator's listed constants (None: not known, it may be as small as a float goes)."""
        if isinstance(expr, L.Ref) and expr.target in self.spec.constants:
            values = [self.spec.constants[expr.target]]
        elif isinstance(expr, L.Ref) and expr.target in self.spec.items:
            item = self.spec.items[expr.target]
            if item.kind != "iterator" or item.function is not None or item.domain[0] != "values" \
                    or not all(isinstance(p, L.Const) for p in item.domain[1:]):
                return None
            values = [p.value for p in item.domain[1:]]
        elif isinstance(expr, L.Const):
            values = [expr.value]
        else:
            return None
        sizes = [abs(v) for v in values if isinstance(v, (int, float)) and v == v and v != 0]
        return min(sizes, default=math.inf)

    def map_UnaryOp(self, expr, children):
        return None if None in children else negated(*children)

    def map_BoolOp(self, expr, children):  # `a or b` is one of its operands
        if None in children:
            return None
        return min(c[0] for c in children), max(c[1] for c in children)

    def map_IfExp(self, expr, children):
        if None in children:
            return None
        return min(children[1][0], children[2][0]), max(children[1][1], children[2][1])

    def map_Call(self, expr, children):
        if None in children:
            return None
        if expr.func in ("min", "max", "abs"):
            return call_interval(expr.func, children)
        if expr.func in _TO_INT:  # the integers between the rounded extremes (checked by interval())
            (lo, hi), = children
            if not all(math.isfinite(v) for v in (lo, hi)):
                return None
            return math.floor(lo), math.ceil(hi)
        if expr.func == "float":
            (lo, hi), = children
            return float(lo), float(hi)
        return None


_TO_INT = ("floor", "ceil", "int")


def shifted_quotient(expr: L.BinOp, interval) -> Interval | None:
    """The interval of ``n // d`` where the sum ``n`` holds ``d`` itself as a term, ``m`` times in
    all (signs counted): ``(r + m*d) // d == r // d + m`` exactly for integers and ``d != 0``, and
    ``r // d`` loses less to interval arithmetic than ``n // d`` (``ceil_div(32, dim_m)``, that is
    ``(32 + dim_m - 1) // dim_m``, is at least 1, not 0). ``interval``: the interval of a
    subexpression. None where ``d``'s sign is not fixed or ``n`` does not hold it."""
    divisor = interval(expr.right)
    if divisor is None or divisor[0] <= 0 <= divisor[1]:
        return None
    key = expr_source(expr.right)
    terms = additive_terms(expr.left)
    multiple = sum(sign for sign, term in terms if expr_source(term) == key)
    rest = [(sign, term) for sign, term in terms if expr_source(term) != key]
    if not multiple or len(rest) == len(terms):
        return None
    low = high = 0
    for sign, term in rest:
        span = interval(term)
        if span is None:
            return None
        low, high = (low + span[0], high + span[1]) if sign > 0 else (low - span[1], high - span[0])
    corners = [a // b for a, b in product((low, high), divisor)]
    return min(corners) + multiple, max(corners) + multiple


def additive_terms(expr) -> list[tuple[int, L.Expr]]:
    """``expr`` as a signed sum: (+1 or -1, term) for each operand of its ``+``, ``-`` and unary
    ``-`` (an integer sum; a term is any other expression)."""
    if isinstance(expr, L.BinOp) and expr.op in ("+", "-"):
        right = additive_terms(expr.right)
        if expr.op == "-":
            right = [(-sign, term) for sign, term in right]
        return additive_terms(expr.left) + right
    if isinstance(expr, L.UnaryOp) and expr.op == "-":
        return [(-sign, term) for sign, term in additive_terms(expr.operand)]
    return [(1, expr)]


def _constant(value) -> Interval | None:
    if isinstance(value, (bool, int)):
        return int(value), int(value)
    if isinstance(value, float) and value == value:
        return value, value
    return None


# -- interval arithmetic: the one implementation, for the 64-bit checks here (which then raise where
# an integer result leaves 64 bits) and for the proofs of analysis.symbolic (which never raise)
def negated(interval: Interval) -> Interval:
    """The interval of ``-x`` for ``x`` in ``interval``."""
    low, high = interval
    return -high, -low


def call_interval(func: str, children: list) -> Interval | None:
    """The interval of ``min``, ``max`` or ``abs`` of arguments in the ``children`` intervals."""
    if func == "abs":
        (low, high), = children
        return (0 if low <= 0 <= high else min(abs(low), abs(high))), max(abs(low), abs(high))
    if func in ("min", "max") and children:
        pick = min if func == "min" else max
        return pick(c[0] for c in children), pick(c[1] for c in children)
    return None


def binop_interval(op: str, left: Interval, right: Interval, floats: bool = False,
                   smallest: float | None = 1) -> Interval | None:
    """The interval of ``left op right``, exact Python arithmetic, or None (``floats``: either
    operand is a float, Python's float operation; its rounding is monotone, so the corners still
    bound it; ``smallest``: the smallest size a nonzero divisor can have, None where unknown)."""
    try:
        return _binop_corners(op, left, right, floats, smallest)
    except (OverflowError, ZeroDivisionError):
        return None


def _binop_corners(op: str, left: Interval, right: Interval, floats: bool,
                   smallest: float | None) -> Interval | None:
    if floats:
        left, right = (float(left[0]), float(left[1])), (float(right[0]), float(right[1]))
        if not all(math.isfinite(v) for v in left + right) and op != "+" and op != "-":
            return None
    if op in ("+", "-", "*"):
        corners = [a + b if op == "+" else a - b if op == "-" else a * b
                   for a, b in product(left, right)]
        return None if any(c != c for c in corners) else (min(corners), max(corners))
    if op == "/":
        if right[0] <= 0 <= right[1]:  # a zero divisor raises; any other is at least `smallest`
            if not smallest:
                return None
            m = max(abs(left[0]), abs(left[1])) / smallest
            return -m, m
        corners = [a / b for a, b in product(left, right)]
        return min(corners), max(corners)
    if op == "//":
        if right[0] <= 0 <= right[1] and floats:  # as for /, and the floor one lower
            if not smallest:
                return None
            m = max(abs(left[0]), abs(left[1])) / smallest + 1
            return -m, m
        if right[0] <= 0 <= right[1]:  # may divide by 0 (guarded) or by -1: at most |left|
            m = max(abs(left[0]), abs(left[1]))
            return -m, m
        corners = [a // b for a, b in product(left, right)]
        return min(corners), max(corners)
    if op == "%" and not floats and (right[0] > 0 or right[1] < 0):  # the sign of the divisor
        if right[0] > 0:
            return 0, (min(left[1], right[1] - 1) if left[0] >= 0 else right[1] - 1)
        return (max(left[0], right[0] + 1) if left[1] <= 0 else right[0] + 1), 0
    if op == "%":
        m = max(abs(right[0]), abs(right[1]))
        return (0 if right[0] > 0 else -m), (0 if right[1] < 0 else m)
    if op == "**":
        if floats or right[0] < 0:
            return None  # refused elsewhere unless it is a float power
        m = max(abs(left[0]), abs(left[1]))
        top = _power(m, right[1])
        return (0 if left[0] >= 0 else -top), top
    return None


def _power(base: int, exponent: int) -> int:
    if base <= 1:
        return base if exponent else 1
    if exponent * base.bit_length() > 90:
        return _HUGE
    return base ** exponent


class _Unproven(_Analysis):
    """The interval analysis, collecting the integer operations whose interval it does not know."""

    def __init__(self, spec: Specialized, known: dict, item):
        super().__init__(spec, known, item)
        self.unproven: list = []
        self.seen: dict = {}  # id of a node -> (it, its interval)

    def interval(self, expr) -> Interval | None:
        value = super().interval(expr)
        self.seen[id(expr)] = expr, value
        if value is None and _checkable(expr) and self.type_of(expr) in ("int", "any"):
            self.unproven.append(expr)
        if isinstance(expr, L.Compare) and self._may_round(expr):
            self.unproven.append(expr)
        return value

    def _may_round(self, expr) -> bool:
        """Whether compiled code may compare an integer of unknown interval with a float (it rounds
        the integer first; Python compares exactly)."""
        if expr.op not in ("<", "<=", ">", ">=", "==", "!="):
            return False
        sides = [(self.type_of(side), side) for side in (expr.left, expr.right)]
        for (integer_type, integer), (float_type, _) in (sides, sides[::-1]):
            if integer_type in ("int", "any") and float_type in ("float", "any") \
                    and self.seen[id(integer)][1] is None:
                return True
        return False


def _checkable(expr) -> bool:
    if isinstance(expr, L.BinOp):
        return expr.op in ("+", "-", "*", "//") or (
            expr.op == "**" and isinstance(expr.right, L.Const) and type(expr.right.value) is int
            and expr.right.value >= 0)  # a power the nest keeps as it is (codegen's PythonPowers)
    return (isinstance(expr, L.UnaryOp) and expr.op == "-") or (isinstance(expr, L.Call) and expr.func == "abs")
