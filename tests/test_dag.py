"""`beastgen show --dag`: the plan's dependency DAG (networkx) drawn and written, each item at the
loop where the plan computes it."""
import os
import re

import networkx as nx
import pytest

from beastgen.cli import main
from beastgen.compiler.plan_graph import dot_text, plan_dag

from conftest import REPO

GEMM = os.path.join(REPO, "spaces", "gemm.py")


def test_every_item_is_at_its_level_with_its_dependencies(gemm_h100):
    plan = gemm_h100.plan
    dag = plan_dag(plan)
    assert set(dag) == {item.name for level in plan.levels for item in level.items}
    for name, data in dag.nodes(data=True):
        assert data["level"] == plan.level_of(name)
        assert set(dag.predecessors(name)) == set(plan.specialized.items[name].deps)
    assert nx.is_directed_acyclic_graph(dag)
    solved = {name for name, data in dag.nodes(data=True) if data["solved"]}
    assert solved == {level.solved.filter.name for level in plan.levels if level.solved}
    assert {dag.nodes[n]["kind"] for n in dag} == {"iterator", "derived", "filter", "bound"}


def test_dot_puts_each_filter_in_the_rank_of_its_loop(gemm_h100):
    plan = gemm_h100.plan
    text = dot_text(plan_dag(plan), 'gemm "flagship"')
    assert text.startswith('digraph "gemm \\"flagship\\"" {')
    ranks = re.findall(r"subgraph level_(\d+) \{\n    rank=same;\n((?:    \".*\n)+)  \}", text)
    assert len(ranks) == len(plan.levels)
    for level, body in ranks:
        names = re.findall(r'^    "([^"]+)"', body, flags=re.M)
        assert names == [item.name for item in plan.levels[int(level)].items]
    edges = re.findall(r'^  "([^"]+)" -> "([^"]+)";$', text, flags=re.M)
    assert set(edges) == set(plan_dag(plan).edges)


@pytest.mark.parametrize("suffix", [".png", ".dot", ".graphml"])
def test_show_writes_the_dag(tmp_path, capsys, suffix):
    path = tmp_path / f"dag{suffix}"
    assert main(["show", GEMM, "--generated-dir", str(tmp_path / "gen"), "--dag", str(path)]) == 0
    assert f"wrote {path}" in capsys.readouterr().out
    data = path.read_bytes()
    if suffix == ".png":
        assert data.startswith(b"\x89PNG") and len(data) > 10_000
    elif suffix == ".graphml":
        graph = nx.read_graphml(path)
        assert graph.nodes["over_max_shmem"]["kind"] == "filter"
        assert graph.nodes["over_max_shmem"]["level"] == graph.nodes["blk_k"]["level"] == 4
    else:
        assert data.startswith(b"digraph")


def test_an_unknown_format_is_refused_before_the_work(tmp_path, capsys):
    assert main(["show", GEMM, "--generated-dir", str(tmp_path / "gen"), "--dag",
                 str(tmp_path / "dag.txt")]) == 2
    captured = capsys.readouterr()
    assert "--dag writes .png" in captured.err and "not .txt" in captured.err
    assert captured.out == "" and not (tmp_path / "gen").exists()
