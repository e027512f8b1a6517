"""The space model: loading a space file into named settings, device properties, iterators,
derived values and filters, with the dependencies of each read from expressions and function code.
"""
from __future__ import annotations

import ast
import builtins
import hashlib
import math
import os
import types
from dataclasses import dataclass, field

from .language import nodes as L
from ..errors import SpaceError, did_you_mean, display_path

#: builtins a space function may call; everything else must be a space name or a constant
FUNCTION_BUILTINS = frozenset({"range", "min", "max", "abs", "len", "int", "float", "bool", "round",
                               "True", "False", "None"})
#: names the generated module uses for itself
RESERVED_NAMES = frozenset({"math", "np", "numba", "count", "stats", "beast"})

KINDS = ("setting", "device", "iterator", "derived", "filter", "bound")


@dataclass
class FunctionInfo:
    """A space function (iterator, derived value or filter) and what its code refers to."""

    func: types.FunctionType
    node: ast.FunctionDef
    filename: str
    space_refs: dict[str, int] = field(default_factory=dict)  # space name -> first line used
    device_refs: dict[str, int] = field(default_factory=dict)  # beast.device.X -> first line
    constant_refs: dict[str, object] = field(default_factory=dict)  # module-level constants used
    aliases: dict[str, str] = field(default_factory=dict)  # module-level alias -> space name
    is_generator: bool = False

    def where(self, lineno: int | None = None) -> str:
        return f"{self.filename}:{lineno or self.node.lineno}"


@dataclass
class Variable:
    """A named object of the space."""

    name: str
    kind: str  # one of KINDS
    obj: object  # the language object (Setting, Iterator, Expr, Filter, ...)
    origin: str | None
    function: FunctionInfo | None = None

    @property
    def expr(self) -> L.Expr | None:
        """The expression defining this variable, when it is written as one."""
        if isinstance(self.obj, L.Filter):
            return self.obj.expr
        if isinstance(self.obj, (L.FunctionIterator, L.Derived)):
            return None
        return self.obj if isinstance(self.obj, L.Expr) else None


class Space:
    """A loaded space: its variables by kind, in declaration order (the compiler's input:
    :class:`beastgen.compiler.runtime.Space` adds ``specialize()``)."""

    def __init__(self, name: str, path: str, source: str, variables: dict[str, Variable],
                 module_globals: dict):
        self.name = name
        self.path = path
        self.source = source
        self.source_hash = hashlib.sha256(source.encode()).hexdigest()[:16]
        self.variables = variables
        self.module_globals = module_globals

    def of_kind(self, kind: str) -> dict[str, Variable]:
        return {n: v for n, v in self.variables.items() if v.kind == kind}

    @property
    def settings(self): return self.of_kind("setting")
    @property
    def iterators(self): return self.of_kind("iterator")
    @property
    def derived(self): return self.of_kind("derived")
    @property
    def filters(self): return self.of_kind("filter")
    @property
    def bounds(self): return self.of_kind("bound")

    def __repr__(self):
        counts = ", ".join(f"{len(self.of_kind(k))} {k}s" for k in KINDS if self.of_kind(k))
        return f"<Space {self.name!r} from {self.path}: {counts}>"


# --------------------------------------------------------------------------------------------------
def load(path: str | os.PathLike) -> Space:
    """Execute a Python space file and collect its space. Errors name the file and line."""
    path = display_path(os.fspath(path))
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
    except OSError as e:
        raise SpaceError(f"cannot read space file: {e.strerror}", path) from None
    except UnicodeDecodeError as e:
        raise SpaceError(f"not a UTF-8 text file (byte {e.start})", path) from None
    try:
        code = compile(source, path, "exec")
        tree = ast.parse(source, path)
    except SyntaxError as e:
        raise SpaceError(f"syntax error: {e.msg}", f"{path}:{e.lineno}") from None

    name = os.path.splitext(os.path.basename(path))[0]
    module = types.ModuleType(f"beastgen_space_{name}")
    module.__file__ = path
    try:
        exec(code, module.__dict__)
    except SpaceError:
        raise
    except NameError as e:
        names = [n for n in module.__dict__ if not n.startswith("__")]
        raise SpaceError(f"undefined name '{e.name}'" + did_you_mean(e.name, names),
                         _user_traceback_origin(e, path)) from None
    except Exception as e:  # the user's module failed while executing: point at its line
        raise SpaceError(f"{type(e).__name__}: {e}", _user_traceback_origin(e, path)) from None
    return _collect(name, path, source, tree, module.__dict__)


def imported_module_names(source: str | bytes, path: str) -> set[str]:
    """Top-level names of the modules a Python file imports (absolute imports), read without
    running it; empty when it does not parse (loading the file reports that, with its line)."""
    try:
        tree = ast.parse(source, path)
    except (SyntaxError, ValueError):
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def _user_traceback_origin(exc: BaseException, path: str) -> str:
    tb, where = exc.__traceback__, path
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == path:
            where = f"{path}:{tb.tb_lineno}"
        tb = tb.tb_next
    return where


def _kind_of(obj) -> str | None:
    if isinstance(obj, L.Setting):
        return "setting"
    if isinstance(obj, L.DeviceProperty):
        return "device"
    if isinstance(obj, L.Iterator):
        return "iterator"
    if isinstance(obj, L.Bound):
        return "bound"
    if isinstance(obj, L.Filter):
        return "filter"
    if isinstance(obj, (L.Derived, L.Expr)):
        return "derived"
    return None


def _collect(name, path, source, tree, module_globals) -> Space:
    variables: dict[str, Variable] = {}
    for var_name, obj in module_globals.items():
        kind = _kind_of(obj)
        if kind is None or var_name.startswith("__"):
            continue
        if getattr(obj, "name", None) is not None:  # an alias of an object already named
            continue
        if var_name in RESERVED_NAMES or var_name.startswith("_") or "__" in var_name:
            raise SpaceError(f"'{var_name}' is reserved by beastgen (as are names starting with '_' "
                             "or containing '__'); choose another name", obj.origin)
        obj.name = var_name
        variables[var_name] = Variable(var_name, kind, obj, obj.origin)

    functions = {n.lineno: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    for var in variables.values():
        func = var.obj.func if isinstance(var.obj, (L.FunctionIterator, L.Derived, L.Filter)) else None
        if func is not None:
            var.function = _analyze_function(func, functions, path, module_globals, variables)

    check_expressions(variables)
    ordered = dict(sorted(variables.items(), key=lambda kv: _line_of(kv[1].origin)))
    return Space(name, path, source, ordered, module_globals)


def _line_of(origin: str | None) -> int:
    try:
        return int(origin.rsplit(":", 1)[1]) if origin else 0
    except ValueError:
        return 0


def check_expressions(variables: dict[str, Variable]) -> None:
    """Every expression must only refer to named or inline space objects, and ranges be well formed."""
    checked: set[int] = set()  # ids of nodes checked with all below them (the variables hold them)
    for var in variables.values():
        if var.expr is None:
            continue
        stack = [var.expr]
        while stack:  # walk_expr(var.expr, stop_at_named=False) without walking again what a
            node = stack.pop()  # named value read by many expressions holds
            if id(node) in checked:
                continue
            checked.add(id(node))
            stack.extend(node.children())
            if isinstance(node, L.RangeIterator) and node is not var.obj and node.name is None:
                raise SpaceError("an iterator must be bound to a name of its own", node.origin)
            if isinstance(node, L.RangeIterator) and isinstance(node.step, L.Const):
                step = node.step.value
                if isinstance(step, bool) or not isinstance(step, int):
                    raise SpaceError(f"range step must be an integer, not {step!r}", node.origin)
                if step == 0:
                    raise SpaceError("range step must not be zero", node.origin)
            if isinstance(node, L.RangeIterator):
                for part in (node.start, node.stop):
                    if isinstance(part, L.Const) and not isinstance(part.value, int):
                        raise SpaceError(f"range bounds must be integers, not {part.value!r}",
                                         node.origin)


def walk_expr(expr: L.Expr, stop_at_named: bool = True):
    """All nodes of an expression; with ``stop_at_named`` the named sub-expressions are leaves."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        if stop_at_named and node is not expr and node.name is not None:
            continue
        stack.extend(node.children())


def expr_dependencies(expr: L.Expr) -> set[str]:
    """Names of the named objects an expression refers to directly."""
    deps = set()
    for node in walk_expr(expr):
        if node is not expr and node.name is not None:
            deps.add(node.name)
    return deps


# --------------------------------------------------------------------------------------------------
# Function analysis
# --------------------------------------------------------------------------------------------------
class FreeNames(ast.NodeVisitor):
    """Collects the names a function body reads without assigning them itself."""

    def __init__(self, params):
        self.assigned = set(params)
        self.loads: dict[str, int] = {}
        self.device_refs: dict[str, int] = {}
        self.is_generator = False

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Store):
            self.assigned.add(node.id)
        elif node.id not in self.loads:
            self.loads[node.id] = node.lineno

    def visit_Attribute(self, node):
        value = node.value
        if (isinstance(value, ast.Attribute) and value.attr == "device"
                and isinstance(value.value, ast.Name)):
            self.device_refs.setdefault(node.attr, node.lineno)
            self.loads.setdefault(value.value.id, node.lineno)
            return
        self.generic_visit(node)

    def visit_Yield(self, node):
        self.is_generator = True
        self.generic_visit(node)

    visit_YieldFrom = visit_Yield


def _analyze_function(func, functions, path, module_globals, variables) -> FunctionInfo:
    node = functions.get(func.__code__.co_firstlineno)
    if node is None or node.name != func.__name__:
        node = next((n for n in functions.values() if n.name == func.__name__), None)
    if node is None or func.__code__.co_filename != path:
        raise SpaceError(f"space function '{func.__name__}' must be defined at the top level of "
                         "the space file", _function_where(func))
    if node.args.args or node.args.vararg or node.args.kwonlyargs or node.args.kwarg:
        raise SpaceError(f"space function '{node.name}' must take no parameters: it reads other "
                         "space names directly", f"{path}:{node.lineno}")
    visitor = FreeNames([])
    for stmt in node.body:
        visitor.visit(stmt)
    info = FunctionInfo(func, node, path, is_generator=visitor.is_generator,
                        device_refs=visitor.device_refs)
    for name, lineno in visitor.loads.items():
        if name in visitor.assigned:
            continue
        if name in variables:
            info.space_refs[name] = lineno
            continue
        if name in module_globals:
            value = module_globals[name]
            target = getattr(value, "name", None)
            if _kind_of(value) is not None and target in variables:  # an alias
                info.space_refs[target] = lineno
                info.aliases[name] = target
            elif value is L or getattr(value, "__name__", None) == "beastgen":
                continue  # beast.device.X, collected above
            elif value is math:
                continue
            elif is_plain_constant(value):
                info.constant_refs[name] = value
            else:
                raise SpaceError(f"'{name}' in space function '{node.name}' is a "
                                 f"{type(value).__name__}; a space function may only use space "
                                 "names, constants, math and the builtins "
                                 + ", ".join(sorted(FUNCTION_BUILTINS - {'True', 'False', 'None'})),
                                 f"{path}:{lineno}")
            continue
        if name in FUNCTION_BUILTINS:
            continue
        if hasattr(builtins, name):
            raise SpaceError(f"space function '{node.name}' calls the builtin '{name}', which the "
                             "generator cannot compile", f"{path}:{lineno}")
        raise SpaceError(f"undefined name '{name}' in space function '{node.name}'"
                         + did_you_mean(name, variables), f"{path}:{lineno}")
    return info


def is_plain_constant(value) -> bool:
    """An int, float, str or bool (exactly: a subclass could print itself as any source), or a
    tuple of them."""
    plain = (int, float, str, bool)
    return type(value) in plain or (type(value) is tuple and all(type(v) in plain for v in value))


def _function_where(func) -> str:
    return f"{func.__code__.co_filename}:{func.__code__.co_firstlineno}"
