"""The space language: what a space file writes (``beast.setting``, ``beast.range``, ``@beast.filter``...).

Every object here is a node of a small expression tree with Python semantics. Objects bound to a
module-level name in a space file become named variables of the space (the loader names them);
unnamed sub-expressions are inlined where they are used.

A filter REJECTS a configuration when it is true (BEAST's convention).
"""
from __future__ import annotations

import builtins
import functools
import math
import operator
import os
import sys

from ...errors import SpaceError
from .printer import expr_source

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # beastgen/


def caller_origin() -> str | None:
    """``file:line`` of the first stack frame outside the beastgen package (the space file)."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not _in_package(filename):
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back
    return None


@functools.lru_cache(maxsize=256)
def _in_package(filename: str) -> bool:
    return os.path.abspath(filename).startswith(_PACKAGE_DIR)


# Operators: symbol -> Python function. Codegen prints the symbol, the reference evaluator calls the
# function, so both follow Python's semantics by construction.
BINARY_OPS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow,
}
COMPARE_OPS = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "==": operator.eq, "!=": operator.ne,
}
CALLS = {"min": min, "max": max, "abs": abs, "ceil": math.ceil, "floor": math.floor,
         "int": int, "float": float}


class Expr:
    """A node of a space expression. Operators build new nodes; nothing is evaluated at load time."""

    name: str | None = None  # set by the loader when the node is bound to a module-level name
    origin: str | None = None  # file:line where it was written

    def __init__(self):
        self.origin = caller_origin()

    def children(self) -> tuple:
        return ()

    # -- arithmetic ------------------------------------------------------------------------------
    def __add__(self, o): return BinOp("+", self, o)
    def __radd__(self, o): return BinOp("+", o, self)
    def __sub__(self, o): return BinOp("-", self, o)
    def __rsub__(self, o): return BinOp("-", o, self)
    def __mul__(self, o): return BinOp("*", self, o)
    def __rmul__(self, o): return BinOp("*", o, self)
    def __truediv__(self, o): return BinOp("/", self, o)
    def __rtruediv__(self, o): return BinOp("/", o, self)
    def __floordiv__(self, o): return BinOp("//", self, o)
    def __rfloordiv__(self, o): return BinOp("//", o, self)
    def __mod__(self, o): return BinOp("%", self, o)
    def __rmod__(self, o): return BinOp("%", o, self)
    def __pow__(self, o): return BinOp("**", self, o)
    def __rpow__(self, o): return BinOp("**", o, self)
    def __neg__(self): return UnaryOp("-", self)
    def __pos__(self): return self
    def __abs__(self): return Call("abs", (self,))
    def __ceil__(self): return Call("ceil", (self,))
    def __floor__(self): return Call("floor", (self,))

    # -- comparisons (return expressions; == and != too) ----------------------------------------
    def __lt__(self, o): return Compare("<", self, o)
    def __le__(self, o): return Compare("<=", self, o)
    def __gt__(self, o): return Compare(">", self, o)
    def __ge__(self, o): return Compare(">=", self, o)
    def __eq__(self, o): return Compare("==", self, o)  # type: ignore[override]
    def __ne__(self, o): return Compare("!=", self, o)  # type: ignore[override]
    __hash__ = object.__hash__

    # -- logic: & | ~ mean and / or / not (short-circuit, as in Python) --------------------------
    def __and__(self, o): return BoolOp("and", (self, as_expr(o)))
    def __rand__(self, o): return BoolOp("and", (as_expr(o), self))
    def __or__(self, o): return BoolOp("or", (self, as_expr(o)))
    def __ror__(self, o): return BoolOp("or", (as_expr(o), self))
    def __invert__(self): return Not(self)

    def __bool__(self):
        raise SpaceError(
            "a space expression has no truth value while the space file is loading; write "
            "`a & b`, `a | b`, `~a` for and/or/not, beast.where(cond, a, b) for `a if cond else b`, "
            "beast.min/beast.max for min/max, or use a @beast.derived / @beast.filter function",
            caller_origin())

    def __iter__(self):
        raise SpaceError("a space expression cannot be iterated while the space file is loading",
                         caller_origin())

    def __repr__(self):
        return self.name if self.name else expr_source(self)


def walk(expr: Expr):
    """Every node of an expression tree, the root first."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children())


def as_expr(value) -> Expr:
    return value if isinstance(value, Expr) else Const(value)


class Const(Expr):
    """A literal (int, float, bool or str)."""

    def __init__(self, value):
        super().__init__()
        if not isinstance(value, (int, float, str, bool)):
            raise SpaceError(f"unsupported constant {value!r} of type {type(value).__name__} in a "
                             "space expression (ints, floats, bools and strings only)", self.origin)
        self.value = value


class Ref(Expr):
    """A reference to a named variable of a specialized space (produced by specialization)."""

    def __init__(self, target: str):
        super().__init__()
        self.target = target


class BinOp(Expr):
    def __init__(self, op: str, left, right):
        super().__init__()
        self.op, self.left, self.right = op, as_expr(left), as_expr(right)

    def children(self):
        return (self.left, self.right)


class UnaryOp(Expr):
    def __init__(self, op: str, operand):
        super().__init__()
        self.op, self.operand = op, as_expr(operand)

    def children(self):
        return (self.operand,)


class Compare(Expr):
    def __init__(self, op: str, left, right):
        super().__init__()
        self.op, self.left, self.right = op, as_expr(left), as_expr(right)

    def children(self):
        return (self.left, self.right)


class BoolOp(Expr):
    def __init__(self, op: str, operands):
        super().__init__()
        self.op, self.operands = op, tuple(as_expr(o) for o in operands)

    def children(self):
        return self.operands


class Not(Expr):
    def __init__(self, operand):
        super().__init__()
        self.operand = as_expr(operand)

    def children(self):
        return (self.operand,)


class IfExp(Expr):
    """``body if test else orelse``: see :func:`where`."""

    def __init__(self, test, body, orelse):
        super().__init__()
        self.test, self.body, self.orelse = as_expr(test), as_expr(body), as_expr(orelse)

    def children(self):
        return (self.test, self.body, self.orelse)


class Call(Expr):
    """One of the builtins in :data:`CALLS` applied to expressions."""

    def __init__(self, func: str, args):
        super().__init__()
        self.func, self.args = func, tuple(as_expr(a) for a in args)

    def children(self):
        return self.args


# --------------------------------------------------------------------------------------------------
# Named variables of a space
# --------------------------------------------------------------------------------------------------
class Setting(Expr):
    """A problem input with a default, overridable at run time (``--set name=value``); ``choices``
    or ``minimum``/``maximum`` (inclusive) restrict the values it accepts."""

    def __init__(self, default, choices=None, minimum=None, maximum=None):
        super().__init__()
        if not isinstance(default, (int, float, str, bool)):
            raise SpaceError(f"a setting's default must be an int, float, bool or str, not "
                             f"{type(default).__name__}", self.origin)
        for label, limit in (("minimum", minimum), ("maximum", maximum)):
            if limit is not None and (not isinstance(limit, (int, float)) or isinstance(limit, bool)
                                      or isinstance(default, (str, bool))):
                raise SpaceError(f"a setting's {label} must be a number, for a numeric default",
                                 self.origin)
        self.default = default
        self.choices = tuple(choices) if choices is not None else None
        self.minimum, self.maximum = minimum, maximum
        problem = self.problem(default)
        if problem:
            raise SpaceError(f"setting default {default!r} {problem}", self.origin)

    def problem(self, value) -> str | None:
        """Why ``value`` is not accepted ('is below its minimum 1'), or None when it is."""
        if self.choices is not None and value not in self.choices:
            return f"is not one of its choices {list(self.choices)}"
        if self.minimum is not None and value < self.minimum:
            return f"is below its minimum {self.minimum!r}"
        if self.maximum is not None and value > self.maximum:
            return f"is above its maximum {self.maximum!r}"
        return None


class DeviceProperty(Expr):
    """A property of the target GPU, e.g. ``beast.device.max_threads_per_block``."""

    def __init__(self, prop: str):
        super().__init__()
        self.prop = prop


class _DeviceNamespace:
    """``beast.device``: attribute access gives a :class:`DeviceProperty`."""

    def __getattr__(self, prop: str) -> DeviceProperty:
        if prop.startswith("__"):
            raise AttributeError(prop)
        return DeviceProperty(prop)


device = _DeviceNamespace()


class Iterator(Expr):
    """Base of the three kinds of iterator; its value in a configuration is one element of its domain."""


class RangeIterator(Iterator):
    """``beast.range(start, stop, step)``: Python ``range`` semantics, bounds may be expressions."""

    def __init__(self, *args):
        super().__init__()
        if not 1 <= len(args) <= 3:
            raise SpaceError(f"beast.range takes 1 to 3 arguments, got {len(args)}", self.origin)
        if len(args) == 1:
            args = (0, args[0])
        start, stop = args[0], args[1]
        step = args[2] if len(args) == 3 else 1
        self.start, self.stop, self.step = as_expr(start), as_expr(stop), as_expr(step)

    def children(self):
        return (self.start, self.stop, self.step)


class ValuesIterator(Iterator):
    """``beast.values(a, b, ...)``: an explicit list of ints, floats, bools or strings."""

    def __init__(self, *values):
        super().__init__()
        if len(values) == 1 and isinstance(values[0], (list, tuple, builtins.range)):
            values = tuple(values[0])
        if not values:
            raise SpaceError("beast.values needs at least one value", self.origin)
        self.values = tuple(as_expr(v) for v in values)

    def children(self):
        return self.values


class FunctionIterator(Iterator):
    """``@beast.iterator`` on a function returning a range or a sequence, or on a generator."""

    def __init__(self, func):
        super().__init__()
        self.func = func
        self.origin = _function_origin(func)


class Derived(Expr):
    """``@beast.derived``: a value computed from other variables by a function."""

    def __init__(self, func):
        super().__init__()
        self.func = func
        self.origin = _function_origin(func)


class Filter:
    """A filter: REJECTS a configuration when its condition is true."""

    what = "filter"

    name: str | None = None

    def __init__(self, condition, origin: str | None = None):
        self.origin = origin or caller_origin()
        if callable(condition) and not isinstance(condition, Expr):
            self.func, self.expr = condition, None
            self.origin = _function_origin(condition)
        else:
            self.func, self.expr = None, as_expr(condition)

    def __bool__(self):
        raise SpaceError(f"a {self.what} has no truth value; it is declared, not evaluated",
                         self.origin)


class Bound(Filter):
    """A lower-bound term (seconds) on the kernel's run time; it must never exceed the real time."""

    what = "bound"
    source: str | None = None  # where its counts and rates come from, for reports


def _function_origin(func) -> str:
    code = func.__code__
    return f"{code.co_filename}:{code.co_firstlineno}"


# --------------------------------------------------------------------------------------------------
# The public constructors (``import beastgen as beast``)
# --------------------------------------------------------------------------------------------------
def setting(default, choices=None, minimum=None, maximum=None) -> Setting:
    """A problem input with a default value; ``choices`` or an inclusive ``minimum``/``maximum``
    restrict what ``--set`` accepts (e.g. ``beast.setting(4096, minimum=1)`` for a problem size)."""
    return Setting(default, choices, minimum, maximum)


def range(*args) -> RangeIterator:  # noqa: A001 - the public name mirrors Python's range
    """An expression iterator over ``range(start, stop, step)``; bounds may depend on other variables."""
    return RangeIterator(*args)


def values(*vals) -> ValuesIterator:
    """An iterator over an explicit list of values."""
    return ValuesIterator(*vals)


def iterator(func) -> FunctionIterator:
    """Decorator: a function iterator (returns a range or sequence) or closure iterator (yields)."""
    return FunctionIterator(func)


def derived(func) -> Derived:
    """Decorator: a derived value computed by a function of other variables."""
    return Derived(func)


def filter(condition) -> Filter:  # noqa: A001 - BEAST's name
    """A filter that REJECTS a configuration when ``condition`` is true.

    Use as ``name = beast.filter(expression)`` or as a decorator on a function returning a bool.
    """
    return Filter(condition, caller_origin())


def bound(term, source: str | None = None) -> Bound:
    """A lower bound (in seconds) on the run time of every configuration it applies to.

    Use as ``name = beast.bound(expression)`` or as a decorator on a function returning seconds.
    ``source`` says where its counts and rates come from (shown by ``check-bounds``).
    """
    term = Bound(term, caller_origin())
    term.source = source
    return term


def where(test, body, orelse) -> IfExp:
    """``body if test else orelse`` as a space expression."""
    return IfExp(test, body, orelse)


def min(*args) -> Call:  # noqa: A001
    """``min(...)`` of two or more space expressions."""
    return Call("min", _two_or_more("min", args))


def max(*args) -> Call:  # noqa: A001
    """``max(...)`` of two or more space expressions."""
    return Call("max", _two_or_more("max", args))


def _two_or_more(name: str, args: tuple) -> tuple:
    """``args``; a SpaceError where there are fewer than two (Python's ``min(x)`` of a number raises,
    and a space expression is no sequence)."""
    if len(args) < 2:
        raise SpaceError(f"beast.{name} needs two or more arguments, got {len(args)}", caller_origin())
    return args

