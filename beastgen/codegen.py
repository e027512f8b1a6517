"""Code generation: a :class:`~beastgen.plan.Plan` printed as a readable Python module that Numba
compiles. Three loop nests share one shape: ``count``, ``count_with_stats`` and ``fill``.
"""
from __future__ import annotations

import ast
import math

from . import __version__
from . import language as L
from .errors import SpaceError
from .plan import Plan
from .specialize import Item, infer_type
from .symbolic import SymbolicContext

# Python operator precedence (higher binds tighter)
_PRECEDENCE = {"or": 1, "and": 2, "not": 3, "cmp": 4, "+": 6, "-": 6, "*": 7, "/": 7, "//": 7,
               "%": 7, "neg": 8, "**": 9}
_ATOM = 10
_NONZERO_SAFE = ("/", "//", "%")
NJIT = "@numba.njit(cache=True, error_model='python')"
# Numba cannot lower a generator loaded from its disk cache into a new caller: generators are not cached
NJIT_GENERATOR = "@numba.njit(error_model='python')"
_CASTS = {"int": int, "float": float}  # values iterators: bools among ints, ints among floats


# --------------------------------------------------------------------------------------------------
# Expressions
# --------------------------------------------------------------------------------------------------
def expr_source(node, root: bool = False) -> str:
    """Python source for a space expression (a language object or specialized IR)."""
    return _source(node, root)[0]


def _literal(value) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return f"math.{'inf' if value > 0 else 'nan'}" if value == value else "math.nan"
    return repr(value)


def _source(node, root=False) -> tuple[str, int]:
    if not root and getattr(node, "name", None) is not None:
        return node.name, _ATOM
    if isinstance(node, L.Ref):
        return node.target, _ATOM
    if isinstance(node, L.Const):
        shown = getattr(node, "shown", None)
        if shown:
            return shown, (_ATOM if shown.isidentifier() else 0)
        return _literal(node.value), (_ATOM if not (isinstance(node.value, (int, float))
                                                     and node.value < 0) else _PRECEDENCE["neg"])
    if isinstance(node, L.DeviceProperty):
        return f"beast.device.{node.prop}", _ATOM
    if isinstance(node, L.Setting):
        return f"setting({node.default!r})", _ATOM
    if isinstance(node, L.BinOp):
        p = _PRECEDENCE[node.op]
        right_assoc = node.op == "**"
        left = _wrap(node.left, p, strict=right_assoc)
        right = _wrap(node.right, p, strict=not right_assoc)
        return f"{left} {node.op} {right}", p
    if isinstance(node, L.Compare):
        p = _PRECEDENCE["cmp"]
        return f"{_wrap(node.left, p, strict=True)} {node.op} {_wrap(node.right, p, strict=True)}", p
    if isinstance(node, L.UnaryOp):
        return f"-{_wrap(node.operand, _PRECEDENCE['neg'])}", _PRECEDENCE["neg"]
    if isinstance(node, L.Not):
        return f"not {_wrap(node.operand, _PRECEDENCE['not'])}", _PRECEDENCE["not"]
    if isinstance(node, L.BoolOp):
        p = _PRECEDENCE[node.op]
        return f" {node.op} ".join(_wrap(o, p, strict=True) for o in node.operands), p
    if isinstance(node, L.IfExp):
        return (f"{_wrap(node.body, 1)} if {_wrap(node.test, 1)} else {_wrap(node.orelse, 0)}", 0)
    if isinstance(node, L.Call):
        func = {"ceil": "math.ceil", "floor": "math.floor"}.get(node.func, node.func)
        return f"{func}({', '.join(expr_source(a) for a in node.args)})", _ATOM
    if isinstance(node, L.RangeIterator):
        return f"range({', '.join(expr_source(a) for a in node.children())})", _ATOM
    if isinstance(node, L.ValuesIterator):
        return f"values({', '.join(expr_source(a) for a in node.values)})", _ATOM
    if isinstance(node, (L.FunctionIterator, L.Derived)):
        return f"{node.func.__name__}()", _ATOM
    raise TypeError(f"cannot print {type(node).__name__}")


def _wrap(node, parent: int, strict: bool = False) -> str:
    text, p = _source(node)
    return f"({text})" if p < parent or (strict and p == parent) else text


def _risky_nodes(expr: L.Expr, nonzero, conditional: bool = False):
    """(node, conditional) for every division/modulo/power that may raise, innermost first;
    ``nonzero(divisor)`` says when a divisor is proven never zero (no guard needed)."""
    children = expr.children()
    for index, child in enumerate(children):
        under = conditional
        if isinstance(expr, L.IfExp) and index > 0 or isinstance(expr, L.BoolOp) and index > 0:
            under = True
        yield from _risky_nodes(child, nonzero, under)
    if isinstance(expr, L.BinOp):
        if expr.op in _NONZERO_SAFE and not nonzero(expr.right):
            yield expr, conditional
        elif expr.op == "**" and not isinstance(expr.right, L.Const):
            yield expr, True  # 0 ** -1 and friends: left to try/except


# --------------------------------------------------------------------------------------------------
# The module
# --------------------------------------------------------------------------------------------------
def generate_module(plan: Plan) -> str:
    """The whole generated module, deterministic for a given plan."""
    spec = plan.specialized
    space = spec.space
    out = [f'"""Enumerator for space {space.name!r} generated by beastgen {__version__}: do not edit.',
           "",
           f"space:      {space.name} ({space.source_hash}, sha256 of the space file)",
           f"device:     {spec.device.key} ({spec.device.name}; profile {spec.device.fingerprint()})",
           f"settings:   {', '.join(f'{k}={v!r}' for k, v in spec.settings.items()) or '(none)'}",
           f"loop order: {', '.join(plan.order)}",
           f"key:        {spec.key()}",
           f"regenerate: {regenerate_command(spec)}",
           "",
           "A filter REJECTS a configuration when it is true: each one is tested right after the loop",
           "that binds the last variable it reads. Derived values are computed at the outermost loop",
           "where they can be; a division or modulo by zero rejects the configuration (counted).",
           "A bound term (seconds) is tested like a filter: a subtree is cut when a term computable",
           "at its level already exceeds the threshold; a term that raises bounds nothing (0).",
           '"""',
           "import math", "", "import numba", "import numpy as np", "",
           "from beastgen.nestlib import heap_offer", ""]
    out += _constants_section(plan)
    out += _helpers_section(plan)
    out += _stat_labels(plan)
    symbolic = SymbolicContext(spec.items)
    modes = ["count", "stats", "fill"]
    if spec.bound_terms:
        out += [f"BOUND_TERMS = ({', '.join(map(repr, spec.bound_terms))},)  # a configuration's bound "
                "is the largest; rank() reports which", ""]
        modes += ["pruned", "analysis", "rank"]
    modes.append("probe")
    for mode in modes:
        out += [""] + _NestWriter(plan, mode, symbolic).write()
    return "\n".join(out) + "\n"


def regenerate_command(spec) -> str:
    """The ``beastgen generate`` command line that produces this module."""
    sets = " ".join(f"{k}={v}" for k, v in spec.settings.items())
    return (f"beastgen generate {spec.space.path} --device {spec.device.key}"
            + (f" --set {sets}" if sets else ""))


def _constants_section(plan: Plan) -> list[str]:
    spec = plan.specialized
    lines = ["# -- constants: settings, device properties and constant derived values --"]
    for name, value in spec.constants.items():
        if isinstance(value, (int, float, str, bool)) or _is_literal_tuple(value):
            kind = spec.space.variables[name].kind if name in spec.space.variables else "constant"
            lines.append(f"{name} = {_literal(value)}  # {kind}")
    module_constants = {}
    for item in spec.items.values():
        if item.function is not None:
            module_constants.update(item.function.info.constant_refs)
    for name, value in sorted(module_constants.items()):
        lines.append(f"{name} = {value!r}  # module constant")
    for item in spec.items.values():
        if item.domain and item.domain[0] == "values" and _constant_values(item):
            values = [p.value for p in item.domain[1:]]
            if item.value_type in _CASTS:  # one element type: a tuple of (True, 2) cannot be looped
                values = [_CASTS[item.value_type](v) for v in values]
            lines.append(f"{item.name}__VALUES = {tuple(values)!r}")
    return lines + [""]


def _is_literal_tuple(value) -> bool:
    return isinstance(value, tuple) and all(isinstance(v, (int, float, str, bool)) for v in value)


def _constant_values(item: Item) -> bool:
    return all(isinstance(p, L.Const) for p in item.domain[1:])


def _helpers_section(plan: Plan) -> list[str]:
    lines = []
    for item in plan.specialized.items.values():
        fn = item.function
        if fn is None:
            continue
        lines += [f"# {item.kind} {item.name} ({item.origin}), form: {fn.form}",
                  NJIT_GENERATOR if fn.form == "generator" else NJIT]
        lines += ast.unparse(fn.node).splitlines() + ["", ""]
    return lines


def _domain_size(it: Item) -> int:
    kind, *parts = it.domain
    values = [p.value for p in parts]
    return len(range(*values)) if kind == "range" else len(values)


def _countable_tail(levels) -> list:
    """The innermost levels that test nothing and whose domains are constant: only their sizes matter."""
    tail = []
    for level in reversed(levels):
        it = level.iterator
        if level.body or level.solved or it.function is not None or not all(
                isinstance(p, L.Const) for p in it.domain[1:]):
            break
        tail.insert(0, level)
    return tail if len(tail) < len(levels) else tail[1:]


def stat_slots(plan: Plan) -> list[Item]:
    """Items with a counter in the statistics: every filter/bound (rejections), then everything that
    can raise (errors), in placement order."""
    return [item for level in plan.levels for item in level.items]


def _stat_labels(plan: Plan) -> list[str]:
    names = ", ".join(repr(item.name) for item in stat_slots(plan))
    return [f"STAT_SLOTS = ({names},)  # _rejections[i] counts what slot i rejected or raised", ""]


class _NestWriter:
    def __init__(self, plan: Plan, mode: str, symbolic: SymbolicContext):
        self.plan, self.mode, self.symbolic = plan, mode, symbolic
        self.slot = {item.name: i for i, item in enumerate(stat_slots(plan))}
        self.lines: list[str] = []
        self.depth = 1
        self.temps = 0
        self.loops = 0  # loops open where the next line goes
        self.levels_entered = 0  # levels whose iterator is bound where the next line goes

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    _HEADERS = {
        "count": ("count()", "Number of valid configurations."),
        "stats": ("count_with_stats(_visits, _rejections)",
                  "count(), also adding loop iterations per level to _visits and rejections (filters)\n"
                  "    or errors (division by zero...) per STAT_SLOTS to _rejections."),
        "pruned": ("count_pruned(_threshold)",
                   "Valid configurations whose bound is at most _threshold; each bound term cuts\n"
                   "    its whole subtree at the level where it is first computable."),
        "analysis": ("cut_analysis(_threshold, _visits, _skipped, _cuts, _removed)",
                     "Exhaustive walk that records where count_pruned() would cut: per level, the\n"
                     "    iterations (_visits) and those inside already-cut subtrees (_skipped), subtrees\n"
                     "    cut (_cuts), and valid configurations they held (_removed). Returns how many\n"
                     "    valid configurations have every bound term at most _threshold, tested only\n"
                     "    once the configuration is complete (no hoisting)."),
        "probe": ("probe(_samples, _seed)",
                  "Knuth's estimator: _samples random descents through the nest; at each level one\n"
                  "    value is chosen uniformly among those its filters let through, and a descent that\n"
                  "    reaches the innermost level estimates the count as the product of how many passed\n"
                  "    at each level (0 when none did). Returns the sum and sum of squares of the estimates."),
        "rank": ("rank(_threshold, _bounds, _terms, _rows)",
                 "The len(_bounds) valid configurations with the smallest bounds (at most _threshold),\n"
                 "    as a max-heap: branch and bound, cutting subtrees whose bound already exceeds the\n"
                 "    largest bound kept. Returns how many were kept."),
    }

    def write(self) -> list[str]:
        iterators = [level.iterator for level in self.plan.levels]
        spec = self.plan.specialized
        if self.mode == "fill":
            cols = ", ".join(f"_col_{it.name}" for it in iterators)
            header = [f"def fill({cols}):",
                      '    """Write every valid configuration into the columns (string values as indices)."""']
        else:
            signature, doc = self._HEADERS[self.mode]
            header = [f"def {signature}:", f'    """{doc}"""']
        self.lines = [NJIT, *header]
        self.emit("_size = 0" if self.mode == "rank" else "_n = 0")
        constant_bounds = [b for b in spec.bound_terms if b in spec.constants]
        if self.mode in ("pruned", "rank"):
            self.emit("_limit = _threshold")
            if constant_bounds:
                self.emit(f"if max({', '.join(constant_bounds + ['0.0'])}) > _limit:  # constant bound terms")
                self.emit("    return 0")
        if self.mode == "rank":
            self.emit(f"_row = np.empty({len(iterators)})")
        if self.mode == "analysis":
            self.emit(f"_cut_0 = 0 if max({', '.join(constant_bounds + ['0.0'])}) > _threshold else -1"
                      "  # level of the first cut")
        if self.mode == "probe":
            self.emit("np.random.seed(_seed)")
            self.emit("_total = 0.0")
            self.emit("_total_sq = 0.0")
            self.emit("for _sample in range(_samples):")
            self.depth += 1
            self.loops += 1
            self.emit("_w = 1.0  # the product of the domain sizes chosen from so far")
        levels = self.plan.levels
        counted = _countable_tail(levels) if self.mode in ("count", "pruned") else []
        for index, level in enumerate(levels[:len(levels) - len(counted)]):
            if self.mode == "probe" and not level.solved:
                following = levels[index + 1] if index + 1 < len(levels) else None
                self._probe_level(level, index, following if following and following.solved else None)
                continue
            if self.mode == "probe" and index > 0:
                continue  # a solved level was tested inside its parent's scan
            self._loop(level, index)
            for item in level.body:
                self._item(item)
        if counted:
            size = math.prod(_domain_size(level.iterator) for level in counted)
            self.emit(f"_n += {size}  # the innermost loops ({', '.join(l.iterator.name for l in counted)})"
                      " test nothing: counted, not iterated")
            self.depth = 1
            self.emit("return _n")
            return self.lines
        if self.mode == "fill":
            for it in iterators:
                value = f"{it.name}__index" if it.value_type == "str" else it.name
                self.emit(f"_col_{it.name}[_n] = {value}")
        elif self.mode == "analysis":
            last = f"_cut_{len(iterators)}"
            self.emit(f"if {last} >= 0:")
            self.emit(f"    _removed[{last}] += 1")
            self.emit("    continue")
        elif self.mode == "probe":
            self.emit("_total += _w")
            self.emit("_total_sq += _w * _w")
            self.depth = 1
            self.emit("return _total, _total_sq")
            return self.lines
        elif self.mode == "rank":
            self._rank_leaf(iterators)
            self.depth = 1
            self.emit("return _size")
            return self.lines
        self.emit("_n += 1")
        self.depth = 1
        self.emit("return _n")
        return self.lines

    def _probe_level(self, level, index: int, solved=None) -> None:
        """Probe mode: scan the level's domain, keep one value that passes the level's filters
        (and those of the solved level below it, if any), uniformly (reservoir sampling), and weigh
        the descent by how many passed."""
        it = level.iterator
        value = f"{it.name}__index" if it.value_type == "str" else it.name
        self.emit(f"{it.name}__passed = 0")
        self._loop(level, index)
        self._level_tests(level, solved, index)
        self.emit(f"{it.name}__passed += 1")
        self.emit(f"if np.random.randint(0, {it.name}__passed) == 0:")
        self.emit(f"    {it.name}__chosen = {value}")
        self.depth -= 1
        self.loops -= 1
        self._reject_if(f"{it.name}__passed == 0", it, "nothing passes this level")
        self.emit(f"_w *= {it.name}__passed")
        self.emit(f"{value} = {it.name}__chosen")
        if it.value_type == "str":
            self.emit(f"{it.name} = {it.name}__VALUES[{it.name}__index]")
        self._level_tests(level, solved, index)  # again for the chosen value, for the levels below

    def _level_tests(self, level, solved, index: int) -> None:
        for item in level.body:
            self._item(item)
        if solved is not None:
            self._loop(solved, index + 1)
            for item in solved.body:
                self._item(item)

    def _rank_leaf(self, iterators) -> None:
        terms = self.plan.specialized.bound_terms
        self.emit(f"_bound = {terms[0]}")
        self.emit("_term = 0")
        for index, term in enumerate(terms[1:], 1):
            self.emit(f"if {term} > _bound:")
            self.emit(f"    _bound = {term}")
            self.emit(f"    _term = {index}")
        self.emit("if _bound > _limit:")
        self.emit("    continue")
        for column, it in enumerate(iterators):
            value = f"{it.name}__index" if it.value_type == "str" else it.name
            self.emit(f"_row[{column}] = {value}")
        self.emit("_size = heap_offer(_bounds, _terms, _rows, _size, _bound, _term, _row)")
        self.emit("if _size == _bounds.shape[0]:  # full: only better bounds can still enter")
        self.emit("    _limit = min(_threshold, _bounds[0])")

    # -- rejection -------------------------------------------------------------------------------
    def reject(self, item: Item) -> None:
        if self.mode == "stats":
            self.emit(f"_rejections[{self.slot[item.name]}] += 1")
        # before the outermost loop, a rejection rejects everything
        self.emit("continue" if self.loops else ("return _size" if self.mode == "rank" else "return _n"))

    def guarded(self, item: Item, expr: L.Expr, use) -> None:
        """Emit guards for the divisions in ``expr`` then ``use(source)``; try/except when a risky
        operation is conditional (short-circuit or if-else)."""
        self._check_integer_powers(item, expr)
        risky = list(_risky_nodes(expr, self.symbolic.provably_nonzero))
        source = expr_source(expr)
        if any(conditional for _, conditional in risky):
            self.temps += 1
            temp = f"{item.name}__t{self.temps}"
            self.emit("try:")
            self.depth += 1
            self.emit(f"{temp} = {source}")
            self.depth -= 1
            self.emit("except Exception:  # division by zero or similar: rejected")
            self.depth += 1
            self.reject(item)
            self.depth -= 1
            use(temp)
            return
        seen = set()
        for node, _ in risky:
            divisor = expr_source(node.right)
            if divisor in seen:
                continue
            seen.add(divisor)
            self.emit(f"if {_wrap(node.right, _PRECEDENCE['cmp'], strict=True)} == 0:  # would divide by zero")
            self.depth += 1
            self.reject(item)
            self.depth -= 1
        use(source)

    def _check_integer_powers(self, item: Item, expr: L.Expr) -> None:
        """Python's int ** negative int is a float, Numba's is an int: refuse what may differ."""
        items = self.plan.specialized.items
        for node in L.walk(expr):
            if (isinstance(node, L.BinOp) and node.op == "**"
                    and infer_type(node.left, items) in ("int", "bool")
                    and infer_type(node.right, items) in ("int", "bool")
                    and not self.symbolic.provably_nonnegative(node.right)):
                raise SpaceError(f"{item.kind} '{item.name}': in {expr_source(node)} the integer "
                                 "exponent may be negative, where Python gives a float and compiled "
                                 "code an integer; write float(...) ** ... or keep the exponent >= 0",
                                 item.origin)

    def call(self, item: Item, target: str) -> None:
        fn = item.function
        call = f"{fn.name}({', '.join(fn.params)})"
        if fn.form == "generator" and fn.may_raise:
            call = f"list({call})"
        if fn.may_raise:
            self.emit("try:")
            self.depth += 1
            self.emit(f"{target} = {call}")
            self.depth -= 1
            self.emit(f"except Exception:  # {item.name} raised: rejected")
            self.depth += 1
            self.reject(item)
            self.depth -= 1
        else:
            self.emit(f"{target} = {call}")

    # -- a loop ----------------------------------------------------------------------------------
    def _loop(self, level, index: int) -> None:
        it = level.iterator
        self.emit(f"# loop {index}: iterator {it.name} ({it.origin}): {it.source_text}")
        if it.function is not None and it.function.form != "range":
            fn = it.function
            if fn.form == "generator" and not fn.may_raise:
                header = f"for {it.name} in {fn.name}({', '.join(fn.params)}):"
            else:
                self.call(it, f"{it.name}__seq")
                header = f"for {it.name} in {it.name}__seq:"
            self._open(header, index)
            return
        if it.function is None and it.domain[0] == "values":
            self._values_loop(it, index)
            return
        lo, hi, step = self._range_arguments(it)
        if level.solved:
            self._solved(level, index, lo, hi, step)
            return
        args = [lo, hi] if step == "1" else [lo, hi, step]
        if args == ["0", hi]:
            args = [hi]
        self._open(f"for {it.name} in range({', '.join(args)}):", index)

    def _range_arguments(self, it: Item) -> list[str]:
        """Source for start, stop and step, after the guards they need (a zero step rejects)."""
        if it.function is not None:
            names = [f"{it.name}__lo", f"{it.name}__hi", f"{it.name}__step"]
            if it.unit_step:
                self.call(it, f"{names[0]}, {names[1]}, _")
                return names[:2] + ["1"]
            self.call(it, ", ".join(names))
            self._reject_if(f"{it.name}__step == 0", it, "range() step zero")
            return names
        args = []
        for position, part in enumerate(it.domain[1:]):
            if position == 2 and not self.symbolic.provably_nonzero(part):
                self.guarded(it, part, lambda s: self.emit(f"{it.name}__step = {s}"))
                self._reject_if(f"{it.name}__step == 0", it, "range() step zero")
                args.append(f"{it.name}__step")
            else:
                self.guarded(it, part, args.append)
        return args

    def _values_loop(self, it: Item, index: int) -> None:
        kind, *parts = it.domain
        if _constant_values(it):
            if it.value_type == "str":
                self._open(f"for {it.name}__index in range({len(parts)}):", index)
                self.emit(f"{it.name} = {it.name}__VALUES[{it.name}__index]")
            else:
                self._open(f"for {it.name} in {it.name}__VALUES:", index)
            return
        cast = _CASTS.get(it.value_type)
        texts = []
        for p in parts:
            holder = []
            self.guarded(it, p, holder.append)
            texts.append(f"{cast.__name__}({holder[0]})" if cast else holder[0])
        self._open(f"for {it.name} in ({', '.join(texts)},):", index)

    def _solved(self, level, index: int, lo: str, hi: str, step: str) -> None:
        """The loop replaced by the only value its equality filter lets through."""
        it, solution = level.iterator, level.solved
        item = solution.filter
        numerator = _wrap(solution.numerator, _PRECEDENCE["*"])
        denominator = _wrap(solution.denominator, _PRECEDENCE["*"], strict=True)
        self.emit(f"# filter {item.name} ({item.origin}): rejects when {item.source_text}; solved for "
                  f"{it.name} instead of looping")
        self.guarded(item, solution.numerator, lambda _: None)
        self.guarded(item, solution.denominator, lambda _: None)
        if denominator != "1":
            self._reject_if(f"{numerator} % {denominator} != 0", item, "no integer solution")
            self.emit(f"{it.name} = {numerator} // {denominator}")
        else:
            self.emit(f"{it.name} = {numerator}")
        if step == "1":
            inside = f"{lo} <= {it.name} < {hi}"
        else:
            inside = (f"(({step} > 0 and {lo} <= {it.name} < {hi}) or ({step} < 0 and {hi} < {it.name} <= {lo}))"
                      f" and ({it.name} - {lo}) % {step} == 0")
        self._reject_if(f"not ({inside})", item, f"outside the domain of {it.name}")
        self._enter(index)

    def _reject_if(self, test: str, item: Item, why: str) -> None:
        self.emit(f"if {test}:  # {why}")
        self.depth += 1
        self.reject(item)
        self.depth -= 1

    def _open(self, header: str, index: int) -> None:
        self.emit(header)
        self.depth += 1
        self.loops += 1
        self._enter(index)

    def _enter(self, index: int) -> None:
        """Bookkeeping once level ``index``'s iterator is bound."""
        self.levels_entered = index + 1
        if self.mode in ("stats", "analysis"):
            self.emit(f"_visits[{index}] += 1")
        if self.mode == "analysis":
            self.emit(f"_cut_{index + 1} = _cut_{index}")
            self.emit(f"if _cut_{index + 1} >= 0:")
            self.emit(f"    _skipped[{index}] += 1")

    # -- a derived value, filter or bound --------------------------------------------------------
    def _bound(self, item: Item) -> None:
        self.emit(f"# bound {item.name} ({item.origin}): {item.source_text}")
        if item.function is not None:
            call = f"{item.function.name}({', '.join(item.function.params)})"
        else:
            call = expr_source(item.expr)
        may_raise = (item.function.may_raise if item.function is not None
                     else any(True for _ in _risky_nodes(item.expr, self.symbolic.provably_nonzero)))
        if may_raise:
            self.emit("try:")
            self.emit(f"    {item.name} = {call}")
            self.emit("except Exception:  # a bound term that raises bounds nothing")
            self.emit(f"    {item.name} = 0.0")
        else:
            self.emit(f"{item.name} = {call}")
        level = self.levels_entered
        if self.mode in ("pruned", "rank"):
            self.emit(f"if {item.name} > _limit:  # cut: every completion is slower than the limit")
            self.emit("    continue")
        elif self.mode == "analysis":
            self.emit(f"if _cut_{level} < 0 and {item.name} > _threshold:")
            self.emit(f"    _cut_{level} = {level - 1}")
            self.emit(f"    _cuts[{level - 1}] += 1")

    def _item(self, item: Item) -> None:
        if item.kind == "bound":
            if self.mode in ("pruned", "analysis", "rank"):
                self._bound(item)
            return
        if item.kind == "derived":
            self.emit(f"# derived {item.name} ({item.origin}): {item.source_text}")
            if item.function is not None:
                self.call(item, item.name)
            else:
                self.guarded(item, item.expr, lambda s: self.emit(f"{item.name} = {s}"))
        elif item.kind == "filter":
            self.emit(f"# filter {item.name} ({item.origin}): rejects when {item.source_text}")
            if item.function is not None:
                self.call(item, f"{item.name}__rejects")
                test = f"{item.name}__rejects"
            else:
                holder = []
                self.guarded(item, item.expr, holder.append)
                test = holder[0]
            self.emit(f"if {test}:")
            self.depth += 1
            self.reject(item)
            self.depth -= 1
