"""The ``beastgen`` command line: show, generate, count, enumerate, rank, compare, check-bounds,
devices."""
from __future__ import annotations

import argparse
import functools
import json
import math
import os
import sys
import time

from . import __version__
from .bounds import format_seconds, parse_threshold
from .errors import BeastError
from .output import AtomicOutput, write_csv


def _settings(pairs: list[list[str]] | None) -> dict:
    settings = {}
    for group in pairs or []:
        for pair in group:
            name, sep, value = pair.partition("=")
            if not sep or not name:
                raise BeastError(f"--set expects name=value, got {pair!r}")
            settings[name.strip()] = value.strip()
    return settings


def _set_before_positionals(argv: list[str]) -> list[str]:
    """``--set a=1 SPACE`` as ``SPACE --set a=1``: ``--set`` takes only ``name=value`` words, so the
    words after them are positionals that argparse would otherwise swallow into ``--set``."""
    out, i = [], 0
    while i < len(argv):
        end = i + 1
        if argv[i] == "--set":
            while end < len(argv) and "=" in argv[end] and not argv[end].startswith("-"):
                end += 1
        rest = end
        if end > i + 1 and argv[i] == "--set":
            while rest < len(argv) and not argv[rest].startswith("-"):
                rest += 1
        out += argv[end:rest] + argv[i:end]
        i = rest
    return out


def _add_space_args(p: argparse.ArgumentParser, device=True) -> None:
    p.add_argument("space", help="space file (.py) or T1 JSON space (.json)")
    if device:
        p.add_argument("--device", "-d", default=None,
                       help="device profile: a built-in name (see `beastgen devices`), a .toml file, "
                            "or 'auto' (default: h100)")
    p.add_argument("--set", dest="settings", nargs="+", action="append", metavar="NAME=VALUE",
                   help="override settings (repeatable)")
    p.add_argument("--generated-dir", default=None,
                   help="where generated enumerators go (default: ./generated)")


def _threads(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"a number of threads (0: one per core), not {text!r}")
    return int(text)


def _add_jobs_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jobs", "-j", type=_threads, default=1, metavar="N",
                   help="threads on this machine, each taking chunks balanced by estimated size "
                        "(0: one per core; default 1)")


def _jobs(args) -> int:
    return args.jobs or os.cpu_count() or 1


def _add_scheduler_arg(p: argparse.ArgumentParser, what: str) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help=f"{what} on a Dask cluster: a scheduler address (tcp://host:8786, "
                            "tls://...), or local:N for N local worker processes (needs pip install "
                            "'beastgen[dask]')")
    group.add_argument("--scheduler-file", dest="scheduler", metavar="FILE",
                       type=lambda path: f"scheduler-file:{os.path.abspath(path)}",
                       help="the same, the scheduler's address read from the file that "
                            "`dask scheduler --scheduler-file FILE` writes")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="beastgen",
        description="Compile declarative GPU tuning spaces into fast exact enumerators. "
                    "A filter REJECTS a configuration when it is true.")
    parser.add_argument("--version", action="version", version=f"beastgen {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("show", help="variables, dependency DAG and the loop nest with each filter placed")
    _add_space_args(p)

    p = sub.add_parser("generate", help="write the generated enumerator")
    _add_space_args(p)

    p = sub.add_parser("count", help="count the valid configurations")
    _add_space_args(p)
    p.add_argument("--stats", action="store_true", help="iterations per loop level, rejections per filter")
    p.add_argument("--threshold", "-t", default=None,
                   help="bound-pruned count: only configurations whose lower bound is at most this "
                        "time (1.5ms, 250us, 0.002) or factor of the best bound (2x)")
    p.add_argument("--json", action="store_true", help="print one JSON object (last line)")
    _add_jobs_arg(p)
    _add_scheduler_arg(p, "count in chunks")

    p = sub.add_parser("estimate", help="estimate the number of valid configurations (Knuth's "
                                        "estimator or Chen's heuristic sampling, 95%% confidence "
                                        "interval) without counting")
    _add_space_args(p)
    p.add_argument("--method", choices=["chen", "knuth"], default="chen",
                   help="chen: heuristic sampling, stratified runs (default); knuth: random descents")
    p.add_argument("--samples", "-n", type=int, default=None,
                   help="random descents (knuth, default 100000) or runs (chen, default 30000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print one JSON object (last line)")
    _add_scheduler_arg(p, "estimate in tasks of independent random streams (seed, seed+1, ...)")

    p = sub.add_parser("rank", help="the configurations with the smallest lower bounds")
    _add_space_args(p)
    p.add_argument("--top", "-k", type=int, default=10, help="how many (default 10)")
    p.add_argument("--threshold", "-t", default=None, help="only bounds at most this (time or factor)")
    p.add_argument("--json", action="store_true", help="print one JSON object (last line)")

    p = sub.add_parser("compare", help="exhaustive versus bound-pruned counts, and where the cuts happen")
    _add_space_args(p)
    p.add_argument("--threshold", "-t", required=True,
                   help="a time (1.5ms, 250us, 0.002) or a factor of the best bound (2x)")
    p.add_argument("--json", action="store_true", help="print one JSON object (last line)")
    p.add_argument("--plot", default=None, metavar="PNG", help="draw the per-level picture")

    p = sub.add_parser("enumerate", help="write every valid configuration to a file")
    _add_space_args(p)
    p.add_argument("-o", "--output", required=True,
                   help="output file: .csv, .parquet or .npy (with --scheduler: a directory, which "
                        "receives a partitioned Parquet dataset)")
    _add_jobs_arg(p)
    _add_scheduler_arg(p, "enumerate in chunks")

    p = sub.add_parser("check-bounds",
                       help="check the bound model against real measurements (a Kernel Tuner cache file)")
    _add_space_args(p)
    p.add_argument("--replay", required=True, metavar="FILE.json[.gz]", help="Kernel Tuner cache file")
    p.add_argument("--json", action="store_true", help="print one JSON object (last line)")
    p.add_argument("--plot", default=None, metavar="PNG", help="draw measured time against each bound term")

    p = sub.add_parser("tune", help="benchmark configurations on a device and search for the fastest "
                                    "(branch and bound on the lower bounds, or a baseline strategy)")
    _add_space_args(p, device=False)
    p.add_argument("--device", "-d", default=None,
                   help="opencl: opencl:N (default opencl:0, its profile read from the device) or a profile "
                        "written by `beastgen calibrate` (run on the device it names); cuda: a "
                        "profile or auto (default); replay: a profile (default: the file's GPU)")
    p.add_argument("--backend", "-b", default="opencl", choices=["opencl", "cuda", "replay"])
    p.add_argument("--replay", default=None, metavar="FILE.json[.gz]",
                   help="Kernel Tuner cache file answering the runs (--backend replay)")
    p.add_argument("--budget", type=int, default=None, metavar="N", help="at most N runs in this invocation")
    p.add_argument("--time", type=float, default=None, metavar="SECONDS", help="stop after this long")
    p.add_argument("--results", default="beastgen-results.db", metavar="DB",
                   help="SQLite results store; a run resumes from it (default beastgen-results.db)")
    p.add_argument("--strategy", default="branch_and_bound",
                   choices=["branch_and_bound", "bound_order", "exhaustive", "random", "genetic"])
    p.add_argument("--seed", type=int, default=0, help="seed of the random and genetic strategies")
    p.add_argument("--iterations", type=int, default=None, help="timed runs per configuration")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print one JSON object (last line)")
    p.add_argument("--plot", default=None, metavar="PNG", help="plot measured time against bound")
    _add_scheduler_arg(p, "run each candidate on a worker holding a GPU (--resources GPU=1)")

    p = sub.add_parser("export", help="write the space for another tool: its valid configurations "
                                      "for Kernel Tuner, or the space as T1 JSON")
    _add_space_args(p)
    p.add_argument("--format", "-f", required=True, choices=["kernel_tuner", "t1"],
                   help="kernel_tuner: tune_params and every valid configuration (JSON, loadable with "
                        "Kernel Tuner's Searchspace(from_cache=...)); t1: the space as T1 JSON")
    p.add_argument("-o", "--output", required=True, help="output JSON file")

    p = sub.add_parser("nvcc-check", help="compile a sample of configurations of the space's CUDA kernel "
                                          "with nvcc (nothing runs) and compare ptxas's registers "
                                          "with the space's estimate `regs`")
    _add_space_args(p)
    p.add_argument("--samples", "-n", type=int, default=20, help="configurations to compile (default 20)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random sample")
    p.add_argument("--json", action="store_true", help="print one JSON object (last line)")

    p = sub.add_parser("calibrate", help="measure a device with microbenchmarks (clock, FMA rate, DRAM and "
                                         "L2 bandwidth, local-memory wavefronts, launch overhead) and "
                                         "write a device profile for --device FILE.toml")
    p.add_argument("--device", "-d", required=True, help="opencl:N or cuda:N")
    p.add_argument("-o", "--output", default=None, metavar="FILE.toml",
                   help="where the profile goes (default: calibrated-opencl0.toml for opencl:0)")
    p.add_argument("--repetitions", "-r", type=int, default=None, metavar="N",
                   help="runs of each microbenchmark, the fastest kept (default 10)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")

    sub.add_parser("devices", help="list the built-in device profiles")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(_set_before_positionals(sys.argv[1:] if argv is None else argv))
    try:
        return COMMANDS[args.command](args)
    except BeastError as e:
        print(f"beastgen: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("beastgen: interrupted (Ctrl-C)", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)  # now: compiled work may still run in a thread that cannot be stopped


# --------------------------------------------------------------------------------------------------
def _compile(args):
    from .loading import load
    from .compiler.runtime import compile_space

    space = load(args.space)
    plan = compile_space(space, device=args.device, settings=_settings(args.settings),
                         generated_dir=args.generated_dir)
    return space, plan


def _describe_target(plan) -> str:
    spec = plan.specialized
    default = " (the built-in default; choose with --device)" if spec.device.source == "built-in" \
        and spec.device.key == _default_key() else ""
    settings = ", ".join(f"{k}={v!r}" for k, v in spec.settings.items()) or "none"
    return (f"space {spec.space.name} ({spec.space.path}) on {spec.device.key} "
            f"({spec.device.name}){default}\nsettings: {settings}")


def _default_key() -> str:
    from .devices import DEFAULT_DEVICE
    return DEFAULT_DEVICE


def cmd_devices(args) -> int:
    from .devices import format_profiles_table
    print(format_profiles_table())
    return 0


def cmd_generate(args) -> int:
    _, plan = _compile(args)
    if plan.plan is None:
        print(f"nothing to generate: {plan.empty_reason}")
        return 0
    plan.write()
    print(f"wrote {os.path.relpath(plan.path)} (loop order: {', '.join(plan.plan.order)})")
    return 0


def cmd_count(args) -> int:
    start = time.perf_counter()
    _, plan = _compile(args)
    print(_describe_target(plan))
    if plan.plan is not None:
        print("compiling the enumerator (cached after the first run)...", file=sys.stderr, flush=True)
    if args.scheduler:
        return _count_on_cluster(args, plan, start)
    if args.threshold is not None:
        if args.stats:
            raise BeastError("--stats counts the exhaustive space; use `beastgen compare` for "
                             "per-level statistics of bound pruning")
        threshold = parse_threshold(args.threshold)
        seconds_limit = threshold.resolve(plan.best_bound() if threshold.factor else math.inf)
        count = plan.count(seconds_limit)
        seconds = plan.last_seconds
        total = time.perf_counter() - start
        print(f"{count:,} valid configurations with a lower bound of at most "
              f"{format_seconds(seconds_limit)} ({threshold}) (enumeration {seconds:.3f} s, "
              f"total {total:.2f} s)")
        if args.json:
            print(json.dumps(_target_record(plan) | {
                "count": count, "threshold_seconds": seconds_limit, "seconds": seconds,
                "total_seconds": total}))
        return 0
    stats = plan.stats() if args.stats else None
    count = stats.count if stats else plan.count(jobs=_jobs(args), progress=_LongCountWarning(args))
    seconds = stats.seconds if stats else plan.last_seconds
    total = time.perf_counter() - start
    print(f"{count:,} valid configurations (enumeration {seconds:.3f} s, total {total:.2f} s)")
    _report_count(args, plan, count, stats, {"seconds": seconds, "total_seconds": total})
    return 0


class _LongCountWarning:
    """Progress of a count: once it has run half a second, if the rest will take over a minute
    (extrapolated from the share done), say how long and how to get an estimate instead."""

    LIMIT_SECONDS = 60.0

    def __init__(self, args):
        self.args, self.warned = args, False

    def __call__(self, done: float, seconds: float) -> None:
        if self.warned or seconds < 0.5 or done >= 1.0:
            return
        total = seconds / max(done, 1e-12)
        if total > self.LIMIT_SECONDS:
            self.warned = True
            print(f"beastgen: this count will take about {_duration(total)} (extrapolated from "
                  f"the {done:.2%} of it done in {seconds:.1f} s); `beastgen estimate "
                  f"{self.args.space}` (with the same --device and --set) estimates it in seconds; "
                  "Ctrl-C stops", file=sys.stderr, flush=True)


def _duration(seconds: float) -> str:
    for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:,.1f} {unit}"
    return f"{seconds:.0f} seconds"


def _report_count(args, plan, count: int, stats, record: dict) -> None:
    """After the count's line: why the space is empty, the statistics, the JSON record."""
    if count == 0:
        print(f"empty: {plan.why_empty()}")
    if stats:
        print()
        print(format_stats(plan, stats))
    if args.json:
        record = _target_record(plan) | {"count": count} | record
        if stats:
            record["stats"] = stats.as_dict()
        print(json.dumps(record))


def _count_on_cluster(args, plan, start: float) -> int:
    from . import distributed

    if args.threshold is not None:
        raise BeastError("--threshold with --scheduler: a bound-pruned count runs on one machine "
                         "(drop --scheduler; it is fast)")
    with distributed.Cluster(args.scheduler) as client:
        if args.stats:
            stats, run = distributed.stats(plan, client)
        else:
            stats, run = None, distributed.count(plan, client)
    total = time.perf_counter() - start
    count = run.count
    print(f"{count:,} valid configurations (on {_workers(run)} in {len(run.chunks)} chunks: "
          f"{run.seconds:.3f} s, total {total:.2f} s)")
    _print_balance(run)
    _report_count(args, plan, count, stats, {"seconds": run.seconds, "total_seconds": total,
                                             "scheduler": args.scheduler, "distributed": run.as_dict()})
    return 0


def _workers(run) -> str:
    return f"{run.workers} Dask worker{'s' if run.workers != 1 else ''}"


def _print_balance(run) -> None:
    balance = run.balance()
    if run.chunks and run.count:
        print(f"chunk balance (largest / mean chunk): estimated work {balance['work_max_over_mean']:.2f}, "
              f"measured seconds {balance['seconds_max_over_mean']:.2f} (census {run.census_seconds:.2f} s)")


def _target_record(plan) -> dict:
    spec = plan.specialized
    return {"space": spec.space.name, "path": spec.space.path, "device": spec.device.key,
            "settings": spec.settings}


def cmd_estimate(args) -> int:
    if args.samples is not None and args.samples < 2:
        raise BeastError("--samples must be at least 2")
    _, plan = _compile(args)
    print(_describe_target(plan))
    if args.scheduler:
        from . import distributed
        with distributed.Cluster(args.scheduler) as client:
            estimate = distributed.estimate(plan, client, args.samples, args.seed, args.method)
    else:
        estimate = plan.estimate(args.samples, args.seed, method=args.method)
    what = "random descents" if estimate.method == "knuth" else "runs of Chen's heuristic sampling"
    print(f"about {estimate.count:,.0f} valid configurations (95% confidence interval "
          f"{estimate.low:,.0f} to {estimate.high:,.0f}; {estimate.samples:,} {what} in "
          f"{estimate.seconds:.2f} s)")
    if args.json:
        print(json.dumps(_target_record(plan) | {
            "estimate": estimate.count, "low": estimate.low, "high": estimate.high,
            "samples": estimate.samples, "seconds": estimate.seconds, "method": estimate.method}))
    return 0


def cmd_rank(args) -> int:
    from .table import format_table

    if args.top < 1:
        raise BeastError(f"--top must be at least 1, got {args.top}")
    _, plan = _compile(args)
    print(_describe_target(plan))
    threshold = math.inf
    if args.threshold is not None:
        parsed = parse_threshold(args.threshold)
        threshold = parsed.resolve(plan.best_bound() if parsed.factor else math.inf)
    ranked = plan.rank(args.top, threshold)
    columns = plan.columns
    rows = [[str(i + 1), format_seconds(float(r["bound"])), str(r["bottleneck"]),
             *(str(r[c]) for c in columns)] for i, r in enumerate(ranked)]
    print(format_table(["#", "bound", "bottleneck", *columns], rows))
    if args.json:
        print(json.dumps(_target_record(plan) | {"top": [
            {"bound_seconds": float(r["bound"]), "bottleneck": str(r["bottleneck"]),
             "config": {c: r[c].item() for c in columns}} for r in ranked]}))
    return 0


def cmd_compare(args) -> int:
    from .bounds import plot_comparison

    _, plan = _compile(args)
    print(_describe_target(plan))
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


def cmd_check_bounds(args) -> int:
    from .harness.recorded import check_bounds, load_replay, plot_terms, term_samples

    replay = load_replay(args.replay)
    _, plan = _compile(args)
    print(_describe_target(plan))
    check = check_bounds(plan, replay)
    print(check.report())
    if args.plot:
        plot_terms(replay, term_samples(plan, replay), args.plot,
                   f"{plan.specialized.space.name} on {replay.device_name}: bound terms against measured times")
        print(f"wrote {args.plot}")
    if args.json:
        print(json.dumps(check.as_dict()))
    return 1 if check.violations else 0


def format_stats(plan, stats) -> str:
    """Per-level iterations with the filters placed at each level and what they rejected."""
    from .table import format_table

    rows = []
    for index, level in enumerate(plan.plan.levels):
        iterations = stats.levels[index][1]
        rows.append([str(index), level.iterator.name, f"{iterations:,}", "", ""])
        for item in level.items[1:]:
            if item.kind == "filter":
                rows.append(["", "", "", f"filter {item.name}", f"{stats.rejections[item.name]:,}"])
            if stats.errors.get(item.name):
                rows.append(["", "", "", f"{item.kind} {item.name} raised", f"{stats.errors[item.name]:,}"])
        if stats.errors.get(level.iterator.name):
            rows.append(["", "", "", "domain raised", f"{stats.errors[level.iterator.name]:,}"])
    return format_table(["level", "iterator", "iterations", "filter placed here", "rejected"], rows)


def cmd_show(args) -> int:
    from .compiler.language.printer import expr_source

    space, plan = _compile(args)
    print(_describe_target(plan))
    print()
    for kind, label in (("setting", "settings"), ("device", "device properties"),
                        ("iterator", "iterators"), ("derived", "derived values"),
                        ("filter", "filters"), ("bound", "bound terms")):
        variables = space.of_kind(kind)
        if variables:
            print(f"{label}: {', '.join(variables)}")
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
            print(f"  {pad}  {item.kind} {item.name} {what}{item.source_text}")
    print(f"\ngenerated enumerator: {os.path.relpath(plan.path)}")
    return 0


def cmd_enumerate(args) -> int:
    import numpy as np

    _, plan = _compile(args)
    output = args.output
    if args.scheduler:
        return _enumerate_on_cluster(args, plan)
    extension = os.path.splitext(output)[1].lower()
    if extension not in (".csv", ".parquet", ".npy"):
        raise BeastError(f"unknown output format '{extension}': use .csv, .parquet or .npy", output)
    if extension == ".parquet":
        try:
            import pandas as pd
            import pyarrow  # noqa: F401
        except ImportError:
            raise BeastError("writing .parquet needs pandas and pyarrow: pip install 'beastgen[data]'") from None
    target = AtomicOutput(output)  # the path is checked before the work
    try:
        print(_describe_target(plan))
        configs = plan.enumerate(jobs=_jobs(args))
    except BaseException:
        target.discard()
        raise
    seconds = plan.last_seconds
    with target as temporary:
        if extension == ".npy":
            with open(temporary, "wb") as f:
                np.save(f, configs)
        elif extension == ".csv":
            write_csv(temporary, configs.dtype.names, configs.tolist())
        else:
            pd.DataFrame(configs).to_parquet(temporary, index=False)
    print(f"wrote {len(configs):,} configurations to {output} (enumeration {seconds:.3f} s)")
    return 0


def _enumerate_on_cluster(args, plan) -> int:
    from . import distributed

    distributed.chunks.prepare_directory(args.output)  # its errors before starting anything
    print(_describe_target(plan))
    with distributed.Cluster(args.scheduler) as client:
        run = distributed.enumerate_to_parquet(plan, client, args.output)
    print(f"wrote {run.count:,} configurations to {args.output}/ as {max(len(run.chunks), 1)} Parquet "
          f"parts in enumeration order (on {_workers(run)}: {run.seconds:.3f} s)")
    _print_balance(run)
    return 0


def cmd_tune(args) -> int:
    if args.scheduler:  # the same search, every candidate run on a Dask worker holding a GPU
        from .distributed import tune_on_cluster
        tune = functools.partial(tune_on_cluster, scheduler=args.scheduler)
    else:
        from .harness.tune import tune
    result = tune(args.space, backend=args.backend, device=args.device, settings=_settings(args.settings),
                  replay=args.replay, budget=args.budget, time_limit=args.time, results=args.results,
                  strategy=args.strategy, seed=args.seed, iterations=args.iterations,
                  generated_dir=args.generated_dir, progress=not args.no_progress, plot=args.plot)
    print(result.report())
    if args.plot:
        print(f"wrote {args.plot}")
    if args.json:
        print(json.dumps(result.as_dict(), default=str))
    return 0


def cmd_export(args) -> int:
    from .interop.export import to_t1, write_kernel_tuner
    from .loading import load

    if args.format == "t1":
        space = load(args.space)
        document = to_t1(space, args.output, device=args.device, settings=_settings(args.settings))
        configuration = document["ConfigurationSpace"]
        print(f"wrote {args.output}: T1 space {space.name} with "
              f"{len(configuration['TuningParameters'])} parameters and "
              f"{len(configuration['Conditions'])} conditions")
        return 0
    _, plan = _compile(args)
    print(_describe_target(plan))
    count = write_kernel_tuner(plan, args.output)
    print(f"wrote {count:,} valid configurations and tune_params to {args.output} (Kernel Tuner: "
          "Searchspace(None, None, None, from_cache=json.load(open(FILE))))")
    return 0


def cmd_nvcc_check(args) -> int:
    from .harness.nvcc_check import nvcc_check

    check, columns = nvcc_check(args.space, device=args.device, settings=_settings(args.settings),
                                samples=args.samples, seed=args.seed, generated_dir=args.generated_dir)
    print(check.report(columns))
    if args.json:
        print(json.dumps(check.as_dict(), default=str))
    return 0


def cmd_calibrate(args) -> int:
    from .harness.calibrate import REPETITIONS, calibrate, parse_target, write_profile

    api, index = parse_target(args.device)
    output = args.output or f"calibrated-{api}{index}.toml"
    if not output.lower().endswith(".toml"):
        raise BeastError(f"the profile must be a .toml file (--device takes it by that extension), "
                         f"not {output!r}")
    if args.repetitions is not None and args.repetitions < 1:
        raise BeastError("--repetitions must be at least 1")
    calibration = calibrate(args.device, repetitions=args.repetitions or REPETITIONS,
                            progress=not args.no_progress)
    profile = write_profile(calibration, output)
    print(f"calibrated {calibration.name} ({args.device}) in {calibration.seconds:.1f} s:")
    for key, entry in calibration.fields.items():
        print(f"  {key} = {entry.value:.6g}")
    print(f"wrote {output}: use it with --device {output} (profile '{profile.key}')")
    return 0


COMMANDS = {"show": cmd_show, "calibrate": cmd_calibrate, "export": cmd_export, "generate": cmd_generate, "count": cmd_count,
            "enumerate": cmd_enumerate, "devices": cmd_devices, "rank": cmd_rank,
            "compare": cmd_compare, "check-bounds": cmd_check_bounds, "tune": cmd_tune,
            "estimate": cmd_estimate, "nvcc-check": cmd_nvcc_check}

if __name__ == "__main__":
    sys.exit(main())
