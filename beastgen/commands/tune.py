"""``beastgen tune``: benchmark configurations on a device and search for the fastest (with
``--scheduler``, :mod:`.on_cluster` runs the same search through :func:`search`)."""
import json

from ..harness.tune import tune
from .common import parse_settings


def run(args) -> int:
    return search(args, tune)


def search(args, tune_function) -> int:
    """Run ``tune_function`` (the local ``harness.tune.tune`` or its Dask twin) with the options of
    ``args`` and print the result."""
    result = tune_function(args.space, backend=args.backend, device=args.device,
                           settings=parse_settings(args.settings), replay=args.replay, budget=args.budget,
                           time_limit=args.time, results=args.results, strategy=args.strategy,
                           seed=args.seed, iterations=args.iterations, generated_dir=args.generated_dir,
                           progress=not args.no_progress, plot=args.plot, priors=args.prior)
    print(result.report())
    if args.plot:
        print(f"wrote {args.plot}")
    if args.json:
        print(json.dumps(result.as_dict(), default=str))
    return 0
