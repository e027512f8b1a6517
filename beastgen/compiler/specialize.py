"""Specialization: fix the device profile and the settings, fold every constant, and turn each
remaining variable into an :class:`Item` of a small IR (expressions with :class:`Ref` leaves, or
function code with constant branches folded away).
"""
from __future__ import annotations

import ast
import copy
import hashlib
import json
import math
import types
from dataclasses import dataclass, field

from .. import digraph

from .language import nodes as L
from .language.mapper import Mapper
from .language.printer import expr_source
from ..devices import DeviceProfile, load_profile
from ..errors import SettingError, SpaceError, a_type, did_you_mean
from .model import FUNCTION_BUILTINS, FunctionInfo, Space, Variable, expr_dependencies

_SAFE_BUILTINS = {"range": range, "min": min, "max": max, "abs": abs, "len": len, "int": int,
                  "float": float, "bool": bool, "round": round}

#: AST node types the generator can compile inside a space function
_COMPILABLE_NODES = (
    ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.If, ast.While, ast.For, ast.Break,
    ast.Continue, ast.Pass, ast.Expr, ast.Yield, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare,
    ast.IfExp, ast.Call, ast.Name, ast.Constant, ast.Tuple, ast.List, ast.Subscript, ast.Attribute,
    ast.Load, ast.Store, ast.operator, ast.unaryop, ast.boolop, ast.cmpop, ast.keyword,
)
_NODE_WORDS = {ast.Dict: "a dict", ast.Set: "a set", ast.Lambda: "a lambda", ast.ListComp:
               "a list comprehension", ast.GeneratorExp: "a generator expression", ast.DictComp:
               "a dict comprehension", ast.SetComp: "a set comprehension", ast.JoinedStr:
               "an f-string", ast.Try: "try/except", ast.With: "a with block", ast.Import:
               "an import", ast.ImportFrom: "an import", ast.Global: "global", ast.Nonlocal:
               "nonlocal", ast.FunctionDef: "a nested function", ast.ClassDef: "a class",
               ast.Raise: "raise", ast.Assert: "assert", ast.Delete: "del", ast.Starred:
               "star-unpacking", ast.NamedExpr: "the walrus operator", ast.YieldFrom: "yield from",
               ast.Slice: "a slice"}
_MATH_FUNCTIONS_THAT_CANNOT_RAISE = {"ceil", "floor", "fabs", "trunc"}


@dataclass
class SpaceFunction:
    """A space function after specialization, ready to become a compiled helper."""

    info: FunctionInfo
    node: ast.FunctionDef  # folded copy of the user's function
    params: list[str]  # the non-constant space names it reads, in declaration order
    form: str  # 'range' | 'sequence' | 'generator' (iterators), 'value' (derived values, filters)
    may_raise: bool

    @property
    def name(self) -> str:
        return self.node.name


@dataclass
class Item:
    """A variable that still varies after specialization: a loop, or something computed in one."""

    name: str
    kind: str  # 'iterator' | 'derived' | 'filter' | 'bound'
    origin: str | None
    deps: list[str]  # the items it reads directly
    expr: L.Expr | None = None  # derived/filter/bound written as an expression (IR)
    function: SpaceFunction | None = None
    domain: tuple | None = None  # iterators: ('range', start, stop, step) | ('values', exprs)
    value_type: str = "any"  # 'int' | 'float' | 'bool' | 'str' | 'any'
    source_text: str = ""  # how the user wrote it, for comments and `show`
    positive: bool = False  # every value is >= 1 (known without evaluating; used by sympy proofs)
    unit_step: bool = False  # a function range iterator whose every range() has step 1


@dataclass
class Specialized:
    space: Space
    device: DeviceProfile
    settings: dict  # every setting's value
    constants: dict  # name -> value, for settings, device properties, constant derived values
    items: dict[str, Item]  # non-constant variables, declaration order
    dropped_filters: list[str] = field(default_factory=list)  # always false for these settings
    empty_reason: str | None = None  # why the space is empty before any iteration

    @property
    def bound_terms(self) -> list[str]:
        """Every bound term (constant or not), in declaration order."""
        return [n for n, v in self.space.variables.items() if v.kind == "bound"]

    def key(self) -> str:
        """A short hash of what the generated code depends on."""
        blob = json.dumps([self.space.source_hash, self.device.fingerprint(),
                           sorted((k, repr(v)) for k, v in self.settings.items())])
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def settings_hash(self) -> str:
        blob = json.dumps(sorted((k, repr(v)) for k, v in self.settings.items()))
        return hashlib.sha256(blob.encode()).hexdigest()[:8]


class _NoExpression(Exception):
    """A function body has no expression form (it stays a compiled helper)."""


_AST_BINARY = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
               ast.Mod: "%", ast.Pow: "**"}
_AST_COMPARE = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_AST_CALLS = {"min": "min", "max": "max", "abs": "abs", "int": "int", "float": "float",
              "math.ceil": "ceil", "math.floor": "floor"}


def _statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """A function body without its ``pass`` statements and docstrings."""
    return [s for s in body if not isinstance(s, ast.Pass)
            and not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]


def _body_expression(body: list[ast.stmt], env: dict, assigned: set) -> ast.expr | None:
    """One expression (AST) with the value the statements return: each local name replaced by what
    was last assigned to it, ``if c: A`` + the rest as ``A + rest if c else else-part + rest``. None
    when the body does something else, may fall off its end, reads a local before assigning it,
    or assigns an expression that may raise (Python computes it even where it is not used; the
    expression would compute it only where it is)."""
    for index, stmt in enumerate(_statements(body)):
        if isinstance(stmt, ast.Return):
            return _substituted(stmt.value, env, assigned) if stmt.value is not None else None
        if isinstance(stmt, (ast.Assign, ast.AugAssign)):
            target = stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target
            if (isinstance(stmt, ast.Assign) and len(stmt.targets) != 1) or not isinstance(target, ast.Name):
                return None
            value = stmt.value if isinstance(stmt, ast.Assign) else ast.BinOp(
                ast.Name(target.id, ast.Load()), stmt.op, stmt.value)
            value = _substituted(value, env, assigned)
            if value is None or not _cannot_raise(value):
                return None
            env = {**env, target.id: value}
            continue
        if isinstance(stmt, ast.If):
            rest = _statements(body)[index + 1:]
            test = _substituted(stmt.test, env, assigned)
            then = _body_expression(stmt.body + rest, env, assigned)
            orelse = _body_expression(stmt.orelse + rest, env, assigned)
            if test is None or then is None or orelse is None:
                return None
            return ast.IfExp(test, then, orelse)
        return None
    return None  # falls off the end: returns None


def _substituted(node: ast.expr, env: dict, assigned: set) -> ast.expr | None:
    """``node`` with each local name replaced by its value; None if it reads one not yet assigned."""
    class Substitute(ast.NodeTransformer):
        unbound = False

        def visit_Name(self, name: ast.Name):
            if name.id in env:
                return copy.deepcopy(env[name.id])
            self.unbound |= name.id in assigned
            return name

    walker = Substitute()
    result = walker.visit(copy.deepcopy(node))
    return None if walker.unbound else result


_SAFE_BINARY = (ast.Add, ast.Sub, ast.Mult)
_SAFE_CALLS = ("min", "max", "abs")


def _cannot_raise(node: ast.expr) -> bool:
    """Whether the expression can never raise: + - * comparisons, logic, min/max/abs, and division
    or modulo by a nonzero number literal."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.BinOp) and not isinstance(sub.op, _SAFE_BINARY):
            divisor = sub.right
            if not (isinstance(sub.op, (ast.Div, ast.FloorDiv, ast.Mod)) and isinstance(divisor, ast.Constant)
                    and isinstance(divisor.value, (int, float)) and not isinstance(divisor.value, bool)
                    and divisor.value != 0):
                return False
        elif isinstance(sub, ast.Call):
            name = sub.func.id if isinstance(sub.func, ast.Name) else None
            arity = len(sub.args) == 1 if name == "abs" else len(sub.args) >= 2
            if name not in _SAFE_CALLS or sub.keywords or not arity:
                return False
        elif not isinstance(sub, (ast.BinOp, ast.Call, ast.Name, ast.Constant, ast.Compare, ast.BoolOp,
                                  ast.UnaryOp, ast.IfExp, ast.Load, ast.operator, ast.boolop,
                                  ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq,
                                  ast.USub, ast.UAdd, ast.Not)):
            return False
    return True


def _ast_to_expr(node: ast.AST, folder: "_Folder", constants: dict) -> L.Expr:
    """The expression IR of a folded function's return expression (Python semantics preserved)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool)):
        return L.Const(node.value)
    if isinstance(node, ast.Name):
        if node.id in folder.items:
            return L.Ref(node.id)
        if node.id in folder.constants:
            return _named_const(folder.constants[node.id], node.id)
        if node.id in constants and isinstance(constants[node.id], (int, float, str, bool)):
            return L.Const(constants[node.id])
        raise _NoExpression
    if isinstance(node, ast.BinOp) and type(node.op) in _AST_BINARY:
        return L.BinOp(_AST_BINARY[type(node.op)], _ast_to_expr(node.left, folder, constants),
                       _ast_to_expr(node.right, folder, constants))
    if isinstance(node, ast.UnaryOp):
        operand = _ast_to_expr(node.operand, folder, constants)
        if isinstance(node.op, ast.Not):
            return L.Not(operand)
        if isinstance(node.op, ast.USub):
            return L.UnaryOp("-", operand)
        if isinstance(node.op, ast.UAdd):
            return operand
        raise _NoExpression
    if isinstance(node, ast.BoolOp):
        return L.BoolOp("and" if isinstance(node.op, ast.And) else "or",
                        [_ast_to_expr(v, folder, constants) for v in node.values])
    if isinstance(node, ast.Compare) and all(type(op) in _AST_COMPARE for op in node.ops):
        operands = [_ast_to_expr(v, folder, constants) for v in [node.left, *node.comparators]]
        tests = [L.Compare(_AST_COMPARE[type(op)], a, b)
                 for op, a, b in zip(node.ops, operands, operands[1:])]
        return tests[0] if len(tests) == 1 else L.BoolOp("and", tests)  # a chain, as Python does
    if isinstance(node, ast.IfExp):
        return L.IfExp(_ast_to_expr(node.test, folder, constants),
                       _ast_to_expr(node.body, folder, constants),
                       _ast_to_expr(node.orelse, folder, constants))
    if isinstance(node, ast.Call) and not node.keywords:
        name = ast.unparse(node.func)
        if name in _AST_CALLS and node.args:
            return L.Call(_AST_CALLS[name], [_ast_to_expr(a, folder, constants) for a in node.args])
    raise _NoExpression


class _Raises(Exception):
    """A constant computation raised: the variable rejects every configuration."""


# --------------------------------------------------------------------------------------------------
def resolve_settings(space: Space, overrides: dict) -> dict:
    """Every setting's value: defaults, overridden (and type-converted) by ``overrides``."""
    known = space.settings
    values = {}
    for name, value in overrides.items():
        if name not in known:
            raise SettingError(f"no setting named '{name}' in space '{space.name}'"
                               + did_you_mean(name, known)
                               + (f"; settings: {', '.join(known)}" if known else "; it has none"))
    for name, var in known.items():
        setting: L.Setting = var.obj
        value = overrides.get(name, setting.default)
        value = _convert(name, value, setting.default)
        problem = setting.problem(value)
        if problem:
            raise SettingError(f"setting '{name}' = {value!r} {problem}", var.origin)
        values[name] = value
    return values


def _convert(name, value, default):
    if not isinstance(value, str) or isinstance(default, str):
        return value
    try:
        if isinstance(default, bool):
            if value.lower() in ("1", "true", "yes"):
                return True
            if value.lower() in ("0", "false", "no"):
                return False
            raise ValueError
        if isinstance(default, int):
            return int(value, 0)
        return float(value)
    except ValueError:
        raise SettingError(f"setting '{name}' expects {a_type(default)} "
                           f"(default {default!r}), got {value!r}") from None


def dependency_graph(space: Space) -> digraph.DiGraph:
    """Edges ``a -> b`` when ``b`` reads ``a``. Raises on a cycle, naming it."""
    graph = digraph.DiGraph()
    for name, var in space.variables.items():
        graph.add_node(name, kind=var.kind)
        for dep in raw_dependencies(var):
            graph.add_edge(dep, name)
    try:
        cycle = digraph.find_cycle(graph)
    except digraph.NoCycle:
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
    for name in digraph.lexicographical_topological_sort(graph, key=lambda n: _declared(space, n)):
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
                return _named_const(self.constants[node.name], node.name)
            return L.Ref(node.name)
        return self(node)

    def map_Expr(self, node):
        raise SpaceError(f"unsupported expression {type(node).__name__}", node.origin)

    def map_Const(self, node):
        return node

    def map_DeviceProperty(self, node):
        return _named_const(self.profile.get(node.prop, where=node.origin), None)

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
        const.shown = repr_source(new)
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
        try:
            folded = self.fold(var.expr, root=own)
        except _Raises as e:
            self._always_raises(var, e)
            return
        if isinstance(folded, L.Const):
            self._constant(var, folded.value)
            return
        item = Item(var.name, var.kind, var.origin, self._item_deps(folded), expr=folded,
                    source_text=repr_source(var.expr, root=own))
        item.value_type = infer_type(folded, self.items)
        self.items[var.name] = item

    def _resolve_iterator_expr(self, var: Variable) -> None:
        it = var.obj
        try:
            if isinstance(it, L.RangeIterator):
                parts = [self.fold(p) for p in (it.start, it.stop, it.step)]
                domain = ("range", *parts)
                value_type = "int"
                for part in parts:
                    if infer_type(part, self.items) in ("float", "str"):
                        raise SpaceError(f"range bounds and step of '{var.name}' must be integers: "
                                         f"{repr_source(part)} is not", var.origin)
                if isinstance(parts[2], L.Const) and parts[2].value == 0:  # as range() would
                    self._always_raises(var, ValueError("range() arg 3 must not be zero"))
                    return
            else:
                parts = [self.fold(v) for v in it.values]
                domain = ("values", *parts)
                value_type = _common_type([infer_type(p, self.items) for p in parts])
                if value_type == "mixed":
                    raise SpaceError(f"the values of '{var.name}' mix strings and numbers; give "
                                     "one type per iterator", var.origin)
                if value_type == "str" and not all(isinstance(p, L.Const) for p in parts):
                    raise SpaceError(f"the string values of '{var.name}' must be constants (the "
                                     "enumerator stores strings as indices into them)", var.origin)
        except _Raises as e:
            self._always_raises(var, e)
            return
        deps = sorted(set().union(*(self._item_deps(p) for p in parts)), key=self._order)
        self.items[var.name] = Item(var.name, "iterator", var.origin, deps, domain=domain,
                                    value_type=value_type, source_text=repr_source(it, root=True))

    def _resolve_function(self, var: Variable) -> None:
        info = var.function
        node = _fold_function(info, self.constant_env(), self.profile)
        params = sorted(_free_space_names(node, self.space.variables), key=self._order)
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
        form = _function_form(var.kind, node, info)
        fn = SpaceFunction(info, node, params, form, _may_raise(node))
        node.name = f"{var.name}__{ {'range': 'range', 'sequence': 'values', 'generator': 'generate', 'value': 'value'}[form] }"
        node.decorator_list = []
        node.args = ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in params], kwonlyargs=[],
                                  kw_defaults=[], defaults=[])
        if form == "range":
            _RangeReturnsToTuples().visit(node)
        elif form == "generator":
            _OpaqueTests().visit(node)
        ast.fix_missing_locations(node)
        value_type = {"range": "int"}.get(form, "any")
        self.items[var.name] = Item(var.name, var.kind, var.origin, params, function=fn,
                                    value_type=value_type, source_text=f"{info.node.name}()",
                                    positive=form == "range" and _ranges_start_positive(node),
                                    unit_step=form == "range" and _ranges_unit_step(node))

    def _inline_as_expression(self, var: Variable, node: ast.FunctionDef, params: list[str]) -> bool:
        """A function that (after folding) is one ``return <expression>`` becomes an expression
        item (an iterator returning ``range(...)`` a range domain): no helper to compile, and the
        planner, sympy and the C target see through it. So does a derived value or filter whose
        body is assignments of expressions that cannot raise and ``if``/``else`` around returns
        (:func:`_body_expression`). False when some construct has no expression form."""
        body = _statements(node.body)
        returns = [i for i, s in enumerate(body) if isinstance(s, ast.Return)]
        body = body[:returns[0] + 1] if returns else body  # past the first return: unreachable
        value = body[0].value if len(body) == 1 and isinstance(body[0], ast.Return) else None
        if value is None and var.kind != "iterator":
            assigned = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
                        and isinstance(n.ctx, ast.Store)}
            value = _body_expression(body, {}, assigned)
        if value is None:
            return False
        constants = dict(var.function.constant_refs)
        try:
            if var.kind == "iterator":
                call = value
                if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                        and call.func.id == "range" and 1 <= len(call.args) <= 3 and not call.keywords):
                    return False
                parts = [_ast_to_expr(a, self, constants) for a in call.args]
                parts = ([L.Const(0)] if len(parts) == 1 else []) + parts + (
                    [L.Const(1)] if len(parts) < 3 else [])
                if any(infer_type(p, self.items) not in ("int", "bool") for p in parts):
                    return False
                self.items[var.name] = Item(var.name, "iterator", var.origin, params,
                                            domain=("range", *parts), value_type="int",
                                            source_text=f"{var.name}(): range({', '.join(repr_source(p) for p in parts)})")
                return True
            expr = _ast_to_expr(value, self, constants)
        except _NoExpression:
            return False
        item = Item(var.name, var.kind, var.origin, params, expr=expr,
                    source_text=f"{var.name}(): {repr_source(expr)}")
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
            domain, value_type = ("values", *parts), _common_type([infer_type(p, {}) for p in parts])
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
        raise SpaceError(f"{repr_source(node)} is an integer of more than {MAX_FOLDED_INT_BITS:,} bits "
                         "(the limit of constant folding); use smaller numbers or floats", node.origin)


def function_globals(space: Space, profile: DeviceProfile) -> dict:
    """The globals a space function runs with in plain Python: the space module's, with the
    beastgen module replaced by a view where ``beast.device.X`` is the profile's value."""
    view = types.SimpleNamespace(device=types.SimpleNamespace(**profile.properties))
    env = dict(space.module_globals)
    for name, value in env.items():
        if isinstance(value, types.ModuleType) and value.__name__ == "beastgen":
            env[name] = view
    return env


def _named_const(value, name) -> L.Const:
    const = L.Const(value)
    const.shown = name
    return const


def repr_source(expr, root: bool = False) -> str:
    return expr_source(expr, root=root)


# --------------------------------------------------------------------------------------------------
# Types (for range checks and output columns)
# --------------------------------------------------------------------------------------------------
def _common_type(types_: list[str]) -> str:
    kinds = set(types_)
    if "any" in kinds:
        return "any"
    if "str" in kinds:
        return "str" if kinds == {"str"} else "mixed"
    if "float" in kinds:
        return "float"
    if kinds == {"bool"}:
        return "bool"
    return "int"


def infer_type(expr: L.Expr, items: dict) -> str:
    """The value type of ``expr``: int, float, bool, str, mixed or any (``items`` types the Refs)."""
    return TypeInference(items)(expr)


class TypeInference(Mapper):
    """The walk of :func:`infer_type`."""

    def __init__(self, items: dict):
        self.items = items

    def map_object(self, expr):
        return "any"

    def map_Const(self, expr):
        v = expr.value
        return "bool" if isinstance(v, bool) else type(v).__name__

    def map_Ref(self, expr):
        return self.items[expr.target].value_type if expr.target in self.items else "any"

    def map_Compare(self, expr):
        return "bool"

    map_Not = map_Compare

    def map_BinOp(self, expr):
        if expr.op == "/":
            return "float"
        t = _common_type([self(expr.left), self(expr.right)])
        return "int" if t == "bool" else t

    def map_UnaryOp(self, expr):
        t = self(expr.operand)
        return "int" if t == "bool" else t

    def map_Call(self, expr):
        if expr.func in ("ceil", "floor", "int"):
            return "int"
        if expr.func == "float":
            return "float"
        return _common_type([self(a) for a in expr.args])

    def map_IfExp(self, expr):
        return _common_type([self(expr.body), self(expr.orelse)])

    def map_BoolOp(self, expr):
        return _common_type([self(o) for o in expr.operands])


# --------------------------------------------------------------------------------------------------
# Function bodies
# --------------------------------------------------------------------------------------------------
def _fold_function(info: FunctionInfo, constants: dict, profile: DeviceProfile) -> ast.FunctionDef:
    node = copy.deepcopy(info.node)
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id in info.aliases:
            sub.id = info.aliases[sub.id]
    assigned = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    env = {k: v for k, v in constants.items() if k not in assigned}
    env.update({k: v for k, v in info.constant_refs.items() if k not in assigned})
    folded = _ConstantFolder(env, profile, info).visit(node)
    ast.fix_missing_locations(folded)
    return folded


class _ConstantFolder(ast.NodeTransformer):
    """Folds constant sub-expressions and constant branches; keeps named constants as names."""

    def __init__(self, env: dict, profile: DeviceProfile, info: FunctionInfo):
        self.env, self.profile, self.info = env, profile, info

    def const_value(self, node):
        if isinstance(node, ast.Constant):
            return True, node.value
        if isinstance(node, ast.Name) and node.id in self.env:
            return True, self.env[node.id]
        return False, None

    def _replace(self, node, value):
        if isinstance(value, (int, float, str, bool)) and not (
                isinstance(value, float) and not math.isfinite(value)):
            return ast.copy_location(ast.Constant(value), node)
        return node

    def _try_eval(self, node, operands):
        if not all(self.const_value(o)[0] for o in operands):
            return node
        try:
            env = dict(self.env)
            env["math"] = math
            value = eval(compile(ast.Expression(node), "<fold>", "eval"), {"__builtins__": _SAFE_BUILTINS}, env)  # noqa: S307 - the user's own code, constants only
        except Exception:  # noqa: BLE001 - raises at run time instead, where it rejects
            return node
        return self._replace(node, value)

    def visit_Attribute(self, node):
        value = node.value
        if (isinstance(value, ast.Attribute) and value.attr == "device"
                and isinstance(value.value, ast.Name)):
            return ast.copy_location(ast.Constant(self.profile.get(
                node.attr, where=self.info.where(node.lineno))), node)
        return self.generic_visit(node)

    def visit_BinOp(self, node):
        self.generic_visit(node)
        return self._try_eval(node, [node.left, node.right])

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        return self._try_eval(node, [node.operand])

    def visit_Compare(self, node):
        self.generic_visit(node)
        return self._try_eval(node, [node.left, *node.comparators])

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        pure = (isinstance(func, ast.Name) and func.id in _SAFE_BUILTINS and func.id != "range") or (
            isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
            and func.value.id == "math")
        return self._try_eval(node, node.args) if pure and not node.keywords else node

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        kept = []
        for i, operand in enumerate(node.values):
            known, value = self.const_value(operand)
            if known:
                decides = (not value) if isinstance(node.op, ast.And) else bool(value)
                if decides or i == len(node.values) - 1:
                    if not kept:
                        return self._replace(operand, value)
                    kept.append(operand)
                    break
                continue
            kept.append(operand)
        if len(kept) == 1:
            return kept[0]
        node.values = kept
        return node

    def visit_IfExp(self, node):
        node.test = self.visit(node.test)
        known, value = self.const_value(node.test)
        if known:
            return self.visit(node.body if value else node.orelse)
        return self.generic_visit(node)

    def visit_If(self, node):
        node.test = self.visit(node.test)
        known, value = self.const_value(node.test)
        if known:
            body = node.body if value else node.orelse
            return [self.visit(s) for s in body] or [ast.copy_location(ast.Pass(), node)]
        return self.generic_visit(node)


def _free_space_names(node: ast.FunctionDef, variables) -> set[str]:
    assigned = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
            and n.id in variables and n.id not in assigned}


def check_compilable(node: ast.FunctionDef, info: FunctionInfo) -> None:
    for stmt in node.body:
        for sub in ast.walk(stmt):
            if not isinstance(sub, _COMPILABLE_NODES):
                what = _NODE_WORDS.get(type(sub), type(sub).__name__)
                raise SpaceError(f"space function '{info.node.name}' uses {what}, which the "
                                 "generator cannot compile (it depends on iterators, so it runs in "
                                 "the generated loop nest)", info.where(getattr(sub, "lineno", None)))
            if isinstance(sub, ast.Attribute) and not (
                    isinstance(sub.value, ast.Name) and sub.value.id == "math"):
                raise SpaceError(f"space function '{info.node.name}' uses the attribute "
                                 f"'.{sub.attr}', which the generator cannot compile",
                                 info.where(sub.lineno))
            if isinstance(sub, ast.Call) and not isinstance(sub.func, (ast.Name, ast.Attribute)):
                raise SpaceError(f"space function '{info.node.name}' calls something the "
                                 "generator cannot compile", info.where(sub.lineno))
            if (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name)
                    and sub.func.id not in FUNCTION_BUILTINS):
                raise SpaceError(f"space function '{info.node.name}' calls '{sub.func.id}', which "
                                 "is not a builtin the generator can compile", info.where(sub.lineno))


def _function_form(kind: str, node: ast.FunctionDef, info: FunctionInfo) -> str:
    has_yield = any(isinstance(n, ast.Yield) for n in ast.walk(node))
    returns = [n for n in ast.walk(node) if isinstance(n, ast.Return)]
    if kind != "iterator":
        if has_yield:
            raise SpaceError(f"{kind} '{info.node.name}' yields; only iterators may be generators",
                             info.where())
        if not returns:
            raise SpaceError(f"{kind} '{info.node.name}' never returns a value", info.where())
        return "value"
    if has_yield:
        if any(r.value is not None for r in returns):
            raise SpaceError(f"iterator '{info.node.name}' both yields and returns a value",
                             info.where())
        return "generator"
    if not returns:
        raise SpaceError(f"iterator '{info.node.name}' neither returns a range/sequence nor yields",
                         info.where())
    if all(isinstance(r.value, ast.Call) and isinstance(r.value.func, ast.Name)
           and r.value.func.id == "range" and not r.value.keywords for r in returns):
        return "range"
    return "sequence"


def _may_raise(node: ast.FunctionDef) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.BinOp) and isinstance(sub.op, (ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)):
            return True
        if isinstance(sub, ast.Subscript):
            return True
        if (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute)
                and sub.func.attr not in _MATH_FUNCTIONS_THAT_CANNOT_RAISE):
            return True
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in (
                "range", "int", "round"):
            return True
    return False


def _ranges_start_positive(node: ast.FunctionDef) -> bool:
    """Every ``return (start, stop, step)`` has a literal start >= 1 and a literal step >= 1."""
    for ret in (n for n in ast.walk(node) if isinstance(n, ast.Return)):
        start, _, step = ret.value.elts
        if not all(isinstance(v, ast.Constant) and isinstance(v.value, int) and v.value >= 1
                   for v in (start, step)):
            return False
    return True


def _ranges_unit_step(node: ast.FunctionDef) -> bool:
    """Every ``return (start, stop, step)`` has the literal step 1."""
    return all(isinstance(r.value.elts[2], ast.Constant) and r.value.elts[2].value == 1
               for r in ast.walk(node) if isinstance(r, ast.Return))


class _RangeReturnsToTuples(ast.NodeTransformer):
    """``return range(a, b, c)`` becomes ``return (a, b, c)`` (1 and 2 argument forms too)."""

    def visit_Return(self, node):
        args = list(node.value.args)
        if len(args) == 1:
            args = [ast.Constant(0), args[0]]
        if len(args) == 2:
            args.append(ast.Constant(1))
        node.value = ast.copy_location(ast.Tuple(args, ast.Load()), node.value)
        return node


class _OpaqueTests(ast.NodeTransformer):
    """``if t:`` / ``while t:`` become ``if bool(t):`` / ``while bool(t):`` in a generator: Numba
    prunes a branch testing constants (``x = 8`` then ``while x < 4``), and then cannot type a
    generator a yield of which it pruned."""

    def visit_If(self, node):
        self.generic_visit(node)
        node.test = ast.copy_location(ast.Call(ast.Name("bool", ast.Load()), [node.test], []),
                                      node.test)
        return node

    visit_While = visit_If
