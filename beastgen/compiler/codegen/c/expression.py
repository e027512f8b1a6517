"""The C target's expressions: an expression printed as C with Python's semantics, from the
semantics table (:mod:`...language.semantics`): each operation is its rule's value primitive (the
helpers of ``prelude.h``, package data, :func:`c_source`: floor division and modulo as Python's,
``min``/``max`` as Python folds them, none of them ever traps), and each raise of its rule that is
not proven absent is a guard (:func:`c_guards`) that the nest tests first, rejecting the
configuration; names, comments and literals made safe for C; what a count must compute.
"""
from __future__ import annotations

import math
from importlib import resources

from ....quoting import comment_text
from ...specialize.value_types import NodeTypes
from ...analysis.symbolic import SymbolicContext
from ...language import nodes as L
from ...language import semantics
from ...language.mapper import Mapper
from ...plan import Plan
from ..facts import constant_values
from ..guards import guard_test, guards, operation_rule


class Unsupported(Exception):
    """The plan has something the C target does not print (a space function, a string...)."""


C_TYPES = {"int": "int64_t", "bool": "int64_t", "float": "double"}


def c_source(name: str) -> str:
    """A C file shipped beside this module (package data): ``prelude.h``, the helpers every module
    starts with (Python's operators where C's differ), ``divisors.h``, the divisor loops' helper."""
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def c_name(name: str) -> str:
    """A space name as a C identifier: prefixed, so no name meets a C keyword or libc function."""
    if not name.isascii() or not name.isidentifier():
        raise Unsupported(f"name {name!r} is not an ASCII identifier")
    return f"v_{name}"


def c_comment(text: str) -> str:
    """User text for a ``//`` comment: printable ASCII without backslashes (a trailing backslash
    would splice the next line into the comment)."""
    return "".join(c if " " <= c <= "~" and c != "\\" else "?" for c in comment_text(text))


def c_literal(value) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        if not -2 ** 63 <= value < 2 ** 63:
            raise Unsupported(f"the integer {value} needs more than 64 bits")
        if value == -2 ** 63:
            return "(-9223372036854775807LL - 1)"
        text = f"{value}LL" if abs(value) > 1 else str(value)
        return f"({text})" if value < 0 else text
    if isinstance(value, float):
        if math.isnan(value):
            return "NAN"
        if math.isinf(value):
            return "INFINITY" if value > 0 else "(-INFINITY)"
        return f"({value.hex()})" if math.copysign(1, value) < 0 else value.hex()
    raise Unsupported(f"the constant {value!r} is not a number")


#: how C writes a condition of the semantics table (``isnan`` and friends: ``prelude.h``)
C_SPELLING = semantics.Spelling("({x} && {y})", "({x} || {y})", "(!{x})",
                                {"isfinite": "isfinite((double)({x}))", "isinf": "isinf((double)({x}))",
                                 "isnan": "isnan((double)({x}))", "floor": "floor((double)({x}))"})


def c_truth(source: str, expected: bool) -> str:
    """A value's truth in C (NaN is true, as in Python), or its falsehood."""
    return f"(({source}) {'!=' if expected else '=='} 0)"


class CExpression(Mapper):
    """C source for an expression, fully parenthesized: each operation its rule's value primitive
    (:data:`C_VALUES`); proofs (``symbolic``) that a divisor is never zero and both operands are
    nonnegative choose C's own division."""

    def __init__(self, items: dict, symbolic: SymbolicContext):
        self.items, self.symbolic = items, symbolic
        self.nonzero, self.nonnegative = symbolic.provably_nonzero, symbolic.provably_nonnegative
        self.types = NodeTypes(items)  # each node typed once (a 900-term chain took 7 s)

    def type_of(self, expr: L.Expr) -> str:
        kind = self.types(expr)
        if kind not in C_TYPES:
            raise Unsupported(f"a value of type {kind}")
        return "float" if kind == "float" else "int"

    def source(self, expr: L.Expr) -> str:
        self.type_of(expr)
        name = getattr(expr, "name", None)
        if name is not None and name in self.items:
            return c_name(name)
        return self(expr)

    def map_object(self, expr):
        raise Unsupported(f"no C form for {type(expr).__name__}")

    def map_Const(self, expr: L.Const) -> str:
        return c_literal(expr.value)

    def map_Ref(self, expr: L.Ref) -> str:
        if expr.target not in self.items:
            raise Unsupported(f"a reference to {expr.target!r} outside the nest")
        return c_name(expr.target)

    def map_BinOp(self, expr: L.BinOp) -> str:
        rule = operation_rule(expr, self.items, self.types)
        if rule is None:
            raise Unsupported(f"operator {expr.op} on these values")
        left, right = self.source(expr.left), self.source(expr.right)
        kind = "float" if "float" in (self.type_of(expr.left), self.type_of(expr.right)) else "int"
        if rule.value in ("floordiv", "mod") and kind == "int" and self.nonzero(expr.right):
            # a divisor proven never zero (the guards rejected every raise on the way here)
            if self.nonnegative(expr.left) and self.nonnegative(expr.right):
                return f"bg_c{'div' if rule.value == 'floordiv' else 'mod'}({left}, {right})"  # C's agrees
            return f"bg_{rule.value}_nz({left}, {right})"
        return C_VALUES[rule.value, kind].format(a=left, b=right, op=expr.op)

    def map_UnaryOp(self, expr: L.UnaryOp) -> str:
        return f"(-{self.source(expr.operand)})"

    def map_Not(self, expr: L.Not) -> str:
        return f"(!{self.source(expr.operand)})"

    def map_Compare(self, expr: L.Compare) -> str:
        if "str" in (self.types(expr.left), self.types(expr.right)):
            return self._string_compare(expr)
        return f"({self.source(expr.left)} {expr.op} {self.source(expr.right)})"

    def _string_compare(self, expr: L.Compare) -> str:
        """A string iterator (looped over by index) compared with a string constant: which indices
        hold that string."""
        iterator, constant = expr.left, expr.right
        if isinstance(iterator, L.Const):
            iterator, constant = constant, iterator
        name = getattr(iterator, "name", None) or getattr(iterator, "target", None)
        item = self.items.get(name)
        if (expr.op not in ("==", "!=") or not isinstance(constant, L.Const) or item is None
                or item.kind != "iterator" or item.domain[0] != "values" or not constant_values(item)):
            raise Unsupported("a string comparison other than iterator == constant")
        indices = [str(i) for i, p in enumerate(item.domain[1:]) if p.value == constant.value]
        index = f"{c_name(item.name)}__index"
        test = " || ".join(f"{index} == {i}" for i in indices) or "0"
        return f"({test})" if expr.op == "==" else f"(!({test}))"

    def map_BoolOp(self, expr: L.BoolOp) -> str:
        operands = [self.source(o) for o in expr.operands]
        if all(self.types(o) == "bool" for o in expr.operands):
            return "(" + f" {'&&' if expr.op == 'and' else '||'} ".join(operands) + ")"
        # Python's value: the deciding operand (operands are pure: evaluating one twice is harmless)
        result = operands[-1]
        for operand in reversed(operands[:-1]):
            result = (f"({operand} ? {result} : {operand})" if expr.op == "and"
                      else f"({operand} ? {operand} : {result})")
        return result

    def map_IfExp(self, expr: L.IfExp) -> str:
        return f"({self.source(expr.test)} ? {self.source(expr.body)} : {self.source(expr.orelse)})"

    def map_Call(self, expr: L.Call) -> str:
        rule = operation_rule(expr, self.items, self.types)
        if rule is None:
            raise Unsupported(f"function {expr.func}")
        args = [self.source(a) for a in expr.args]
        floats = any(self.type_of(a) == "float" for a in expr.args)
        if expr.func in ("min", "max"):
            helper = f"bg_{expr.func}_{'f' if floats else 'i'}"
            result = f"(double)({args[0]})" if floats else args[0]
            for arg in args[1:]:
                result = f"{helper}({result}, {arg})"
            return result
        return C_VALUES[rule.value, "float" if floats else "int"].format(a=args[0])


#: each value primitive of the semantics table as C, by the kind it computes in (``{a}``, ``{b}``:
#: the operands; ``{op}``: C's own operator); each total (no operand makes it trap)
C_VALUES = {
    **{(name, kind): "({a} {op} {b})" for name in ("add", "sub", "mul") for kind in ("int", "float")},
    **{("truediv", kind): "((double)({a}) / (double)({b}))" for kind in ("int", "float")},
    ("floordiv", "int"): "bg_floordiv({a}, {b})", ("floordiv", "float"): "bg_floordiv_f({a}, {b})",
    ("mod", "int"): "bg_mod({a}, {b})", ("mod", "float"): "bg_mod_f({a}, {b})",
    ("pow", "int"): "bg_pow_i({a}, {b})",
    **{("float_pow", kind): "pow((double)({a}), (double)({b}))" for kind in ("int", "float")},
    ("neg", "int"): "(-{a})", ("neg", "float"): "(-{a})",
    ("abs", "int"): "bg_abs_i({a})", ("abs", "float"): "fabs({a})",
    ("floor", "float"): "bg_to_int(floor({a}))", ("ceil", "float"): "bg_to_int(ceil({a}))",
    ("trunc", "float"): "bg_to_int({a})",
    ("same", "int"): "((int64_t)({a}))",
    ("to_float", "int"): "((double)({a}))", ("to_float", "float"): "((double)({a}))",
}


def c_expression(expr: L.Expr, items: dict, symbolic: SymbolicContext) -> tuple[list, str]:
    """The guards of ``expr`` (C tests, each true where Python raises: the configuration is
    rejected; :func:`c_guards`) and its C source."""
    printer = CExpression(items, symbolic)
    return c_guards(expr, items, symbolic, printer), printer.source(expr)


def c_guards(expr: L.Expr, items: dict, symbolic: SymbolicContext, printer: CExpression) -> list:
    """Each raise of ``expr``'s operations not proven absent (:func:`..guards.guards`) as a C test,
    with a comment naming it: ``(test, why)``."""
    return [(guard_test(guard, printer.source, C_SPELLING, c_truth), guard.why)
            for guard in guards(expr, items, symbolic)]


def derived_sources(plan: Plan, symbolic: SymbolicContext) -> dict[str, tuple[list, str]]:
    """Every derived expression's guards and source (:func:`c_expression`), by name."""
    items = plan.specialized.items
    return {name: c_expression(item.expr, items, symbolic) for name, item in items.items()
            if item.kind == "derived" and item.function is None}


def value_tables(plan: Plan) -> list[str]:
    """The constant listed domains as file-scope arrays, one per iterator, which every nest reads."""
    lines = []
    for level in plan.levels:
        it = level.iterator
        kind = it.value_type
        if it.function is None and it.domain[0] == "values" and constant_values(it) and kind in C_TYPES:
            cast = {"int": int, "bool": int, "float": float}[kind]
            literals = ", ".join(c_literal(cast(p.value)) for p in it.domain[1:])
            lines.append(f"static const {C_TYPES[kind]} {c_name(it.name)}__values[{len(it.domain) - 1}] = "
                         f"{{{literals}}};")
    return lines


def needed_items(plan: Plan, may_fail) -> set[str]:
    """The items a count computes: iterators, filters, derived values that may raise
    (``may_fail(item)``: a raise rejects), and what they read, transitively; not what only bound
    terms read."""
    items = plan.specialized.items
    pending = [name for name, item in items.items() if item.kind in ("iterator", "filter")
               or (item.kind == "derived" and (item.function is not None or may_fail(item)))]
    needed: set[str] = set()
    while pending:
        name = pending.pop()
        if name in needed or name not in items:
            continue
        needed.add(name)
        pending += items[name].deps
    return needed
