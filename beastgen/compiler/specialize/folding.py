"""Specialization: fix the device profile and the settings, fold every constant, and turn each
remaining variable into an :class:`~.ir.Item` of the specialized IR (expressions with
:class:`~beastgen.compiler.language.nodes.Ref` leaves, or function code with constant branches
folded away): :func:`specialize_space`, the variables resolved in dependency order by a subclass of
:class:`ExpressionFolder`.
"""
from __future__ import annotations

import ast
import math
import types

import networkx as nx  # the dependency graph (a warm count and the plan cache never specialize)

from ...devices import load_profile
from ...devices.profiles import DeviceProfile
from ...errors import SpaceError
from ..language import nodes as L
from ..language.mapper import Mapper
from ..language.printer import expr_source
from ..model import Space, Variable, expr_dependencies
from .functions import (FunctionExpression, NoExpression, OpaqueTests, PythonBuiltins,
                        RangeReturnsToTuples, body_expression, body_statements, check_compilable,
                        fold_function, free_space_names, function_form, function_globals, may_raise,
                        ranges_start_positive, ranges_unit_step)
from .ir import Item, SpaceFunction, Specialized, named_const
from .settings import resolve_settings
from .value_types import common_type, infer_type


def dependency_graph(space: Space) -> nx.DiGraph:
    """Edges ``a -> b`` when ``b`` reads ``a``. Raises on a cycle, naming it."""
    graph = nx.DiGraph()
    for name, var in space.variables.items():
        graph.add_node(name, kind=var.kind)
        for dep in raw_dependencies(var):
            graph.add_edge(dep, name)
    try:
        cycle = nx.find_cycle(graph)
    except nx.NetworkXNoCycle:
        return graph
    names = [a for a, _ in cycle] + [cycle[0][0]]
    raise SpaceError("dependency cycle: " + " -> ".join(names),
                     space.variables[cycle[0][1]].origin)


def raw_dependencies(var: Variable) -> set[str]:
    """The names a variable reads, as written (before any folding)."""
    if var.function is not None:
        return set(var.function.space_refs)
    if isinstance(var.obj, L.Iterator):
        deps = set()
        for child in var.obj.children():
            deps |= {child.name} if child.name is not None else expr_dependencies(child)
        return deps
    if var.expr is None:
        return set()
    if var.expr is not var.obj and var.expr.name is not None:  # e.g. beast.filter(flag)
        return {var.expr.name}
    return expr_dependencies(var.expr)


def specialize_space(space: Space, device=None, settings: dict | None = None) -> Specialized:
    """Fold the space for one device profile and one set of settings."""
    profile = device if isinstance(device, DeviceProfile) else load_profile(device)
    setting_values = resolve_settings(space, settings or {})
    graph = dependency_graph(space)
    folder = _Folder(space, profile, setting_values)
    for name in nx.lexicographical_topological_sort(graph, key=lambda n: _declared(space, n)):
        folder.resolve(space.variables[name])
    result = Specialized(space, profile, setting_values, folder.constants, folder.items,
                         folder.dropped_filters, folder.empty_reason)
    if not any(item.kind == "iterator" for item in folder.items.values()) and not result.empty_reason:
        hint = (f"; a Kernel Tuner script? `beastgen convert {space.path} -o space.py` writes its "
                "tune_params and restrictions as a space file" if "kernel_tuner" in (space.source or "")
                else "")
        raise SpaceError(f"space '{space.name}' has no iterator{hint}", space.path)
    return result


def _declared(space: Space, name: str) -> int:
    return list(space.variables).index(name)


class ExpressionFolder(Mapper):
    """A copy of an expression with constants folded (the values in ``constants``, the device
    profile's properties) and named variables turned into Refs."""

    def __init__(self, constants: dict, profile: DeviceProfile):
        self.constants, self.profile = constants, profile

    def fold(self, node: L.Expr, root: bool = False) -> L.Expr:
        """``node`` folded; a named node is a Ref (or its constant) unless it is the ``root``."""
        if not root and node.name is not None:
            if node.name in self.constants:
                return named_const(self.constants[node.name], node.name)
            return L.Ref(node.name)
        return self(node)

    def map_Expr(self, node):
        raise SpaceError(f"unsupported expression {type(node).__name__}", node.origin)

    def map_Const(self, node):
        return node

    def map_DeviceProperty(self, node):
        return named_const(self.profile.get(node.prop, where=node.origin), None)

    def map_BinOp(self, node):
        return self._binary(node, L.BINARY_OPS)

    def map_Compare(self, node):
        return self._binary(node, L.COMPARE_OPS)

    def _binary(self, node, ops: dict) -> L.Expr:
        left, right = self.fold(node.left), self.fold(node.right)
        new = type(node)(node.op, left, right)
        if isinstance(left, L.Const) and isinstance(right, L.Const):
            _check_folded_size(node, left.value, right.value)
            return self._compute(new, lambda: ops[node.op](left.value, right.value))
        return new

    def map_UnaryOp(self, node):
        operand = self.fold(node.operand)
        new = L.UnaryOp(node.op, operand)
        return self._compute(new, lambda: -operand.value) if isinstance(operand, L.Const) else new

    def map_Not(self, node):
        operand = self.fold(node.operand)
        new = L.Not(operand)
        return self._compute(new, lambda: not operand.value) if isinstance(operand, L.Const) else new

    def map_BoolOp(self, node):
        kept = []
        for operand in node.operands:
            folded = self.fold(operand)
            if isinstance(folded, L.Const):
                decides = (not folded.value) if node.op == "and" else bool(folded.value)
                if decides or operand is node.operands[-1]:
                    if not kept:
                        return folded
                    kept.append(folded)
                    break
                continue  # a constant that does not decide: Python moves on to the next operand
            kept.append(folded)
        return kept[0] if len(kept) == 1 else L.BoolOp(node.op, kept)

    def map_IfExp(self, node):
        test = self.fold(node.test)
        if isinstance(test, L.Const):
            return self.fold(node.body if test.value else node.orelse)
        return L.IfExp(test, self.fold(node.body), self.fold(node.orelse))

    def map_Call(self, node):
        args = [self.fold(a) for a in node.args]
        new = L.Call(node.func, args)
        if all(isinstance(a, L.Const) for a in args):
            return self._compute(new, lambda: L.CALLS[node.func](*(a.value for a in args)))
        return new

    @staticmethod
    def _compute(new: L.Expr, compute) -> L.Expr:
        try:
            value = compute()
        except Exception:  # noqa: BLE001 - e.g. a constant division by zero: decided at run time
            return new
        if isinstance(value, float) and not math.isfinite(value):
            return new
        const = L.Const(value)
        const.shown = expr_source(new)
        return const


class _Folder(ExpressionFolder):
    """Resolves variables in dependency order into constants or items (folding each expression
    with the constants resolved so far)."""

    def __init__(self, space: Space, profile: DeviceProfile, settings: dict):
        super().__init__({}, profile)
        self.space, self.settings = space, settings
        self.items: dict[str, Item] = {}
        self.dropped_filters: list[str] = []
        self.empty_reason: str | None = None

    # -- one variable ----------------------------------------------------------------------------
    def resolve(self, var: Variable) -> None:
        if var.kind == "setting":
            self.constants[var.name] = self.settings[var.name]
        elif var.kind == "device":
            self.constants[var.name] = self.profile.get(var.obj.prop, where=var.origin)
        elif var.function is not None:
            self._resolve_function(var)
        elif var.kind == "iterator":
            self._resolve_iterator_expr(var)
        else:
            self._resolve_expr(var)

    def _resolve_expr(self, var: Variable) -> None:
        own = var.expr is var.obj  # False for a filter: beast.filter(flag) reads the variable flag
        folded = self.fold(var.expr, root=own)
        if isinstance(folded, L.Const):
            self._constant(var, folded.value)
            return
        item = Item(var.name, var.kind, var.origin, self._item_deps(folded), expr=folded,
                    source_text=expr_source(var.expr, root=own))
        item.value_type = infer_type(folded, self.items)
        self.items[var.name] = item

    def _resolve_iterator_expr(self, var: Variable) -> None:
        it = var.obj
        if isinstance(it, L.RangeIterator):
            parts = [self.fold(p) for p in (it.start, it.stop, it.step)]
            domain = ("range", *parts)
            value_type = "int"
            for part in parts:
                if infer_type(part, self.items) in ("float", "str"):
                    raise SpaceError(f"range bounds and step of '{var.name}' must be integers: "
                                     f"{expr_source(part)} is not", var.origin)
            if isinstance(parts[2], L.Const) and parts[2].value == 0:  # as range() would
                self._always_raises(var, ValueError("range() arg 3 must not be zero"))
                return
        else:
            parts = [self.fold(v) for v in it.values]
            domain = ("values", *parts)
            value_type = common_type([infer_type(p, self.items) for p in parts])
            if value_type == "mixed":
                raise SpaceError(f"the values of '{var.name}' mix strings and numbers; give "
                                 "one type per iterator", var.origin)
            if value_type == "str" and not all(isinstance(p, L.Const) for p in parts):
                raise SpaceError(f"the string values of '{var.name}' must be constants (the "
                                 "enumerator stores strings as indices into them)", var.origin)
        deps = sorted(set().union(*(self._item_deps(p) for p in parts)), key=self._order)
        self.items[var.name] = Item(var.name, "iterator", var.origin, deps, domain=domain,
                                    value_type=value_type, source_text=expr_source(it, root=True))

    def _resolve_function(self, var: Variable) -> None:
        info = var.function
        node = fold_function(info, self.constant_env(), self.profile)
        params = sorted(free_space_names(node, self.space.variables), key=self._order)
        if all(p in self.constants for p in params):
            self._constant_function(var)
            return
        params = [p for p in params if p not in self.constants]
        if info.is_generator and not any(isinstance(n, ast.Yield) for n in ast.walk(node)):
            self.empty_reason = self.empty_reason or (  # its yields were in branches folded away
                f"iterator '{var.name}' ({var.origin}) yields nothing for these settings")
            return
        check_compilable(node, info)
        if self._inline_as_expression(var, node, params):
            return
        form = function_form(var.kind, node, info)
        fn = SpaceFunction(info, node, params, form, may_raise(node))
        node.name = f"{var.name}__{ {'range': 'range', 'sequence': 'values', 'generator': 'generate', 'value': 'value'}[form] }"
        node.decorator_list = []
        node.args = ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in params], kwonlyargs=[],
                                  kw_defaults=[], defaults=[])
        PythonBuiltins().visit(node)
        if form == "range":
            RangeReturnsToTuples().visit(node)
        elif form == "generator":
            OpaqueTests().visit(node)
        ast.fix_missing_locations(node)
        value_type = {"range": "int"}.get(form, "any")
        self.items[var.name] = Item(var.name, var.kind, var.origin, params, function=fn,
                                    value_type=value_type, source_text=f"{info.node.name}()",
                                    positive=form == "range" and ranges_start_positive(node),
                                    unit_step=form == "range" and ranges_unit_step(node))

    def _inline_as_expression(self, var: Variable, node: ast.FunctionDef, params: list[str]) -> bool:
        """A function that (after folding) is one ``return <expression>`` becomes an expression
        item (an iterator returning ``range(...)`` a range domain): no helper to compile, and the
        planner, sympy and the C target see through it. So does a derived value or filter whose
        body is assignments of expressions that cannot raise and ``if``/``else`` around returns
        (:func:`.functions.body_expression`). False when some construct has no expression form."""
        body = body_statements(node.body)
        returns = [i for i, s in enumerate(body) if isinstance(s, ast.Return)]
        body = body[:returns[0] + 1] if returns else body  # past the first return: unreachable
        value = body[0].value if len(body) == 1 and isinstance(body[0], ast.Return) else None
        if value is None and var.kind != "iterator":
            assigned = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
                        and isinstance(n.ctx, ast.Store)}
            value = body_expression(body, {}, assigned)
        if value is None:
            return False
        translator = FunctionExpression(self.items, self.constants, dict(var.function.constant_refs))
        try:
            if var.kind == "iterator":
                call = value
                if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                        and call.func.id == "range" and 1 <= len(call.args) <= 3 and not call.keywords):
                    return False
                parts = [translator.translate(a) for a in call.args]
                parts = ([L.Const(0)] if len(parts) == 1 else []) + parts + (
                    [L.Const(1)] if len(parts) < 3 else [])
                if any(infer_type(p, self.items) not in ("int", "bool") for p in parts):
                    return False
                self.items[var.name] = Item(var.name, "iterator", var.origin, params,
                                            domain=("range", *parts), value_type="int",
                                            source_text=f"{var.name}(): range({', '.join(expr_source(p) for p in parts)})")
                return True
            expr = translator.translate(value)
        except NoExpression:
            return False
        item = Item(var.name, var.kind, var.origin, params, expr=expr,
                    source_text=f"{var.name}(): {expr_source(expr)}")
        item.value_type = infer_type(expr, self.items)
        self.items[var.name] = item
        return True

    def _constant_function(self, var: Variable) -> None:
        """A function of constants only: run the user's own code once, in Python."""
        func = var.function.func
        env = function_globals(self.space, self.profile)
        env.update(self.constant_env())
        env.update({alias: env[target] for alias, target in var.function.aliases.items()})
        bound = types.FunctionType(func.__code__, env, func.__name__)
        try:
            value = bound()
            if var.kind == "iterator":
                value = value if isinstance(value, range) else list(value)
        except Exception as e:  # noqa: BLE001 - any error of the user's code rejects everything
            self._always_raises(var, e)
            return
        if var.kind != "iterator":
            self._constant(var, value)
            return
        if isinstance(value, range):
            domain = ("range", L.Const(value.start), L.Const(value.stop), L.Const(value.step))
            value_type = "int"
        else:
            if not value:
                self.empty_reason = f"iterator '{var.name}' has no values for these settings"
            parts = [L.Const(v) for v in value] or [L.Const(0)]
            domain, value_type = ("values", *parts), common_type([infer_type(p, {}) for p in parts])
        if value_type == "mixed":
            raise SpaceError(f"the values of '{var.name}' mix strings and numbers", var.origin)
        self.items[var.name] = Item(var.name, "iterator", var.origin, [], domain=domain,
                                    value_type=value_type, source_text=f"{var.name}()")

    def _constant(self, var: Variable, value) -> None:
        if var.kind == "iterator":
            raise SpaceError(f"iterator '{var.name}' is not an iterator", var.origin)
        if var.kind == "filter":
            if value:
                self.empty_reason = (self.empty_reason or f"filter '{var.name}' ({var.origin}) "
                                     "is always true for these settings: it rejects everything")
            else:
                self.dropped_filters.append(var.name)
            return
        self.constants[var.name] = value

    def _always_raises(self, var: Variable, error: Exception) -> None:
        if var.kind == "bound":  # a bound term that raises bounds nothing
            self.constants[var.name] = 0.0
            return
        cause = error.__cause__ or error
        self.empty_reason = self.empty_reason or (
            f"{var.kind} '{var.name}' ({var.origin}) raises {type(cause).__name__} for these "
            f"settings: every configuration is rejected")
        if var.kind == "derived":
            self.constants[var.name] = 0  # keeps later variables foldable; nothing is enumerated

    # -- helpers ---------------------------------------------------------------------------------
    def constant_env(self) -> dict:
        return dict(self.constants)

    def _order(self, name: str) -> int:
        return _declared(self.space, name)

    def _item_deps(self, expr: L.Expr) -> list[str]:
        names = {node.target for node in L.walk(expr) if isinstance(node, L.Ref)}
        return sorted(names, key=self._order)


#: the largest integer constant folding computes (bits): 9 ** 9 ** 9 would take minutes and memory,
#: and past 4,300 digits Python cannot even print the result into the generated module
MAX_FOLDED_INT_BITS = 4096


def _check_folded_size(node, left, right) -> None:
    """Refuse to fold ``left op right`` when the exact integer result is past the size limit."""
    if not all(type(v) in (int, bool) for v in (left, right)):
        return
    if node.op == "**" and right > 0 and abs(left) > 1:
        bits = (abs(left).bit_length() - 1) * right  # at least the result's bits
    elif node.op == "*":
        bits = abs(left).bit_length() + abs(right).bit_length() - 1
    else:
        return
    if bits > MAX_FOLDED_INT_BITS:
        raise SpaceError(f"{expr_source(node)} is an integer of more than {MAX_FOLDED_INT_BITS:,} bits "
                         "(the limit of constant folding); use smaller numbers or floats", node.origin)
