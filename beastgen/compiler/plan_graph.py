"""The plan's dependency DAG for people: each item (iterator, derived value, filter, bound) a node
at the loop level where the plan computes it (a filter at the loop where it fires), an edge from
each name to what reads it. Written as a picture (PNG, SVG or PDF: networkx's drawing on
matplotlib), as DOT (for Graphviz; written here: networkx writes DOT only through pydot or
pygraphviz, which beastgen does not otherwise need) or as GraphML (networkx's writer).
"""
from __future__ import annotations

import os

import networkx as nx  # the plan's own graph type; imported where the plan is

from ..errors import BeastError
from ..support.output import AtomicOutput
from .plan import Plan

#: kind -> (label in the legend, marker, colour): Okabe and Ito's colour-blind-safe palette
KINDS = {"iterator": ("iterator (a loop)", "o", "#0072B2"),
         "derived": ("derived value", "D", "#009E73"),
         "filter": ("filter (rejects when true)", "s", "#D55E00"),
         "bound": ("bound term", "^", "#CC79A7")}
FORMATS = (".png", ".svg", ".pdf", ".dot", ".gv", ".graphml")


def plan_dag(plan: Plan) -> nx.DiGraph:
    """The plan's items as a DAG: node attributes ``kind``, ``level`` (the loop, 0 outermost) and
    ``position`` (its place in that level's order), edges ``dependency -> reader``; a solved
    filter is marked ``solved`` (its level has no loop: the filter gives the iterator's value)."""
    dag = nx.DiGraph()
    for index, level in enumerate(plan.levels):
        for position, item in enumerate(level.items):
            solved = level.solved is not None and item is level.solved.filter
            dag.add_node(item.name, kind=item.kind, level=index, position=position, solved=solved)
    for reader in dag:
        for dependency in plan.graph.predecessors(reader):
            if dependency in dag:
                dag.add_edge(dependency, reader)
    return dag


def check_dag_path(path: str) -> str:
    """The format of ``path`` (its suffix, one of :data:`FORMATS`), checked before any work."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in FORMATS:
        raise BeastError(f"--dag writes {', '.join(FORMATS)}, not {suffix or 'a file without a suffix'}",
                         path)
    if suffix in (".png", ".svg", ".pdf"):
        import importlib.util
        if importlib.util.find_spec("matplotlib") is None:
            raise BeastError(f"--dag {suffix[1:].upper()} needs matplotlib: pip install "
                             "'beastgen[plot]' (or write --dag dag.dot / dag.graphml)")
    return suffix


def write_dag(plan: Plan, path: str, title: str) -> None:
    """Write the plan's DAG to ``path``, its format chosen by the suffix (:data:`FORMATS`)."""
    suffix = check_dag_path(path)
    dag = plan_dag(plan)
    with AtomicOutput(path) as temporary:
        if suffix in (".dot", ".gv"):
            with open(temporary, "w", encoding="utf-8") as f:
                f.write(dot_text(dag, title))
        elif suffix == ".graphml":
            nx.write_graphml(dag, temporary)
        else:
            draw_dag(dag, temporary, title, suffix[1:])


def dot_text(dag: nx.DiGraph, title: str) -> str:
    """The DAG in Graphviz's DOT language: one rank (a row) per loop level, each node shaped and
    coloured by its kind."""
    shapes = {"iterator": "ellipse", "derived": "diamond", "filter": "box", "bound": "triangle"}
    lines = [f"digraph {_dot_id(title)} {{", "  rankdir=TB;", f"  label={_dot_id(title)};",
             '  node [style=filled, fontname="Helvetica", fontcolor="white"];']
    levels = sorted({data["level"] for _, data in dag.nodes(data=True)})
    for level in levels:
        lines.append(f"  subgraph level_{level} {{")
        lines.append("    rank=same;")
        for name, data in sorted(((n, d) for n, d in dag.nodes(data=True) if d["level"] == level),
                                 key=lambda nd: nd[1]["position"]):
            label = f"{name}\\n(solved)" if data["solved"] else name
            lines.append(f"    {_dot_id(name)} [label={_dot_id(label, escaped=True)}, "
                         f"shape={shapes[data['kind']]}, fillcolor=\"{KINDS[data['kind']][2]}\", "
                         f"tooltip={_dot_id(data['kind'] + ' at loop level ' + str(level))}];")
        lines.append("  }")
    for u, v in dag.edges:
        lines.append(f"  {_dot_id(u)} -> {_dot_id(v)};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _dot_id(text: str, escaped: bool = False) -> str:
    """A quoted DOT identifier (``escaped``: ``\\n`` in ``text`` is DOT's line break, kept)."""
    body = text.replace("\\", "\\\\") if not escaped else text
    return '"' + body.replace('"', '\\"') + '"'


#: items of a level drawn side by side before the row wraps
ROW_ITEMS = 7


def draw_dag(dag: nx.DiGraph, path: str, title: str, file_format: str = "png") -> None:
    """The DAG as a picture laid out like the loop nest: each loop's iterator on the left, one
    below the other (the outermost at the top), what the plan computes at that loop to its right in
    the order it runs (wrapped every :data:`ROW_ITEMS`), edges in grey, the kinds' legend beside."""
    import matplotlib  # optional (beastgen[plot], checked by check_dag_path), slow to import
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    levels = sorted({data["level"] for _, data in dag.nodes(data=True)})
    positions, y = {}, 0.0
    for level in levels:
        row = sorted((n for n, d in dag.nodes(data=True) if d["level"] == level),
                     key=lambda n: (dag.nodes[n]["kind"] != "iterator", dag.nodes[n]["position"]))
        positions[row[0]] = (0.0, y)
        for index, name in enumerate(row[1:]):
            positions[name] = (1.0 + index % ROW_ITEMS, y - 0.55 * (index // ROW_ITEMS))
        y -= 0.55 * max(1, -(-(len(row) - 1) // ROW_ITEMS)) + 0.6
    fig, ax = plt.subplots(figsize=(2.0 + 1.45 * (ROW_ITEMS + 1), 1.0 + 0.75 * -y))
    nx.draw_networkx_edges(dag, positions, ax=ax, edge_color="#888888", alpha=0.55, width=0.6,
                           arrowsize=7, node_size=180, connectionstyle="arc3,rad=0.12")
    for kind, (label, marker, colour) in KINDS.items():
        names = [n for n, d in dag.nodes(data=True) if d["kind"] == kind]
        if names:
            nx.draw_networkx_nodes(dag, positions, nodelist=names, node_shape=marker,
                                   node_color=colour, node_size=180, ax=ax, label=label,
                                   edgecolors=["black" if dag.nodes[n]["solved"] else colour
                                               for n in names], linewidths=1.5)
    nx.draw_networkx_labels(dag, {n: (x, yy - 0.14) for n, (x, yy) in positions.items()},
                            labels={n: f"{n} (solved)" if dag.nodes[n]["solved"] else n for n in dag},
                            font_size=7, verticalalignment="top", ax=ax)
    ax.set_axis_off()
    ax.set_xlim(-0.6, ROW_ITEMS + 0.6)
    ax.set_ylim(y + 0.3, 0.45)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False, fontsize=8,
              markerscale=0.8)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100, format=file_format)
    plt.close(fig)


