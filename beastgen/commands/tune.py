"""``beastgen tune``: benchmark configurations on a device and search for the fastest (with
``--scheduler``, :mod:`.on_cluster` runs the same search through :func:`search`)."""
import json
import sys

from ..errors import BeastError
from ..harness.tuning import tune
from ..harness.store import latest_run_size
from ..harness.strategies import DEFAULT as DEFAULT_STRATEGY
from ..harness.strategies.options import parse_assignments
from .common import check_plot, parse_kernel_time, parse_settings


def run(args) -> int:
    if args.inputs is not None:
        return collect_inputs(args)
    return search(args, tune)


def collect_inputs(args) -> int:
    """``tune --inputs SPEC``: random (input, configuration) pairs for ``beastgen predict``."""
    from ..harness.inputs import collect

    for option in ("strategy", "prior", "budget", "time", "good_enough", "plot", "replay",
                   "strategy_option", "confidence"):
        if getattr(args, option) not in (None, [], DEFAULT_STRATEGY):
            raise BeastError(f"--inputs draws its pairs at random: --{option.replace('_', '-')} "
                             "does not apply to it")
    try:
        done = collect(args.space, args.inputs, args.pairs, per_input=args.per_input,
                       backend=args.backend, device=args.device,
                       settings=parse_settings(args.settings), results=args.results, seed=args.seed,
                       iterations=args.iterations, generated_dir=args.generated_dir)
    except KeyboardInterrupt:
        print(f"beastgen: the pairs measured so far are kept in {args.results}; the same command "
              "resumes from them (nothing measured is run again)", file=sys.stderr, flush=True)
        raise
    print(done.report(args.results))
    if args.json:
        print(json.dumps(vars(done)))
    return 0


def search(args, tune_function) -> int:
    """Run ``tune_function`` (the local ``harness.tuning.tune`` or its Dask twin) with the options of
    ``args`` and print the result."""
    check_plot(args)
    good_enough = parse_kernel_time(args.good_enough, "--good-enough")
    try:
        result = tune_function(args.space, backend=args.backend, device=args.device,
                               settings=parse_settings(args.settings), replay=args.replay,
                               budget=args.budget, time_limit=args.time, results=args.results,
                               strategy=args.strategy, seed=args.seed, iterations=args.iterations,
                               generated_dir=args.generated_dir, progress=not args.no_progress,
                               plot=args.plot, priors=args.prior, good_enough=good_enough,
                               strategy_options=parse_assignments(args.strategy_option),
                               confidence=args.confidence)
    except KeyboardInterrupt:
        print(interrupted_message(args.results), file=sys.stderr, flush=True)
        raise
    print(result.report())
    if args.plot:
        print(f"wrote {args.plot}")
    if args.json:
        print(json.dumps(result.as_dict(), default=str))
    return 0


def interrupted_message(results: str) -> str:
    """What a Ctrl-C'd tune keeps, and how to go on."""
    latest = latest_run_size(results)
    if latest is None:
        return f"beastgen: no result was recorded in {results}"
    run, rows = latest
    return (f"beastgen: {rows:,} results of run {run} are kept in {results}; the same command "
            "resumes from them (nothing measured is run again)")
