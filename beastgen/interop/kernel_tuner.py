"""Kernel Tuner spaces (``tune_params`` and ``restrictions``) as beastgen spaces.

:func:`from_kernel_tuner` accepts what Kernel Tuner's ``Searchspace`` accepts, and each restriction
(valid when true) becomes a filter ``restriction_i`` that REJECTS when it is false:

* a **string** (``"block_size_x * block_size_y <= 1024"``) is parsed by the restricted evaluator
  (:mod:`.restricted`) into a beastgen expression: it is hoisted and compiled like any expression;
* a **lambda or a function whose body is one** ``return <expression>`` is converted the same way,
  from its source (``inspect``/``linecache`` + :mod:`ast`). Kernel Tuner calls such a callable in
  one of three ways, all supported: with the dict of parameter values (``lambda p: p["x"] <= 4``:
  ``p["x"]`` reads the parameter ``x``), with keyword arguments named after the parameters
  (``def r(x, y): ...``), or, in a ``(func, ["x", "y"])`` tuple, with the listed parameters as
  positional arguments. Free names of the callable that hold ints, floats, bools or strings (a
  global ``MAX = 1024``) are read as constants; calls, attributes and subscripts that read only
  constants (``np.prod([4, 8])``, ``np.dtype("float32").itemsize``, ``defines["TILE"]``) are
  evaluated once, when the space is built; ``min``/``max``/``sum``/``all``/``any`` may take one
  literal list or tuple;
* a **function with a longer body** (``if``, assignments, loops) becomes a function filter that
  runs inside the generated nest (compiled by Numba, with the same rules as a space file's
  ``@beast.filter``: builtins ``range min max abs len int float bool round`` and ``math.*``);
* a python-constraint object (``MaxProdConstraint(1024)``, ``MinSumConstraint``, ``ExactProdConstraint``,
  ``AllDifferentConstraint``... alone or in a ``(constraint, names)`` tuple) becomes the equivalent
  expression.

Kernel Tuner calls a function positionally with the values of every parameter in ``tune_params``
order (``def r(x, y, z)``, ``def r(*args)``, ``def r(x, *rest, **kwargs)``), and a lone function of
one argument with the dict of values; a lambda's argument names are parameter names (Kernel Tuner
turns lambdas into strings). Functions whose arguments are some of the parameters by name are
called with those (Kernel Tuner's ``check_restriction``).

A callable that cannot be compiled (a ``functools.partial``, a callable object, a function whose
source cannot be read or that uses what the generator cannot compile) is not refused: it is called
in Python, the way Kernel Tuner calls it, on each configuration that the compiled restrictions let
through (:mod:`.python_restrictions`; exact, slower, with a warning that says so). A clear mistake
(an unknown parameter name, an undefined name, arguments that match no calling convention, a
restriction of an unsupported type) is a :class:`BeastError`. Strings are data and are never
evaluated in Python.

With ``max_threads``, Kernel Tuner's implicit rule is added as the filter
``block_size_over_max_threads``: the product of the block size parameters present
(``block_size_names``, by default ``block_size_x``, ``block_size_y``, ``block_size_z``) must be at
most ``max_threads``. A restriction that raises (division by zero) rejects the configuration.
"""
from __future__ import annotations

import ast
import builtins
import inspect
import json
import linecache
import math
import re
import textwrap
import types

from ..compiler.language import nodes as L
from ..compiler.specialize.functions import check_compilable
from ..errors import BeastError, SpaceError, a_type, did_you_mean
from ..compiler.model import (
    FUNCTION_BUILTINS,
    FunctionInfo,
    Space,
    FreeNames,
    is_plain_constant,
)
from .builder import SpaceBuilder
from .python_restrictions import KernelTunerSpace, PythonRestriction
from .restricted import ConditionBuilder, check_values, parse

DEFAULT_BLOCK_SIZE_NAMES = ("block_size_x", "block_size_y", "block_size_z")
PATH = "<kernel_tuner>"
_HINT = "write this restriction as a string expression instead (e.g. \"block_size_x * block_size_y <= 1024\")"


def from_kernel_tuner(tune_params: dict, restrictions=None, max_threads=None, block_size_names=None,
                      name: str = "kernel_tuner") -> Space:
    """A beastgen :class:`Space` from Kernel Tuner's ``tune_params`` and ``restrictions``.

    ``max_threads`` adds Kernel Tuner's implicit rule (product of the block size parameters at most
    ``max_threads``); ``name`` names the space (and its generated enumerator file).
    """
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", name):
        raise BeastError(f"the space name {name!r} must be letters, digits, '_', '.' or '-' (it "
                         "names the generated enumerator file)")
    if not isinstance(tune_params, dict) or not tune_params:
        raise BeastError("tune_params must be a non-empty dict of parameter name -> list of values")
    described: dict = {"tune_params": {}, "restrictions": [], "max_threads": max_threads,
                       "block_size_names": list(block_size_names) if block_size_names else None}
    builder = SpaceBuilder(name, PATH, "")
    for param, values in tune_params.items():
        origin = f"{PATH}:tune_params[{param}]"
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            raise SpaceError(f"tune_params[{param!r}] must be a list of values, not {values!r}", origin)
        values = check_values(list(values), f"tune_params[{param!r}]", origin)
        builder.add_iterator(param, values, origin)
        described["tune_params"][param] = values
    params: dict[str, L.Expr] = dict(builder.iterators)

    if restrictions is None:
        restrictions = []
    if not isinstance(restrictions, (list, tuple)):
        restrictions = [restrictions]  # as Kernel Tuner does (a lone callable gets the dict of values)
    python_restrictions: list[PythonRestriction] = []
    for index, restriction in enumerate(restrictions):
        origin = f"{PATH}:restrictions[{index}]"
        converter = _Converter(restriction, index, origin, params, builder)
        described["restrictions"].append(converter.convert())
        if converter.in_python is not None:
            python_restrictions.append(converter.in_python)

    if max_threads is not None:
        names = [n for n in (block_size_names or DEFAULT_BLOCK_SIZE_NAMES) if n in params]
        if names:
            origin = f"{PATH}:max_threads"
            product = params[names[0]]
            for other in names[1:]:
                product = L.BinOp("*", product, params[other])
            rejects = L.Compare(">", product, L.Const(_plain(max_threads)))
            for node in (rejects, rejects.right, *_unnamed(product)):
                node.origin = origin
            builder.add_filter(rejects, origin, "block_size_over_max_threads")
    builder.source = json.dumps(described, sort_keys=True, default=repr)
    space = builder.build()
    if python_restrictions:
        space = KernelTunerSpace(space, python_restrictions, described["tune_params"])
    return space


def _unnamed(expr):
    if getattr(expr, "name", None) is None:
        yield expr
        for child in expr.children():
            yield from _unnamed(child)


# --------------------------------------------------------------------------------------------------
class _Converter:
    """One Kernel Tuner restriction -> one filter of the space; returns a description (for the hash)."""

    def __init__(self, restriction, index: int, origin: str, params: dict, builder: SpaceBuilder):
        self.restriction, self.index, self.origin = restriction, index, origin
        self.params, self.builder = params, builder
        self.filter_name = builder.fresh_name(f"restriction_{index}")
        self.context = f"restrictions[{index}]"
        self.in_python: PythonRestriction | None = None  # set when it is evaluated in Python

    def convert(self) -> str:
        r = self.restriction
        if isinstance(r, str):
            return self._string(r)
        if isinstance(r, tuple) and len(r) in (2, 3) and isinstance(r[1], (list, tuple)):
            target, names = r[0], list(r[1])
            for n in names:
                if n not in self.params:
                    raise RestrictionError(f"{self.context}: {n!r} is not a tuning parameter"
                                           + did_you_mean(str(n), self.params), self.origin)
            if isinstance(target, str):
                return self._string(target)
            if _is_constraint(target):
                return self._constraint(target, names)
            if callable(target):
                return self._callable(target, positional=names)
        elif _is_constraint(r):
            return self._constraint(r, list(self.params))
        elif callable(r):
            return self._callable(r)
        raise RestrictionError(f"{self.context}: unsupported restriction {r!r} of type {type(r).__name__} "
                         "(give a string, a lambda or function, a python-constraint Constraint, or a "
                         "(function, [parameter names]) tuple)", self.origin)

    # -- strings and constraints -----------------------------------------------------------------
    def _string(self, text: str) -> str:
        # the origin (<kernel_tuner>:restrictions[i]) already names the restriction
        node = parse(text, "", self.origin)
        expr = ConditionBuilder(text, "", self.origin, self.params.get, self.params).build(node)
        self._add(expr)
        return text

    def _add(self, valid: L.Expr) -> None:
        rejects = L.Not(valid)
        rejects.origin = self.origin
        self.builder.add_filter(rejects, self.origin, self.filter_name)

    def _constraint(self, constraint, names: list[str]) -> str:
        kind = type(constraint).__name__
        if kind == "FunctionConstraint":
            return self._callable(constraint._func, positional=names)
        values = [self.params[n] for n in names]
        attrs = vars(constraint)

        def combine(op, items):
            result = items[0]
            for item in items[1:]:
                result = L.BinOp(op, result, item)
            return result

        def weighted():
            multipliers = attrs.get("_multipliers")
            if not multipliers:
                return values
            return [L.BinOp("*", L.Const(m), v) for m, v in zip(multipliers, values)]

        tests = {
            "MaxProdConstraint": lambda: L.Compare("<=", combine("*", values), L.Const(attrs["_maxprod"])),
            "MinProdConstraint": lambda: L.Compare(">=", combine("*", values), L.Const(attrs["_minprod"])),
            "ExactProdConstraint": lambda: L.Compare("==", combine("*", values), L.Const(attrs["_exactprod"])),
            "MaxSumConstraint": lambda: L.Compare("<=", combine("+", weighted()), L.Const(attrs["_maxsum"])),
            "MinSumConstraint": lambda: L.Compare(">=", combine("+", weighted()), L.Const(attrs["_minsum"])),
            "ExactSumConstraint": lambda: L.Compare("==", combine("+", weighted()), L.Const(attrs["_exactsum"])),
            "AllDifferentConstraint": lambda: _all([L.Compare("!=", a, b) for i, a in enumerate(values)
                                                    for b in values[i + 1:]]),
            "AllEqualConstraint": lambda: _all([L.Compare("==", values[0], b) for b in values[1:]]),
        }
        if kind not in tests or not values:
            raise BeastError(f"{self.context}: the python-constraint {kind} is not supported; "
                             + _HINT, self.origin)
        try:
            expr = tests[kind]()
        except (KeyError, TypeError, SpaceError) as e:
            raise BeastError(f"{self.context}: cannot convert {kind} ({e}); " + _HINT, self.origin) from None
        for node in _unnamed(expr):
            node.origin = self.origin
        self._add(expr)
        return f"{kind}({json.dumps(attrs, sort_keys=True, default=repr)}, {names})"

    # -- callables -------------------------------------------------------------------------------
    def _callable(self, func, positional: list[str] | None = None) -> str:
        node = filename = None
        if not isinstance(func, types.FunctionType):
            problem = (f"it is {a_type(func)}, not a Python function with source", self.origin)
        else:
            try:
                node, filename = _function_node(func, self.context, self.origin)
            except RestrictionError:
                raise
            except BeastError as e:
                problem = (e.message, e.where or self.origin)
        binding = self._arguments(func, positional, node)
        if node is None:
            return self._in_python(func, binding, *problem)
        where = f"{filename}:{node.lineno}"
        try:
            return self._compile(func, node, filename, where, binding)
        except RestrictionError:
            raise
        except BeastError as e:
            return self._in_python(func, binding, e.message, e.where or where)

    def _compile(self, func, node, filename: str, where: str, binding: _Binding) -> str:
        self.origin = where  # errors and generated comments point at the user's code
        body = _single_expression(node)
        resolver = _Resolver(func, self.params, binding, self.context, where)
        if body is not None:
            text = ast.unparse(body)  # re-parsed, so that errors quote the expression itself
            builder = ConditionBuilder(text, self.context, where, resolver.name, self.params,
                                       resolve_subscript=resolver.subscript, constant=resolver.constant)
            self._add(builder.build(parse(text, self.context, where)))
            return f"{filename}:{func.__name__}: {text}"
        info, compiled = _function_filter(func, node, filename, self.filter_name, self.params, binding,
                                          self.context, self.builder)
        self.builder.add_function_filter(self.filter_name, compiled, info, where)
        return f"{filename}:{func.__name__}: {ast.unparse(info.node)}"

    def _in_python(self, func, binding: _Binding, why: str, where: str) -> str:
        """The restriction is called in Python on the candidates of the compiled ones."""
        why = why.removeprefix(f"{self.context}: ")
        self.in_python = PythonRestriction(self.filter_name, func, binding.call, self.context, where, why)
        return f"python: {self.context}: {getattr(func, '__qualname__', repr(func))}"

    def _arguments(self, func, positional, node=None) -> _Binding:
        """How Kernel Tuner calls ``func``, as a :class:`_Binding` of its arguments to parameters."""
        try:
            signature = inspect.signature(func)
        except (TypeError, ValueError):
            raise RestrictionError(f"{self.context}: cannot convert the callable {func!r} (a "
                                   f"{type(func).__name__}): its arguments cannot be read; "
                                   + _HINT, self.origin) from None
        kinds = inspect.Parameter
        names = [a.name for a in signature.parameters.values()
                 if a.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)]
        vararg = next((a.name for a in signature.parameters.values() if a.kind == kinds.VAR_POSITIONAL), None)
        kwarg = next((a.name for a in signature.parameters.values() if a.kind == kinds.VAR_KEYWORD), None)
        keyword_only = [a.name for a in signature.parameters.values()
                        if a.kind == kinds.KEYWORD_ONLY and a.default is kinds.empty]
        params = list(self.params)
        label = getattr(func, "__name__", type(func).__name__)
        if positional is not None:  # (func, [names]): called with those parameters, in that order
            if keyword_only or (len(names) > len(positional) if vararg else len(names) != len(positional)):
                raise RestrictionError(f"{self.context}: {label}() takes {len(names)} positional "
                                       f"arguments but the restriction lists {len(positional)} "
                                       f"parameters {positional}", self.origin)
            return _Binding.positional(names, vararg, positional)
        if len(names) == 1 and not (vararg or kwarg or keyword_only) and (
                names[0] not in self.params or node is not None and _subscripted_only(node, names[0])):
            return _Binding(dict_args={names[0]}, call="dict")  # the dict of parameter values
        if isinstance(node, ast.Lambda) and not vararg and all(n in self.params for n in names + keyword_only):
            return _Binding.keyword(names + keyword_only, kwarg, params)  # a lambda: names are parameters
        if not keyword_only and (len(names) == len(params) or vararg and len(names) <= len(params)):
            return _Binding.positional(names, vararg, params)  # Kernel Tuner's FunctionConstraint
        if not vararg and all(n in self.params for n in names + keyword_only):
            return _Binding.keyword(names + keyword_only, kwarg, params)  # check_restriction(**params)
        raise RestrictionError(f"{self.context}: cannot tell which parameters {label}"
                               f"({', '.join(names + keyword_only)}) receives: Kernel Tuner passes "
                               f"all {len(params)} parameters positionally; give it one argument "
                               "(the dict of values, read as p['name']), arguments named after the "
                               "parameters, or a (function, [parameter names]) tuple", self.origin)


class RestrictionError(SpaceError):
    """A restriction that is wrong, not merely uncompilable: it is reported, never run in Python."""


class _Binding:
    """How a restriction function receives the parameter values: ``arg_map`` (argument ->
    parameter), ``dict_args`` (arguments holding the dict of values), ``star`` (``*args`` name and
    the parameters it holds), and ``call(values)``, the call Kernel Tuner makes."""

    def __init__(self, arg_map=None, dict_args=(), star=None, call="dict", order=()):
        self.arg_map, self.dict_args, self.star = dict(arg_map or {}), set(dict_args), star
        self.mode, self.order = call, list(order)

    @classmethod
    def positional(cls, names, vararg, params):
        star = (vararg, list(params[len(names):])) if vararg else None
        return cls(dict(zip(names, params)), star=star, call="positional", order=params)

    def parameter(self, node: ast.Subscript, params, context: str, where: str) -> str | None:
        """The parameter ``p["x"]`` (dict argument) or ``args[i]`` (``*args``) reads, or None."""
        index = node.slice
        if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub) \
                and isinstance(index.operand, ast.Constant) and type(index.operand.value) is int:
            index = ast.Constant(-index.operand.value)  # args[-1]
        if not isinstance(node.value, ast.Name) or not isinstance(index, ast.Constant):
            return None
        owner, key = node.value.id, index.value
        if owner in self.dict_args and isinstance(key, str):
            if key not in params:
                raise RestrictionError(f"{context}: {owner}[{key!r}]: no tuning parameter named "
                                       f"{key!r}" + did_you_mean(key, params), where)
            return key
        if self.star and owner == self.star[0] and type(key) is int:
            held = self.star[1]
            if not -len(held) <= key < len(held):
                raise RestrictionError(f"{context}: {owner}[{key}]: *{owner} holds {len(held)} "
                                       f"parameters {held}", where)
            return held[key]
        return None

    @classmethod
    def keyword(cls, names, kwarg, params):
        passed = list(params) if kwarg else list(names)  # **kwargs takes the other parameters
        return cls({n: n for n in names}, dict_args={kwarg} if kwarg else (), call="keyword",
                   order=passed)

    def call(self, func, values: dict):
        if self.mode == "dict":
            return func(dict(values))
        if self.mode == "positional":
            return func(*[values[p] for p in self.order])
        return func(**{p: values[p] for p in self.order})


def _all(tests: list) -> L.Expr:
    if not tests:
        return L.Const(True)
    return tests[0] if len(tests) == 1 else L.BoolOp("and", tests)


def _is_constraint(obj) -> bool:
    return any(cls.__module__.split(".")[0] == "constraint" and cls.__name__ == "Constraint"
               for cls in type(obj).__mro__)


# --------------------------------------------------------------------------------------------------
# Reading a callable's source
# --------------------------------------------------------------------------------------------------
def _function_node(func, context: str, origin: str):
    """The ``ast.Lambda`` or ``ast.FunctionDef`` of ``func``, with the file's line numbers."""
    code = func.__code__
    filename = code.co_filename
    lines = linecache.getlines(filename, func.__globals__)
    tree = None
    if lines:
        try:
            tree = ast.parse("".join(lines))
        except (SyntaxError, ValueError):
            tree = None
    if tree is None:
        try:
            source = textwrap.dedent(inspect.getsource(func))
            first = inspect.getsourcelines(func)[1]
        except (OSError, TypeError):
            raise BeastError(f"{context}: cannot read the source of {func.__name__} (defined "
                             "interactively or generated?); " + _HINT, origin) from None
        try:
            tree = ast.parse(source)
        except SyntaxError:  # a lambda in the middle of a statement: try its own expression
            tree = None
        if tree is None:
            raise BeastError(f"{context}: cannot parse the source of {func.__name__}; " + _HINT,
                             f"{filename}:{first}")
        ast.increment_lineno(tree, first - 1)
    is_lambda = func.__name__ == "<lambda>"
    candidates = []
    for node in ast.walk(tree):
        if is_lambda and isinstance(node, ast.Lambda):
            start = node.lineno
        elif not is_lambda and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.name == func.__name__:
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
        else:
            continue
        if start == code.co_firstlineno:
            candidates.append(node)
    if len(candidates) > 1:
        candidates = _disambiguate(func, candidates)
    if len(candidates) != 1:
        what = "lambdas" if is_lambda else f"functions named {func.__name__}"
        raise BeastError(f"{context}: {'no' if not candidates else 'several'} {what} found on line "
                         f"{code.co_firstlineno} of {filename}; put each restriction on its own line, "
                         "or " + _HINT, f"{filename}:{code.co_firstlineno}")
    node = candidates[0]
    if isinstance(node, ast.AsyncFunctionDef):
        raise RestrictionError(f"{context}: {func.__name__} is an async function",
                               f"{filename}:{node.lineno}")
    return node, filename


def _disambiguate(func, candidates: list) -> list:
    """Several lambdas on one line: the one whose body holds the code's first source position
    (Python 3.11+), else those with the same argument names."""
    code = func.__code__
    positions = getattr(code, "co_positions", None)
    if positions is not None:
        def span(n):
            return (n.body.lineno, n.body.col_offset), (n.body.end_lineno, n.body.end_col_offset)

        def inside(position, n):
            (start, end), (lo, hi) = position, span(n)
            return lo <= start and end <= hi

        spans = [((line, col), (end_line, end_col)) for line, end_line, col, end_col in positions()
                 if None not in (line, end_line, col, end_col)]
        spans = [s for s in spans if any(inside(s, n) for n in candidates)]  # not RESUME & co
        holding = [n for n in candidates if spans and all(inside(s, n) for s in spans)]
        if holding:  # the innermost lambda holding all of the code's positions
            return [max(holding, key=lambda n: span(n)[0])]
    argnames = list(code.co_varnames[:code.co_argcount])
    same = [n for n in candidates if [a.arg for a in n.args.posonlyargs + n.args.args] == argnames]
    return same


def _single_expression(node) -> ast.expr | None:
    """The expression of a lambda, or of a function whose body is one ``return <expression>``."""
    if isinstance(node, ast.Lambda):
        return node.body
    body = list(node.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]  # the docstring
    if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
        return body[0].value
    return None


def _subscripted_only(node, arg: str) -> bool:
    """``arg`` is only used as ``arg["name"]`` (Kernel Tuner's dict of parameter values)."""
    parents = {}
    for parent in ast.walk(node):
        for child in ast.iter_child_nodes(parent):
            parents[child] = parent
    uses = [n for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == arg]
    if not uses:
        return True
    for use in uses:
        parent = parents.get(use)
        if not (isinstance(parent, ast.Subscript) and parent.value is use
                and isinstance(parent.slice, ast.Constant) and isinstance(parent.slice.value, str)):
            return False
    return True


class _Resolver:
    """Names, ``p["x"]`` / ``args[i]`` subscripts and constant sub-expressions of a converted callable."""

    def __init__(self, func, params, binding: _Binding, context, where):
        self.func, self.params, self.binding = func, params, binding
        self.context, self.where = context, where
        self.own = set(binding.arg_map) | binding.dict_args | ({binding.star[0]} if binding.star else set())

    def name(self, name: str):
        if name in self.binding.arg_map:
            return self.params[self.binding.arg_map[name]]
        if name in self.own:
            raise SpaceError(f"{self.context}: '{name}' (the parameter values) may only be read as "
                             f"{name}[...]", self.where)
        found, value = free_value(self.func, name)
        if found and isinstance(value, (bool, int, float, str)):
            return L.Const(value)
        if found:
            raise SpaceError(f"{self.context}: '{name}' is {a_type(value)}; a converted "
                             "restriction may only read its parameters and int/float/bool/str "
                             "constants", self.where)
        raise RestrictionError(f"{self.context}: undefined name '{name}'"
                               + did_you_mean(name, self.params), self.where)

    def subscript(self, node: ast.Subscript):
        param = self.binding.parameter(node, self.params, self.context, self.where)
        return None if param is None else self.params[param]

    def constant(self, node: ast.expr):
        """(True, value) when ``node`` reads only constants of the function (evaluated now)."""
        return constant_value(self.func, node, self.own)


def constant_value(func, node: ast.expr, local: set):
    """(True, value) of a sub-expression of ``func`` that reads none of ``local`` and only free
    names holding values (``np.prod([4, 8])``, ``defines["X"]``), evaluated once with the
    function's own globals and closure, as Kernel Tuner would at each call; else (False, None)."""
    env = {}
    for sub in ast.walk(node):
        if isinstance(sub, (ast.Lambda, ast.comprehension, ast.NamedExpr)):
            return False, None  # a name of its own
        if isinstance(sub, ast.Name):
            found, value = free_value(func, sub.id)
            if sub.id in local or not found:
                return False, None
            env[sub.id] = value
    code = compile(ast.Expression(body=node), f"<{func.__name__}>", "eval")
    try:
        value = eval(code, dict(func.__globals__), env)
    except Exception:  # noqa: BLE001 - it raises at every call too: left to the caller
        return False, None
    return True, _plain(value)


def _plain(value):
    """NumPy scalars (np.int64(1024)) as the Python values they hold."""
    if type(value).__module__ == "numpy" and hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        return value.item()
    return value


def free_value(func, name: str):
    """(found, value) of a free name of ``func``: closure cell, then globals, then builtins."""
    code = func.__code__
    if name in code.co_freevars and func.__closure__:
        try:
            return True, _plain(func.__closure__[code.co_freevars.index(name)].cell_contents)
        except ValueError:  # an empty cell
            return False, None
    if name in func.__globals__:
        return True, _plain(func.__globals__[name])
    builtin = func.__globals__.get("__builtins__", builtins)
    builtin = builtin if isinstance(builtin, dict) else vars(builtin)
    if name in builtin:
        return True, builtin[name]
    return False, None


# --------------------------------------------------------------------------------------------------
# Functions with a body: compiled function filters
# --------------------------------------------------------------------------------------------------
class _Rewrite(ast.NodeTransformer):
    """Parameters read as free names; ``return v`` becomes ``return not (v)`` (a filter rejects).

    ``renames`` maps the function's own names to what they become: an argument to its parameter,
    or, when the function assigns to it (or a local has a parameter's name), to a fresh local.
    """

    def __init__(self, func, params, renames, binding: _Binding, local: set, context, filename):
        self.func, self.params, self.renames, self.binding = func, params, renames, binding
        self.local, self.context, self.filename = local, context, filename
        self.own = binding.dict_args | ({binding.star[0]} if binding.star else set())

    def fail(self, node, why):
        raise SpaceError(f"{self.context}: {why}", f"{self.filename}:{getattr(node, 'lineno', '?')}")

    def _folded(self, node):
        """A constant for a sub-expression reading only the function's constants, else None."""
        if not isinstance(getattr(node, "ctx", ast.Load()), ast.Load):
            return None
        found, value = constant_value(self.func, node, self.local)
        if found and isinstance(value, (list, tuple)):
            value = tuple(_plain(v) for v in value)
        if found and is_plain_constant(value):
            return ast.copy_location(ast.Constant(value), node)
        return None

    def visit_Subscript(self, node):
        where = f"{self.filename}:{getattr(node, 'lineno', '?')}"
        key = self.binding.parameter(node, self.params, self.context, where)
        if key is not None:
            if not isinstance(node.ctx, ast.Load):
                self.fail(node, f"assigning to {ast.unparse(node)}")
            return ast.copy_location(ast.Name(key, ast.Load()), node)  # the parameter itself
        return self._folded(node) or self.generic_visit(node)

    def visit_Call(self, node):
        return self._folded(node) or self.generic_visit(node)

    visit_Attribute = visit_Call

    def visit_Name(self, node):
        if node.id in self.own:
            self.fail(node, f"'{node.id}' (the parameter values) may only be read as {node.id}[...]")
        if node.id in self.renames:
            return ast.copy_location(ast.Name(self.renames[node.id], node.ctx), node)
        if node.id not in self.local and node.id not in FUNCTION_BUILTINS:
            found, value = free_value(self.func, node.id)
            if found and isinstance(value, list):  # a global list of constants: read as a tuple
                return self._folded(node) or node
        return node

    def visit_Return(self, node):
        self.generic_visit(node)
        if node.value is None:  # returns None: not valid, rejected
            node.value = ast.copy_location(ast.Constant(True), node)
        else:
            node.value = ast.copy_location(ast.UnaryOp(ast.Not(), node.value), node.value)
        return node

    def visit_FunctionDef(self, node):
        self.fail(node, "a nested function cannot be compiled into the enumerator")

    visit_AsyncFunctionDef = visit_Lambda = visit_FunctionDef


def _function_filter(func, node: ast.FunctionDef, filename: str, name: str, params,
                     binding: _Binding, context: str, builder: SpaceBuilder):
    """A compiled function filter for a restriction function with a body (if, assignments...)."""
    arg_map, dict_args = binding.arg_map, binding.dict_args
    own = set(dict_args) | ({binding.star[0]} if binding.star else set())
    assigned = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    for n in assigned & own:
        raise SpaceError(f"{context}: {func.__name__}() assigns to '{n}', the parameter values",
                         f"{filename}:{node.lineno}")
    used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | set(params) | set(arg_map)
    renames, prologue = {}, []
    for local in sorted(assigned & (set(arg_map) | set(params))):
        fresh = f"{local}_local"
        while fresh in used:
            fresh += "_"
        used.add(fresh)
        renames[local] = fresh
        if local in arg_map:  # an argument the function reassigns: a local starting at its value
            prologue.append(ast.copy_location(ast.Assign([ast.Name(fresh, ast.Store())],
                                                         ast.Name(arg_map[local], ast.Load())), node))
    for arg, param in arg_map.items():
        renames.setdefault(arg, param)
    local = assigned | own | set(arg_map) | set(params)
    rewrite = _Rewrite(func, params, renames, binding, local, context, filename)
    body = prologue + [rewrite.visit(stmt) for stmt in node.body]
    last = body[-1] if body else None
    if not isinstance(last, ast.Return):
        body.append(ast.copy_location(ast.Return(ast.Constant(True)), node))  # fell off: None, rejected
    fields = {"name": name, "body": body, "decorator_list": [], "returns": None, "type_comment": None,
              "args": ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                    kw_defaults=[], kwarg=None, defaults=[])}
    if "type_params" in ast.FunctionDef._fields:
        fields["type_params"] = []
    fdef = ast.copy_location(ast.FunctionDef(**fields), node)
    ast.fix_missing_locations(fdef)

    visitor = FreeNames([])
    for stmt in fdef.body:
        visitor.visit(stmt)
    info = FunctionInfo(func, fdef, filename, is_generator=visitor.is_generator)
    if visitor.is_generator:
        raise RestrictionError(f"{context}: a restriction cannot be a generator",
                               f"{filename}:{node.lineno}")
    env = builder.module_globals
    for free, lineno in visitor.loads.items():
        if free in visitor.assigned:
            continue
        if free in params:
            info.space_refs[free] = lineno
            continue
        if free in FUNCTION_BUILTINS:
            continue
        found, value = free_value(func, free)
        if found and value is math:
            env["math"] = math
            continue
        if found and is_plain_constant(value):
            if free in env and env[free] != value:
                raise SpaceError(f"{context}: the constant '{free}' has different values in "
                                 "different restrictions", f"{filename}:{lineno}")
            env[free] = value
            info.constant_refs[free] = value
            continue
        if not found:
            raise RestrictionError(f"{context}: undefined name '{free}' in {func.__name__}()"
                                   + did_you_mean(free, params), f"{filename}:{lineno}")
        raise SpaceError(f"{context}: '{free}' in {func.__name__}() is {a_type(value)}; a restriction "
                         "function compiled into the enumerator may only read its parameters, "
                         "int/float/bool/str constants, math and the builtins "
                         + ", ".join(sorted(FUNCTION_BUILTINS - {'True', 'False', 'None'})),
                         f"{filename}:{lineno}")
    check_compilable(fdef, info)  # the generator's own rules, reported now with file and line
    namespace = dict(env)
    exec(compile(ast.Module(body=[fdef], type_ignores=[]), filename, "exec"), namespace)  # noqa: S102 - the user's own function, rewritten
    compiled = namespace[name]
    info.func = compiled
    return info, compiled
