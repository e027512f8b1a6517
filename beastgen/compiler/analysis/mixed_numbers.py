"""Ints and floats in one variable or container of a space function's helper: refused where compiled
code can give another answer than Python.

Python keeps each value's own type; Numba gives a variable, a list, a loop over a tuple or a
function's result ONE type, and an int with a float unify to a float: ``min((k, 4.5))`` is a
float for every k (``range`` of it rejected every row), ``v = k if c else 0.5`` rounds a ``k``
past 2**53, and ``x in (2.0**53, 1.5)`` compares an int rounded. Before a helper is compiled, a
flow-insensitive pass over its code (:func:`check_mixed_numbers`) finds what kinds of value (int,
float, str, a tuple or list of kinds) each name and expression may hold in Python, then checks
every place a value that may be an int or a float ("mixed") is used: where the float compiled code
holds gives Python's answer it passes, elsewhere it is refused with one :class:`SpaceError` at the
line. Such a use is arithmetic with a float (Python converts the int as compiled code did), a truth
test (a filter's result too), ``float(...)``, a float-valued ``math`` function, and where the ints
involved are provably within +-2**53 (a float holds them exactly: constants, lengths, comparisons,
ranges of those, parameters by their interval) a comparison, ``int``/``round``/``math.floor``,
``in``, a bound term's result and ``+ - * / // %`` with another such number (compiled code's
float is then Python's result rounded once, as ``float()`` of it would be). ``min``/``max`` of an
int and a float is left to ``nestlib.int_min`` (it stops the count). So ``s = 0; for ...:
s += 0.5 * i; return s > 1`` counts. A derived value's result that may be an int or a float is
checked where the nest reads it, and so are the nest's own expressions letting a helper's integer
meet a float (:func:`check_nest_expressions`): where the integer's size is not known, the helper's
results are checked within 2**53 as they run (``nestlib.int_exact``). A generator or a sequence
yielding both is refused (its values are the loop's, one type), as is ``t = 0; for i in range(3):
t = 0.5 * i; yield t`` (the pass does not count trips).
"""
from __future__ import annotations

import ast
import copy
from types import SimpleNamespace

from ...errors import SpaceError
from ..language import nodes as L
from ..language.printer import expr_source
from ..specialize import infer_type

#: an int whose magnitude is at most 2**53 (a float holds it exactly), any int, a float, a string
SMALL, INT, FLOAT, STR, OTHER = "small int", "int", "float", "str", "other"
EXACT = 2 ** 53
_FLOAT_MATH = {"sqrt", "exp", "log", "log2", "log10", "log1p", "expm1", "sin", "cos", "tan", "asin",
               "acos", "atan", "atan2", "sinh", "cosh", "tanh", "hypot", "fabs", "pow", "fmod",
               "copysign", "degrees", "radians", "erf", "erfc", "gamma", "lgamma"}
_INT_MATH = {"floor", "ceil", "trunc", "gcd", "factorial", "isqrt", "comb", "perm", "lcm"}
_BOOL_MATH = {"isnan", "isinf", "isfinite", "isclose"}
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
_ROUNDED_ONCE = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod)  # not ** (pow rounds more)
_ORDER = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)
_CONVERSIONS = {"int", "round", "range_argument"}  # their float argument (when exact) is Python's


def _mixed(kinds) -> bool:
    return FLOAT in kinds and bool(kinds & {SMALL, INT})


def _exact(kinds) -> bool:
    """Every int among ``kinds`` is one a float holds exactly."""
    return INT not in kinds


def elements(kinds) -> frozenset:
    """What iterating over or indexing a value of ``kinds`` gives."""
    out = set()
    for kind in kinds:
        if isinstance(kind, tuple):
            out |= kind[1]
        elif kind == STR:
            out.add(STR)
        else:
            out.add(OTHER)
    return frozenset(out)


def _sequence(container: str, kinds, positions: tuple = ()) -> tuple:
    """A tuple's or a list's kind: the kinds of its elements (and of each, where known), nested at
    most three deep (deeper: opaque), so that the kinds of a loop reach a fixpoint."""
    if positions:
        return (container, _capped(kinds, 3), tuple(_capped(p, 3) for p in positions))
    return (container, _capped(kinds, 3))


def _capped(kinds, depth: int) -> frozenset:
    if depth == 0:
        return frozenset(OTHER if isinstance(k, tuple) else k for k in kinds)
    return frozenset(_sequence(k[0], _capped(k[1], depth - 1)) if isinstance(k, tuple) else k for k in kinds)


def _constant(value) -> frozenset:
    if isinstance(value, bool) or isinstance(value, int) and -EXACT <= value <= EXACT:
        return frozenset({SMALL})
    if isinstance(value, int):
        return frozenset({INT})
    if isinstance(value, float):
        return frozenset({FLOAT})
    if isinstance(value, str):
        return frozenset({STR})
    if isinstance(value, tuple):
        return frozenset({_sequence("tuple", frozenset().union(*map(_constant, value)))})
    return frozenset({OTHER})


def parameter_kinds(value_type: str, interval) -> frozenset:
    """The kinds of a helper's parameter: its item's value type (``interval``: of an int, or None)."""
    if value_type in ("int", "bool"):
        small = interval is not None and -EXACT <= interval[0] and interval[1] <= EXACT
        return frozenset({SMALL if small or value_type == "bool" else INT})
    return frozenset({{"float": FLOAT, "str": STR}.get(value_type, OTHER)})


def check_mixed_numbers(item, params: dict, constants: dict) -> frozenset:
    """Raise :class:`SpaceError` at the first use of a value that may be an int or a float in the
    helper of ``item`` where compiled code's float can differ from Python; return the kinds of
    what the helper returns (yields). ``params``: the kinds of its parameters; ``constants``: the
    module constants it reads."""
    kinds = _Kinds(params, constants)
    node = _Desugared().visit(copy.deepcopy(item.function.node))
    for _ in range(32):  # to a fixpoint: the kinds only grow, and nesting is capped
        before = dict(kinds.env)
        kinds.results = frozenset()
        for stmt in node.body:
            kinds.statement(stmt)
        if kinds.env == before:
            break
    uses = _Uses(item, kinds)
    uses.visit(node)
    results = kinds.results
    if _mixed(results) and (item.kind == "iterator" or item.kind == "bound" and not _exact(results)):
        given = [n for n in ast.walk(node) if isinstance(n, (ast.Return, ast.Yield)) and n.value is not None]
        verb = "yields" if isinstance(given[0], ast.Yield) else "returns"
        uses.refuse(given[0], f"{verb} an int on one path and a float on another (here "
                    f"{_source(given[0].value)})")
    return results


def check_nest_expressions(spec, kinds: dict, intervals: dict) -> set:
    """Raise :class:`SpaceError` where an expression of the nest lets a space function's integer
    value and a float meet in one value (``where``, ``and``/``or``, ``min``/``max``): the nest's
    compiled code makes it a float (``min(d, 2.5)`` of d = 1 is a float, and ``range`` of it
    truncated where Python's raised), Python keeps the integer; and a range bound of a helper's
    float (as ``specialize`` refuses one of an expression's). ``kinds``: what each helper gives
    (None: unknown), ``intervals``: of the int items. An integer a float holds exactly (within
    2**53, as ``fib % (c - 1)`` of c in 0..1) meets a float as it would in Python, unless a range
    bound takes the result; ``analysis.intervals`` refuses the same of integers with known
    intervals. Returns the helpers (a value's or a generator's) whose integer results meet a float
    as they are, their size unknown: those results are checked within 2**53 as they run."""
    typed, helpers = {}, set()
    for name, item in spec.items.items():  # dependency order: an expression's type from its reads'
        value_type = item.value_type
        if item.function is not None and kinds.get(name) is not None:
            given = {FLOAT if k == FLOAT else INT if k in (SMALL, INT) else OTHER for k in kinds[name]}
            value_type = {frozenset({INT}): "int", frozenset({FLOAT}): "float",  # an int or a float:
                          frozenset({INT, FLOAT}): "float"}.get(frozenset(given), "any")  # compiled, a float
        if item.function is not None and value_type == "int" or item.function is None and any(
                isinstance(n, L.Ref) and n.target in helpers for part in _parts(item) for n in L.walk(part)):
            helpers.add(name)  # an integer of a space function's, or computed from one
        if item.function is None and item.expr is not None:
            value_type = infer_type(item.expr, typed)
        typed[name] = SimpleNamespace(value_type=value_type)
    mixed = {name: given for name, given in kinds.items() if given is not None and _mixed(given)}
    checkable = {name for name, item in spec.items.items()
                 if item.function is not None and item.function.form in ("value", "generator")}
    exact: set = set()
    for item in spec.items.values():
        for part in _parts(item) if item.function is None else []:
            exact |= _check_readers(item, part, mixed, typed, checkable)
            for node in L.walk(part):
                exact |= _check_meeting(item, node, typed, helpers, _Magnitude(spec, kinds, intervals), checkable)
            if item.kind == "iterator" and item.domain[0] == "range" and infer_type(part, typed) == "float":
                raise SpaceError(f"range bounds and step of '{item.name}' must be integers: "
                                 f"{expr_source(part)} is a float (compiled code would truncate it, "
                                 "Python's range raises)", item.origin)
    return exact


def _check_readers(item, part, mixed: dict, typed: dict, checkable: set) -> set:
    """Raise at each read of a derived helper's value that may be an int or a float (compiled
    code's is a float) where that float can give another answer: only a comparison (its ints within
    2**53, checked as they run where not known: the helpers returned), or arithmetic with a float,
    gives Python's; a filter's truth test too."""
    parents = {id(child): node for node in L.walk(part) for child in node.children()}
    exact = set()
    for node in L.walk(part):
        if not (isinstance(node, L.Ref) and node.target in mixed):
            continue
        parent = parents.get(id(node))
        compared = isinstance(parent, L.Compare) and parent.op in ("<", "<=", ">", ">=", "==", "!=")
        if compared and not _exact(mixed[node.target]) and node.target in checkable:
            exact.add(node.target)
            continue
        if parent is None and item.kind == "filter" or compared and _exact(mixed[node.target]):
            continue
        if isinstance(parent, L.BinOp) and infer_type(
                parent.right if node is parent.left else parent.left, typed) == "float":
            continue
        shown = expr_source(parent if parent is not None else node)
        raise SpaceError(f"{item.kind} '{item.name}': {shown} reads {node.target}, a space function's "
                         "value that may be an int or a float: compiled code makes it a float, Python "
                         f"keeps each value's own; write float(...) in {node.target} where you mean a "
                         "float", item.origin)
    return exact


def _parts(item) -> list:
    return [p for p in (item.domain[1:] if item.kind == "iterator" else [item.expr]) if p is not None]


def _check_meeting(item, node, typed: dict, helpers: set, magnitude, checkable: set) -> set:
    """The helpers whose results to check within 2**53 where ``node`` lets one's integer meet a
    float; an error where such an integer, computed from a helper's, may pass 2**53."""
    if isinstance(node, L.IfExp):
        parts = [node.body, node.orelse]
    elif isinstance(node, L.BoolOp) or isinstance(node, L.Call) and node.func in ("min", "max"):
        parts = list(node.children())
    else:
        return set()
    types = [infer_type(part, typed) for part in parts]
    if "float" not in types:
        return set()
    from_helper = [any(isinstance(n, L.Ref) and n.target in helpers for n in L.walk(p)) for p in parts]
    exact = set()
    for t, h, part in zip(types, from_helper, parts):
        if t not in ("int", "bool", "any") or not h:
            continue
        checked = _checked_within_exact(part, magnitude, checkable)
        if checked is None:
            raise SpaceError(f"{item.kind} '{item.name}': {expr_source(node)} gives a space function's "
                             "integer or a float: compiled code makes both a float, Python keeps the "
                             "integer; write float(...) where you mean a float", item.origin)
        exact |= checked
    return exact


def _checked_within_exact(part, magnitude, checkable: set) -> set | None:
    """The helpers whose results, checked within 2**53 as they run, keep the integer ``part``
    within 2**53: none where its size is known, the helper itself where it is one's name, and
    those of each argument of a ``min``/``max`` (its result is one of them); None otherwise."""
    if magnitude.exact(part):
        return set()
    if isinstance(part, L.Ref) and part.target in checkable:
        return {part.target}
    if isinstance(part, L.Call) and part.func in ("min", "max"):
        checked = set()
        for argument in part.children():
            inner = _checked_within_exact(argument, magnitude, checkable)
            if inner is None:
                return None
            checked |= inner
        return checked
    return None


class _Magnitude:
    """A bound on the size of an integer expression of the nest (None: not known)."""

    def __init__(self, spec, kinds: dict, intervals: dict):
        self.spec, self.kinds, self.intervals = spec, kinds, intervals

    def exact(self, expr) -> bool:
        size = self(expr)
        return size is not None and size <= EXACT

    def __call__(self, expr):
        if isinstance(expr, L.Const):
            return abs(expr.value) if isinstance(expr.value, (int, bool)) else None
        if isinstance(expr, L.Ref):
            if expr.target in self.spec.constants and isinstance(self.spec.constants[expr.target], int):
                return abs(self.spec.constants[expr.target])
            interval, given = self.intervals.get(expr.target), self.kinds.get(expr.target)
            if given is not None and INT not in given and given & {SMALL}:
                return EXACT
            return None if interval is None else max(abs(interval[0]), abs(interval[1]))
        sizes = [self(child) for child in expr.children()]
        if isinstance(expr, L.BinOp) and expr.op == "%" and sizes[1] is not None:
            return sizes[1]  # |a % m| < |m|
        if None in sizes or not sizes:
            return None
        if isinstance(expr, L.BinOp) and expr.op in ("+", "-", "*", "//"):
            return sizes[0] * sizes[1] if expr.op == "*" else sizes[0] + sizes[1]
        if isinstance(expr, L.UnaryOp) and expr.op == "-" or isinstance(expr, L.Call) and expr.func in (
                "abs", "min", "max"):
            return max(sizes)
        return None


class _Kinds:
    """The kinds of each local name (the union over its assignments) and of any expression."""

    def __init__(self, params: dict, constants: dict):
        self.params, self.constants = params, constants
        self.env: dict[str, frozenset] = {}
        self.results = frozenset()  # what the function returns or yields

    def bind(self, target, kinds) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = self.env.get(target.id, frozenset()) | kinds
        elif isinstance(target, (ast.Tuple, ast.List)):
            for index, sub in enumerate(target.elts):
                self.bind(sub, self.unpacked(kinds, index))
        elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            name = target.value.id  # an element stored: the container may hold it
            containers = self.env.get(name, frozenset())
            self.env[name] = containers | {_sequence(k[0], k[1] | kinds) for k in containers
                                           if isinstance(k, tuple)}

    def unpacked(self, kinds, index: int) -> frozenset:
        exact = {k[2][index] for k in kinds if isinstance(k, tuple) and len(k) > 2 and index < len(k[2])}
        return frozenset().union(*exact) if exact else elements(kinds)

    def statement(self, stmt) -> None:
        if isinstance(stmt, ast.Assign):
            value = self(stmt.value)
            if isinstance(stmt.value, ast.Tuple):  # unpacked element by element, exactly
                value = frozenset({_sequence("tuple", elements(value), tuple(self(e) for e in stmt.value.elts))})
            for target in stmt.targets:
                self.bind(target, value)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            self.bind(stmt.target, self(stmt.value))
        elif isinstance(stmt, ast.For):
            self.bind(stmt.target, elements(self(stmt.iter)))
        elif isinstance(stmt, ast.Return) and stmt.value is not None:
            self.results |= self(stmt.value)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Yield) and stmt.value.value is not None:
            self.results |= self(stmt.value.value)
        for sub in [*getattr(stmt, "body", []), *getattr(stmt, "orelse", [])]:
            self.statement(sub)

    def __call__(self, node) -> frozenset:
        method = getattr(self, f"kind_{type(node).__name__}", None)
        return method(node) if method else frozenset({OTHER})

    def kind_Constant(self, node):
        return _constant(node.value)

    def kind_Name(self, node):
        if node.id in self.params or node.id in self.env:  # a parameter may be assigned too
            return self.params.get(node.id, frozenset()) | self.env.get(node.id, frozenset())
        return _constant(self.constants[node.id]) if node.id in self.constants else frozenset({OTHER})

    def kind_Attribute(self, node):  # math.pi, math.inf ...
        return frozenset({FLOAT})

    def kind_Tuple(self, node):
        return frozenset({_sequence("tuple", frozenset().union(*map(self, node.elts)))})

    def kind_List(self, node):
        return frozenset({_sequence("list", frozenset().union(*map(self, node.elts)))})

    def kind_Subscript(self, node):
        value = self(node.value)
        index = node.slice
        if isinstance(index, ast.Constant) and type(index.value) is int:
            return self.unpacked(value, index.value)
        return elements(value)

    def kind_IfExp(self, node):
        return self(node.body) | self(node.orelse)

    def kind_BoolOp(self, node):
        return frozenset().union(*map(self, node.values))

    def kind_Compare(self, node):
        return frozenset({SMALL})

    def kind_UnaryOp(self, node):
        if isinstance(node.op, ast.Not):
            return frozenset({SMALL})
        kinds = frozenset(k for k in self(node.operand) if not isinstance(k, tuple))
        return kinds if not isinstance(node.op, ast.Invert) else frozenset(INT if k == SMALL else k for k in kinds)

    def kind_BinOp(self, node):
        left, right = self(node.left), self(node.right)
        out = set()
        for a in left:
            for b in right:
                out |= _binary(node.op, a, b)
        return frozenset(out)

    def kind_Call(self, node):
        func, args = node.func, [self(a) for a in node.args]
        if isinstance(func, ast.Attribute):
            name = func.attr
            return frozenset({FLOAT if name in _FLOAT_MATH or name not in _INT_MATH | _BOOL_MATH
                              else SMALL if name in _BOOL_MATH else INT})
        name = func.id if isinstance(func, ast.Name) else ""
        if name in ("sequence_len", "bool"):
            return frozenset({SMALL})
        if name in ("int", "round") and len(args) == 1:
            return frozenset({INT})
        if name == "round":
            return args[0]
        if name == "float":
            return frozenset({FLOAT})
        if name == "abs":
            return args[0]
        if name == "range_argument":
            return frozenset(k for k in args[0] if k in (SMALL, INT))
        if name == "range":
            return frozenset({_sequence("range", frozenset({SMALL if all(_exact(a) for a in args) else INT}))})
        if name in ("min", "max") and len(args) >= 2:
            typed = {FLOAT if FLOAT in a else INT for a in args if a & {SMALL, INT, FLOAT}}
            return frozenset() if len(typed) > 1 else frozenset().union(*args)  # int_min stops it
        if name in ("sequence_min", "sequence_max"):
            return frozenset(k for k in elements(args[0]) if k != OTHER) if args else frozenset()
        return frozenset({OTHER})


def _binary(op, a, b) -> set:
    numbers = (SMALL, INT, FLOAT)
    if a in numbers and b in numbers:
        if isinstance(op, ast.Div) or FLOAT in (a, b):
            return {FLOAT}
        small = a == b == SMALL and isinstance(op, (ast.FloorDiv, ast.Mod))  # |a // b| <= |a|
        return {SMALL if small else INT}  # a power with a negative exponent: nestlib.int_pow stops the count
    if isinstance(a, tuple) and isinstance(b, tuple) and isinstance(op, ast.Add):
        return {_sequence(a[0], a[1] | b[1])}
    if isinstance(a, tuple) and b in (SMALL, INT) and isinstance(op, ast.Mult):
        return {_sequence(a[0], a[1])}
    return {STR} if STR in (a, b) else {OTHER}


class _AsWritten(ast.NodeTransformer):
    """A helper's code as the user wrote it (``specialize.functions.PythonBuiltins`` undone)."""

    def visit_Call(self, node):
        self.generic_visit(node)
        name = node.func.id if isinstance(node.func, ast.Name) else ""
        if name in ("sequence_min", "sequence_max", "sequence_len"):
            node.func = ast.Name(name[len("sequence_"):], ast.Load())
        if name == "range_argument":
            return node.args[0]
        if name == "float" and isinstance(node.args[0], ast.BinOp):
            node.args = [node.args[0].left]
        return node


def _source(node) -> str:
    return ast.unparse(_AsWritten().visit(copy.deepcopy(node)))


class _Desugared(ast.NodeTransformer):
    """``t op= v`` as ``t = t op v`` (so the value read and the operand are checked like others')."""

    def visit_AugAssign(self, node):
        load = ast.parse(ast.unparse(node.target), mode="eval").body
        for sub in ast.walk(load):
            ast.copy_location(sub, node)
        return ast.copy_location(ast.Assign([node.target], ast.copy_location(
            ast.BinOp(load, node.op, node.value), node)), node)


class _Uses(ast.NodeVisitor):
    """Every use of a mixed value (or of a container of ints and floats) checked."""

    def __init__(self, item, kinds: _Kinds):
        self.item, self.kinds = item, kinds
        self.parents: dict[int, ast.AST] = {}

    def visit(self, node):
        for child in ast.iter_child_nodes(node):
            self.parents[id(child)] = node
        if isinstance(node, ast.expr):
            self.check(node)
        return self.generic_visit(node)

    def refuse(self, node, what: str) -> None:
        """One error at ``node``'s line: the helper ``what`` (it does, or an expression of it)."""
        item = self.item
        raise SpaceError(f"{item.kind} '{item.name}': {what}: compiled code gives a "
                         "variable or container one type (a float where an int and a float meet), "
                         "Python keeps each value's own; write float(...) where you mean a float",
                         item.function.info.where(getattr(node, "lineno", None)))

    def check(self, node) -> None:
        if isinstance(getattr(node, "ctx", None), (ast.Store, ast.Del)):
            return  # where it is read is checked
        kinds, parent = self.kinds(node), self.parents.get(id(node))
        if any(k[0] == "list" and _mixed(k[1]) for k in kinds if isinstance(k, tuple)):
            self.refuse(node, f"{_source(node)} is a list of ints and floats")
        sequence = isinstance(parent, ast.For) and node is parent.iter or isinstance(parent, ast.Return) \
            and self.item.function.form == "sequence"
        if sequence and _mixed(elements(kinds)):
            self.refuse(node, f"{_source(node)} is a sequence of ints and floats")
        if isinstance(node, ast.Compare):
            self.check_compare(node)
        if isinstance(node, ast.Subscript) and not (isinstance(node.slice, ast.Constant)
                                                    and type(node.slice.value) is int):
            if any(isinstance(k, tuple) and _mixed(k[1]) for k in self.kinds(node.value)):
                self.refuse(node, f"{_source(node)} indexes a tuple of ints and floats")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args and \
                node.func.id in ("sequence_min", "sequence_max"):
            if _mixed(elements(self.kinds(node.args[0]))):
                self.refuse(node, f"{_source(node)} chooses among ints and floats")
        if _mixed(kinds) and not self.passes(node, kinds):
            self.refuse(node, f"{_source(node)} may be an int or a float")

    def check_compare(self, node) -> None:
        operands = [node.left, *node.comparators]
        for op, left, right in zip(node.ops, operands, operands[1:]):
            pairs = [self.kinds(left) | elements(self.kinds(right))]  # in: with each element
            if not isinstance(op, _ORDER) and _mixed(elements(self.kinds(right))):
                self.refuse(node, f"{_source(node)} looks for a value among ints and floats")
            if isinstance(op, _ORDER):  # tuples: element by element
                displays = isinstance(left, ast.Tuple) and isinstance(right, ast.Tuple) and \
                    len(left.elts) == len(right.elts)
                pairs = ([self.kinds(a) | self.kinds(b) for a, b in zip(left.elts, right.elts)] if displays
                         else [elements(self.kinds(left)) | elements(self.kinds(right))])
            if any(_mixed(both) and not _exact(both) for both in pairs):
                self.refuse(node, f"{_source(node)} compares an int past 2**53 with a float inside a container")

    def passes(self, node, kinds) -> bool:
        """Whether the use of the mixed value ``node`` gives Python's answer compiled as a float."""
        parent = self.parents.get(id(node))
        exact = _exact(kinds)
        if isinstance(parent, (ast.Assign, ast.BoolOp, ast.Expr)) or (
                isinstance(parent, ast.IfExp) and node is not parent.test):
            return True  # its value goes on: where it is read is checked
        if isinstance(parent, (ast.If, ast.While)) or isinstance(parent, ast.IfExp) and node is parent.test:
            return True  # a truth test: 0 and 0.0 alike
        if isinstance(parent, ast.UnaryOp):
            return True  # not: a truth test; - and +: the value goes on
        if isinstance(parent, ast.BinOp) and isinstance(parent.op, _ARITHMETIC):
            other = parent.right if node is parent.left else parent.left
            if self.kinds(other) == {FLOAT}:
                return True  # Python converts the int to a float, as compiled code did
            if exact and isinstance(parent.op, _ROUNDED_ONCE) and self.kinds(other) <= {SMALL, FLOAT}:
                return True  # exact operands: compiled code's float is Python's result rounded once
            return isinstance(parent.op, ast.Mult) and isinstance(other, ast.Constant) and other.value == 1
        if isinstance(parent, ast.Compare):
            return exact  # compared exactly (nestlib.cmp_*); ``in``: see check_compare
        if isinstance(parent, ast.Call):
            return self.passes_call(parent, exact)
        if isinstance(parent, ast.Return):  # a filter's: a truth test; a bound's: compared;
            kind = self.item.kind  # a derived value's: where the nest reads it (_check_readers)
            return kind in ("filter", "derived") or exact and kind == "bound"
        return False

    def passes_call(self, call, exact: bool) -> bool:
        func = call.func
        if isinstance(func, ast.Attribute):
            return func.attr in _FLOAT_MATH or exact and func.attr in ("floor", "ceil", "trunc", *_BOOL_MATH)
        name = func.id if isinstance(func, ast.Name) else ""
        if name in ("float", "bool", "abs", "min", "max"):
            return True  # min/max: its result is checked (nestlib.int_min where types differ)
        return exact and name in _CONVERSIONS - {"range_argument"}
