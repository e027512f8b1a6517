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

This module builds the space and converts each restriction; a callable's arguments and source are
read by :mod:`.restriction_callables`, a function with a body is compiled by
:mod:`.restriction_functions`.
"""
from __future__ import annotations

import ast
import inspect
import json
import re
import types

from ..compiler.language import nodes as L
from ..errors import BeastError, SpaceError, a_type, did_you_mean
from ..compiler.model import Space
from .builder import SpaceBuilder
from .python_restrictions import KernelTunerSpace, PythonRestriction
from .restricted import ConditionBuilder, check_values, parse
from .restriction_callables import (
    HINT,
    Binding,
    RestrictionError,
    Resolver,
    function_node,
    plain_value,
    single_expression,
    subscripted_only,
)
from .restriction_functions import function_filter

DEFAULT_BLOCK_SIZE_NAMES = ("block_size_x", "block_size_y", "block_size_z")
PATH = "<kernel_tuner>"


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
    builder.reserved.update(_global_names(restrictions))
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
            rejects = L.Compare(">", product, L.Const(plain_value(max_threads)))
            for node in (rejects, rejects.right, *_unnamed(product)):
                node.origin = origin
            builder.add_filter(rejects, origin, "block_size_over_max_threads")
    builder.source = json.dumps(described, sort_keys=True, default=repr)
    space = builder.build()
    if python_restrictions:
        space = KernelTunerSpace(space, python_restrictions, described["tune_params"])
    return space


def _global_names(restrictions) -> set[str]:
    """Every global and free name the restriction functions read (their code objects' names,
    nested ones too): no generated filter may take one."""
    names, codes = set(), []
    for restriction in restrictions:
        for item in (restriction, *(restriction if isinstance(restriction, tuple) else ())):
            if isinstance(item, types.FunctionType):
                codes.append(item.__code__)
    while codes:
        code = codes.pop()
        names.update(code.co_names, code.co_freevars)
        codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return names


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
                             + HINT, self.origin)
        try:
            expr = tests[kind]()
        except (KeyError, TypeError, SpaceError) as e:
            raise BeastError(f"{self.context}: cannot convert {kind} ({e}); " + HINT, self.origin) from None
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
                node, filename = function_node(func, self.context, self.origin)
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

    def _compile(self, func, node, filename: str, where: str, binding: Binding) -> str:
        self.origin = where  # errors and generated comments point at the user's code
        body = single_expression(node)
        resolver = Resolver(func, self.params, binding, self.context, where)
        if body is not None:
            text = ast.unparse(body)  # re-parsed, so that errors quote the expression itself
            builder = ConditionBuilder(text, self.context, where, resolver.name, self.params,
                                       resolve_subscript=resolver.subscript, constant=resolver.constant)
            self._add(builder.build(parse(text, self.context, where)))
            return f"{filename}:{func.__name__}: {text}"
        info, compiled = function_filter(func, node, filename, self.filter_name, self.params, binding,
                                          self.context, self.builder)
        self.builder.add_function_filter(self.filter_name, compiled, info, where)
        return f"{filename}:{func.__name__}: {ast.unparse(info.node)}"

    def _in_python(self, func, binding: Binding, why: str, where: str) -> str:
        """The restriction is called in Python on the candidates of the compiled ones."""
        why = why.removeprefix(f"{self.context}: ")
        self.in_python = PythonRestriction(self.filter_name, func, binding.call, self.context, where, why)
        return f"python: {self.context}: {getattr(func, '__qualname__', repr(func))}"

    def _arguments(self, func, positional, node=None) -> Binding:
        """How Kernel Tuner calls ``func``, as a :class:`Binding` of its arguments to parameters."""
        try:
            signature = inspect.signature(func)
        except (TypeError, ValueError):
            raise RestrictionError(f"{self.context}: cannot convert the callable {func!r} (a "
                                   f"{type(func).__name__}): its arguments cannot be read; "
                                   + HINT, self.origin) from None
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
            return Binding.positional(names, vararg, positional)
        if len(names) == 1 and not (vararg or kwarg or keyword_only) and (
                names[0] not in self.params or node is not None and subscripted_only(node, names[0])):
            return Binding(dict_args={names[0]}, call="dict")  # the dict of parameter values
        if isinstance(node, ast.Lambda) and not vararg and all(n in self.params for n in names + keyword_only):
            return Binding.keyword(names + keyword_only, kwarg, params)  # a lambda: names are parameters
        if not keyword_only and (len(names) == len(params) or vararg and len(names) <= len(params)):
            return Binding.positional(names, vararg, params)  # Kernel Tuner's FunctionConstraint
        if not vararg and all(n in self.params for n in names + keyword_only):
            return Binding.keyword(names + keyword_only, kwarg, params)  # check_restriction(**params)
        raise RestrictionError(f"{self.context}: cannot tell which parameters {label}"
                               f"({', '.join(names + keyword_only)}) receives: Kernel Tuner passes "
                               f"all {len(params)} parameters positionally; give it one argument "
                               "(the dict of values, read as p['name']), arguments named after the "
                               "parameters, or a (function, [parameter names]) tuple", self.origin)


def _all(tests: list) -> L.Expr:
    if not tests:
        return L.Const(True)
    return tests[0] if len(tests) == 1 else L.BoolOp("and", tests)


def _is_constraint(obj) -> bool:
    return any(cls.__module__.split(".")[0] == "constraint" and cls.__name__ == "Constraint"
               for cls in type(obj).__mro__)
