"""``count``, ``enumerate`` and ``tune`` with ``--scheduler``: the same work on a Dask cluster
(``beastgen.distributed``, which imports the harness and, when connecting, Dask)."""
from __future__ import annotations

import functools
import os
import time

from .. import distributed
from ..errors import BeastError
from . import estimate as estimate_command
from . import tune
from .common import announce_compiling, compile_target, describe_target, report_count


def run(args) -> int:
    if getattr(args, "inputs", None) is not None:
        raise BeastError("--inputs with --scheduler: a collection across inputs runs on one machine "
                         "(drop --scheduler)")
    return {"count": count, "enumerate": enumerate_parquet, "estimate": estimate,
            "tune": tune_candidates}[args.command](args)


def count(args) -> int:
    start = time.perf_counter()
    plan = compile_target(args)
    print(describe_target(plan))
    announce_compiling(plan)
    if args.threshold is not None:
        raise BeastError("--threshold with --scheduler: a bound-pruned count runs on one machine "
                         "(drop --scheduler; it is fast)")
    with distributed.Cluster(args.scheduler) as client:
        if args.stats:
            stats, run = distributed.stats(plan, client)
        else:
            stats, run = None, distributed.count(plan, client)
    count = run.count
    why_empty = plan.why_empty() if count == 0 else None  # part of the command: before the total
    total = time.perf_counter() - start
    print(f"{count:,} valid configurations (on {_workers(run)} in {len(run.chunks)} chunks: "
          f"{run.seconds:.3f} s, total {total:.2f} s)")
    _print_balance(run)
    report_count(args, plan, count, stats, {"seconds": run.seconds, "total_seconds": total,
                                            "scheduler": args.scheduler, "distributed": run.as_dict()},
                 why_empty)
    return 0


def estimate(args) -> int:
    """Chen's or Knuth's estimate in tasks of independent random streams (seed, seed+1, ...)."""
    if args.samples is not None and args.samples < 2:
        raise BeastError("--samples must be at least 2")
    plan = compile_target(args)
    print(describe_target(plan))
    with distributed.Cluster(args.scheduler) as client:
        result = distributed.estimate(plan, client, args.samples, args.seed, args.method)
    estimate_command.report(args, plan, result)
    return 0


def enumerate_parquet(args) -> int:
    plan = compile_target(args)
    distributed.chunks.prepare_directory(args.output)  # its errors before starting anything
    print(describe_target(plan))
    with distributed.Cluster(args.scheduler) as client:
        run = distributed.enumerate_to_parquet(plan, client, args.output)
    print(f"wrote {run.count:,} configurations to {os.path.join(args.output, '')} as "
          f"{max(len(run.chunks), 1)} Parquet "
          f"parts in enumeration order (on {_workers(run)}: {run.seconds:.3f} s)")
    _print_balance(run)
    return 0


def tune_candidates(args) -> int:
    """The same search, every candidate run on a Dask worker holding a GPU."""
    return tune.search(args, functools.partial(distributed.tune_on_cluster, scheduler=args.scheduler))


def _workers(run) -> str:
    return f"{run.workers} Dask worker{'s' if run.workers != 1 else ''}"


def _print_balance(run) -> None:
    balance = run.balance()
    if run.chunks and run.count and not run.estimated_work:
        print(f"chunk balance (largest / mean chunk): measured seconds "
              f"{balance['seconds_max_over_mean']:.2f} (no census: equal ranges of "
              f"{run.chunks[-1][1]:,} split nodes)")
    elif run.chunks and run.count:
        print(f"chunk balance (largest / mean chunk): estimated work {balance['work_max_over_mean']:.2f}, "
              f"measured seconds {balance['seconds_max_over_mean']:.2f} (census {run.census_seconds:.2f} s)")
