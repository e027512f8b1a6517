"""``beastgen show``: variables, dependency DAG and the loop nest with each filter placed."""
import os
import textwrap

from ..compiler.language.nodes import Expr
from ..compiler.language.printer import expr_source
from ..compiler.language.readable import readable
from ..compiler.specialize.value_types import infer_type
from .common import compile_target, describe_target


def run(args) -> int:
    if args.dag:
        from ..compiler.plan_graph import check_dag_path, write_dag  # networkx, matplotlib: for --dag
        check_dag_path(args.dag)
    plan = compile_target(args)
    space = plan.specialized.space
    print(describe_target(plan))
    print()
    for kind, label in (("device", "device properties"), ("iterator", "iterators"),
                        ("derived", "derived values"),
                        ("filter", "filters"), ("bound", "bound terms")):
        variables = space.of_kind(kind)
        if variables:
            print(textwrap.fill(f"{label}: {', '.join(variables)}", width=100,
                                subsequent_indent="    ", break_on_hyphens=False))
    spec = plan.specialized
    if spec.dropped_filters:
        print(f"filters always false for these settings (dropped): {', '.join(spec.dropped_filters)}")
    if plan.plan is None:
        print(f"\nempty: {plan.empty_reason}")
        return 0
    print("\ndependency DAG (variable <- what it reads):")
    for name, item in spec.items.items():
        print(f"  {name:<24} <- {', '.join(item.deps) or '(constants only)'}")
    print("\nloop nest (a filter REJECTS when true):")
    for index, level in enumerate(plan.plan.levels):
        pad = "  " * index
        print(f"  {pad}for {level.iterator.name} in {level.iterator.source_text}")
        if level.solved:
            solution = level.solved
            print(f"  {pad}  (no loop: filter {solution.filter.name} is solved, {level.iterator.name} = "
                  f"{expr_source(solution.numerator)} / {expr_source(solution.denominator)} "
                  "when divisible and inside the domain)")
        for item in level.body:
            what = {"filter": "rejects when ", "bound": ">= "}.get(item.kind, "= ")
            print(f"  {pad}  {item.kind} {item.name} {what}{_shortened(_readable_text(item, spec))}")
    print(f"\ngenerated enumerator: {os.path.relpath(plan.path)}")
    if args.dag:
        write_dag(plan.plan, args.dag, f"{space.name} on {plan.target.device}: loops, derived values, "
                                       "filters and bounds at the level where they are computed")
        print(f"wrote {args.dag}")
    return 0


def _readable_text(item, spec) -> str:
    """The item's expression as specialized (device properties and settings folded), made
    readable; a function's name stays in front (``a_incongruent(): ...``)."""
    if not isinstance(item.expr, Expr):
        return item.source_text
    text = expr_source(readable(item.expr, lambda node: infer_type(node, spec.items) == "int",
                                test=item.kind == "filter"), root=True)
    prefix = f"{item.name}(): "
    return prefix + text if item.source_text.startswith(prefix) else text


#: the longest expression shown whole (a bound-term library call unfolds into thousands of characters)
SHOWN_CHARACTERS = 200


def _shortened(text: str) -> str:
    if len(text) <= SHOWN_CHARACTERS:
        return text
    return (f"{text[:SHOWN_CHARACTERS - 40].rstrip()} ... ({len(text):,} characters; the whole "
            "expression is in the generated enumerator)")
