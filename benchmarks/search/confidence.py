"""Calibrate the guided search's confidence (``beastgen tune --confidence C``) by leave-one-GPU-out
over the replay files: the rule (the Gaussian process's spread in the estimate, the measurements
before it may stop, the measurements without an improvement of more than 1% it waits for: the
options ``confidence_spread``, ``confidence_after``, ``confidence_quiet``) is chosen on the other
GPUs' files, and the held-out file is where it is checked.

    python benchmarks/search/confidence.py run [--seeds 3] [--budget 400] [--priors] [--out FILE]
    python benchmarks/search/confidence.py calibrate [--confidence 0.95] FILE ...

``run`` searches every replay file (its own configurations, as ``tune_search_constants.py`` does)
for ``--seeds`` seeds and ``--budget`` evaluations, and records, wherever ``beastgen tune`` makes
an estimate (every 1% more measurements), the expected number of better configurations ``E``
(:mod:`beastgen.harness.strategies.guided.confidence`) for each spread of :data:`SPREADS`, the
measurements and those since the last improvement of more than 1% (the search does not depend on
the rule: one run gives them all), and after each evaluation how far the best is from the file's
optimum. ``calibrate`` reads such records: for each file held out, among the rules (every spread,
``after`` of :data:`AFTER`, ``quiet`` of :data:`QUIET`) whose stops on the files of the other GPUs
are within 1% of the optimum in at least a share ``C`` of the runs that stop, the one whose median
stop there is earliest (a run that does not stop counts as stopped at the budget); then that
rule's stops on the held-out file: the share within 1%, the median stop against the median
evaluations to within 1%. Last, the rule chosen the same way on every file: the shipped defaults.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from tune_search_constants import arrays, load, prior_columns  # noqa: E402

from beastgen.harness.strategies.guided import GuidedSearch  # noqa: E402

SPREADS = (0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0)
AFTER = (0, 20, 40, 60, 100)
QUIET = (0, 10, 20, 30, 50, 80)
TOLERANCE = 0.01


def trajectory(rows, times, seed, budget, prior=None, options=None) -> dict:
    """One search: per evaluation the best over the optimum; at each evaluation where ``beastgen
    tune`` makes an estimate (every 1% more measurements), [evaluation, measurements,
    measurements without an improvement of more than 1%, ``E`` for each spread]; the evaluations
    to within 1% and to the optimum, the model's CPU seconds."""
    codes, values = arrays(rows)
    n = len(rows)
    search = GuidedSearch(codes, np.zeros(n), np.zeros(n, dtype=np.int64), values, prior, seed,
                          options)
    confidence = search.recipe.confidence
    optimum, best = times.min(), math.inf
    ratios, estimates, reached, estimated = [], [], {}, -1
    for evaluation in range(1, budget + 1):
        i = search.next(best)
        if i is None:
            break
        search.observe(i, times[i])
        best = min(best, times[i])
        ratios.append(best / optimum)
        for name, factor in (("1%", 1 + TOLERANCE), ("optimum", 1.0)):
            if name not in reached and best <= optimum * factor * (1 + 1e-12):
                reached[name] = evaluation
        measured = len(search.history.measured)
        if measured >= estimated + max(1, measured // 100):  # when the strategy estimates
            estimated = measured
            started = time.process_time()
            with search.threads():
                expected = confidence.expected_better(best, SPREADS)
            search.model_seconds += time.process_time() - started
            estimates.append([evaluation, measured, confidence.unimproved(), expected])
    return {"ratios": ratios, "estimates": estimates, "reached": reached,
            "model_seconds": search.model_seconds}


def run(args) -> None:
    import glob
    data = {os.path.basename(p): load(p) for p in sorted(glob.glob(os.path.join(REPO, "data", "replay", "*.json.gz")))}
    records = {}
    for seed in range(args.first_seed, args.first_seed + args.seeds):  # every file's first seed first
        for name, (rows, times) in data.items():
            if args.files and not any(f in name for f in args.files):
                continue
            prior = prior_columns(name, rows, data) if args.priors else None
            started = time.perf_counter()
            records[f"{name} {seed}"] = trajectory(rows, times, seed, args.budget, prior)
            print(f"{name} seed {seed}: {records[f'{name} {seed}']['reached']}, "
                  f"{time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
            with open(args.out, "w") as f:  # after every run: a long one can be read as it goes
                json.dump({"priors": args.priors, "spreads": SPREADS, "budget": args.budget,
                           "runs": records}, f)


def gpu(key: str) -> str:
    """The GPU of a record's key ("[priors ]<kernel>_<variant>_<gpu>.json.gz[ seed]")."""
    return key.split()[-2 if key.split()[-1].isdigit() else -1].split(".")[0].split("_", 2)[-1]


def stop(record, rule, confidence: float) -> int | None:
    """The first evaluation at which the estimate with ``rule`` (spread index, after, quiet)
    reaches ``confidence`` (None: never)."""
    spread, after, quiet = rule
    limit = -math.log(confidence)
    for evaluation, measured, unimproved, expected in record["estimates"]:
        if expected[spread] <= limit and (expected[spread] == 0 or (measured >= after and unimproved >= quiet)):
            return evaluation
    return None


def outcome(records, rule, confidence, budget):
    """(stopped, of those within 1%, stops, evaluations to within 1%) over ``records``; a run that
    does not stop or come within 1% counts as ``budget`` + 1 there."""
    stops, good, to_one = [], 0, []
    for record in records:
        at = stop(record, rule, confidence)
        to_one.append(record["reached"].get("1%", budget + 1))
        stops.append(at if at is not None else budget + 1)
        if at is not None and record["ratios"][at - 1] <= 1 + TOLERANCE + 1e-12:
            good += 1
    stopped = sum(s <= budget for s in stops)
    return stopped, good, stops, to_one


def choose(records, rules, confidence, budget):
    """The rule whose stops on ``records`` are within 1% in a share ``confidence`` of those that
    stop, with the earliest median stop (then the most runs stopped); None if none holds."""
    best = None
    for rule in rules:
        stopped, good, stops, _ = outcome(records, rule, confidence, budget)
        if stopped and good >= confidence * stopped:
            key = (statistics.median(stops), -stopped)
            if best is None or key < best[0]:
                best = (key, rule)
    return None if best is None else best[1]


def _median(values, budget):
    m = statistics.median(values)
    return f">{budget}" if m > budget else f"{m:g}"


def calibrate(args) -> None:
    records, budgets = {}, []
    for path in args.records:
        with open(path) as f:
            loaded = json.load(f)
        spreads = loaded["spreads"]
        budgets.append(loaded["budget"])
        records.update({f"{'priors ' if loaded['priors'] else ''}{k}": v for k, v in loaded["runs"].items()})
    budget = min(budgets)
    rules = [(s, a, q) for s in range(len(spreads)) for a in AFTER for q in QUIET]
    name = lambda rule: f"spread {spreads[rule[0]]:g}, after {rule[1]}, quiet {rule[2]}"
    files = sorted({k.rsplit(" ", 1)[0] for k in records})
    print(f"confidence {args.confidence}: rule chosen on the other GPUs' files, checked on the "
          f"held-out one ({len(records)} runs, budget {budget})\n")
    print("| held out | rule chosen on the other GPUs | stopped | within 1% of stopped | median stop "
          "| median to within 1% | stop / to 1% |")
    print("|---|---|---:|---:|---:|---:|---:|")
    totals = [0, 0, 0]
    for held_out in files:
        others = [r for k, r in records.items() if gpu(k) != gpu(held_out)]
        mine = [r for k, r in records.items() if k.rsplit(" ", 1)[0] == held_out]
        chosen = choose(others, rules, args.confidence, budget)
        if chosen is None:
            print(f"| {held_out.split('.')[0]} | none holds | | | | | |")
            continue
        stopped, good, stops, to_one = outcome(mine, chosen, args.confidence, budget)
        totals = [totals[0] + stopped, totals[1] + good, totals[2] + len(mine)]
        stop_median, one_median = statistics.median(stops), statistics.median(to_one)
        ratio = ("?" if one_median > budget else f"{stop_median / one_median:.2f}"
                 if stop_median <= budget else f">{budget / one_median:.2f}")
        print(f"| {held_out.split('.')[0]} | {name(chosen)} | {stopped}/{len(mine)} | {good}/{stopped} | "
              f"{_median(stops, budget)} | {_median(to_one, budget)} | {ratio} |")
    if totals[0]:
        print(f"\nheld out, all files: {totals[0]} of {totals[2]} runs stopped, {totals[1]} of them "
              f"within 1% ({totals[1] / totals[0]:.1%})")
    everything = list(records.values())
    overall = choose(everything, rules, args.confidence, budget)
    if overall is not None:
        stopped, good, stops, to_one = outcome(everything, overall, args.confidence, budget)
        print(f"chosen on every file: {name(overall)} (there {good}/{stopped} within 1%, median stop "
              f"{_median(stops, budget)}, median to within 1% {_median(to_one, budget)})")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("run")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--budget", type=int, default=400)
    p.add_argument("--priors", action="store_true")
    p.add_argument("--files", nargs="*", default=[])
    p.add_argument("--out", default="confidence.json")
    p = commands.add_parser("calibrate")
    p.add_argument("records", nargs="+")
    p.add_argument("--confidence", type=float, default=0.95)
    args = parser.parse_args(argv)
    {"run": run, "calibrate": calibrate}[args.command](args)


if __name__ == "__main__":
    main()
