"""The small directed graph the compiler needs (a space's dependencies): nodes in insertion order,
their ancestors, a lexicographical topological order and a cycle. It stands in for networkx,
whose import (0.1 to 0.5 s) a cold count paid for these four operations, with the same
results: the order is networkx's (among the nodes ready, the smallest key first; equal keys in
insertion order).
"""
from __future__ import annotations

import heapq


class NoCycle(Exception):
    """:func:`find_cycle` found none."""


class DiGraph:
    """Nodes (any hashable) in insertion order, and edges ``u -> v``."""

    def __init__(self):
        self._successors: dict = {}
        self._predecessors: dict = {}

    def add_node(self, node, **attributes) -> None:
        """Add ``node`` (attributes are accepted for networkx's signature, not kept)."""
        if node not in self._successors:
            self._successors[node], self._predecessors[node] = {}, {}

    def add_edge(self, u, v) -> None:
        self.add_node(u)
        self.add_node(v)
        self._successors[u][v] = self._predecessors[v][u] = None

    def __iter__(self):
        return iter(self._successors)

    def __contains__(self, node) -> bool:
        return node in self._successors

    def __len__(self) -> int:
        return len(self._successors)

    def successors(self, node):
        return iter(self._successors[node])

    def predecessors(self, node):
        return iter(self._predecessors[node])

    def subgraph(self, nodes) -> "DiGraph":
        """The graph of ``nodes`` (in this graph's order) and the edges between them."""
        chosen = set(nodes)
        sub = DiGraph()
        for node in self:
            if node in chosen:
                sub.add_node(node)
        for node in sub:
            for successor in self._successors[node]:
                if successor in chosen:
                    sub.add_edge(node, successor)
        return sub


def ancestors(graph: DiGraph, node) -> set:
    """Every node with a path to ``node`` (not ``node`` itself)."""
    seen, stack = set(), [node]
    while stack:
        for predecessor in graph.predecessors(stack.pop()):
            if predecessor not in seen:
                seen.add(predecessor)
                stack.append(predecessor)
    return seen


def lexicographical_topological_sort(graph: DiGraph, key):
    """The nodes, each after its predecessors; among those ready, the smallest ``key(node)`` first
    (equal keys: insertion order). Raises ValueError on a cycle."""
    order = {node: index for index, node in enumerate(graph)}
    waiting = {node: sum(1 for _ in graph.predecessors(node)) for node in graph}
    ready = [(key(node), order[node], node) for node in graph if not waiting[node]]
    heapq.heapify(ready)
    emitted = 0
    while ready:
        _, _, node = heapq.heappop(ready)
        emitted += 1
        yield node
        for successor in graph.successors(node):
            waiting[successor] -= 1
            if not waiting[successor]:
                heapq.heappush(ready, (key(successor), order[successor], successor))
    if emitted != len(graph):
        raise ValueError("the graph has a cycle")


def find_cycle(graph: DiGraph) -> list[tuple]:
    """The edges ``(u, v)`` of one cycle, in order; raises :class:`NoCycle` where there is none."""
    state: dict = {}  # node -> 1 while on the current path, 2 once finished
    for root in graph:
        if root in state:
            continue
        path, iterators = [root], [graph.successors(root)]
        state[root] = 1
        while path:
            successor = next(iterators[-1], None)
            if successor is None:
                state[path.pop()] = 2
                iterators.pop()
            elif state.get(successor) == 1:
                nodes = path[path.index(successor):]
                return list(zip(nodes, nodes[1:] + [successor]))
            elif successor not in state:
                state[successor] = 1
                path.append(successor)
                iterators.append(graph.successors(successor))
    raise NoCycle
