"""A Kernel Tuner restriction given as a Python callable: how Kernel Tuner calls it (:class:`Binding`
of its arguments to the tuning parameters), its source read back (:func:`function_node`, with the
file's line numbers), and what its names and subscripts read (:class:`Resolver`: a parameter, a
constant of the function, or a sub-expression evaluated once with the function's globals)."""
from __future__ import annotations

import ast
import builtins
import enum
import inspect
import linecache
import textwrap

from ..compiler.language import nodes as L
from ..compiler.model import is_plain_constant
from ..errors import BeastError, SpaceError, a_type, did_you_mean

HINT = "write this restriction as a string expression instead (e.g. \"block_size_x * block_size_y <= 1024\")"


class RestrictionError(SpaceError):
    """A restriction that is wrong, not merely uncompilable: it is reported, never run in Python."""


class Binding:
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


def function_node(func, context: str, origin: str):
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
                             "interactively or generated?); " + HINT, origin) from None
        try:
            tree = ast.parse(source)
        except SyntaxError:  # a lambda in the middle of a statement: try its own expression
            tree = None
        if tree is None:
            raise BeastError(f"{context}: cannot parse the source of {func.__name__}; " + HINT,
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
                         "or " + HINT, f"{filename}:{code.co_firstlineno}")
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


def single_expression(node) -> ast.expr | None:
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


def subscripted_only(node, arg: str) -> bool:
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


class Resolver:
    """Names, ``p["x"]`` / ``args[i]`` subscripts and constant sub-expressions of a converted callable."""

    def __init__(self, func, params, binding: Binding, context, where):
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
        if found and is_plain_constant(value) and not isinstance(value, tuple):
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
    return True, plain_value(value)


def plain_value(value):
    """NumPy scalars (np.int64(1024)) and enum members of a plain type (an ``IntEnum``'s) as the
    Python values they hold."""
    if type(value).__module__ == "numpy" and hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        return value.item()
    if isinstance(value, enum.Enum) and type(value.value) in (bool, int, float, str):
        return value.value
    return value


def free_value(func, name: str):
    """(found, value) of a free name of ``func``: closure cell, then globals, then builtins."""
    code = func.__code__
    if name in code.co_freevars and func.__closure__:
        try:
            return True, plain_value(func.__closure__[code.co_freevars.index(name)].cell_contents)
        except ValueError:  # an empty cell
            return False, None
    if name in func.__globals__:
        return True, plain_value(func.__globals__[name])
    builtin = func.__globals__.get("__builtins__", builtins)
    builtin = builtin if isinstance(builtin, dict) else vars(builtin)
    if name in builtin:
        return True, builtin[name]
    return False, None

