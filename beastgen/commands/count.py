"""``beastgen count``: the valid configurations, exhaustive or bound-pruned (``--scheduler``:
:mod:`.on_cluster`)."""
from __future__ import annotations

import json
import time

from ..errors import BeastError
from ..support.progress import Elapsed, ShareBar
from ..support.units import format_seconds, parse_threshold
from .common import announce_compiling, compile_target, describe_target, jobs, report_count, shows_progress, target_record


def run(args) -> int:
    start = time.perf_counter()
    plan = compile_target(args)
    print(describe_target(plan))
    announce_compiling(plan)
    if args.threshold is not None:
        if args.stats:
            raise BeastError("--stats counts the exhaustive space; use `beastgen compare` for "
                             "per-level statistics of bound pruning")
        threshold = parse_threshold(args.threshold)
        best = plan.best_bound()
        seconds_limit = plan.threshold_seconds(threshold)
        with Elapsed("counting", shows_progress(args)):
            count = plan.count(seconds_limit)
        seconds = plan.last_seconds
        total = time.perf_counter() - start
        which = (f"{threshold.factor:g}x the best bound, {format_seconds(best)}" if threshold.factor
                 else f"the best bound is {format_seconds(best)}")
        print(f"{count:,} valid configurations with a lower bound of at most "
              f"{format_seconds(seconds_limit)} ({which}; "
              f"enumeration {seconds:.3f} s, total {total:.2f} s)")
        if count == 0:
            print(f"empty: no configuration's lower bound is at most {format_seconds(seconds_limit)}; "
                  f"the best is {format_seconds(best)} (try --threshold 1.5x)")
        if args.json:
            print(json.dumps(target_record(plan) | {
                "count": count, "threshold_seconds": seconds_limit, "seconds": seconds,
                "total_seconds": total}))
        return 0
    with ShareBar("counting", shows_progress(args)) as bar:
        stats = plan.stats() if args.stats else None
        count = stats.count if stats else plan.count(jobs=jobs(args),
                                                     progress=LongCountWarning(args, bar))
    seconds = stats.seconds if stats else plan.last_seconds
    why_empty = plan.why_empty() if count == 0 else None  # part of the command: before the total
    total = time.perf_counter() - start
    print(f"{count:,} valid configurations (enumeration {seconds:.3f} s, total {total:.2f} s)")
    report_count(args, plan, count, stats, {"seconds": seconds, "total_seconds": total}, why_empty)
    return 0


class LongCountWarning:
    """Progress of a count: the bar moves; once it has run half a second, if the rest will take
    over a minute (extrapolated from the share done), say how long and how to get an estimate."""

    LIMIT_SECONDS = 60.0

    def __init__(self, args, bar: ShareBar):
        self.args, self.bar, self.warned = args, bar, False

    def __call__(self, done: float, seconds: float) -> None:
        self.bar(done, seconds)
        if self.warned or seconds < 0.5 or done >= 1.0:
            return
        total = seconds / max(done, 1e-12)
        if total > self.LIMIT_SECONDS:
            self.warned = True
            self.bar.write(f"beastgen: this count will take about {_duration(total)} (extrapolated "
                           f"from the {done:.2%} of it done in {seconds:.1f} s); `beastgen estimate "
                           f"{self.args.space}` (with the same --device and --set) estimates it in "
                           "seconds; Ctrl-C stops")


def _duration(seconds: float) -> str:
    for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:,.1f} {unit}"
    return f"{seconds:.0f} seconds"
