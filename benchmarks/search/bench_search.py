"""Search benchmark on recorded GPU measurements: how many evaluations each strategy needs to find a
file's optimum (and to come within 1% and 5% of it), on every replay file, against Kernel Tuner's
own strategies on the same file, in one run.

    python benchmarks/search/bench_search.py [--seeds 5] [--budget 1000] [--files PATTERN ...]
                                      [--strategies ...] [--kt-strategies ... | --no-kt] [--json OUT]

Every ``data/replay/<kernel>_<gpu>.json.gz`` is searched in the space whose name is the longest
prefix of the file's (``spaces/*.py`` first, then ``data/reference-spaces/*.json``):
``gemm_clblast_*`` in ``spaces/gemm_clblast.py`` (bound terms: the search also proves),
``convolution_milo_*`` and ``dedispersion_*`` in their T1 files (no bound terms).

- beastgen runs through ``beastgen.harness.tuning`` with the replay backend (a fresh results store
  per run): ``guided`` (the default) without priors and with ``--prior`` = the other GPUs' files
  of the same kernel (leave-one-GPU-out: never the file searched), and the baselines
  ``bound_order`` (where the space has bound terms), ``random_search`` and ``genetic``. An
  evaluation is a configuration answered from the file (a failure recorded there included); a
  configuration of the space that the file does not hold costs nothing. A run stops once it has
  measured the file's optimum (``tune(good_enough=...)``: every column is known by then), but for
  the default's seed 0, which spends the whole budget to time the model.
- Kernel Tuner 1.5's strategies run in its simulation mode on the same file
  (``tune_kernel(..., simulation_mode=True, cache=FILE)``, its space being the file's
  configurations), ``max_fevals`` = the budget, seeded through ``random.seed`` and
  ``numpy.random.seed``; evaluations are its unique configurations in the order it first ran them.

Columns: median over the seeds of the evaluations until the optimum (the file's fastest time), 1%
and 5% of it (">B": not reached within the budget B in most seeds); "found": seeds that found the
optimum; "vs KT": the median evaluations to the optimum over that of Kernel Tuner's best strategy
on the file (the strategy with the smallest median); "sim. s": the simulated tuning time until the
optimum (median), the file's ``compile_time + verification_time + benchmark_time`` of every
evaluation, as Kernel Tuner's simulation mode adds them up. Below each file: the default's model
overhead, the search's own time per proposal over seed 0's whole budget (milliseconds, replay
answers are free).
"""
from __future__ import annotations

import argparse
import fnmatch
import glob
import gzip
import json
import math
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import warnings

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)

from beastgen.harness.recorded import load_replay  # noqa: E402
from beastgen.harness.store import read_run  # noqa: E402

BEASTGEN = ["guided", "guided+priors", "bound_order", "random_search", "genetic"]
KERNEL_TUNER = ["random_sample", "genetic_algorithm", "pso", "diff_evo", "simulated_annealing"]
TARGETS = (("optimum", 1.0), ("1%", 1.01), ("5%", 1.05))
#: device profiles for files whose GPU has none built in, in spaces that read device properties:
#: the RTX 3090's (the same architecture, compute capability 8.6, the same limits, every rate
#: higher than the 3060 Laptop GPU's) gives lower bounds, so still valid ones
DEVICES = {"gemm_clblast_rtx_3060_laptop.json.gz": "rtx3090"}


def first_reaching(times: list[float], optimum: float) -> dict:
    """For each target, the evaluation (1-based) at which the best time first reaches it."""
    reached, best = {}, math.inf
    for index, t in enumerate(times, 1):
        best = min(best, t)
        for name, factor in TARGETS:
            if name not in reached and best <= optimum * factor * (1 + 1e-12):
                reached[name] = index
    return reached


def space_for(replay_path: str) -> str | None:
    """The space a replay file is searched in (see the module docstring)."""
    name = os.path.basename(replay_path)
    for pattern in (os.path.join(REPO, "spaces", "*.py"),
                    os.path.join(REPO, "data", "reference-spaces", "*.json")):
        spaces = [s for s in glob.glob(pattern)
                  if name.startswith(os.path.splitext(os.path.basename(s))[0] + "_")]
        if spaces:
            return max(spaces, key=len)
    return None


def run_beastgen(strategy, space, replay, priors, seed, budget, workdir, keys, good_enough):
    """((parameter values in the order ``keys``, time; inf for a failure) of each evaluation in
    order, search seconds, proposals). The search stops after ``budget`` evaluations or once it has
    measured a time of at most ``good_enough`` (None: never)."""
    from beastgen.harness import tune
    store = os.path.join(workdir, f"{strategy}-{seed}.db")
    result = tune(space, backend="replay", replay=replay, strategy=strategy.split("+")[0],
                  device=DEVICES.get(os.path.basename(replay)),
                  seed=seed, budget=budget, results=store, priors=priors,
                  good_enough=good_enough,
                  generated_dir=os.path.join(workdir, "generated"), progress=False,
                  log=lambda message: None)
    _, rows = read_run(store)
    runs = [(tuple(row["config"][k] for k in keys), row["time"] if row["status"] == "ok" else math.inf)
            for row in rows]
    return runs, result.seconds, result.evaluated + result.unmeasured


def run_kernel_tuner(strategy, cache_json, seed, budget):
    """(parameter values, time; inf for a failure) of Kernel Tuner's evaluations in order."""
    from kernel_tuner import tune_kernel, util
    cache = util.read_cache(cache_json, open_cache=False)
    random.seed(seed)
    np.random.seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results, _ = tune_kernel(**util.infer_args_from_cache(cache), cache=cache_json,
                                 restrictions=[util.infer_restrictions_from_cache(cache)],
                                 simulation_mode=True, strategy=strategy,
                                 strategy_options={"max_fevals": budget}, quiet=True)
    keys, seen, runs = cache["tune_params_keys"], set(), []
    for record in results:
        key = tuple(record[k] for k in keys)
        if key in seen:
            continue
        seen.add(key)
        t = record.get("time")
        runs.append((key, float(t) / 1e3 if isinstance(t, (int, float)) and t > 0 else math.inf))
    return runs[:budget]


def simulated_cost(path: str) -> dict:
    """{parameter values: what measuring them cost, in seconds} from the file's timing fields, as
    Kernel Tuner's simulation mode adds them up (compile + verification + benchmark)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        data = json.load(f)
    keys = data["tune_params_keys"]
    return {tuple(record[k] for k in keys):
            sum(float(record.get(k) or 0) for k in ("compile_time", "verification_time",
                                                     "benchmark_time")) / 1e3
            for record in data["cache"].values()}


def benchmark(replay_path, space, others, seeds, budget, strategies, kt_strategies):
    replay = load_replay(replay_path)
    optimum = replay.best()[1]
    costs = simulated_cost(replay_path)
    print(f"\n{os.path.basename(replay_path)}: {replay.kernel_name} on {replay.device_name}, "
          f"{len(replay.times):,} measured, optimum {optimum * 1e3:.4f} ms; space "
          f"{os.path.relpath(space, REPO)}; priors: {', '.join(map(os.path.basename, others)) or 'none'}; "
          f"budget {budget}, medians over {seeds} seeds")
    header = (f"{'tool':9} {'strategy':20} {'optimum':>8} {'1%':>6} {'5%':>6} {'found':>6} "
              f"{'vs KT':>6} {'sim. s':>8}")
    rows, overhead = [], {}
    with tempfile.TemporaryDirectory() as workdir:
        cache_json = os.path.join(workdir, "cache.json")
        opener = gzip.open if replay_path.endswith(".gz") else open
        with opener(replay_path, "rb") as src, open(cache_json, "wb") as dst:
            shutil.copyfileobj(src, dst)
        jobs = [("KT 1.5", s) for s in kt_strategies] + [("beastgen", s) for s in strategies]
        for tool, strategy in jobs:
            if strategy == "bound_order" and "gemm" not in os.path.basename(space):
                continue  # no bound terms
            if strategy == "guided+priors" and not others:
                continue
            runs = []
            for seed in range(1 if strategy == "bound_order" else seeds):
                if tool == "beastgen":
                    timed = seed == 0 and strategy.startswith("guided")  # the whole budget: its overhead
                    evaluations, seconds, proposals = run_beastgen(
                        strategy, space, replay_path, others if "priors" in strategy else None,
                        seed, budget, workdir, replay.keys, None if timed else optimum * (1 + 1e-12))
                    if timed:
                        overhead[strategy] = seconds / max(proposals, 1) * 1e3
                else:
                    evaluations = run_kernel_tuner(strategy, cache_json, seed, budget)
                reached = first_reaching([t for _, t in evaluations], optimum)
                spent = [costs.get(key, 0.0) for key, _ in evaluations[:reached.get("optimum", 0)]]
                runs.append(dict(reached, cost=sum(spent) if "optimum" in reached else math.inf))
            rows.append(dict(tool=tool, strategy=strategy, runs=runs))
    kt_rows = [r for r in rows if r["tool"] != "beastgen"]
    kt_best = min((_median([r.get("optimum") for r in row["runs"]], budget) for row in kt_rows),
                  default=math.nan)
    print(header + "\n" + "-" * len(header))
    for row in rows:
        runs = row["runs"]
        cells = [_cell(_median([r.get(name) for r in runs], budget), budget) for name, _ in TARGETS]
        median = _median([r.get("optimum") for r in runs], budget)
        ratio = median / kt_best if math.isfinite(median) and math.isfinite(kt_best) else math.nan
        cost = statistics.median(r["cost"] for r in runs)
        row.update(median=median, ratio=ratio, kt_best=kt_best, file=os.path.basename(replay_path))
        print(f"{row['tool']:9} {row['strategy']:20} {cells[0]:>8} {cells[1]:>6} {cells[2]:>6} "
              f"{sum('optimum' in r for r in runs):>3}/{len(runs):<2} "
              f"{'-' if math.isnan(ratio) else f'{ratio:.2f}':>6} "
              f"{'-' if math.isinf(cost) else f'{cost:.0f}':>8}   "
              f"(to optimum: {[r.get('optimum') for r in runs]})", flush=True)
    for strategy, each in overhead.items():
        print(f"{strategy}: {each:.1f} ms of search per proposal over seed 0's {budget} (model, "
              f"listing and bookkeeping; the replay answers cost nothing)")
    return rows


def _median(values, budget):
    """Median with unreached targets counted as past the budget (inf when most are)."""
    return statistics.median([v if v is not None else math.inf for v in values])


def _cell(value, budget):
    return f">{budget}" if math.isinf(value) else f"{value:g}"


def summary(rows) -> None:
    """The targets: without priors <= 1/2 of KT's best on every file; with priors, median over the
    files <= 20 and <= 1/4 of KT's best on every file."""
    print("\nsummary (median evaluations to the optimum; ratio to Kernel Tuner's best strategy):")
    for strategy, limit in (("guided", 0.5), ("guided+priors", 0.25)):
        chosen = [r for r in rows if r["tool"] == "beastgen" and r["strategy"] == strategy]
        if not chosen:
            continue
        medians = [r["median"] for r in chosen]
        met = sum(1 for r in chosen if r["ratio"] <= limit)
        print(f"  {strategy:14}: median over the files {statistics.median(medians):g}; "
              f"ratio <= {limit:g} on {met} of {len(chosen)} files; per file: "
              + ", ".join(f"{r['file'].split('.')[0]} {r['median']:g} ({r['ratio']:.2f})" for r in chosen))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--budget", type=int, default=1000)
    parser.add_argument("--files", nargs="*", default=["*"], metavar="PATTERN",
                        help="replay files to run (shell patterns on the file name)")
    parser.add_argument("--strategies", nargs="*", default=BEASTGEN, choices=BEASTGEN)
    parser.add_argument("--kt-strategies", nargs="*", default=KERNEL_TUNER, choices=KERNEL_TUNER,
                        help="Kernel Tuner strategies to run (default, or the flag alone: all five)")
    parser.add_argument("--no-kt", action="store_true", help="run no Kernel Tuner strategy")
    parser.add_argument("--json", default=None, metavar="OUT", help="write every run's numbers here")
    args = parser.parse_args(argv)
    kt_strategies = [] if args.no_kt else args.kt_strategies or KERNEL_TUNER
    files = sorted(glob.glob(os.path.join(REPO, "data", "replay", "*.json.gz")))
    started, rows = time.perf_counter(), []
    for path in files:
        if not any(fnmatch.fnmatch(os.path.basename(path), p) for p in args.files):
            continue
        space = space_for(path)
        if space is None:
            continue
        others = [f for f in files if f != path and space_for(f) == space]
        rows += benchmark(path, space, others, args.seeds, args.budget, args.strategies,
                          kt_strategies)
    summary(rows)
    print(f"\nbenchmark took {time.perf_counter() - started:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, default=str, indent=1)


if __name__ == "__main__":
    main()
