"""Calibrate the guided search's confidence (``beastgen tune --confidence C``) by leave-one-GPU-out
over the replay files: the Gaussian process's spread in the estimate (the ``confidence_spread``
option) is chosen on the other GPUs' files, and the held-out file is where it is checked.

    python benchmarks/search/confidence.py run [--seeds 10] [--budget 500] [--priors] [--out FILE]
    python benchmarks/search/confidence.py calibrate [--confidence 0.95] FILE ...

``run`` searches every replay file (its own configurations, as ``tune_search_constants.py`` does)
for ``--seeds`` seeds and ``--budget`` evaluations, and records after each evaluation how far the
best is from the file's optimum and the expected number of better configurations ``E`` of the
estimate (:mod:`beastgen.harness.strategies.guided.confidence`) for each spread of
:data:`SPREADS` (the search does not depend on the spread: one run gives them all).
``calibrate`` reads such records: for each file held out, the smallest spread whose stops (the
first evaluation with ``exp(-E) >= C``) on the other files are within 1% of the optimum in at
least a share ``C`` of the runs that stop; then that spread's stops on the held-out file: the
share within 1%, the median stop against the median evaluations to within 1%.
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

SPREADS = (0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0)
TOLERANCE = 0.01


def trajectory(rows, times, seed, budget, prior=None, options=None) -> dict:
    """One search: per evaluation the best over the optimum and ``E`` for each spread, the
    evaluations to within 1% and to the optimum, the model's CPU seconds."""
    codes, values = arrays(rows)
    n = len(rows)
    search = GuidedSearch(codes, np.zeros(n), np.zeros(n, dtype=np.int64), values, prior, seed,
                          options)
    optimum, best = times.min(), math.inf
    ratios, expected, reached = [], [], {}
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
        started = time.process_time()
        with search.threads():
            expected.append(search.recipe.confidence.expected_better(best, SPREADS))
        search.model_seconds += time.process_time() - started
        stopped = np.min(expected, axis=0) <= -math.log(0.95)
        if "optimum" in reached and stopped.all():  # nothing more to learn from this run
            break
    return {"ratios": ratios, "expected": expected, "reached": reached,
            "model_seconds": search.model_seconds}


def run(args) -> None:
    import glob
    data = {os.path.basename(p): load(p) for p in sorted(glob.glob(os.path.join(REPO, "data", "replay", "*.json.gz")))}
    records = {}
    for name, (rows, times) in data.items():
        if args.files and not any(f in name for f in args.files):
            continue
        prior = prior_columns(name, rows, data) if args.priors else None
        for seed in range(args.seeds):
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


def stop(record, spread_index: int, confidence: float) -> int | None:
    """The first evaluation at which the estimate reaches ``confidence`` (None: never)."""
    limit = -math.log(confidence)
    for evaluation, row in enumerate(record["expected"], 1):
        if row[spread_index] <= limit:
            return evaluation
    return None


def outcome(records, spread_index, confidence):
    """(stopped, of those within 1%, stops, evaluations to within 1%) over ``records``."""
    stops, good, to_one = [], 0, []
    for record in records:
        at = stop(record, spread_index, confidence)
        to_one.append(record["reached"].get("1%", math.inf))
        stops.append(at if at is not None else math.inf)
        if at is not None and record["ratios"][at - 1] <= 1 + TOLERANCE + 1e-12:
            good += 1
    stopped = sum(math.isfinite(s) for s in stops)
    return stopped, good, stops, to_one


def calibrate(args) -> None:
    records = {}
    for path in args.records:
        with open(path) as f:
            loaded = json.load(f)
        spreads = loaded["spreads"]
        records.update({f"{'priors ' if loaded['priors'] else ''}{k}": v for k, v in loaded["runs"].items()})
    files = sorted({k.rsplit(" ", 1)[0] for k in records})
    print(f"confidence {args.confidence}: spread chosen on the other GPUs' files, checked on the "
          "held-out one")
    totals = [0, 0]
    for held_out in files:
        others = [r for k, r in records.items() if gpu(k) != gpu(held_out)]
        chosen = None
        for s, spread in enumerate(spreads):  # the smallest spread (earliest stops) that holds
            stopped, good, _, _ = outcome(others, s, args.confidence)
            if stopped and good >= args.confidence * stopped:
                chosen = s
                break
        mine = [r for k, r in records.items() if k.rsplit(" ", 1)[0] == held_out]
        if chosen is None:
            print(f"  {held_out:48} no spread holds on the other files")
            continue
        stopped, good, stops, to_one = outcome(mine, chosen, args.confidence)
        totals[0] += stopped
        totals[1] += good
        print(f"  {held_out:48} spread {spreads[chosen]:g}: stopped {stopped}/{len(mine)}, within 1% "
              f"{good}/{stopped}; median stop {statistics.median(stops):g}, median to within 1% "
              f"{statistics.median(to_one):g}")
    if totals[0]:
        print(f"held out, all files: {totals[1]}/{totals[0]} stopped runs within 1% "
              f"({totals[1] / totals[0]:.1%})")
    overall = next((s for s, _ in enumerate(spreads)
                    if (lambda o: o[0] and o[1] >= args.confidence * o[0])(
                        outcome(list(records.values()), s, args.confidence))), None)
    if overall is not None:
        print(f"chosen on every file: spread {spreads[overall]:g}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("run")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--budget", type=int, default=500)
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
