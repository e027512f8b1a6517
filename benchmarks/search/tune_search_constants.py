"""Choose the options of the default search (the option tables of
``beastgen/harness/strategies/guided/recipes.py``) by leave-one-GPU-out cross-validation over every
replay file in ``data/replay/``, never on one file.

    python benchmarks/search/tune_search_constants.py [--seeds 5] [--budget 1000] [--log FILE]
                                               [--grid NAME=V1,V2 ...] [--priors]

Each candidate setting of the constants searches every file (the file's own configurations, its
failures included; without priors, or with the other GPUs' files of the same kernel as priors) for
``--seeds`` seeds, counting the evaluations until the file's optimum (``2 x budget`` when not
found). For each file held out, the setting with the smallest geometric mean of the median
evaluations over the *other* files is chosen, and its median on the held-out file is what
cross-validation predicts there. Results are appended to ``--log`` (JSON lines) and reused, so the
grid can grow between runs; a record with a ``code`` field was run with an earlier version of the
search (described there) and is kept for the record but not reused.
"""
from __future__ import annotations

import argparse
import glob
import gzip
import itertools
import json
import math
import os
import statistics
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)

from beastgen.harness.priors import source_column  # noqa: E402
from beastgen.harness.strategies.guided import GuidedSearch  # noqa: E402
from beastgen.harness.strategies.guided.recipes import options  # noqa: E402


def load(path: str):
    """(parameter values of every configuration, time in seconds: inf for a failure)."""
    with gzip.open(path, "rt") as f:
        data = json.load(f)
    keys = data["tune_params_keys"]
    rows, times = [], []
    for record in data["cache"].values():
        rows.append(tuple(record[k] for k in keys))
        t = record.get("time")
        times.append(t / 1e3 if isinstance(t, (int, float)) and math.isfinite(t) and t > 0 else math.inf)
    return rows, np.array(times)


def kernel_of(name: str) -> str:
    return name.split("_")[0]


def prior_columns(target: str, rows, data) -> np.ndarray:
    """The other GPUs' files of the same kernel as prior columns (as ``beastgen.harness.priors``)."""
    columns = []
    for other, (other_rows, other_times) in data.items():
        if other == target or kernel_of(other) != kernel_of(target):
            continue
        columns.append(source_column(dict(zip(other_rows, other_times)), rows))
    return np.array(columns, dtype=float).T


def arrays(rows):
    """(codes, values) of the configurations ``rows``: each column's codes, and its numbers (NaN
    for a column of texts)."""
    table = np.array(rows, dtype=object)
    codes, values = [], []
    for j in range(table.shape[1]):
        column = table[:, j]
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in column)
        codes.append(np.unique(column.astype(float) if numeric else column.astype(str),
                               return_inverse=True)[1].reshape(-1))
        values.append(column.astype(float) if numeric else np.full(len(column), np.nan))
    return np.stack(codes, axis=1), np.stack(values, axis=1)


def search(rows, times, seed, budget, options, prior=None) -> int:
    """Evaluations until the optimum (2 x budget when not reached)."""
    codes, values = arrays(rows)
    n = len(rows)
    order = GuidedSearch(codes, np.zeros(n), np.zeros(n, dtype=np.int64), values, prior, seed, options)
    optimum = times.min()
    for evaluation in range(1, budget + 1):
        i = order.next(math.inf)
        if i is None:
            break
        order.observe(i, times[i])
        if times[i] <= optimum:
            return evaluation
    return 2 * budget


def geometric_mean(values) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--budget", type=int, default=1000)
    parser.add_argument("--priors", action="store_true", help="with the other GPUs' files as priors")
    parser.add_argument("--grid", nargs="*", default=[], metavar="NAME=V1,V2",
                        help="constants to vary (the others keep their defaults)")
    parser.add_argument("--log", default=os.path.join(REPO, "benchmarks", "search", "search_constants.jsonl"))
    parser.add_argument("--envelope", action="store_true",
                        help="run nothing: per file, the smallest median of any setting logged with at "
                             "least --seeds seeds (earlier versions of the search included)")
    args = parser.parse_args(argv)
    if args.envelope:
        with open(args.log) as f:
            envelope([json.loads(line) for line in f if line.strip()], args.priors, args.seeds, args.budget)
        return
    data = {os.path.basename(p): load(p) for p in sorted(glob.glob(os.path.join(REPO, "data", "replay", "*.json.gz")))}
    names = [g.split("=")[0] for g in args.grid]
    choices = [g.split("=")[1].split(",") for g in args.grid]  # typed by the option tables
    done = []
    if os.path.exists(args.log):
        with open(args.log) as f:
            done = [json.loads(line) for line in f if line.strip()]
    for combination in itertools.product(*choices):
        given = dict(zip(names, combination))
        table = vars(options(args.priors, given))
        setting = {name: table[name] for name in given}
        if any(d["prior"] == args.priors and d["constants"] == setting and d["seeds"] == args.seeds
               and d["budget"] == args.budget and "code" not in d for d in done):
            continue
        started, runs = time.perf_counter(), {}
        for name, (rows, times) in data.items():
            prior = prior_columns(name, rows, data) if args.priors else None
            runs[name] = [search(rows, times, seed, args.budget, setting, prior)
                          for seed in range(args.seeds)]
        record = {"prior": args.priors, "constants": setting, "seeds": args.seeds,
                  "budget": args.budget, "runs": runs}
        done.append(record)
        with open(args.log, "a") as f:
            f.write(json.dumps(record) + "\n")
        print(f"{setting}: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    report([d for d in done if d["prior"] == args.priors and d["seeds"] == args.seeds
            and d["budget"] == args.budget and "code" not in d], args.priors)


def report(records, priors: bool) -> None:
    """Leave-one-GPU-out: for each file, the setting best on the others, and its result there."""
    if not records:
        return
    files = sorted(records[0]["runs"])
    medians = [{f: statistics.median(r["runs"][f]) for f in files} for r in records]
    print(f"{len(records)} settings, {'with' if priors else 'without'} priors; median evaluations "
          "to the optimum (held out: chosen on the other files)")
    for held_out in files:
        scores = [geometric_mean([m[f] for f in files if f != held_out]) for m in medians]
        best = int(np.argmin(scores))
        print(f"  {held_out:40} chosen {records[best]['constants']}: held out "
              f"{medians[best][held_out]:g} (runs {records[best]['runs'][held_out]})")
    overall = int(np.argmin([geometric_mean(m.values()) for m in medians]))
    print(f"best on all files: {records[overall]['constants']}: "
          + ", ".join(f"{f.split('.')[0]} {medians[overall][f]:g}" for f in files))


def envelope(records, priors: bool, seeds: int, budget: int) -> None:
    """Per file, the smallest median of evaluations to the optimum over every logged setting with at
    least ``seeds`` seeds, each file's best chosen on that file alone: a bound on what choosing among
    the searches tried so far could give there (optimistic, since it is chosen on the file itself)."""
    records = [r for r in records if r["prior"] == priors and r["seeds"] >= seeds and r["budget"] == budget]
    if not records:
        print("no setting logged with these options")
        return
    files = sorted({f for r in records for f in r["runs"]})
    print(f"{len(records)} settings logged {'with' if priors else 'without'} priors, >= {seeds} seeds; "
          "per file the smallest median of evaluations to the optimum")
    for name in files:
        medians = [(statistics.median(r["runs"][name]), r) for r in records if name in r["runs"]]
        low, record = min(medians, key=lambda m: m[0])
        version = f" (earlier code: {record['code'][:60]})" if "code" in record else ""
        print(f"  {name:40} {low:7g}  {record['constants']}, {record['seeds']} seeds{version}")


if __name__ == "__main__":
    main()
