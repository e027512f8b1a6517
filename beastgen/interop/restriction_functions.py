"""A Kernel Tuner restriction function with a body (``if``, assignments, loops) as a function filter
compiled into the enumerator: its parameters read as free names, each ``return v`` made
``return not (v)`` (a filter rejects), its constants and ``math`` put in the space's module globals,
checked by the generator's own rules (:func:`check_compilable`) with file and line."""
from __future__ import annotations

import ast
import math

from ..compiler.model import FUNCTION_BUILTINS, FreeNames, FunctionInfo, is_plain_constant
from ..compiler.specialize.functions import check_compilable
from ..errors import SpaceError, a_type, did_you_mean
from .builder import SpaceBuilder
from .restriction_callables import Binding, RestrictionError, constant_value, free_value, plain_value


class _Rewrite(ast.NodeTransformer):
    """Parameters read as free names; ``return v`` becomes ``return not (v)`` (a filter rejects).

    ``renames`` maps the function's own names to what they become: an argument to its parameter,
    or, when the function assigns to it (or a local has a parameter's name), to a fresh local.
    """

    def __init__(self, func, params, renames, binding: Binding, local: set, context, filename):
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
            value = tuple(plain_value(v) for v in value)
        if found and is_plain_constant(value):
            return ast.copy_location(ast.Constant(value), node)
        return None

    def _writes(self, node):
        """A restriction compiled into the enumerator only reads: one that writes to a list, a dict
        or an object (``counter[0] += 1``) runs in Python, where the write happens."""
        if not isinstance(getattr(node, "ctx", ast.Load()), ast.Load):
            self.fail(node, f"it writes to {ast.unparse(node)}")

    def visit_Global(self, node):
        self.fail(node, f"it writes to the global {', '.join(node.names)}")

    visit_Nonlocal = visit_Global

    def visit_Subscript(self, node):
        self._writes(node)
        where = f"{self.filename}:{getattr(node, 'lineno', '?')}"
        key = self.binding.parameter(node, self.params, self.context, where)
        if key is not None:
            if not isinstance(node.ctx, ast.Load):
                self.fail(node, f"assigning to {ast.unparse(node)}")
            return ast.copy_location(ast.Name(key, ast.Load()), node)  # the parameter itself
        return self._folded(node) or self.generic_visit(node)

    def visit_Call(self, node):
        return self._folded(node) or self.generic_visit(node)

    def visit_Attribute(self, node):
        self._writes(node)
        return self._folded(node) or self.generic_visit(node)

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


def function_filter(func, node: ast.FunctionDef, filename: str, name: str, params,
                     binding: Binding, context: str, builder: SpaceBuilder):
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

