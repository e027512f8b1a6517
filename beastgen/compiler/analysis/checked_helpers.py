"""The 64-bit integers of space functions compiled as helpers: every integer a helper computes is
Python's exact integer, or the count stops with an error naming the operation and its line.

A space function that is not inlined as an expression (a loop, a generator: see
``specialize._inline_as_expression``) becomes a Numba helper, called inside ``try/except`` in the
nest, where anything it raises rejects the configuration. Numba's integers are 64 bits wide and wrap
(or, converting a float past them, are undefined: LLVM may fold a whole count to 0), where Python's
are exact. Proving a loop's values in range needs the loop's trip counts and a fixpoint over its
locals; instead each integer operation (``+ - * // % ** << >>``, unary ``-``, ``abs``,
``math.gcd``) and each float-to-int conversion (``int``, ``round``, ``math.floor/ceil/trunc``) is
rewritten into a checked
call (``nestlib.int_*``), so that no helper can go wrong silently, whatever its loops do. A checked
call gives Python's result wherever 64 bits hold it (at the cost of a compare per operation) and
otherwise raises; to tell that raise from the function's own errors (which reject, as in Python),
the nest runs the helper again on the same arguments with a ``left`` array in which the checked
call writes where it happened (``<helper>__left``), and when that is set it stops the count with
the error (``<helper>__raise``). A range of ``range(a, b)`` whose length Numba would compute past
64 bits is such an error too (``nestlib.int_span``); an integer constant past 64 bits (Numba would
make it unsigned, or a float) is refused before compiling.

What such a function returns or yields is not analysed either, so the integer ``+ - * ** //``,
unary ``-`` and ``abs`` of an expression on it (a filter ``g * y * 2 < 5`` on a generator's values,
an iterator's ``range(d * 4, ...)``; ``%`` needs no check: compiled code gives Python's 0 for
``-2**63 % -1``), whose interval ``analysis.intervals`` cannot know, become calls of checked site
functions (:class:`CheckedExpression`), which stop the count the same way; and its comparisons with
a float become ``nestlib.cmp_*``, exact as Python's.
"""
from __future__ import annotations

import ast
import copy
from dataclasses import dataclass

from ...errors import SpaceError
from ...quoting import comment_text
from ..language import nodes as L
from ..language.identity import IdentityMapper
from ..language.printer import expr_source
from ..specialize import Item, Specialized
from .intervals import unproven_integer_operations
from .mixed_numbers import INT, check_mixed_numbers, check_nest_expressions, elements, parameter_kinds

_BINARY = {ast.Add: "int_add", ast.Sub: "int_sub", ast.Mult: "int_mul", ast.FloorDiv: "int_floordiv",
           ast.Mod: "int_mod", ast.Pow: "int_pow", ast.LShift: "int_lshift", ast.RShift: "int_rshift",
           ast.Div: "int_truediv"}
_COMPARE = {ast.Lt: "cmp_lt", ast.LtE: "cmp_le", ast.Gt: "cmp_gt", ast.GtE: "cmp_ge", ast.Eq: "cmp_eq",
            ast.NotEq: "cmp_ne"}
_BUILTINS = {"int": "int_of", "round": "int_round", "abs": "int_abs"}
_MATH = {"floor": "int_floor", "ceil": "int_ceil", "trunc": "int_trunc", "gcd": "int_gcd"}
#: the checked functions the generated module imports from nestlib
_CHOICES = {"min": "int_min", "max": "int_max"}  # of two or more arguments: one type, as in Python
NESTLIB_NAMES = sorted({*_BINARY.values(), *_BUILTINS.values(), *_MATH.values(), *_COMPARE.values(),
                        *_CHOICES.values(), "int_neg", "int_span", "int_dividend", "int_exact"})


@dataclass
class CheckedHelper:
    """A space function's helper with its integer operations checked (see the module docstring)."""

    item: Item
    node: ast.FunctionDef  # the helper: the space function's, each integer operation a checked call
    sites: list[tuple[str, str, str]]  # each checked call's function, source, file:line; from 1
    left_name: str  # the helper's parameter for the array where it writes where it left 64 bits

    @property
    def left(self) -> str:
        """The call giving where the helper left the 64-bit integers (0: it did not)."""
        fn = self.item.function
        return f"{fn.name}__left({', '.join(fn.params)})"

    def raising(self, code: str) -> str:
        """The call that stops the count for ``code``, a value of :attr:`left`."""
        return f"{self.item.function.name}__raise({code})"

    def lines(self, njit: str, njit_generator: str) -> list[str]:
        """The helper's source, then its ``__left`` and ``__raise`` functions (``njit``,
        ``njit_generator``: the decorator lines of functions and of generators)."""
        generator = self.item.function.form == "generator"
        lines = [njit_generator if generator else njit, *ast.unparse(self.node).splitlines(), "", ""]
        if self.sites:
            lines += _left_function(self, njit) + _raise_function(self, njit)
        return lines


def checked_helpers(spec: Specialized, intervals: dict) -> dict[str, CheckedHelper]:
    """Each helper's checked form, by item name; an error where one mixes ints and floats as
    compiled code cannot (:mod:`.mixed_numbers`; ``intervals``: of the int items). A helper whose
    integer value meets a float in the nest has its results checked within 2**53 (``int_exact``)."""
    kinds = {}  # what each helper gives, for the helpers and the nest reading it
    for item in spec.items.values():  # dependency order
        if item.function is None:
            continue
        fn = item.function
        params = {p: kinds.get(p) or parameter_kinds(spec.items[p].value_type, intervals.get(p))
                  for p in fn.params}
        given = check_mixed_numbers(item, params, fn.info.constant_refs)
        kinds[item.name] = {"range": frozenset({INT}), "sequence": elements(given)}.get(fn.form, given) or None
    exact = check_nest_expressions(spec, kinds, intervals)
    return {item.name: _checked(item, item.name in exact) for item in spec.items.values()
            if item.function is not None}


def _checked(item: Item, exact: bool = False) -> CheckedHelper:
    fn = item.function
    node = copy.deepcopy(fn.node)
    names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | set(fn.params)
    left = next(name for name in ("_left", "_left64", "_left_64_bits") if name not in names)
    rewriter = _Rewriter(item, left, exact)
    node = rewriter.visit(node)
    node.args.args.append(ast.arg(left))
    node.args.defaults = [ast.Constant(None)]
    ast.fix_missing_locations(node)
    return CheckedHelper(item, node, rewriter.sites, left)


def _left_function(helper: CheckedHelper, decorator: str) -> list[str]:
    fn, left = helper.item.function, helper.left_name
    args = ", ".join([*fn.params, left])
    run = ([f"for {left}_value in {fn.name}({args}):", "    pass"] if fn.form == "generator"
           else [f"{fn.name}({args})"])
    return [decorator, f"def {fn.name}__left({', '.join(fn.params)}):",
            f'    """Where {fn.name} left the 64-bit integers, when it raised (0: an error of its own, '
            'which rejects)."""',
            f"    {left} = np.zeros(1, np.int64)", "    try:", *(f"        {line}" for line in run),
            "    except Exception:", "        pass", f"    return {left}[0]", "", ""]


def _raise_function(helper: CheckedHelper, decorator: str) -> list[str]:
    item = helper.item
    lines = [decorator, f"def {item.function.name}__raise(left):",
             f'    """Stop the count: {item.function.name} computed an integer that Python holds '
             'exactly and 64 bits do not."""']
    for index, (function, source, where) in enumerate(helper.sites, start=1):
        cases = [(index, "gives an integer past the 64 bits compiled code holds, where Python's "
                  "integers are exact; bound its operands (min, max) or compute it in floating point")]
        if function == "int_truediv":
            cases = [(index, "divides an integer that no float holds exactly (past 2**53): Python "
                      "rounds the exact quotient once, compiled code each operand first; write "
                      "float(...) / ... to round as compiled code does")]
        if function == "int_exact":
            cases = [(index, "gives an integer past 2**53 that meets a float in the nest (where, min, max, "
                      "a comparison): Python keeps it exact, compiled code rounds it to a float; bound it "
                      "or write float(...)")]
        if function in _CHOICES.values():
            cases = [(-index, "chooses between an integer and a float: Python's result keeps the type "
                      "of the argument it picks, compiled code makes every result a float; convert "
                      "the arguments alike (float(...) or int(...))")]
        if function == "int_pow":
            cases.append((-index, "raises an integer to a negative power (a float in Python, an "
                          "integer in compiled code; write float(...) ** ...) or a negative number to "
                          "a fractional power (a complex number in Python, none in compiled code)"))
        for code, what in cases:
            message = f"{item.kind} '{item.name}': {source} {what}"
            lines += [f"    if left == {code}:", f"        raise SpaceError({message!r}, {where!r})"]
    return lines + ["", ""]


@dataclass
class CheckedExpression:
    """An item whose expression (or an iterator's domain) computes with a space function's value
    (its interval unknown): each such integer operation is a call of a checked site function,
    ``<item>__int<k>``, which stops the count with an error naming it where Python's integer leaves
    64 bits."""

    item: Item
    items: dict  # the specialized items (the names a diagnosis takes as parameters)
    rewritten: dict  # id of the expression (or domain part) -> (it, it with its sites called)
    sites: list[tuple[str, str, str, int]]  # each site's function, operation, source, operand count

    def expression(self, expr: L.Expr) -> L.Expr:
        """``expr``, with its sites called where it is the item's expression or a domain part."""
        return self.rewritten.get(id(expr), (expr, expr))[1]

    def left(self, expr: L.Expr) -> str:
        """The call that evaluates ``expr`` again, after it raised inside ``try`` (a division there
        is conditional), giving which site left the 64-bit integers (0: none, its own error)."""
        return f"{self.item.name}__left{self._part(expr)}({', '.join(self._params(expr))})"

    def raising(self, code: str) -> str:
        """The call that stops the count for ``code``, a value of :meth:`left`."""
        return f"{self.item.name}__raise({code})"

    def _part(self, expr: L.Expr) -> int:
        return list(self.rewritten).index(id(expr)) + 1

    def _params(self, expr: L.Expr) -> list[str]:
        return sorted({n.target for n in L.walk(expr) if isinstance(n, L.Ref)} & set(self.items))

    def lines(self, njit: str, printed) -> list[str]:
        """The site functions, then for each checked part its ``__left`` function (``printed``: the
        nest's source of an expression), then the ``__raise`` function."""
        lines, item = [], self.item
        for index, (name, operation, source, arity) in enumerate(self.sites, start=1):
            operands = ", ".join("ab"[:arity])
            lines += [f"# {comment_text(source)}", njit, f"def {name}({operands}):",
                      f'    """An integer operation of {item.kind} {item.name}: Python\'s result, or the count '
                      'stops."""',
                      "    failed = False", "    try:", f"        value = {operation}({operands})",
                      "    except Exception:", "        failed = True",
                      "    if failed:  # raising in an except block is beyond Numba",
                      f"        {self.raising(str(index))}", "    return value", "", ""]
        for original, rewritten in self.rewritten.values():
            recording = _Recording({site[0]: (index, site[1]) for index, site in enumerate(self.sites, 1)})
            lines += [njit, f"def {self.left(original)}:", *_left_body(printed(recording(rewritten)))]
        lines += [njit, f"def {self.raising('left')}:",
                  f'    """Stop the count: an integer operation of {item.kind} {item.name} left 64 bits."""']
        for index, (name, operation, source, arity) in enumerate(self.sites, start=1):
            message = (f"{item.kind} '{item.name}': {source} gives an integer past the 64 bits "
                       "compiled code holds, where Python's integers are exact; bound its operands "
                       "(min, max) or compute it in floating point")
            lines += [f"    if left == {index}:", f"        raise SpaceError({message!r}, {item.origin!r})"]
        return lines + ["", ""]


def _left_body(source: str) -> list[str]:
    return ['    """Which checked operation left the 64-bit integers (0: none)."""',
            "    _left = np.zeros(1, np.int64)", "    try:", f"        {source}",
            "    except Exception:", "        pass", "    return _left[0]", "", ""]


class _Recording(IdentityMapper):
    """Each site call into its checked operation recording where it left 64 bits in ``_left``."""

    def __init__(self, sites: dict):
        self.sites = sites  # site function -> (its number, its operation)

    def map_Call(self, node):
        rebuilt = super().map_Call(node)
        if node.func not in self.sites:
            return rebuilt
        index, operation = self.sites[node.func]
        return L.Call(operation, [*rebuilt.args, L.Ref("_left"), L.Const(index)])


_SITE_OPERATIONS = {"+": "int_add", "-": "int_sub", "*": "int_mul", "**": "int_pow"}
_COMPARE_FUNCTIONS = {"<": "cmp_lt", "<=": "cmp_le", ">": "cmp_gt", ">=": "cmp_ge", "==": "cmp_eq",
                      "!=": "cmp_ne"}


def checked_expressions(spec: Specialized, known: dict) -> dict[str, CheckedExpression]:
    """The items whose expressions compute integers from a space function's value, checked."""
    checked = {}
    for item in spec.items.values():
        if item.function is not None:
            continue
        parts = item.domain[1:] if item.kind == "iterator" else [item.expr]
        rewriter, rewritten = _Sites(item), {}
        for part in (p for p in parts if p is not None):
            unproven = unproven_integer_operations(spec, known, item, part)
            if unproven:
                rewriter.unproven = {id(node) for node in unproven}
                rewritten[id(part)] = part, rewriter(part)
        if rewritten:
            checked[item.name] = CheckedExpression(item, spec.items, rewritten, rewriter.sites)
    return checked


class _Sites(IdentityMapper):
    """Each unproven integer operation into a call of its site function."""

    def __init__(self, item: Item):
        self.item, self.unproven = item, set()  # the ids of the nodes to replace
        self.sites: list[tuple[str, str, str, int]] = []

    def _site(self, original, operation: str, args: list) -> L.Call:
        name = f"{self.item.name}__int{len(self.sites) + 1}"
        self.sites.append((name, operation, expr_source(original), len(args)))
        return L.Call(name, args)

    def map_BinOp(self, node):
        rebuilt = super().map_BinOp(node)
        if id(node) not in self.unproven:
            return rebuilt
        if node.op == "//":  # the dividend checked, the division kept (its zero divisor guarded)
            dividend = self._site(node, "int_dividend", [rebuilt.left, rebuilt.right])
            return L.BinOp("//", dividend, rebuilt.right)
        return self._site(node, _SITE_OPERATIONS[node.op], [rebuilt.left, rebuilt.right])

    def map_UnaryOp(self, node):
        rebuilt = super().map_UnaryOp(node)
        return self._site(node, "int_neg", [rebuilt.operand]) if id(node) in self.unproven else rebuilt

    def map_Compare(self, node):  # no site: an exact comparison (nestlib.cmp_*) never raises
        rebuilt = super().map_Compare(node)
        if id(node) not in self.unproven:
            return rebuilt
        return L.Call(_COMPARE_FUNCTIONS[node.op], [rebuilt.left, rebuilt.right])

    def map_Call(self, node):
        rebuilt = super().map_Call(node)
        return self._site(node, "int_abs", list(rebuilt.args)) if id(node) in self.unproven else rebuilt


class _Rewriter(ast.NodeTransformer):
    """Integer operations into checked calls; ``sites``: (function, source, file:line) of each."""

    def __init__(self, item: Item, left: str, exact: bool = False):
        self.item, self.left = item, left
        self.info = item.function.info
        self.sites: list[tuple[str, str, str]] = []
        self.exact = exact  # each result (return, yield) checked within 2**53

    def visit_Return(self, node):
        original = copy.deepcopy(node.value)
        self.generic_visit(node)
        if self.exact and node.value is not None:
            node.value = self._call("int_exact", [node.value], original)
        return node

    visit_Yield = visit_Return

    def _call(self, function: str, args: list, original: ast.AST) -> ast.Call:
        self.sites.append((function, ast.unparse(original),
                           self.info.where(getattr(original, "lineno", None))))
        where = ast.Constant(len(self.sites))
        return ast.copy_location(ast.Call(ast.Name(function, ast.Load()),
                                          [*args, ast.Name(self.left, ast.Load()), where], []), original)

    def visit_Constant(self, node):
        value = node.value
        if type(value) is int and not -2 ** 63 <= value < 2 ** 63:
            raise SpaceError(f"space function '{self.info.node.name}': the integer {value} does not "
                             "fit in the 64 bits of compiled code", self.info.where(node.lineno))
        return node

    def visit_BinOp(self, node):
        original = copy.deepcopy(node)
        self.generic_visit(node)
        function = _BINARY.get(type(node.op))
        return node if function is None else self._call(function, [node.left, node.right], original)

    def visit_UnaryOp(self, node):
        original = copy.deepcopy(node)
        self.generic_visit(node)
        if not isinstance(node.op, ast.USub):
            return node
        return self._call("int_neg", [node.operand], original)

    def visit_Compare(self, node):
        """Each ``<, <=, >, >=, ==, !=`` into ``cmp_*`` (nestlib), exact between an int and a float;
        a chain ``a < b < c`` into ``a < b and b < c``, its middle operands evaluated twice at most
        (alike: a space function calls only builtins and ``math``, see ``check_compilable``)."""
        self.generic_visit(node)
        if not all(type(op) in _COMPARE for op in node.ops):
            return node
        operands = [node.left, *node.comparators]
        pairs = [ast.Call(ast.Name(_COMPARE[type(op)], ast.Load()), [a, b], [])
                 for op, a, b in zip(node.ops, operands, operands[1:])]
        return ast.copy_location(pairs[0] if len(pairs) == 1 else ast.BoolOp(ast.And(), pairs), node)

    def visit_AugAssign(self, node):
        target = copy.deepcopy(node.target)
        for sub in ast.walk(target):
            if hasattr(sub, "ctx"):
                sub.ctx = ast.Load()
        value = ast.copy_location(ast.BinOp(target, node.op, node.value), node)
        return self.visit(ast.copy_location(ast.Assign([node.target], value), node))

    def visit_Call(self, node):
        original = copy.deepcopy(node)
        self.generic_visit(node)
        func, args = node.func, node.args
        if node.keywords:
            return node
        if isinstance(func, ast.Name) and func.id in _BUILTINS and len(args) == 1:
            return self._call(_BUILTINS[func.id], args, original)
        if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                and func.value.id == "math" and func.attr in _MATH and len(args) == (2 if func.attr == "gcd" else 1)):
            return self._call(_MATH[func.attr], args, original)
        if isinstance(func, ast.Name) and func.id in _CHOICES and len(args) >= 2:
            chosen = args[0]  # pairwise, ties to the earlier argument, as Python's
            for arg in args[1:]:
                chosen = self._call(_CHOICES[func.id], [chosen, arg], original)
            return chosen
        if isinstance(func, ast.Name) and func.id == "range" and len(args) >= 2:
            span = self._call("int_span", [*args, *([ast.Constant(1)] if len(args) == 2 else [])],
                              original)
            node.args = [ast.Starred(span, ast.Load())]
        return node
