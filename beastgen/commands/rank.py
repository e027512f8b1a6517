"""``beastgen rank``: the configurations with the smallest lower bounds."""
import json
import math

from ..errors import BeastError
from ..support.table import format_table
from ..support.units import format_seconds, parse_threshold
from .common import compile_target, describe_target, target_record


def run(args) -> int:
    if args.top < 1:
        raise BeastError(f"--top must be at least 1, got {args.top}")
    plan = compile_target(args)
    print(describe_target(plan))
    threshold = math.inf
    if args.threshold is not None:
        threshold = plan.threshold_seconds(parse_threshold(args.threshold))
    ranked = plan.rank(args.top, threshold)
    columns = plan.columns
    rows = [[str(i + 1), format_seconds(float(r["bound"])), str(r["bottleneck"]),
             *(str(r[c]) for c in columns)] for i, r in enumerate(ranked)]
    print(format_table(["#", "bound", "bottleneck", *columns], rows))
    if args.json:
        print(json.dumps(target_record(plan) | {"top": [
            {"bound_seconds": float(r["bound"]), "bottleneck": str(r["bottleneck"]),
             "config": {c: r[c].item() for c in columns}} for r in ranked]}))
    return 0
