"""Planning: order the iterators into a loop nest and place every derived value, filter and bound
at the outermost loop level where it can be computed (filters fire as early as possible; loop-
invariant code motion for derived values).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from .specialize import Item, Specialized


@dataclass
class Level:
    """One loop of the nest: its iterator, then what is computed once it is bound, in order."""

    iterator: Item
    body: list[Item] = field(default_factory=list)


@dataclass
class Plan:
    specialized: Specialized
    graph: nx.DiGraph  # item dependency DAG (edges dep -> reader)
    levels: list[Level]

    @property
    def order(self) -> list[str]:
        return [level.iterator.name for level in self.levels]

    def level_of(self, name: str) -> int:
        for index, level in enumerate(self.levels):
            if level.iterator.name == name or any(item.name == name for item in level.body):
                return index
        raise KeyError(name)

    @property
    def filters(self) -> list[Item]:
        return [item for level in self.levels for item in level.body if item.kind == "filter"]

    @property
    def bounds(self) -> list[Item]:
        return [item for level in self.levels for item in level.body if item.kind == "bound"]

    @property
    def derived(self) -> list[Item]:
        return [item for level in self.levels for item in level.body if item.kind == "derived"]


def item_graph(items: dict[str, Item]) -> nx.DiGraph:
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
    return Plan(spec, graph, levels)


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
