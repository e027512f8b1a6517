"""``beastgen compare``: exhaustive versus bound-pruned counts, and where the cuts happen."""
import json

from ..compiler.runtime.comparison import plot_comparison
from ..support.units import format_seconds, parse_threshold
from .common import check_plot, compile_target, describe_target


def run(args) -> int:
    check_plot(args)
    plan = compile_target(args)
    print(describe_target(plan))
    comparison = plan.compare(parse_threshold(args.threshold))
    print(f"best bound {format_seconds(comparison.best_bound_seconds)}; threshold "
          f"{format_seconds(comparison.threshold_seconds)} ({comparison.threshold})")
    print(f"exhaustive: {comparison.exhaustive:,} valid configurations")
    share = comparison.bound_pruned / comparison.exhaustive if comparison.exhaustive else 0.0
    print(f"bound-pruned: {comparison.bound_pruned:,} ({share:.1%}); the same without hoisting "
          f"bound terms: {comparison.bound_pruned_innermost:,}")
    print()
    print(comparison.table())
    if args.plot:
        plot_comparison(comparison, args.plot)
        print(f"\nwrote {args.plot}")
    if args.json:
        print(json.dumps(comparison.as_dict()))
    return 0
