"""Python's semantics of the space language's operators: one table that every compiled target (C,
Numba, NumPy) prints from, so that no target can drift from Python on its own.

For an operator and the kinds of its operands (``bool``, ``int``: an integer inside 64 bits,
``float``; an integer past 64 bits is no kind any target holds: :func:`refusal`), a :class:`Rule`
gives

* ``result``: the kind of Python's result (``int``, ``float``, ``bool``);
* ``raises``: when Python raises, each a :class:`Raise` (the exception and a condition over the
  operands ``a``, ``b`` and the value ``r``, in the small Python subset of :data:`CONDITION_NAMES`);
  a raise rejects the configuration. ``complex`` is Python's complex result of a negative base to a
  fractional power: no target holds it, so it rejects as a raise does (the interval analysis
  refuses a space that uses such a value where Python would not raise on it);
* ``value``: the primitive that gives the value where nothing raises (each target spells it:
  :data:`PRIMITIVES` says what each one is); a float power's operands are floats (Python converts
  an integer operand), and so are its conditions'.

Where Python's answer is beyond every target (an integer past 64 bits, an integer power whose
exponent may be negative: Python's result is then an int or a float by value), the plan refuses
the space with one line naming the expression and its place, on every path alike
(``analysis.intervals``). An integer result that may leave 64 bits is refused there too.

Each target prints a condition with :func:`print_condition` and its own :class:`Spelling`; the
tests check every rule against Python itself on edge values and every target's spelling of every
primitive and condition (``tests/test_semantics.py``).
"""
from __future__ import annotations

import ast
import functools
import operator
from dataclasses import dataclass

#: the kinds of value a compiled target holds
KINDS = ("bool", "int", "float")
INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1


@dataclass(frozen=True)
class Raise:
    """Python raises ``error`` (or, for ``complex``, gives a complex number) where ``condition``
    holds; ``after_value``: the condition reads ``r``, the value (compute it first)."""

    error: str
    condition: str

    @property
    def after_value(self) -> bool:
        return "r" in condition_names(self.condition)


@dataclass(frozen=True)
class Rule:
    """Python's ``a <op> b`` (or ``op(a)``) on operands of given kinds: the result's kind, when it
    raises, and the primitive that computes its value where it does not."""

    result: str
    raises: tuple = ()
    value: str = ""

    def raises_before(self) -> tuple:
        """The raises a target tests on the operands alone, before computing the value."""
        return tuple(r for r in self.raises if not r.after_value)

    def raises_after(self) -> tuple:
        """The raises a target tests once the value ``r`` is computed."""
        return tuple(r for r in self.raises if r.after_value)


ZERO_DIVISOR = Raise("ZeroDivisionError", "b == 0")
_FINITE = "isfinite(a) and isfinite(b)"
#: CPython's float_pow: 0.0 ** negative raises, a negative base to a fractional power is complex, a
#: finite power past the floats raises; NaN and the infinities follow C99's pow (``0.0 ** -inf`` is inf)
FLOAT_POWER_RAISES = (
    Raise("ZeroDivisionError", f"{_FINITE} and a == 0 and b < 0"),
    Raise("complex", f"{_FINITE} and a < 0 and b != floor(b)"),
    Raise("OverflowError", f"{_FINITE} and isinf(r)"),
)
#: ``math.floor``, ``math.ceil`` and ``int`` of a float
TO_INT_RAISES = (Raise("ValueError", "isnan(a)"), Raise("OverflowError", "isinf(a)"))

#: what each value primitive is, in Python (the targets' spellings must agree: tests/test_semantics.py)
PRIMITIVES = {
    "add": "a + b", "sub": "a - b", "mul": "a * b",
    "truediv": "a / b (int / int: the exact quotient rounded once)",
    "floordiv": "a // b (floor; a float's as CPython's divmod)",
    "mod": "a % b (the sign of b; a float's as CPython's divmod)",
    "pow": "a ** b of integers, b >= 0",
    "float_pow": "float(a) ** float(b) (C's pow)",
    "neg": "-a", "abs": "abs(a)",
    "min": "b if b < a else a (min(a, b): the first of equal ones, NaN as Python compares it)",
    "max": "b if b > a else a",
    "floor": "math.floor(a)", "ceil": "math.ceil(a)", "trunc": "int(a) of a float",
    "same": "a itself (floor, ceil or int of an integer)",
    "to_float": "float(a)",
}

_ARITHMETIC = {"+": "add", "-": "sub", "*": "mul"}


def number_kind(kind: str) -> str:
    """The kind an operand counts as in arithmetic: a bool is an int (``True + True`` is 2)."""
    return "int" if kind == "bool" else kind


def binary(op: str, left: str, right: str, negative_exponent: bool = False) -> Rule:
    """The rule of ``a <op> b`` for operands of kinds ``left`` and ``right`` (``bool``, ``int`` or
    ``float``); ``negative_exponent``: for ``**`` of integers, the exponent is a negative constant
    (Python's result is then a float; an exponent that may be negative is refused:
    :func:`refusal`)."""
    left, right = number_kind(left), number_kind(right)
    floats = "float" in (left, right)
    kind = "float" if floats else "int"
    if op in _ARITHMETIC:
        return Rule(kind, (), _ARITHMETIC[op])
    if op == "/":
        return Rule("float", (ZERO_DIVISOR,), "truediv")
    if op in ("//", "%"):
        return Rule(kind, (ZERO_DIVISOR,), "floordiv" if op == "//" else "mod")
    if op == "**":
        if floats or negative_exponent:
            return Rule("float", FLOAT_POWER_RAISES, "float_pow")
        return Rule("int", (), "pow")
    raise KeyError(op)


def unary(func: str, kind: str) -> Rule:
    """The rule of ``-a`` (``func`` 'neg'), ``abs``, ``math.floor``, ``math.ceil``, ``int`` and
    ``float`` of an operand of ``kind``."""
    kind = number_kind(kind)
    if func in ("neg", "abs"):
        return Rule(kind, (), func)
    if func in ("floor", "ceil", "int"):
        if kind == "float":
            return Rule("int", TO_INT_RAISES, "trunc" if func == "int" else func)
        return Rule("int", (), "same")
    if func == "float":
        return Rule("float", (), "to_float")
    raise KeyError(func)


def choice(func: str, kinds: list[str]) -> Rule:
    """The rule of ``min``/``max`` of two or more operands (folded pairwise, as Python picks)."""
    kind = "float" if "float" in kinds else ("bool" if set(kinds) == {"bool"} else "int")
    return Rule(kind, (), func)


def refusal(what: str, value=None) -> str | None:
    """Why no compiled target holds Python's answer, for the plan's one-line refusal; None where
    one does. ``what``: ``'constant'`` (an integer ``value``) or ``'maybe negative exponent'``."""
    if what == "constant":
        if isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64_MAX:
            return (f"the integer {value} needs more than 64 bits, which compiled code does not hold "
                    "(Python's integers are exact)")
        return None
    if what == "maybe negative exponent":
        return ("the integer exponent may be negative, where Python's result is a float (an int "
                "otherwise) and compiled code's has one type; write float(...) ** ... or keep the "
                "exponent >= 0")
    raise KeyError(what)


# --------------------------------------------------------------------------------------------------
# Conditions: a small Python subset over a, b, r, printed by each target
# --------------------------------------------------------------------------------------------------
#: the functions a condition may call, of the operands as floats (``floor`` is C's: a float, inf of inf)
CONDITION_CALLS = ("isfinite", "isinf", "isnan", "floor")
#: the names a condition may read: the operands and the value
CONDITION_NAMES = ("a", "b", "r")


@dataclass(frozen=True)
class Spelling:
    """How a target writes a condition: its ``and``, ``or``, ``not`` (templates of ``{x}``, ``{y}``)
    and calls (templates of ``{x}``)."""

    conjunction: str
    disjunction: str
    negation: str
    calls: dict


@functools.lru_cache(maxsize=None)
def condition_names(condition: str) -> frozenset[str]:
    """The names ``condition`` reads (of ``a``, ``b``, ``r`` and its functions)."""
    return frozenset(node.id for node in ast.walk(ast.parse(condition, mode="eval")) if isinstance(node, ast.Name))


def print_condition(condition: str, operands: dict[str, str], spelling: Spelling) -> str:
    """``condition`` as a target's source, with each of ``a``, ``b``, ``r`` replaced by its
    ``operands`` source (which the target parenthesizes)."""
    return _print(ast.parse(condition, mode="eval").body, operands, spelling)


def _print(node: ast.AST, operands: dict, spelling: Spelling) -> str:
    if isinstance(node, ast.BoolOp):
        template = spelling.conjunction if isinstance(node.op, ast.And) else spelling.disjunction
        text = _print(node.values[0], operands, spelling)
        for value in node.values[1:]:
            text = template.format(x=text, y=_print(value, operands, spelling))
        return text
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return spelling.negation.format(x=_print(node.operand, operands, spelling))
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        op = _COMPARISONS[type(node.ops[0])]
        return f"({_print(node.left, operands, spelling)} {op} {_print(node.comparators[0], operands, spelling)})"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in CONDITION_CALLS:
        return spelling.calls[node.func.id].format(x=_print(node.args[0], operands, spelling))
    if isinstance(node, ast.Name) and node.id in CONDITION_NAMES:
        return operands[node.id]
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return str(node.value)
    raise ValueError(f"not a condition: {ast.dump(node)}")


_COMPARISONS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


def evaluate_condition(condition: str, values: dict, operations: dict):
    """The value of ``condition`` for the ``values`` of ``a``, ``b`` and ``r``, where ``operations``
    gives ``and``, ``or``, ``not`` (functions of the operands' values) and each call: Python's
    scalars (the tests' check of the table against Python) or NumPy's arrays (the vectorised path)."""
    return _evaluate(ast.parse(condition, mode="eval").body, values, operations)


def _evaluate(node: ast.AST, values: dict, operations: dict):
    if isinstance(node, ast.BoolOp):
        combine = operations["and" if isinstance(node.op, ast.And) else "or"]
        result = _evaluate(node.values[0], values, operations)
        for value in node.values[1:]:
            result = combine(result, _evaluate(value, values, operations))
        return result
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return operations["not"](_evaluate(node.operand, values, operations))
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        compare = _COMPARE_FUNCTIONS[type(node.ops[0])]
        return compare(_evaluate(node.left, values, operations), _evaluate(node.comparators[0], values, operations))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in CONDITION_CALLS:
        return operations[node.func.id](_evaluate(node.args[0], values, operations))
    if isinstance(node, ast.Name) and node.id in CONDITION_NAMES:
        return values[node.id]
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    raise ValueError(f"not a condition: {ast.dump(node)}")


_COMPARE_FUNCTIONS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
                      ast.Gt: operator.gt, ast.GtE: operator.ge}
