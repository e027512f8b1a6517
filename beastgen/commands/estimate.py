"""``beastgen estimate``: the number of valid configurations estimated without counting."""
import json
import sys

from ..errors import BeastError
from ..support.progress import Elapsed
from .common import compile_target, describe_target, shows_progress, target_record

#: the time budget of `beastgen estimate` without --samples
ESTIMATE_SECONDS = 1.5


def run(args) -> int:
    if args.samples is not None and args.samples < 2:
        raise BeastError("--samples must be at least 2")
    plan = compile_target(args)
    print(describe_target(plan))
    plan.check_estimable()  # before compiling: a level too large to scan is refused at once
    if args.samples is None and plan.estimate_needs_compiling(args.method):
        print("compiling the estimator (cached after the first run)...", file=sys.stderr, flush=True)
    with Elapsed("estimating", shows_progress(args)):
        estimate = plan.estimate(args.samples, args.seed, method=args.method,
                                 seconds=None if args.samples else ESTIMATE_SECONDS)
    report(args, plan, estimate)
    return 0


def report(args, plan, estimate) -> None:
    """The estimate's line (and JSON record)."""
    what = "random descents" if estimate.method == "knuth" else "runs of Chen's heuristic sampling"
    if estimate.method == "exact":
        print(f"{estimate.count:,.0f} valid configurations (counted exactly in {estimate.seconds:.2f} s, "
              "within the estimate's time budget)")
    elif estimate.high == 0:
        print(f"no valid configuration reached by {estimate.samples:,} {what} in "
              f"{estimate.seconds:.2f} s: the space is empty or too sparse to sample; count it "
              "(beastgen count) or sample more (--samples)")
    else:
        print(f"about {estimate.count:,.0f} valid configurations (95% confidence interval "
              f"{estimate.low:,.0f} to {estimate.high:,.0f}; {estimate.samples:,} {what} in "
              f"{estimate.seconds:.2f} s)")
    if args.json:
        print(json.dumps(target_record(plan) | {
            "estimate": estimate.count, "low": estimate.low, "high": estimate.high,
            "samples": estimate.samples, "seconds": estimate.seconds, "method": estimate.method}))
