"""Search benchmark on recorded GPU measurements: how many evaluations each strategy needs to find the
optimum (and to come within 1% and 5% of it), and whether it proves optimality.

    python benchmarks/bench_search.py [--replay FILE SPACE ...] [--seeds N] [--budget N]
                                      [--strategies ...] [--kt-strategies ...]

Every ``data/replay/*.json.gz`` whose name starts with a space's name (``gemm_clblast_...`` ->
``spaces/gemm_clblast.py``) is benchmarked, plus each ``--replay FILE SPACE`` pair given.

- beastgen's strategies run through ``beastgen.harness.tune`` with the replay backend (a fresh
  results store per run): ``branch_and_bound`` (the learnt order), ``bound_order`` (Telamon's
  increasing bound), ``exhaustive``, ``random`` and ``genetic``. An evaluation is a configuration
  answered from the file; a configuration of the space that the file does not hold costs nothing.
- Kernel Tuner's strategies run in its simulation mode on the same file
  (``tune_kernel(..., simulation_mode=True, cache=FILE)``, its space being the file's
  configurations, as ``kernel_tuner.tune_cache`` builds it), with ``max_fevals`` = the budget;
  evaluations are its unique configurations in the order it first measured them. Seeded through
  ``random.seed`` and ``numpy.random.seed``.

Each run stops at ``--budget`` evaluations (default 1000); ">budget" means the target was not
reached. The table gives the median over the seeds, and the optimum is the file's fastest time.
"""
from __future__ import annotations

import argparse
import glob
import gzip
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

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from beastgen.replay import load_replay  # noqa: E402

BEASTGEN = ["branch_and_bound", "bound_order", "exhaustive", "random", "genetic"]
DETERMINISTIC = {"bound_order", "exhaustive"}
KERNEL_TUNER = ["random_sample", "genetic_algorithm", "pso", "diff_evo", "simulated_annealing",
                "greedy_ils"]
TARGETS = (("optimum", 1.0), ("1%", 1.01), ("5%", 1.05))


def first_reaching(times: list[float], optimum: float) -> dict:
    """For each target, the evaluation (1-based) at which the best time first reaches it."""
    reached, best = {}, math.inf
    for index, t in enumerate(times, 1):
        best = min(best, t)
        for name, factor in TARGETS:
            if name not in reached and best <= optimum * factor * (1 + 1e-12):
                reached[name] = index
    return reached


def run_beastgen(strategy, space, replay, seed, budget, workdir):
    from beastgen.harness import tune
    result = tune(space, backend="replay", replay=replay, strategy=strategy, seed=seed,
                  budget=budget, results=os.path.join(workdir, f"{strategy}-{seed}.db"),
                  generated_dir=os.path.join(workdir, "generated"), progress=False,
                  log=lambda message: None)
    return [t for _, t in result.points], result.proven, result.certificate()


def run_kernel_tuner(strategy, cache_json, seed, budget):
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
    keys, seen, times = cache["tune_params_keys"], set(), []
    for record in results:
        key = tuple(record[k] for k in keys)
        if key in seen or not isinstance(record.get("time"), (int, float)):
            continue
        seen.add(key)
        times.append(float(record["time"]) / 1e3)
    return times[:budget], False, ""


def benchmark(replay_path, space, seeds, budget, strategies, kt_strategies):
    replay = load_replay(replay_path)
    optimum = replay.best()[1]
    print(f"\n{replay_path}: {replay.kernel_name} on {replay.device_name}, {len(replay.times):,} "
          f"measured, optimum {optimum * 1e3:.3f} ms; space {os.path.relpath(space, REPO)}; "
          f"budget {budget} evaluations, median over seeds")
    header = f"{'tool':10} {'strategy':20} {'runs':>4} {'optimum':>8} {'1%':>8} {'5%':>8}  proven"
    print(header + "\n" + "-" * len(header))
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        cache_json = os.path.join(workdir, "cache.json")
        opener = gzip.open if replay_path.endswith(".gz") else open
        with opener(replay_path, "rb") as src, open(cache_json, "wb") as dst:
            shutil.copyfileobj(src, dst)
        jobs = [("beastgen", s) for s in strategies] + [("kt", s) for s in kt_strategies]
        for tool, strategy in jobs:
            runs = 1 if strategy in DETERMINISTIC else seeds
            reached, proven, started = [], [], time.perf_counter()
            for seed in range(runs):
                times, is_proven, _ = (run_beastgen(strategy, space, replay_path, seed, budget, workdir)
                                       if tool == "beastgen" else
                                       run_kernel_tuner(strategy, cache_json, seed, budget))
                reached.append(first_reaching(times, optimum))
                proven.append(is_proven)
            cells = []
            for name, _ in TARGETS:
                values = [r.get(name, math.inf) for r in reached]
                median = statistics.median(values)
                cells.append(f">{budget}" if math.isinf(median) else f"{median:g}")
            row = dict(tool=tool, strategy=strategy, runs=runs, seconds=time.perf_counter() - started,
                       proven=sum(proven), **{name: [r.get(name) for r in reached] for name, _ in TARGETS})
            rows.append(row)
            print(f"{'beastgen' if tool == 'beastgen' else 'KT 1.5':10} {strategy:20} {runs:>4} "
                  f"{cells[0]:>8} {cells[1]:>8} {cells[2]:>8}  {sum(proven)}/{runs}"
                  f"   ({row['seconds']:.0f} s; to optimum: {[r.get('optimum') for r in reached]})",
                  flush=True)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replay", nargs=2, action="append", default=[], metavar=("FILE", "SPACE"))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--budget", type=int, default=1000)
    parser.add_argument("--strategies", nargs="*", default=BEASTGEN, choices=BEASTGEN)
    parser.add_argument("--kt-strategies", nargs="*", default=KERNEL_TUNER)
    args = parser.parse_args(argv)
    pairs = []
    for path in sorted(glob.glob(os.path.join(REPO, "data", "replay", "*.json.gz"))):
        name = os.path.basename(path)
        spaces = [s for s in glob.glob(os.path.join(REPO, "spaces", "*.py"))
                  if name.startswith(os.path.basename(s)[:-3] + "_")]
        if spaces:
            pairs.append((path, max(spaces, key=len)))
    pairs += [(os.path.abspath(f), os.path.abspath(s)) for f, s in args.replay]
    for path, space in pairs:
        benchmark(path, space, args.seeds, args.budget, args.strategies, args.kt_strategies)


if __name__ == "__main__":
    main()
