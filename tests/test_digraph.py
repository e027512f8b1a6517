"""beastgen.digraph gives what networkx gave the compiler: the same ancestors, the same
lexicographical topological order, a cycle exactly where there is one."""
import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from beastgen import digraph

NODES = list("abcdefgh")


def graphs(acyclic: bool):
    edges = st.lists(st.tuples(st.sampled_from(NODES), st.sampled_from(NODES)), max_size=16)
    if acyclic:  # edges from an earlier node to a later one of a shuffled order
        return st.tuples(st.permutations(NODES), edges).map(lambda t: [
            (u, v) if t[0].index(u) < t[0].index(v) else (v, u) for u, v in t[1] if u != v])
    return edges


def both(nodes, edges):
    ours, theirs = digraph.DiGraph(), nx.DiGraph()
    for graph in (ours, theirs):
        for node in nodes:
            graph.add_node(node)
        for u, v in edges:
            graph.add_edge(u, v)
    return ours, theirs


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(nodes=st.permutations(NODES), edges=graphs(acyclic=True), keys=st.permutations(range(8)))
def test_the_order_and_ancestors_are_networkx_s(nodes, edges, keys):
    ours, theirs = both(nodes, edges)
    key = dict(zip(NODES, [k // 2 for k in keys])).__getitem__  # equal keys: insertion order decides
    assert list(digraph.lexicographical_topological_sort(ours, key=key)) == \
        list(nx.lexicographical_topological_sort(theirs, key=key))
    for node in NODES:
        assert digraph.ancestors(ours, node) == nx.ancestors(theirs, node)
    chosen = set(nodes[:5])
    sub = ours.subgraph(chosen)
    assert list(sub) == list(theirs.subgraph(chosen))
    assert list(digraph.lexicographical_topological_sort(sub, key=key)) == \
        list(nx.lexicographical_topological_sort(theirs.subgraph(chosen), key=key))


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(edges=graphs(acyclic=False))
def test_a_cycle_is_found_where_there_is_one(edges):
    ours, theirs = both(NODES, edges)
    has_cycle = not nx.is_directed_acyclic_graph(theirs)
    try:
        cycle = digraph.find_cycle(ours)
    except digraph.NoCycle:
        assert not has_cycle
        return
    assert has_cycle and cycle
    assert all(theirs.has_edge(u, v) for u, v in cycle)
    assert all(cycle[i][1] == cycle[(i + 1) % len(cycle)][0] for i in range(len(cycle)))
