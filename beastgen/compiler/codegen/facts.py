"""Facts about a :class:`~beastgen.compiler.plan.Plan` that the walker (:mod:`.nest`), the targets and
the runtime share: the counted tail, the split level, the statistics' slots, where a level may visit
only divisors (:func:`divides_next`) and what else such a loop skips (:func:`divisor_narrowing`),
and which loop-ending filters the statistics can count (:func:`rejects_first`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..analysis.symbolic import SymbolicContext
from ..language import nodes as L
from ..plan import Plan, domain_size
from ..specialize import Item, infer_type
from .guards import guards


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


#: the count's low word carries into its high word above this (see :attr:`NestWalker.CARRIES`)
CARRY = 2 ** 62

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
    levels = plan.levels
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
    if (partner.function is None and partner.domain[0] == "range" and is_constant(partner.domain[3], 1)
            and plan.range_fits(partner) and all(outer(part) for part in partner.domain[1:3])
            and _quiet_expressions(plan, partner, list(partner.domain[1:3]), symbolic)
            and positive(partner.domain[1])):
        narrowing.partner = tuple(partner.domain[1:3])
    filters = [position for position, item in enumerate(below.body) if item.kind == "filter"]
    if not filters:
        return narrowing
    item = below.body[filters[0]]
    if not (item.function is None and _quiet(plan, below.body[:filters[0]], symbolic)
            and _quiet_expressions(plan, item, [item.expr], symbolic)):
        return narrowing
    operands = item.expr.operands if isinstance(item.expr, L.BoolOp) and item.expr.op == "or" else [item.expr]
    for operand in operands:
        if not (isinstance(operand, L.Compare) and operand.op == "!=" and is_constant(operand.right, 0)
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


def is_constant(expr: L.Expr, value: int) -> bool:
    """Whether ``expr`` is the integer constant ``value``."""
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


def skips_only_solution_rejects(plan: Plan, index: int, symbolic: SymbolicContext) -> bool:
    """Whether a divisor loop at level ``index`` (:func:`divides_next`) skips only values that a
    walk of every value would count as the solved filter's rejections: nothing placed at the level
    can reject or raise before the solved level's test (bound terms are not computed there), and the
    numerator cannot raise. The statistics then add the skipped values to that filter's rejections
    and stay exact."""
    level, solution = plan.levels[index], plan.levels[index + 1].solved
    return _quiet(plan, level.body, symbolic) and _quiet_expressions(plan, solution.filter, [solution.numerator],
                                                                       symbolic)


def rejects_first(plan: Plan, item: Item, symbolic: SymbolicContext) -> bool:
    """Whether ``item``, a filter ending its loop (:mod:`.monotone`), is the first thing at its
    level that could reject or raise on the values it leaves, and cannot raise itself, on a range
    proven inside 64 bits: a walk of every value would count each of them as its rejection (the
    statistics add them when it ends the loop)."""
    index = plan.level_of(item.name)
    level = plan.levels[index]
    before = level.body[:level.body.index(item)]
    return (plan.range_fits(level.iterator) and not divides_next(plan, index)
            and _quiet(plan, before, symbolic) and _quiet_expressions(plan, item, [item.expr], symbolic))


def _quiet(plan: Plan, items: list[Item], symbolic: SymbolicContext) -> bool:
    """Whether ``items`` (placed in a level's body) can neither reject nor raise: derived values of
    quiet expressions (a bound term is not computed where the statistics are)."""
    computed = [item for item in items if item.kind != "bound"]
    return all(item.kind == "derived" and item.function is None and _quiet_expressions(
        plan, item, [item.expr], symbolic) for item in computed)


def _quiet_expressions(plan: Plan, item: Item, exprs: list[L.Expr], symbolic: SymbolicContext) -> bool:
    """Whether ``exprs`` of ``item`` cannot raise: no checked integers (a space function's value)
    and no raise of the semantics table left unproven (:func:`guards`)."""
    return item.name not in plan.checked and not any(guards(expr, plan.specialized.items, symbolic)
                                                     for expr in exprs)


def stat_slots(plan: Plan) -> list[Item]:
    """Items with a counter in the statistics: every filter/bound (rejections), then everything that
    can raise (errors), in placement order."""
    return [item for level in plan.levels for item in level.items]
