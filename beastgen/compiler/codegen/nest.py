"""The plan walker, target-neutral: one walk of a :class:`~beastgen.compiler.plan.Plan`'s loop nest
(each level's loop opened or solved, its items placed, the split node marked), which every
target's builder (:mod:`.numba_nest`, :mod:`.c_nest`) turns into source through its hooks, as
loopy's ``ASTBuilderBase`` and sympy's ``CodePrinter`` family do; and the facts about a plan that
the targets and the runtime share (the counted tail, the split level, the statistics' slots).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..analysis.symbolic import SymbolicContext
from ..language import nodes as L
from ..language.identity import IdentityMapper
from ..language.mapper import Mapper
from ..plan import Plan, domain_size
from ..specialize import Item, infer_type
from .monotone import loop_ending_filters


# --------------------------------------------------------------------------------------------------
# Facts about a plan
# --------------------------------------------------------------------------------------------------
def constant_values(item: Item) -> bool:
    return all(isinstance(p, L.Const) for p in item.domain[1:])


def constant_domain(level) -> bool:
    return level.iterator.function is None and constant_values(level.iterator)


def counted_tail_size(levels) -> int:
    """The configurations each prefix that the generated count reaches stands for: the product of
    the :func:`countable_tail` domains. The count functions count prefixes (at most one per loop
    iteration, far below 2**63); the runtime multiplies in Python's exact integers."""
    return math.prod(domain_size(level.iterator) for level in countable_tail(levels))


def countable_tail(levels) -> list:
    """The innermost levels that test nothing and whose domains are constant: only their sizes matter."""
    tail = []
    for level in reversed(levels):
        if level.body or level.solved or not constant_domain(level):
            break
        tail.insert(0, level)
    return tail if len(tail) < len(levels) else tail[1:]


#: raw (unfiltered) prefix size the split level aims for; a domain that is not constant counts as this
_SPLIT_TARGET = 4096
_UNKNOWN_DOMAIN = 16


def split_level(plan: Plan) -> int:
    """How many outer levels every chunk walks: the split nodes (chunks of the work for
    :mod:`beastgen.distributed`) are the valid prefixes of that depth. The shallowest depth whose raw
    prefix size reaches ``_SPLIT_TARGET``, among depths inside the iterated nest (not the counted tail)
    whose next level is scanned (not solved): the census probes below it."""
    levels = plan.levels
    iterated = len(levels) - len(countable_tail(levels))
    allowed = [k for k in range(1, iterated) if not levels[k].solved]
    for k in allowed:
        raw = math.prod(domain_size(l.iterator) if constant_domain(l) else _UNKNOWN_DOMAIN
                        for l in levels[:k] if not l.solved)
        if raw >= _SPLIT_TARGET:
            return k
    return allowed[-1] if allowed else 0


def largest_scanned_domain(plan: Plan) -> tuple[Item, int] | None:
    """The iterator with the most values among the levels a random descent scans value by value
    (not solved, with a constant domain; the counted tail included) and its size; None when there
    is none."""
    scanned = [level.iterator for level in plan.levels if not level.solved and constant_domain(level)]
    return max(((it, domain_size(it)) for it in scanned), key=lambda pair: pair[1], default=None)


def solved_below(levels, index: int) -> list:
    """The solved levels right below level ``index`` (tested inside its scan when probing)."""
    below = []
    for level in levels[index + 1:]:
        if not level.solved:
            break
        below.append(level)
    return below


def divides_next(plan: Plan, index: int) -> bool:
    """Whether level ``index`` may visit only the divisors of the next level's numerator: a range
    with step 1, proven inside 64 bits, whose iterator is the denominator of the next level's
    solution (``x * y == n`` solved for ``y``), with a numerator computed above it. Every other
    value leaves no integer solution (rejected by the solved filter), so the loop skips it."""
    levels = plan.levels
    if index + 1 >= len(levels) or levels[index + 1].solved is None:
        return False
    level, solution = levels[index], levels[index + 1].solved
    it = level.iterator
    return (it.function is None and level.solved is None and it.domain[0] == "range"
            and isinstance(it.domain[3], L.Const) and it.domain[3].value == 1 and plan.range_fits(it)
            and isinstance(solution.denominator, L.Ref) and solution.denominator.target == it.name
            and infer_type(solution.numerator, plan.specialized.items) in ("int", "bool")
            and not {n.target for n in L.walk(solution.numerator) if isinstance(n, L.Ref)}
            & {it.name, *(item.name for item in level.body)})


@dataclass
class Narrowing:
    """What else a divisor loop (:func:`divides_next`) skips, each value one that a walk of every
    value would see rejected at the solved level below (:func:`divisor_narrowing`). ``partner``:
    the solved iterator's range ``(start, stop)`` with step 1 and ``start`` proven >= 1: a solution
    ``n / d`` inside it needs ``n // stop < d <= n // start`` (else the solved filter rejects).
    ``filter``: the first filter placed at the solved level, rejecting unless each ``(X, c)`` of
    ``divides`` has ``d * c`` dividing X and each ``(Y, c)`` of ``divided_by`` has the solution
    times c dividing Y (``c`` None: 1, else proven >= 1): ``d`` divides ``gcd(n, X / c, ...)``
    and is a multiple of ``n / gcd(n, Y / c, ...)``."""

    partner: tuple | None = None
    filter: Item | None = None
    divides: list = field(default_factory=list)
    divided_by: list = field(default_factory=list)


def divisor_narrowing(plan: Plan, index: int, symbolic: SymbolicContext) -> Narrowing:
    """The :class:`Narrowing` of the divisor loop at level ``index``: only what is computed above it
    (the partner's range, X, Y, c), none of it able to raise, and at the solved level nothing
    before the filter that could reject or raise; so the values skipped are the solved filter's
    and that filter's rejections in a walk of every value (``--stats`` counts them so)."""
    levels, nonzero = plan.levels, symbolic.provably_nonzero
    level, below = levels[index], levels[index + 1]
    inner = {item.name for item in level.items + below.items}
    items = plan.specialized.items

    def outer(expr: L.Expr) -> bool:
        return (infer_type(expr, items) == "int"
                and not {n.target for n in L.walk(expr) if isinstance(n, L.Ref)} & inner)

    def positive(expr: L.Expr) -> bool:
        span = symbolic.interval(expr)
        return span is not None and span[0] >= 1

    narrowing = Narrowing()
    partner = below.iterator
    if (partner.function is None and partner.domain[0] == "range" and _is_constant(partner.domain[3], 1)
            and plan.range_fits(partner) and all(outer(part) for part in partner.domain[1:3])
            and _quiet_expressions(plan, partner, list(partner.domain[1:3]), nonzero)
            and positive(partner.domain[1])):
        narrowing.partner = tuple(partner.domain[1:3])
    filters = [position for position, item in enumerate(below.body) if item.kind == "filter"]
    if not filters:
        return narrowing
    item = below.body[filters[0]]
    if not (item.function is None and _quiet(plan, below.body[:filters[0]], nonzero)
            and _quiet_expressions(plan, item, [item.expr], nonzero)):
        return narrowing
    operands = item.expr.operands if isinstance(item.expr, L.BoolOp) and item.expr.op == "or" else [item.expr]
    for operand in operands:
        if not (isinstance(operand, L.Compare) and operand.op == "!=" and _is_constant(operand.right, 0)
                and isinstance(operand.left, L.BinOp) and operand.left.op == "%" and outer(operand.left.left)):
            continue
        dividend, modulus = operand.left.left, operand.left.right
        for name, found in ((level.iterator.name, narrowing.divides), (partner.name, narrowing.divided_by)):
            factor = _factor_of(modulus, name)
            if factor is not False and (factor is None or (outer(factor) and positive(factor))):
                found.append((dividend, factor))
    if narrowing.divides or narrowing.divided_by:
        narrowing.filter = item
    return narrowing


def _is_constant(expr: L.Expr, value: int) -> bool:
    return isinstance(expr, L.Const) and type(expr.value) is int and expr.value == value


def _factor_of(expr: L.Expr, name: str):
    """``c`` where ``expr`` is ``name * c`` or ``c * name``; None where it is ``name``; else False."""
    if isinstance(expr, L.Ref) and expr.target == name:
        return None
    if isinstance(expr, L.BinOp) and expr.op == "*":
        for this, other in ((expr.left, expr.right), (expr.right, expr.left)):
            if isinstance(this, L.Ref) and this.target == name:
                return other
    return False


def skips_only_solution_rejects(plan: Plan, index: int, nonzero) -> bool:
    """Whether a divisor loop at level ``index`` (:func:`divides_next`) skips only values that a
    walk of every value would count as the solved filter's rejections: nothing placed at the level
    can reject or raise before the solved level's test (bound terms are not computed there), and the
    numerator cannot raise (``nonzero(divisor)``: a divisor proven never zero). The statistics then
    add the skipped values to that filter's rejections and stay exact."""
    level, solution = plan.levels[index], plan.levels[index + 1].solved
    return _quiet(plan, level.body, nonzero) and _quiet_expressions(plan, solution.filter, [solution.numerator],
                                                                      nonzero)


def rejects_first(plan: Plan, item: Item, nonzero) -> bool:
    """Whether ``item``, a filter ending its loop (:mod:`.monotone`), is the first thing at its
    level that could reject or raise on the values it leaves, and cannot raise itself, on a range
    proven inside 64 bits: a walk of every value would count each of them as its rejection (the
    statistics add them when it ends the loop)."""
    index = plan.level_of(item.name)
    level = plan.levels[index]
    before = level.body[:level.body.index(item)]
    return (plan.range_fits(level.iterator) and not divides_next(plan, index)
            and _quiet(plan, before, nonzero) and _quiet_expressions(plan, item, [item.expr], nonzero))


def _quiet(plan: Plan, items: list[Item], nonzero) -> bool:
    """Whether ``items`` (placed in a level's body) can neither reject nor raise: derived values of
    quiet expressions (a bound term is not computed where the statistics are)."""
    computed = [item for item in items if item.kind != "bound"]
    return all(item.kind == "derived" and item.function is None and _quiet_expressions(
        plan, item, [item.expr], nonzero) for item in computed)


def _quiet_expressions(plan: Plan, item: Item, exprs: list[L.Expr], nonzero) -> bool:
    """Whether ``exprs`` of ``item`` cannot raise: no calls or powers, no checked integers, no
    division or modulo by what may be zero (``nonzero(divisor)``: proven never zero)."""
    return (item.name not in plan.checked
            and all(isinstance(node, _QUIET_NODES) and getattr(node, "op", None) != "**"
                    for expr in exprs for node in L.walk(expr))
            and not any(True for expr in exprs for _ in risky_nodes(expr, nonzero)))


#: expressions that raise only by a division or modulo (``risky_nodes``) or a power: no calls
_QUIET_NODES = (L.Const, L.Ref, L.BinOp, L.UnaryOp, L.Compare, L.BoolOp, L.Not, L.IfExp)


def stat_slots(plan: Plan) -> list[Item]:
    """Items with a counter in the statistics: every filter/bound (rejections), then everything that
    can raise (errors), in placement order."""
    return [item for level in plan.levels for item in level.items]


_NONZERO_SAFE = ("/", "//", "%")


def risky_nodes(expr: L.Expr, nonzero, conditional: bool = False):
    """(node, conditional) for every division/modulo/power that may raise, innermost first;
    ``nonzero(divisor)`` says when a divisor is proven never zero (no guard needed)."""
    return RiskyNodes(nonzero)(expr, conditional)


class RiskyNodes(Mapper):
    """The walk of :func:`risky_nodes`: ``conditional`` is true under a short-circuit operand or an
    if-else branch, where an operation may not run at all."""

    def __init__(self, nonzero):
        self.nonzero = nonzero

    def _children(self, expr: L.Expr, conditional: bool, branches: bool = False):
        for index, child in enumerate(expr.children()):
            yield from self(child, conditional or (branches and index > 0))

    def map_Expr(self, expr: L.Expr, conditional: bool):
        yield from self._children(expr, conditional)

    def map_IfExp(self, expr: L.IfExp, conditional: bool):
        yield from self._children(expr, conditional, branches=True)

    map_BoolOp = map_IfExp

    def map_BinOp(self, expr: L.BinOp, conditional: bool):
        yield from self._children(expr, conditional)
        if expr.op in _NONZERO_SAFE and not self.nonzero(expr.right):
            yield expr, conditional
        elif expr.op == "**" and not isinstance(expr.right, L.Const):
            yield expr, True  # 0 ** -1 and friends: left to try/except

    def map_Call(self, expr: L.Call, conditional: bool):
        yield from self._children(expr, conditional)
        if expr.func == "float_power":
            yield expr, True  # raises where Python does not give a float


class PythonPowers(IdentityMapper):
    """The expression with each float ``**`` that compiled code could compute unlike Python replaced
    by ``float_power`` (nestlib), which raises where Python does not give a float: ``0.0 ** -1``
    (ZeroDivisionError in Python, inf compiled) and a negative base with a fractional exponent
    (a complex number in Python, nan compiled), or a finite power overflows (OverflowError in
    Python). Either rejects the configuration. Also ``float`` of a bool (see :meth:`map_Call`)."""

    def __init__(self, items: dict, symbolic: SymbolicContext):
        self.items, self.symbolic = items, symbolic

    def map_BinOp(self, expr: L.BinOp) -> L.Expr:
        rebuilt = super().map_BinOp(expr)
        if expr.op == "**" and not self._float_power_agrees(rebuilt.left, rebuilt.right) \
                and infer_type(expr, self.items) != "int":
            return L.Call("float_power", [rebuilt.left, rebuilt.right])
        return rebuilt

    def map_Call(self, expr: L.Call) -> L.Expr:
        """``float(b)`` of a bool as ``float(b * 1)``: Numba has no ``float`` of a bool."""
        rebuilt = super().map_Call(expr)
        if expr.func == "float" and infer_type(expr.args[0], self.items) == "bool":
            return L.Call("float", [L.BinOp("*", rebuilt.args[0], L.Const(1))])
        return rebuilt

    def _float_power_agrees(self, base: L.Expr, exponent: L.Expr) -> bool:
        """Whether ``base ** exponent`` is a float (or raises) alike in Python and compiled code."""
        if not self._stays_finite(base, exponent):
            return False  # Python raises OverflowError where compiled code gives inf
        if isinstance(exponent, L.Const) and isinstance(exponent.value, (int, float)) \
                and exponent.value >= 0 and float(exponent.value).is_integer():
            return True  # a whole, nonnegative exponent: any base
        if not self.symbolic.provably_nonnegative(base):
            return False
        return self.symbolic.provably_nonnegative(exponent) or self.symbolic.provably_nonzero(base)

    def _stays_finite(self, base: L.Expr, exponent: L.Expr) -> bool:
        """Whether a finite power cannot overflow: the exponent 0 or 1, or a constant one over an
        integer base of known bounds (a nonzero integer to a negative power is at most 1)."""
        value = exponent.value if isinstance(exponent, L.Const) else None
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value:
            return False
        if value in (0, 1):
            return True
        bounds = self.symbolic.interval(base)
        if bounds is None:
            return False
        try:
            return value < 0 or math.isfinite(float(max(map(abs, bounds))) ** value)
        except OverflowError:
            return False


# --------------------------------------------------------------------------------------------------
# The walk
# --------------------------------------------------------------------------------------------------
class NestWalker:
    """One walk of the plan's nest, printed through a target's hooks. A target (a subclass) gives
    the syntax: :meth:`loop_comment`, :meth:`function_loop`, :meth:`values_loop`,
    :meth:`range_parts`, :meth:`range_loop`, :meth:`counted_range`, :meth:`divisor_loop`,
    :meth:`solved_level`, :meth:`if_header`, :meth:`end_block`, :meth:`reject` and
    ``place_<kind>`` for the items; a
    generated function (a subclass of the target) gives what it does at a level it enters
    (:meth:`enter`), at the split node (:meth:`at_split`) and what it opens and closes around the
    walk. Lines are indented by :attr:`depth`; :attr:`loops` counts the loops open (a rejection
    outside every loop leaves the function). ``ENDS_LOOPS``: a filter that rejects every later
    value of its level once it rejects one (:mod:`.monotone`) leaves the loop (:meth:`ends_loop`);
    a function that reports every loop iteration keeps walking. ``DIVISOR_LOOPS``: a level whose
    values must divide the next level's numerator (:func:`divides_next`) visits only its divisors
    (:meth:`divisor_loop`)."""

    ENDS_LOOPS = False
    DIVISOR_LOOPS = False

    def __init__(self, plan: Plan, symbolic: SymbolicContext, ending: dict[str, str] | None = None):
        """``ending``: :func:`.monotone.loop_ending_filters`, when the caller has it (one analysis
        for all its functions)."""
        self.plan, self.symbolic = plan, symbolic
        self.items = plan.specialized.items
        if not self.ENDS_LOOPS:
            ending = {}
        self.ending = loop_ending_filters(plan, symbolic) if ending is None else ending
        self.python_powers = PythonPowers(self.items, symbolic)
        self.lines: list[str] = []
        self.depth = 1
        self.loops = 0  # loops open where the next line goes
        self.levels_entered = 0  # levels whose iterator is bound where the next line goes

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def walk(self, levels, split: int) -> None:
        """Walk ``levels`` (the outermost first), marking the split node below level ``split - 1``."""
        for index, level in enumerate(levels):
            self.walk_level(level, index)
            if index == split - 1:
                self.at_split()

    def walk_level(self, level, index: int) -> None:
        """Open the level's loop (or solve it), then place its items in order."""
        self.open_level(level, index)
        for item in level.body:
            self.place(item)

    def open_level(self, level, index: int) -> None:
        it = level.iterator
        self.loop_comment(it, index)
        if it.function is not None and it.function.form != "range":
            self.function_loop(it, index)
        elif it.function is None and it.domain[0] == "values":
            self.values_loop(it, index)
        else:
            lo, hi, step = self.range_parts(it)
            if self.divisor_loops(index):
                self.divisor_loop(level, index, lo, hi)
            elif level.solved:
                self.solved_level(level, index, lo, hi, step)
            elif not self.plan.range_fits(it):
                self.counted_range(it, index, lo, hi, step)
            else:
                self.range_loop(it, index, lo, hi, step)

    def divisor_loops(self, index: int) -> bool:
        """Whether level ``index`` opens as :meth:`divisor_loop`: where :func:`divides_next` says it
        may and ``DIVISOR_LOOPS`` (a function that reports every loop iteration keeps scanning)."""
        return self.DIVISOR_LOOPS and divides_next(self.plan, index)

    def place(self, item: Item) -> None:
        """A derived value, filter or bound term, computed (and tested) where the plan put it."""
        getattr(self, f"place_{item.kind}")(item)

    def open_loop(self, header: str, index: int) -> None:
        self.emit(header)
        self.depth += 1
        self.loops += 1
        self.enter(index)

    def enter(self, index: int) -> None:
        """Once level ``index``'s iterator is bound (a function's bookkeeping extends it)."""
        self.levels_entered = index + 1

    def at_split(self) -> None:
        """Right below the split level: what a chunked function does at a split node."""

    def ends_loop(self, item: Item) -> str | None:
        """The iterator whose loop ``item``, a filter, leaves when it rejects; None: it goes on."""
        return self.ending.get(item.name)

    def reject_if(self, test: str, item: Item | None, why: str) -> None:
        self.emit(self.if_header(test, why))
        self.depth += 1
        self.reject(item)
        self.depth -= 1
        self.end_block()
