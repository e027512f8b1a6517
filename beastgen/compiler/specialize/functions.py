"""The function path of specialization: a space function's code folded for the fixed constants
(:func:`fold_function`), the rules of what the generator can compile (:func:`check_compilable`, also
applied to Kernel Tuner restriction functions), the helper's form and whether it may raise, and the
expression form of a body that has one (:func:`body_expression`, :class:`FunctionExpression`)."""
from __future__ import annotations

import ast
import copy
import math
import types

from ...devices.profiles import DeviceProfile
from ...errors import SpaceError
from ..language import nodes as L
from ..language.from_ast import AstTranslator
from ..model import FUNCTION_BUILTINS, FunctionInfo, Space
from .ir import named_const

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


class NoExpression(Exception):
    """A function body has no expression form (it stays a compiled helper)."""


def body_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """A function body without its ``pass`` statements and docstrings."""
    return [s for s in body if not isinstance(s, ast.Pass)
            and not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]


def body_expression(body: list[ast.stmt], env: dict, assigned: set) -> ast.expr | None:
    """One expression (AST) with the value the statements return: each local name replaced by what
    was last assigned to it, ``if c: A`` + the rest as ``A + rest if c else else-part + rest``. None
    when the body does something else, may fall off its end, reads a local before assigning it,
    or assigns an expression that may raise (Python computes it even where it is not used; the
    expression would compute it only where it is)."""
    for index, stmt in enumerate(body_statements(body)):
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
            rest = body_statements(body)[index + 1:]
            test = _substituted(stmt.test, env, assigned)
            then = body_expression(stmt.body + rest, env, assigned)
            orelse = body_expression(stmt.orelse + rest, env, assigned)
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


#: the calls an expression form may make: the function's spelling -> the language's
_CALLS = {"min": "min", "max": "max", "abs": "abs", "int": "int", "float": "float",
          "math.ceil": "ceil", "math.floor": "floor"}


class FunctionExpression(AstTranslator):
    """The expression IR of a folded function's return expression (Python semantics preserved):
    ``items`` are read as Refs, ``folded`` and ``constants`` (the function's own constant names)
    as constants; a construct without an expression form raises :class:`NoExpression`."""

    def __init__(self, items: dict, folded: dict, constants: dict):
        self.items, self.folded, self.constants = items, folded, constants

    def reject(self, node, what=None):
        raise NoExpression

    def name(self, node):
        if node.id in self.items:
            return L.Ref(node.id)
        if node.id in self.folded:
            return named_const(self.folded[node.id], node.id)
        if node.id in self.constants and isinstance(self.constants[node.id], (int, float, str, bool)):
            return L.Const(self.constants[node.id])
        raise NoExpression

    def call(self, node):
        name = ast.unparse(node.func)
        arity = len(node.args) >= 2 if name in ("min", "max") else len(node.args) == 1
        if node.keywords or name not in _CALLS or not arity:  # min(x) of a number raises: the helper
            raise NoExpression
        return L.Call(_CALLS[name], [self.translate(a) for a in node.args])


def function_globals(space: Space, profile: DeviceProfile) -> dict:
    """The globals a space function runs with in plain Python: the space module's, with the
    beastgen module replaced by a view where ``beast.device.X`` is the profile's value."""
    view = types.SimpleNamespace(device=types.SimpleNamespace(**profile.properties))
    env = dict(space.module_globals)
    for name, value in env.items():
        if isinstance(value, types.ModuleType) and value.__name__ == "beastgen":
            env[name] = view
    return env


# --------------------------------------------------------------------------------------------------
# Folding and checking a function's code
# --------------------------------------------------------------------------------------------------
def fold_function(info: FunctionInfo, constants: dict, profile: DeviceProfile) -> ast.FunctionDef:
    """A copy of the function's code with its aliases resolved, ``constants`` and the profile's
    properties folded in, and the branches they decide taken."""
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


def free_space_names(node: ast.FunctionDef, variables) -> set[str]:
    """The names of ``variables`` the function reads and never assigns."""
    assigned = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
            and n.id in variables and n.id not in assigned}


def check_compilable(node: ast.FunctionDef, info: FunctionInfo) -> None:
    """Raise :class:`SpaceError` (with the line) for the first construct the generator cannot compile."""
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


def function_form(kind: str, node: ast.FunctionDef, info: FunctionInfo) -> str:
    """'range', 'sequence' or 'generator' for an iterator, 'value' otherwise; an error where the
    body does not fit its kind."""
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


def may_raise(node: ast.FunctionDef) -> bool:
    """Whether the code may raise (a division, a subscript, a call that may fail)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.BinOp) and isinstance(sub.op, (ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)):
            return True
        if isinstance(sub, ast.Subscript):
            return True
        if (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute)
                and sub.func.attr not in _MATH_FUNCTIONS_THAT_CANNOT_RAISE):
            return True
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and (sub.func.id in (
                "range", "int", "round", "len") or sub.func.id in ("min", "max") and len(sub.args) == 1):
            return True  # min/max of one argument: of a number, or an empty sequence, raises; len of a number
    return False


def ranges_start_positive(node: ast.FunctionDef) -> bool:
    """Every ``return (start, stop, step)`` has a literal start >= 1 and a literal step >= 1."""
    for ret in (n for n in ast.walk(node) if isinstance(n, ast.Return)):
        start, _, step = ret.value.elts
        if not all(isinstance(v, ast.Constant) and isinstance(v.value, int) and v.value >= 1
                   for v in (start, step)):
            return False
    return True


def ranges_unit_step(node: ast.FunctionDef) -> bool:
    """Every ``return (start, stop, step)`` has the literal step 1."""
    return all(isinstance(r.value.elts[2], ast.Constant) and r.value.elts[2].value == 1
               for r in ast.walk(node) if isinstance(r, ast.Return))


class RangeReturnsToTuples(ast.NodeTransformer):
    """``return range(a, b, c)`` becomes ``return (a, b, c)`` (1 and 2 argument forms too)."""

    def visit_Return(self, node):
        args = list(node.value.args)
        if len(args) == 1:
            args = [ast.Constant(0), args[0]]
        if len(args) == 2:
            args.append(ast.Constant(1))
        node.value = ast.copy_location(ast.Tuple(args, ast.Load()), node.value)
        return node


class PythonBuiltins(ast.NodeTransformer):
    """Builtins whose Numba versions differ from Python's, spelled to agree: ``min(x)`` /
    ``max(x)`` / ``len(x)`` become ``sequence_min(x)`` / ``sequence_max(x)`` / ``sequence_len(x)``
    (``nestlib``: Numba's min of a number returns it, its len cannot type it, where Python raises
    and the helper rejects), ``float(x)`` becomes
    ``float(x * 1)`` (Numba has no ``float`` of a bool; ``x * 1`` keeps every other value) and
    each argument of ``range`` is ``range_argument(x)`` (Numba's truncates a float, Python's raises)."""

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "range":
            node.args = [a if isinstance(a, ast.Constant) and type(a.value) is int else  # a literal int
                         ast.copy_location(ast.Call(ast.Name("range_argument", ast.Load()), [a], []), a)
                         for a in node.args]
        if not isinstance(node.func, ast.Name) or node.keywords or len(node.args) != 1:
            return node
        if node.func.id in ("min", "max", "len"):
            node.func = ast.copy_location(ast.Name(f"sequence_{node.func.id}", ast.Load()), node.func)
        elif node.func.id == "float":
            node.args = [ast.copy_location(ast.BinOp(node.args[0], ast.Mult(), ast.Constant(1)), node.args[0])]
        return node


class OpaqueTests(ast.NodeTransformer):
    """``if t:`` / ``while t:`` become ``if bool(t):`` / ``while bool(t):`` in a generator: Numba
    prunes a branch testing constants (``x = 8`` then ``while x < 4``), and then cannot type a
    generator a yield of which it pruned."""

    def visit_If(self, node):
        self.generic_visit(node)
        node.test = ast.copy_location(ast.Call(ast.Name("bool", ast.Load()), [node.test], []),
                                      node.test)
        return node

    visit_While = visit_If
