"""A restricted evaluator for Python expressions that arrive as data (T1 JSON, Kernel Tuner strings).

Nothing here calls ``eval`` or ``exec``. Text is parsed with :mod:`ast` and walked node by node;
only the constructs listed below are accepted, and anything else is a :class:`SpaceError` that
names the offending sub-expression, the whole expression and where it comes from.

Two evaluators:

* :class:`ConditionBuilder` turns a boolean condition over parameter names into a beastgen
  expression tree (:mod:`beastgen.compiler.language`): literals, parameter names, ``+ - * / // % **``, unary
  ``-``/``+``, comparisons (chains become an ``and`` of comparisons sharing the middle operand),
  ``in``/``not in`` a literal list or tuple, ``and``/``or``/``not`` (Python's short-circuit value
  semantics), ``a if c else b``, ``min``/``max``/``abs``, and ``min``/``max``/``sum``/``all``/``any``
  over one literal list or tuple (``min([a, b])``). Nothing is evaluated: the tree goes through the
  same specialize/plan/codegen pipeline as a space file's expressions.
* :func:`evaluate_values` evaluates a T1 ``Values`` string to a concrete list: the condition
  constructs plus list and tuple literals, ``range``, ``list``, list comprehensions and generator
  expressions over them (with ``if`` clauses), subscripts and slices (``[::-1]``) and concatenation.
  Sizes are capped (:data:`MAX_VALUES`, :data:`MAX_INT_BITS`) so that data cannot exhaust memory.
"""
from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import keyword
import math
import unicodedata

from ..compiler.language import nodes as L
from ..compiler.language.from_ast import (BINARY_OPERATORS, COMPARE_OPERATORS, AstTranslator,
                                            operator_words)
from ..compiler.model import RESERVED_NAMES
from ..errors import SpaceError, a_type, did_you_mean

#: the most elements a Values list (or any intermediate list, range or string) may have
MAX_VALUES = 1 << 20
#: the most loop iterations all comprehensions of one Values expression may run together
MAX_ITERATIONS = 1 << 22
#: the largest integer (in bits) a constant computation may produce
MAX_INT_BITS = 4096
#: the longest expression text accepted: room for a literal list of MAX_VALUES numbers of up to 15
#: digits (a 10**6-value list counts in about a minute cold and 1.1 GB), past that parsing alone
#: would take more memory than the values
MAX_TEXT = 16 * MAX_VALUES

_NODE_WORDS = {
    ast.Attribute: "attribute access", ast.Lambda: "a lambda", ast.ListComp: "a list comprehension",
    ast.SetComp: "a set comprehension", ast.DictComp: "a dict comprehension",
    ast.GeneratorExp: "a generator expression", ast.Dict: "a dict", ast.Set: "a set",
    ast.List: "a list", ast.Tuple: "a tuple", ast.Subscript: "a subscript", ast.Starred: "star-unpacking",
    ast.NamedExpr: "the walrus operator ':='", ast.JoinedStr: "an f-string", ast.Await: "await",
    ast.Yield: "yield", ast.YieldFrom: "yield from", ast.Slice: "a slice", ast.Call: "a call",
    ast.FormattedValue: "an f-string",
}
#: calls a condition may make (beastgen expression calls with Python's semantics)
CONDITION_CALLS = ("min", "max", "abs", "sum", "all", "any")
#: calls a Values expression may make
VALUE_CALLS = ("range", "list", "min", "max", "abs")


def _callee(func: ast.AST) -> str:
    """What a call calls, for messages: 'open', 'os.system', or a lambda."""
    if isinstance(func, (ast.Name, ast.Attribute)):
        return f"'{ast.unparse(func)}'"
    return _describe(func)


def _describe(node: ast.AST) -> str:
    return _NODE_WORDS.get(type(node), type(node).__name__)


def check_name(name, where: str | None, what: str = "parameter") -> str:
    """A parameter name must be a plain identifier the generated code can use as a variable."""
    if not isinstance(name, str) or not name.isidentifier():
        raise SpaceError(f"{what} name {name!r} is not a Python identifier", where)
    if unicodedata.normalize("NFKC", name) != name:  # Python reads identifiers normalized
        raise SpaceError(f"{what} name {name!r} is {unicodedata.normalize('NFKC', name)!r} to Python "
                         "(NFKC normalization), which would merge names that differ here; write it "
                         "normalized", where)
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        raise SpaceError(f"{what} name {name!r} is a Python keyword", where)
    if name in RESERVED_NAMES or name.startswith("_") or "__" in name:
        raise SpaceError(f"{what} name {name!r} is reserved by beastgen (as are names starting with "
                         "'_' or containing '__')", where)
    if hasattr(builtins, name):
        raise SpaceError(f"{what} name {name!r} would shadow the Python builtin of that name in the "
                         "generated enumerator", where)
    return name


def _prefix(context: str) -> str:
    """``context: `` for messages, or nothing when ``where`` already names the place."""
    return f"{context}: " if context else ""


def parse(text, context: str, where: str | None) -> ast.expr:
    """Parse one expression; errors name ``context`` (e.g. ``Conditions[3]``; may be empty) and ``where``."""
    if not isinstance(text, str):
        raise SpaceError(f"{_prefix(context)}expected an expression string, got {type(text).__name__} "
                         f"{text!r}", where)
    if len(text) > MAX_TEXT:
        raise SpaceError(f"{_prefix(context)}the expression is longer than {MAX_TEXT:,} characters (room "
                         f"for a list of {MAX_VALUES:,} numbers; write a longer one as a range or a "
                         "comprehension)", where)
    try:
        return ast.parse(text.strip(), mode="eval").body
    except SyntaxError as e:
        raise SpaceError(f"{_prefix(context)}syntax error in {text!r}: {e.msg}", where) from None
    except (RecursionError, MemoryError, ValueError) as e:
        raise SpaceError(f"{_prefix(context)}cannot parse {text[:80]!r}: {type(e).__name__}", where) from None


class _Walker:
    """Shared error reporting: every rejection names the sub-expression, the expression and where."""

    def __init__(self, text: str, context: str, where: str | None):
        self.text, self.context, self.where = text, context, where

    def fail(self, node: ast.AST | None, why: str):
        segment = None
        if node is not None:
            try:
                segment = ast.get_source_segment(self.text.strip(), node)
            except Exception:  # noqa: BLE001 - only for the message
                segment = None
        at = f" ({segment})" if segment and segment != self.text.strip() else ""
        raise SpaceError(f"{_prefix(self.context)}{why}{at} in {self.text.strip()!r}", self.where)


# --------------------------------------------------------------------------------------------------
# Safe concrete arithmetic (Values, and constant sub-expressions of conditions)
# --------------------------------------------------------------------------------------------------
def _size(value) -> int | None:
    return len(value) if isinstance(value, (list, tuple, range, str)) else None


def safe_binary(op: str, left, right, fail):
    """``left <op> right`` with Python semantics, refusing results too large for data."""
    if op == "**" and _is_int(left) and _is_int(right) and right > 0 and abs(left) > 1 \
            and abs(left).bit_length() * right > MAX_INT_BITS:
        fail(f"{left!r} ** {right!r} is too large")
    if op == "*":
        for seq, times in ((left, right), (right, left)):
            if _size(seq) is not None and _is_int(times) and _size(seq) * max(times, 0) > MAX_VALUES:
                fail(f"repeating a sequence {times:,} times makes more than {MAX_VALUES:,} elements")
        if _is_int(left) and _is_int(right) and \
                abs(left).bit_length() + abs(right).bit_length() > MAX_INT_BITS + 64:
            fail("the product is too large")
    if op == "+" and _size(left) is not None and _size(right) is not None \
            and _size(left) + _size(right) > MAX_VALUES:
        fail(f"the concatenation has more than {MAX_VALUES:,} elements")
    if op == "%" and isinstance(left, str):
        fail("string formatting with '%' is not allowed")
    if op in ("*", "+") and (isinstance(left, range) or isinstance(right, range)):
        fail(f"'{op}' on a range (write list(range(...)))")
    result = L.BINARY_OPS[op](left, right)
    if _is_int(result) and result.bit_length() > MAX_INT_BITS:
        fail("the result is too large")
    return result


def _is_int(value) -> bool:
    return isinstance(value, int)


# --------------------------------------------------------------------------------------------------
# Conditions: text -> beastgen expression tree
# --------------------------------------------------------------------------------------------------
class ConditionBuilder(_Walker, AstTranslator):
    """Builds a beastgen expression from a condition's AST (the policy of an :class:`AstTranslator`).

    ``resolve_name(name)`` returns the expression a free name stands for (a parameter's iterator,
    or a constant) or None when it is unknown; ``resolve_subscript(node)`` may map a subscript such
    as ``p["x"]`` (Kernel Tuner's dict argument) to an expression, or return None;
    ``constant(node)`` may give the value of a call, attribute or subscript that only reads
    constants (``np.prod([4, 8])`` in a Kernel Tuner function) as ``(True, value)``, else
    ``(False, None)``.
    """

    def __init__(self, text: str, context: str, where: str | None, resolve_name,
                 names_for_hints=(), resolve_subscript=None, allowed_hint: str = "", constant=None):
        super().__init__(text, context, where)
        self.resolve_name = resolve_name
        self.resolve_subscript = resolve_subscript
        self.constant = constant
        self.names_for_hints = names_for_hints
        self.allowed_hint = allowed_hint or (
            "a condition may use numbers, strings, True/False, parameter names, + - * / // % **, "
            "comparisons, and/or/not, 'a if c else b' and min/max/abs/sum/all/any")

    def build(self, node: ast.AST) -> L.Expr:
        try:
            expr = self.translate(node)
        except RecursionError:
            self.fail(None, "the expression is nested too deeply")
        for sub in _walk(expr):
            sub.origin = self.where
        return expr

    def reject(self, node, what=None):
        self.fail(node, f"{what or _describe(node)} is not allowed ({self.allowed_hint})")

    def _known(self, node: ast.AST) -> L.Const | None:
        """A call, attribute or subscript that only reads constants, as its value."""
        if self.constant is not None:
            found, value = self.constant(node)
            if found and type(value) in (bool, int, float, str):  # (a subclass prints as it likes)
                return L.Const(value)
        return None

    def name(self, node: ast.Name) -> L.Expr:
        expr = self.resolve_name(node.id)
        if expr is None:
            self.fail(node, f"undefined name '{node.id}'" + did_you_mean(node.id, self.names_for_hints))
        return expr

    def binary(self, node: ast.BinOp, op: str, left: L.Expr, right: L.Expr) -> L.Expr:
        if isinstance(left, L.Const) and isinstance(right, L.Const):
            # only checked here (the pipeline folds it): data must not make the folder hang
            with contextlib.suppress(ArithmeticError, TypeError, ValueError):
                # an error here raises at run time too, where it rejects the configuration
                safe_binary(op, left.value, right.value, lambda why: self.fail(node, why))
        return L.BinOp(op, left, right)

    def negative(self, operand: L.Expr) -> L.Expr:
        if isinstance(operand, L.Const) and isinstance(operand.value, (int, float)) \
                and not isinstance(operand.value, bool):
            return L.Const(-operand.value)
        return L.UnaryOp("-", operand)

    def call(self, node: ast.Call) -> L.Expr:
        known = self._known(node)
        if known is not None:
            return known
        func = node.func
        if not isinstance(func, ast.Name) or func.id not in CONDITION_CALLS:
            self.reject(node, f"calling {_callee(func)}")
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            self.reject(node, "keyword or star arguments")
        if func.id in ("min", "max") and len(node.args) >= 2:
            return L.Call(func.id, [self.translate(a) for a in node.args])
        if func.id == "abs" and len(node.args) == 1:
            return L.Call("abs", [self.translate(node.args[0])])
        items = self._sequence(node.args[0]) if len(node.args) == 1 else None
        if func.id == "abs" or items is None:
            self.fail(node, f"{func.id}() needs " + (
                "one argument" if func.id == "abs" else
                "two or more arguments, or one literal list or tuple" if func.id in ("min", "max")
                else "one literal list or tuple"))
        return self._over(node, func.id, items)

    def other(self, node: ast.AST) -> L.Expr:
        """An attribute or subscript that only reads constants, a subscript ``resolve_subscript``
        maps; nothing else."""
        known = self._known(node) if isinstance(node, (ast.Attribute, ast.Subscript)) else None
        if known is not None:
            return known
        if isinstance(node, ast.Subscript) and self.resolve_subscript is not None:
            expr = self.resolve_subscript(node)
            if expr is not None:
                return expr
        self.reject(node)

    def membership(self, node: ast.Compare, op: ast.cmpop, left: L.Expr, container: ast.AST) -> L.Expr:
        elements = self._sequence(container)
        if elements is None:
            self.reject(container, "'in' anything but a literal list or tuple")
        member = (L.BoolOp("or", [L.Compare("==", left, e) for e in elements])
                  if len(elements) > 1 else
                  L.Compare("==", left, elements[0]) if elements else L.Const(False))
        return L.Not(member) if isinstance(op, ast.NotIn) else member

    def _sequence(self, node: ast.AST) -> list[L.Expr] | None:
        """The elements of a literal list/tuple (or of a constant sequence), or None."""
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            if any(isinstance(e, ast.Starred) for e in node.elts):
                self.reject(node, "star-unpacking")
            return [self.translate(e) for e in node.elts]
        if self.constant is not None and isinstance(node, (ast.Name, ast.Call, ast.Attribute, ast.Subscript)):
            found, value = self.constant(node)
            if found and isinstance(value, (list, tuple, range, set, frozenset)) and len(value) <= MAX_VALUES \
                    and all(isinstance(v, (bool, int, float, str)) for v in value):
                return [L.Const(v) for v in value]
        return None

    def _over(self, node, func: str, items: list[L.Expr]) -> L.Expr:
        """``func(items)`` for min/max/sum/all/any over a literal sequence, with Python's values."""
        if func in ("min", "max"):
            if not items:
                self.fail(node, f"{func}() of an empty sequence")
            return items[0] if len(items) == 1 else L.Call(func, items)
        if func == "sum":
            total = L.Const(0)
            for item in items:
                total = L.BinOp("+", total, item)
            return total
        if not items:
            return L.Const(func == "all")
        test = items[0] if len(items) == 1 else L.BoolOp("and" if func == "all" else "or", items)
        return L.IfExp(test, L.Const(True), L.Const(False))  # all/any return a bool, not an operand


def _walk(expr: L.Expr):
    """The unnamed nodes of an expression (named ones are variables with origins of their own)."""
    seen, stack = set(), [expr]
    while stack:
        node = stack.pop()
        if id(node) in seen or getattr(node, "name", None) is not None:
            continue
        seen.add(id(node))
        yield node
        stack.extend(node.children())


def build_condition(text, context: str, where: str | None, names: dict[str, L.Expr]) -> L.Expr:
    """The beastgen expression for a condition over ``names`` (parameter name -> iterator)."""
    node = parse(text, context, where)
    return ConditionBuilder(text, context, where, names.get, names).build(node)


# --------------------------------------------------------------------------------------------------
# Values: text -> a concrete list
# --------------------------------------------------------------------------------------------------
class _ValueEvaluator(_Walker):
    def __init__(self, text: str, context: str, where: str | None):
        super().__init__(text, context, where)
        self.iterations = 0

    def _reject(self, node, what=None):
        self.fail(node, f"{what or _describe(node)} is not allowed (a Values expression may use "
                        "literals, lists, tuples, + - * / // % **, comparisons, and/or/not, "
                        "'a if c else b', range, list, min, max, abs, comprehensions and slices)")

    def value(self, node, scope: dict):
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (bool, int, float, str)):
                return node.value
            self._reject(node, f"the constant {node.value!r}")
        if isinstance(node, (ast.List, ast.Tuple)):
            if any(isinstance(e, ast.Starred) for e in node.elts):
                self._reject(node, "star-unpacking")
            items = [self.value(e, scope) for e in node.elts]
            return items if isinstance(node, ast.List) else tuple(items)
        if isinstance(node, ast.Name):
            if node.id in scope:
                return scope[node.id]
            self.fail(node, f"undefined name '{node.id}' (a Values expression cannot refer to other "
                            "parameters or variables, only to its own comprehension variables)")
        if isinstance(node, ast.BinOp):
            op = BINARY_OPERATORS.get(type(node.op))
            if op is None:
                self._reject(node, f"the operator {operator_words(node.op)}")
            left, right = self.value(node.left, scope), self.value(node.right, scope)
            return self._arith(node, lambda: safe_binary(op, left, right, lambda why: self.fail(node, why)))
        if isinstance(node, ast.UnaryOp):
            operand = self.value(node.operand, scope)
            if isinstance(node.op, ast.Not):
                return not operand
            if isinstance(node.op, (ast.USub, ast.UAdd)):
                if not isinstance(operand, (int, float)):
                    self.fail(node, f"unary minus/plus of {type(operand).__name__}")
                return -operand if isinstance(node.op, ast.USub) else +operand
            self._reject(node, f"the operator {operator_words(node.op)}")
        if isinstance(node, ast.BoolOp):
            result = None
            for operand in node.values:
                result = self.value(operand, scope)
                if bool(result) == isinstance(node.op, ast.Or):
                    return result
            return result
        if isinstance(node, ast.Compare):
            left = self.value(node.left, scope)
            for op, comparator in zip(node.ops, node.comparators):
                right = self.value(comparator, scope)
                if isinstance(op, (ast.In, ast.NotIn)):
                    if not isinstance(right, (list, tuple, range, str)):
                        self.fail(node, f"'in' {a_type(right)}")
                    ok = (left in right) == isinstance(op, ast.In)
                else:
                    symbol = COMPARE_OPERATORS.get(type(op))
                    if symbol is None:
                        self._reject(node, f"the operator {operator_words(op)}")
                    ok = self._arith(node, functools.partial(L.COMPARE_OPS[symbol], left, right))
                if not ok:
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            return self.value(node.body if self.value(node.test, scope) else node.orelse, scope)
        if isinstance(node, ast.Call):
            return self._call(node, scope)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            out: list = []
            self._comprehension(node, node.generators, 0, dict(scope), out)
            return out
        if isinstance(node, ast.Subscript):
            container = self.value(node.value, scope)
            if not isinstance(container, (list, tuple, range, str)):
                self.fail(node, f"subscripting {a_type(container)}")
            if isinstance(node.slice, ast.Slice):
                bounds = [None if part is None else self.value(part, scope)
                          for part in (node.slice.lower, node.slice.upper, node.slice.step)]
                if not all(b is None or (isinstance(b, int) and not isinstance(b, bool)) for b in bounds):
                    self.fail(node, "slice bounds must be integers")
                return self._arith(node, lambda: container[slice(*bounds)])
            index = self.value(node.slice, scope)
            if not isinstance(index, int) or isinstance(index, bool):
                self.fail(node, "an index must be an integer")
            return self._arith(node, lambda: container[index])
        self._reject(node)

    def _arith(self, node, compute):
        try:
            return compute()
        except SpaceError:
            raise
        except Exception as e:  # noqa: BLE001 - a Values expression that raises is an error
            self.fail(node, f"evaluating raised {type(e).__name__}: {e}")

    def _call(self, node: ast.Call, scope: dict):
        func = node.func
        if not isinstance(func, ast.Name) or func.id not in VALUE_CALLS or func.id in scope:
            self._reject(node, f"calling {_callee(func)}")
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            self._reject(node, "keyword or star arguments")
        args = [self.value(a, scope) for a in node.args]
        if func.id == "range":
            if not 1 <= len(args) <= 3 or not all(isinstance(a, int) for a in args):
                self.fail(node, "range() takes one to three integers")
            result = self._arith(node, lambda: range(*args))
            if len(result) > MAX_VALUES:
                self.fail(node, f"the range has more than {MAX_VALUES:,} elements")
            return result
        if func.id == "list":
            if len(args) != 1 or not isinstance(args[0], (list, tuple, range, str)):
                self.fail(node, "list() takes one list, tuple, range or string")
            return list(args[0])
        return self._arith(node, lambda: getattr(builtins, func.id)(*args))

    def _comprehension(self, node, generators, index: int, scope: dict, out: list):
        if index == len(generators):
            out.append(self.value(node.elt, scope))
            if len(out) > MAX_VALUES:
                self.fail(node, f"the comprehension makes more than {MAX_VALUES:,} elements")
            return
        gen = generators[index]
        if gen.is_async:
            self._reject(node, "async comprehension")
        names = _target_names(gen.target)
        if names is None:
            self._reject(gen.target, "this comprehension target")
        iterable = self.value(gen.iter, scope)
        if not isinstance(iterable, (list, tuple, range, str)):
            self.fail(gen.iter, f"iterating over {a_type(iterable)}")
        for element in iterable:
            self.iterations += 1
            if self.iterations > MAX_ITERATIONS:
                self.fail(node, f"the comprehension runs more than {MAX_ITERATIONS:,} iterations")
            inner = dict(scope)
            self._bind(gen.target, element, inner)
            if all(self.value(test, inner) for test in gen.ifs):
                self._comprehension(node, generators, index + 1, inner, out)

    def _bind(self, target, value, scope: dict):
        if isinstance(target, ast.Name):
            scope[target.id] = value
            return
        try:
            values = list(value)
        except TypeError:
            self.fail(target, f"cannot unpack {type(value).__name__}")
        if len(values) != len(target.elts):
            self.fail(target, f"cannot unpack {len(values)} values into {len(target.elts)} names")
        for sub, v in zip(target.elts, values):
            self._bind(sub, v, scope)


def _target_names(target) -> list[str] | None:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        names = []
        for element in target.elts:
            sub = _target_names(element)
            if sub is None:
                return None
            names += sub
        return names
    return None


def evaluate_values(text, context: str, where: str | None) -> list:
    """The concrete list of values of a T1 ``Values`` expression (a JSON list is accepted as is)."""
    if isinstance(text, list):
        values = text
    else:
        node = parse(text, context, where)
        evaluator = _ValueEvaluator(text, context, where)
        try:
            values = evaluator.value(node, {})
        except RecursionError:
            evaluator.fail(None, "the expression is nested too deeply")
        if not isinstance(values, (list, tuple, range)):
            evaluator.fail(None, f"the values must be a list, not {type(values).__name__} {values!r}")
        values = list(values)
    return check_values(values, context, where)


def check_values(values, context: str, where: str | None) -> list:
    """Values must be a non-empty list of ints, floats, bools or strings (not strings and numbers)."""
    values = [v.item() if hasattr(v, "item") and not isinstance(v, (str, bytes)) else v for v in values]
    if not values:
        raise SpaceError(f"{context}: the parameter has no values", where)
    for v in values:
        if not isinstance(v, (bool, int, float, str)):
            raise SpaceError(f"{context}: the value {v!r} is {a_type(v)}; values must be "
                             "ints, floats, bools or strings", where)
        if isinstance(v, float) and not math.isfinite(v):
            raise SpaceError(f"{context}: the value {v!r} is not finite", where)
    kinds = {isinstance(v, str) for v in values}
    if kinds == {True, False}:
        raise SpaceError(f"{context}: the values {values[:8]!r} mix strings and numbers; beastgen needs "
                         "one type per parameter", where)
    return values

