"""``beastgen check-bounds``: the bound model against real measurements (a Kernel Tuner cache)."""
import json

from ..harness.recorded import check_bounds, load_replay, plot_terms, term_samples
from .common import check_plot, compile_target, describe_target


def run(args) -> int:
    check_plot(args)
    replay = load_replay(args.replay)
    plan = compile_target(args)
    print(describe_target(plan))
    check = check_bounds(plan, replay)
    print(check.report())
    if args.plot:
        plot_terms(replay, term_samples(plan, replay), args.plot,
                   f"{plan.specialized.space.name} on {replay.device_name}: bound terms against measured times")
        print(f"wrote {args.plot}")
    if args.json:
        print(json.dumps(check.as_dict()))
    return 1 if check.violations else 0
