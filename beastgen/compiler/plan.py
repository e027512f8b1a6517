"""Planning: order the iterators into a loop nest and place every derived value, filter and bound
at the outermost loop level where it can be computed (filters fire as early as possible; loop-
invariant code motion for derived values).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx  # the planner's graph (a warm count and the plan cache never import the planner)

from .language import nodes as L
from .language.mapper import Mapper
from .analysis.checked_helpers import CheckedExpression, CheckedHelper, checked_expressions, checked_helpers
from .analysis.intervals import check_integer_ranges, range_fits
from .specialize.ir import Item, Specialized
from .specialize.value_types import infer_type
from .analysis.symbolic import SymbolicContext


@dataclass
class Solution:
    """An equality filter solved for a level's iterator: ``iterator == numerator / denominator`` is
    the only value the filter lets through, so the loop becomes one divisibility test."""

    filter: Item
    numerator: L.Expr
    denominator: L.Expr  # proven never zero


@dataclass
class Level:
    """One loop of the nest: its iterator, then what is computed once it is bound, in order."""

    iterator: Item
    body: list[Item] = field(default_factory=list)
    solved: Solution | None = None  # the loop is replaced by the filter's solution

    @property
    def items(self) -> list[Item]:
        """The iterator, its solved filter if any, then the body, in the order they run."""
        return [self.iterator, *([self.solved.filter] if self.solved else []), *self.body]


@dataclass
class Plan:
    specialized: Specialized
    graph: nx.DiGraph  # item dependency DAG (edges dep -> reader)
    levels: list[Level]
    intervals: dict = field(default_factory=dict)  # of int and bool items (analysis.intervals)
    helpers: dict[str, CheckedHelper] = field(default_factory=dict)  # space functions' helpers, by item
    checked: dict[str, CheckedExpression] = field(default_factory=dict)  # expressions on their values

    @property
    def order(self) -> list[str]:
        return [level.iterator.name for level in self.levels]

    def level_of(self, name: str) -> int:
        for index, level in enumerate(self.levels):
            if any(item.name == name for item in level.items):
                return index
        raise KeyError(name)

    def of_kind(self, kind: str) -> list[Item]:
        return [item for level in self.levels for item in level.items if item.kind == kind]

    @property
    def bounds(self) -> list[Item]:
        return self.of_kind("bound")

    def range_fits(self, item: Item) -> bool:
        """Whether the range loop of ``item`` is proven inside 64 bits (see ``intervals.range_fits``;
        a space function's ranges are not analysed)."""
        return item.function is None and range_fits(self.specialized, self.intervals, item)

    def item_expression(self, item: Item, expr):
        """``expr``, an expression of ``item`` (its own or a domain part): where it computes integers
        from a space function's value, with those operations checked (``analysis.checked_helpers``)."""
        checked = self.checked.get(item.name)
        return expr if checked is None else checked.expression(expr)

    def iteration_bound(self, start: int = 0, stop: int | None = None) -> int | None:
        """An upper bound on the nest's loop iterations: over the levels, the product of the domain
        sizes down to each (a filter or a solved level only takes iterations away). None when a
        domain's size is not a constant (a function iterator, a range with varying limits). With
        ``start`` and ``stop``, those of the levels ``start`` to ``stop - 1`` under one prefix of
        the levels above them."""
        total, product = 0, 1
        for level in self.levels[start:stop]:
            size = domain_size(level.iterator)
            if size is None:
                return None
            product *= size
            total += product
        return total


def range_length(start: int, stop: int, step: int = 1) -> int:
    """``len(range(start, stop, step))`` for any Python ints (``len`` raises past 64 bits)."""
    if step > 0:
        return max(0, (stop - start + step - 1) // step)
    return max(0, (start - stop - step - 1) // -step)


def domain_size(item: Item) -> int | None:
    """How many values an iterator takes, when that is a constant (None otherwise)."""
    if item.function is not None or not item.domain:
        return None
    kind, *parts = item.domain
    if kind == "values":
        return len(parts)
    if kind == "range" and all(isinstance(p, L.Const) and type(p.value) is int for p in parts):
        return range_length(*(p.value for p in parts))
    return None


def item_graph(items: dict[str, Item]) -> nx.DiGraph:
    """The items' dependency DAG: an edge ``dep -> reader`` for each name an item reads."""
    graph = nx.DiGraph()
    for name, item in items.items():
        graph.add_node(name, kind=item.kind)
        for dep in item.deps:
            graph.add_edge(dep, name)
    return graph


def iterator_closure(graph: nx.DiGraph, items: dict[str, Item], name: str) -> set[str]:
    """The iterators an item depends on, directly or through derived values (itself included)."""
    names = nx.ancestors(graph, name) | {name}
    return {n for n in names if items[n].kind == "iterator"}


def make_plan(spec: Specialized, order: list[str] | None = None) -> Plan:
    """Order the loops (``order`` overrides the heuristic, for tests) and place every item."""
    intervals = check_integer_ranges(spec)
    items = spec.items
    graph = item_graph(items)
    if order is None:
        order = loop_order(graph, items)
    position = {name: i for i, name in enumerate(order)}
    closure = {name: iterator_closure(graph, items, name) for name in items}
    for name in order:
        early = [dep for dep in closure[name] - {name} if position[dep] > position[name]]
        if early:
            raise ValueError(f"loop order puts '{name}' before {early}, which its domain needs")

    levels = [Level(items[name]) for name in order]
    placed: dict[int, list[Item]] = {i: [] for i in range(len(order))}
    for name, item in items.items():
        if item.kind != "iterator":
            placed[max((position[i] for i in closure[name]), default=0)].append(item)
    for index, level in enumerate(levels):
        level.body = _order_within_level(placed[index], graph)
    plan = Plan(spec, graph, levels, intervals, checked_helpers(spec, intervals), checked_expressions(spec, intervals))
    solve_equality_filters(plan)
    return plan


def solve_equality_filters(plan: Plan) -> None:
    """Solve instead of test: a filter ``a*x + b != c`` placed at the level of a range iterator
    ``x`` (with ``a``, ``b``, ``c`` computed at outer levels, all integers, ``a`` proven nonzero by
    sympy) lets exactly one value of ``x`` through, so that level's loop becomes a divisibility
    test and a domain check. Its arithmetic may wrap modulo 2**64 (``c - b``): ``a*x + b`` proven
    inside 64 bits on the domain, a wrapped solution lies outside the domain, so it is exact."""
    symbolic = SymbolicContext(plan.specialized.items)
    for index, level in enumerate(plan.levels):
        it = level.iterator
        is_range = (it.domain is not None and it.domain[0] == "range") or (
            it.function is not None and it.function.form == "range")
        if not is_range:
            continue
        outer = {name for lv in plan.levels[:index] for name in [lv.iterator.name, *(i.name for i in lv.body)]}
        for item in level.body:
            if item.kind != "filter" or item.expr is None or not isinstance(item.expr, L.Compare) \
                    or item.expr.op != "!=":
                continue
            linear = LinearForm(it.name, outer, plan.specialized.items)
            left, right = linear(item.expr.left), linear(item.expr.right)
            if left is None or right is None:
                continue
            coefficient = _simplify(L.BinOp("-", left[0], right[0]))
            numerator = _simplify(L.BinOp("-", right[1], left[1]))
            # a filter computing with a space function's value (checked when tested) is not solved:
            # its solution's arithmetic would not be checked
            if symbolic.provably_nonzero(coefficient) and item.name not in plan.checked:
                level.solved = Solution(item, numerator, coefficient)
                level.body.remove(item)
                break


class LinearForm(Mapper):
    """``linear(expr)`` is ``(a, b)`` with ``expr == a*x + b``, both integer expressions of the
    ``outer`` variables, or None."""

    def __init__(self, x: str, outer: set, items: dict):
        self.x, self.outer, self.items = x, outer, items

    def __call__(self, expr: L.Expr):
        refs = {n.target for n in L.walk(expr) if isinstance(n, L.Ref)}
        if self.x not in refs:
            if refs <= self.outer and infer_type(expr, self.items) in ("int", "bool"):
                return L.Const(0), expr
            return None
        return super().__call__(expr)

    def map_Expr(self, expr: L.Expr):
        return None

    def map_Ref(self, expr: L.Ref):
        return L.Const(1), L.Const(0)  # x itself

    def map_BinOp(self, expr: L.BinOp):
        if expr.op in ("+", "-"):
            left, right = self(expr.left), self(expr.right)
            if left is None or right is None:
                return None
            return (_simplify(L.BinOp(expr.op, left[0], right[0])),
                    _simplify(L.BinOp(expr.op, left[1], right[1])))
        if expr.op == "*":
            for this, other in ((expr.left, expr.right), (expr.right, expr.left)):
                factor = self(other)
                term = self(this)
                if factor is not None and term is not None and _is_zero(factor[0]):
                    return (_simplify(L.BinOp("*", term[0], factor[1])),
                            _simplify(L.BinOp("*", term[1], factor[1])))
        return None


def _is_zero(expr: L.Expr) -> bool:
    return isinstance(expr, L.Const) and expr.value == 0


def _simplify(expr: L.BinOp) -> L.Expr:
    """Drop the zeros and ones the linear decomposition introduces."""
    left, right, op = expr.left, expr.right, expr.op
    if op in ("+", "-") and _is_zero(right):
        return left
    if op == "+" and _is_zero(left):
        return right
    if op == "-" and _is_zero(left):
        return L.UnaryOp("-", right)
    if op == "*":
        if _is_zero(left) or _is_zero(right):
            return L.Const(0)
        if isinstance(left, L.Const) and left.value == 1:
            return right
        if isinstance(right, L.Const) and right.value == 1:
            return left
    return expr


def loop_order(graph: nx.DiGraph, items: dict[str, Item]) -> list[str]:
    """A topological order of the iterators in which filters (then bounds) fire as early as possible.

    Greedy: repeatedly take the pending filter needing the fewest iterators not yet bound (ties: the
    one declared first) and bind those iterators (dependencies first, declaration order otherwise).
    """
    declared = {name: i for i, name in enumerate(items)}
    closure = {name: iterator_closure(graph, items, name) for name in items}
    iterators = [n for n in items if items[n].kind == "iterator"]
    pending = [n for n in items if items[n].kind == "filter"] + \
              [n for n in items if items[n].kind == "bound"]
    bound: list[str] = []

    def bind(names: set[str]) -> None:
        sub = graph.subgraph(set().union(*(nx.ancestors(graph, n) | {n} for n in names)))
        for name in nx.lexicographical_topological_sort(sub, key=lambda n: declared[n]):
            if items[name].kind == "iterator" and name not in bound:
                bound.append(name)

    while pending:
        best = min(pending, key=lambda f: (len(closure[f] - set(bound)), declared[f]))
        bind(closure[best] - set(bound))
        pending = [f for f in pending if closure[f] - set(bound)]
    bind(set(iterators) - set(bound))
    return bound


def _order_within_level(level_items: list[Item], graph: nx.DiGraph) -> list[Item]:
    """Dependencies first; among what is ready, filters before everything else, then declaration."""
    names = {item.name for item in level_items}
    by_name = {item.name: item for item in level_items}
    remaining = list(level_items)
    done: set[str] = set()
    result: list[Item] = []
    while remaining:
        ready = [it for it in remaining if all(d in done or d not in names for d in it.deps)]
        ready.sort(key=lambda it: (it.kind != "filter", it.kind != "bound", remaining.index(it)))
        pick = ready[0]
        result.append(pick)
        done.add(pick.name)
        remaining.remove(pick)
    assert {it.name for it in result} == set(by_name)
    return result
