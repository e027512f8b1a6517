"""beastgen's search inside Kernel Tuner: ``beastgen.kernel_tuner.Strategy`` in Kernel Tuner 1.5's
simulation mode on every replay file, against Kernel Tuner's own strategies, in one run.

    python benchmarks/bench_kernel_tuner_strategy.py [--seeds 20] [--budget 1000] [--files PATTERN ...]
                                                     [--kt-strategies ...] [--variants ...] [--no-check]
                                                     [--no-overhead] [--no-construction]
                                                     [--json OUT [--resume]]
    python benchmarks/bench_kernel_tuner_strategy.py --summary-of A.json B.json

Every ``data/replay/<kernel>_<gpu>.json.gz`` is tuned as a Kernel Tuner user would tune it:
``tune_kernel(..., simulation_mode=True, cache=FILE)`` with the file's ``tune_params`` and, as
restrictions, the conditions of the kernel's T1 file (``data/reference-spaces/<kernel>.json``).

- ``beastgen``: ``strategy=beastgen.kernel_tuner.Strategy(seed=s)``, and ``beastgen+priors`` with
  ``priors=`` the other GPUs' files of the same kernel (leave-one-GPU-out: never the file tuned);
  ``strategy_options={"max_fevals": budget, "good_enough": optimum}``: a run stops once it has
  measured the file's optimum (every column is known by then). The 3060 Laptop file holds 10,000
  of the 17,956 configurations of its definition: the strategy skips the others at no cost.
  Unless ``--no-check``, each run is repeated by ``beastgen tune --backend replay`` on the same
  definition written as a T1 file (``bench_search.run_beastgen``), and the two sequences of
  evaluations must be identical (the count of identical runs is printed; a difference is loud).
- Kernel Tuner's strategies (``bench_search.run_kernel_tuner``: its space is the file's measured
  configurations, seeded through ``random``/``numpy.random``) with ``max_fevals`` = the budget,
  each stopped once it has measured the file's optimum (:class:`StopAtOptimum`: the evaluations up
  to it are those of an unstopped run).

Columns as in ``bench_search.py``: median evaluations until the optimum, 1% and 5% of it (">B":
not reached within the budget in most seeds), seeds that found the optimum, and the ratio of the
median to that of Kernel Tuner's best strategy on the file.

``--no-overhead`` skips the strategy's own time per evaluation: seed 0 on the TITAN RTX file
(17,956 configurations), the whole budget, read from Kernel Tuner's ``strategy_time`` of each
result (the first result's holds the set-up: beastgen's plan of the definition, the check against
Kernel Tuner's searchspace, the priors read, the first proposal), beside ``beastgen tune``'s own time per proposal on the same
definition in the same run. ``--no-construction`` skips the space construction: Kernel
Tuner's own ``Searchspace`` against ``beastgen.kernel_tuner.searchspace_options`` (beastgen's
enumeration written as an ``ATF_cache`` file that Kernel Tuner's ``Searchspace`` reads) on the
flagship GEMM space (``bench_enumeration.space_for_peers("gemm")``) and the T1 gemm_clblast space,
each in a fresh process, its configurations checked to be the same set.
"""
from __future__ import annotations

import argparse
import fnmatch
import glob
import gzip
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path[:0] = [HERE, os.path.join(HERE, "search")]  # bench_search.py: here, or in search/ (issue 40)

from bench_search import TARGETS, _cell, _median, first_reaching, run_beastgen, run_kernel_tuner  # noqa: E402

from beastgen.harness.recorded import load_replay  # noqa: E402

KERNEL_TUNER = ["genetic_algorithm", "pso", "diff_evo", "simulated_annealing", "dual_annealing",
                "greedy_ils", "bayes_opt", "random_sample"]
BEASTGEN = ["beastgen", "beastgen+priors"]
OVERHEAD_FILE = "gemm_clblast_rtx_titan.json.gz"


class StopAtOptimum:
    """A Kernel Tuner strategy run as it is, stopped once a measured time reaches ``optimum`` (ms):
    the budget is closed after that batch, as ``max_fevals`` closes it. Some strategies evaluate
    their starting point outside their own ``StopCriterionReached`` handler (simulated annealing,
    greedy ILS): when that one is the optimum, the results so far are returned here."""

    def __init__(self, name: str, optimum_ms: float):
        self.name, self.optimum_ms = name, optimum_ms

    def tune(self, searchspace, runner, tuning_options):
        from kernel_tuner.interface import strategy_map
        from kernel_tuner.util import StopCriterionReached
        stopping = _Stopping(runner, self.optimum_ms)
        try:
            return strategy_map[self.name].tune(searchspace, stopping, tuning_options)
        except StopCriterionReached:
            return stopping.results


class _Stopping:
    """``runner`` that closes the budget once it has answered the optimum; ``results``: its
    answers, in order (what a strategy's cost function collects)."""

    def __init__(self, runner, optimum_ms):
        self._runner, self._optimum = runner, optimum_ms
        self.results = []

    def __getattr__(self, name):
        return getattr(self._runner, name)

    def run(self, parameter_space, tuning_options):
        results = self._runner.run(parameter_space, tuning_options)
        self.results += [r for r in results if r is not None]
        if any(isinstance(r, dict) and isinstance(r.get("time"), (int, float))
               and r["time"] <= self._optimum * (1 + 1e-12) for r in results):
            budget = tuning_options.budget
            budget.max_fevals = budget.num_fevals
        return results


def reference_t1(replay_path: str) -> str:
    """The kernel's T1 file: the longest ``data/reference-spaces/<name>.json`` prefixing the file's name."""
    name = os.path.basename(replay_path)
    found = [p for p in glob.glob(os.path.join(REPO, "data", "reference-spaces", "*.json"))
             if name.startswith(os.path.splitext(os.path.basename(p))[0] + "_")]
    return max(found, key=len)


def definition(replay_path: str, workdir: str):
    """(the replay file as Kernel Tuner's cache file, its header, restrictions, the definition as a
    T1 file). The cache leaves out the repetitions' times (``times``), which neither simulation
    mode nor a strategy reads: every run parses it twice."""
    cache_json = os.path.join(workdir, "cache.json")
    with gzip.open(replay_path, "rt", encoding="utf-8") as f:
        data = json.load(f)
    for record in data["cache"].values():
        record.pop("times", None)
    with open(cache_json, "w", encoding="utf-8") as f:
        json.dump(data, f)
    header = {k: v for k, v in data.items() if k != "cache"}
    with open(reference_t1(replay_path), encoding="utf-8") as f:
        restrictions = [c["Expression"] for c in json.load(f)["ConfigurationSpace"]["Conditions"]]
    from beastgen.interop import from_kernel_tuner, to_t1
    t1 = os.path.join(workdir, "definition.json")
    to_t1(from_kernel_tuner(header["tune_params"], restrictions, name="definition"), t1)
    return cache_json, header, restrictions, t1


def run_strategy(cache_json, header, restrictions, priors, seed, budget, good_enough_ms=None):
    """(evaluations as (values, seconds; inf for a failure) in order, Kernel Tuner's results) of
    beastgen's strategy in Kernel Tuner's simulation mode."""
    import beastgen.kernel_tuner
    from kernel_tuner import tune_kernel
    options = {"max_fevals": budget}
    if good_enough_ms is not None:
        options["good_enough"] = good_enough_ms
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results, _ = tune_kernel(header["kernel_name"], "", tuple(header["problem_size"]), [],
                                 header["tune_params"], restrictions=restrictions, cache=cache_json,
                                 simulation_mode=True, quiet=True,
                                 strategy=beastgen.kernel_tuner.Strategy(priors=priors or None, seed=seed),
                                 strategy_options=options)
    keys = header["tune_params_keys"]
    runs = [(tuple(r[k] for k in keys),
             float(r["time"]) / 1e3 if isinstance(r.get("time"), (int, float)) and "__error__" not in r
             else math.inf) for r in results]
    return runs, results


def benchmark(replay_path, others, seeds, budget, kt_strategies, variants, check):
    replay = load_replay(replay_path)
    optimum = replay.best()[1]
    print(f"\n{os.path.basename(replay_path)}: {replay.kernel_name} on {replay.device_name}, "
          f"{len(replay.times):,} measured, optimum {optimum * 1e3:.4f} ms; priors: "
          f"{', '.join(map(os.path.basename, others))}; budget {budget}, medians over {seeds} seeds",
          flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        cache_json, header, restrictions, t1 = definition(replay_path, workdir)
        for strategy in kt_strategies:
            runs = []
            for seed in range(seeds):
                evaluations = run_kernel_tuner(StopAtOptimum(strategy, optimum * 1e3), cache_json,
                                               seed, budget)
                runs.append(first_reaching([t for _, t in evaluations], optimum))
            rows.append(dict(tool="KT 1.5", strategy=strategy, runs=runs))
        for variant in variants:
            priors = others if variant.endswith("priors") else []
            runs, same, checked = [], 0, 0
            for seed in range(seeds):
                evaluations, _ = run_strategy(cache_json, header, restrictions, priors, seed, budget,
                                              optimum * 1e3)
                runs.append(first_reaching([t for _, t in evaluations], optimum))
                if check:
                    tuned, _, _ = run_beastgen("guided+priors" if priors else "guided", t1,
                                               replay_path, priors or None, seed, budget, workdir,
                                               header["tune_params_keys"], optimum * (1 + 1e-12))
                    checked += 1
                    if [k for k, _ in tuned] == [k for k, _ in evaluations]:
                        same += 1
                    else:
                        print(f"  DIFFERENT from beastgen tune: {variant} seed {seed}: "
                              f"{len(evaluations)} against {len(tuned)} evaluations", flush=True)
            rows.append(dict(tool="beastgen", strategy=variant, runs=runs, identical=same,
                             compared=checked))
    kt_best = min((_median([r.get("optimum") for r in row["runs"]], budget)
                   for row in rows if row["tool"] != "beastgen"), default=math.nan)
    header_line = f"{'tool':9} {'strategy':20} {'optimum':>8} {'1%':>6} {'5%':>6} {'found':>6} {'vs KT':>6}"
    print(header_line + "\n" + "-" * len(header_line))
    for row in rows:
        runs = row["runs"]
        median = _median([r.get("optimum") for r in runs], budget)
        ratio = _ratio(median, kt_best, budget)
        row.update(median=median, within_1=_median([r.get("1%") for r in runs], budget),
                   ratio=ratio, kt_best=kt_best,
                   file=os.path.basename(replay_path))
        cells = [_cell(_median([r.get(name) for r in runs], budget), budget) for name, _ in TARGETS]
        print(f"{row['tool']:9} {row['strategy']:20} {cells[0]:>8} {cells[1]:>6} {cells[2]:>6} "
              f"{sum('optimum' in r for r in runs):>3}/{len(runs):<2} "
              f"{_ratio_cell(ratio, kt_best):>6}   "
              f"(to optimum: {[r.get('optimum') for r in runs]})", flush=True)
    compared = sum(r.get("compared", 0) for r in rows)
    if compared:
        print(f"identical to beastgen tune --backend replay (same definition, priors and seed): "
              f"{sum(r['identical'] for r in rows if 'identical' in r)} of {compared} runs", flush=True)
    return rows


def _ratio(median: float, kt_best: float, budget: int) -> float:
    """The median over Kernel Tuner's best; where no Kernel Tuner strategy reached the optimum
    within the budget, over the budget (then an upper bound of the ratio)."""
    if not math.isfinite(median) or math.isnan(kt_best):
        return math.nan
    return median / (budget if math.isinf(kt_best) else kt_best)


def _ratio_cell(ratio: float, kt_best: float) -> str:
    if math.isnan(ratio):
        return "-"
    return f"{'<' if math.isinf(kt_best) else ''}{ratio:.2f}"


def summary(rows, budget) -> None:
    """The table over the files, in Markdown (rows of one or more runs: Kernel Tuner's best is
    chosen among all of a file's strategies, for the optimum and for 1% apart), and the targets
    (with priors: median <= 20, <= 1/4 of Kernel Tuner's best on every file)."""
    print("\nevaluations until the optimum and until within 1% of it, median over the seeds, and the "
          "ratio to Kernel Tuner's best strategy on the file (<: Kernel Tuner's best did not reach it "
          "within the budget, the ratio is to the budget):\n")
    print("| file | Kernel Tuner best: optimum | 1% | beastgen: optimum | 1% | beastgen + priors: optimum "
          "| 1% | seeds: Kernel Tuner / beastgen |\n|---|---|---|---|---|---|---|---|")
    chosen = {variant: [] for variant in BEASTGEN}
    for file in dict.fromkeys(r["file"] for r in rows):
        kt = [r for r in rows if r["file"] == file and r["tool"] != "beastgen"]
        best = min(kt, key=lambda r: r["median"]) if kt else None
        best_1 = min(kt, key=lambda r: r["within_1"]) if kt else None
        kt_best = best["median"] if best else math.nan
        kt_best_1 = best_1["within_1"] if best_1 else math.nan
        cells, seeds = [], {len(r["runs"]) for r in rows if r["file"] == file and r["tool"] == "beastgen"}
        for variant in BEASTGEN:
            r = next((r for r in rows if r["file"] == file and r["strategy"] == variant), None)
            if r is None:
                cells += ["-", "-"]
                continue
            r = dict(r, ratio=_ratio(r["median"], kt_best, budget))
            chosen[variant].append(r)
            cells += [f"{_cell(r['median'], budget)} ({_ratio_cell(r['ratio'], kt_best)})",
                      f"{_cell(r['within_1'], budget)} "
                      f"({_ratio_cell(_ratio(r['within_1'], kt_best_1, budget), kt_best_1)})"]
        kt_cells = ([f"{_cell(kt_best, budget)} ({best['strategy'] if math.isfinite(kt_best) else 'none'})",
                     f"{_cell(kt_best_1, budget)} ({best_1['strategy'] if math.isfinite(kt_best_1) else 'none'})"]
                    if best else ["-", "-"])
        kt_seeds = "/".join(map(str, sorted({len(r["runs"]) for r in kt}))) or "-"
        print(f"| {file.split('.')[0]} | " + " | ".join(kt_cells + cells)
              + f" | {kt_seeds} / {'/'.join(map(str, sorted(seeds))) or '-'} |")
    for variant, limit in (("beastgen", 0.5), ("beastgen+priors", 0.25)):
        if chosen[variant]:
            print(f"\n{variant}: median over the files "
                  f"{statistics.median(r['median'] for r in chosen[variant]):g}; ratio <= {limit:g} on "
                  f"{sum(r['ratio'] <= limit for r in chosen[variant])} of {len(chosen[variant])} files")


def overhead(budget: int) -> None:
    """The strategy's own time per evaluation on the TITAN RTX file, seed 0, the whole budget,
    beside ``beastgen tune``'s own time per proposal on the same definition in the same run."""
    path = os.path.join(REPO, "data", "replay", OVERHEAD_FILE)
    others = [p for p in glob.glob(os.path.join(REPO, "data", "replay", "gemm_clblast_*.json.gz"))
              if p != path]
    with tempfile.TemporaryDirectory() as workdir:
        cache_json, header, restrictions, t1 = definition(path, workdir)
        for label, priors in (("beastgen", []), ("beastgen+priors", others)):
            start = time.perf_counter()
            runs, results = run_strategy(cache_json, header, restrictions, priors, 0, budget)
            wall = time.perf_counter() - start
            each = [r["strategy_time"] for r in results[1:]]
            _, seconds, proposals = run_beastgen("guided+priors" if priors else "guided", t1, path,
                                                 priors or None, 0, budget, workdir,
                                                 header["tune_params_keys"], None)
            print(f"overhead {label} on {OVERHEAD_FILE} (17,956 configurations), seed 0, {len(runs)} "
                  f"evaluations: set-up {results[0]['strategy_time'] / 1e3:.2f} s, then per evaluation "
                  f"median {statistics.median(each):.1f} ms, mean {statistics.mean(each):.1f} ms "
                  f"(Kernel Tuner's strategy_time; the whole tune_kernel {wall:.1f} s); beastgen tune "
                  f"on the same definition: {seconds / max(proposals, 1) * 1e3:.1f} ms per proposal "
                  "(set-up included)", flush=True)


_CONSTRUCT = r"""
import hashlib, json, sys, time
sys.path.insert(0, {here!r})
tool, name = sys.argv[1], sys.argv[2]
if name == "gemm":
    from bench_enumeration import space_for_peers
    names, values, restrictions = space_for_peers("gemm")
else:
    space = json.load(open({repo!r} + "/data/reference-spaces/" + name + ".json"))["ConfigurationSpace"]
    names = [p["Name"] for p in space["TuningParameters"]]
    values = [eval(p["Values"], {{}}) for p in space["TuningParameters"]]
    restrictions = [c["Expression"] for c in space["Conditions"]]
tune_params = dict(zip(names, values))
from kernel_tuner.searchspace import Searchspace
start = time.perf_counter()
if tool == "beastgen":
    import beastgen.kernel_tuner
    options = beastgen.kernel_tuner.searchspace_options(tune_params, restrictions)
    searchspace = Searchspace(tune_params, restrictions, 1024, **options)
else:
    searchspace = Searchspace(tune_params, restrictions, 1024)
seconds = time.perf_counter() - start
plain = sorted(repr(tuple(v.item() if hasattr(v, "item") else v for v in c)) for c in searchspace.list)
print(json.dumps({{"size": searchspace.size, "seconds": seconds,
                  "sha": hashlib.sha256("\n".join(plain).encode()).hexdigest()}}))
"""


def construction(cap: float, spaces=("gemm_clblast", "gemm")) -> None:
    """Kernel Tuner's Searchspace against beastgen's enumeration handed to it (fresh processes;
    one that runs past ``cap`` seconds is stopped and reported as such)."""
    script = _CONSTRUCT.format(here=HERE, repo=REPO)
    for name in spaces:
        times = {}
        with tempfile.TemporaryDirectory() as generated:
            env = dict(os.environ, BEASTGEN_GENERATED_DIR=generated)
            for tool in ("beastgen", "beastgen", "kernel_tuner"):  # cold (fresh directory), warm
                label = tool if tool not in times else "beastgen_warm"
                try:
                    run = subprocess.run([sys.executable, "-c", script, tool, name], env=env, text=True,
                                         capture_output=True, timeout=cap)
                    times[label] = json.loads(run.stdout.splitlines()[-1])
                except subprocess.TimeoutExpired:
                    times[label] = {"size": None, "seconds": cap, "sha": None}
                except (IndexError, json.JSONDecodeError):
                    print(run.stderr[-2000:])
                    raise
        kt = times["kernel_tuner"]
        same = kt["sha"] is None or len({t["sha"] for t in times.values()}) == 1
        print(f"construction {name}: {times['beastgen']['size']:,} configurations; Kernel Tuner's "
              f"Searchspace {kt['seconds']:.2f} s{' (stopped at the cap)' if kt['sha'] is None else ''}, "
              f"beastgen's enumeration handed to it "
              f"{times['beastgen']['seconds']:.2f} s cold, {times['beastgen_warm']['seconds']:.2f} s "
              f"warm: {kt['seconds'] / times['beastgen']['seconds']:.1f}x / "
              f"{kt['seconds'] / times['beastgen_warm']['seconds']:.1f}x; the same configurations: "
              f"{'not compared' if kt['sha'] is None else 'yes' if same else 'NO'}", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--budget", type=int, default=1000)
    parser.add_argument("--files", nargs="*", default=["*"], metavar="PATTERN")
    parser.add_argument("--kt-strategies", nargs="*", default=KERNEL_TUNER)
    parser.add_argument("--variants", nargs="*", default=BEASTGEN, choices=BEASTGEN,
                        help="beastgen's strategy without and with priors (none: only Kernel Tuner's)")
    parser.add_argument("--no-check", action="store_true",
                        help="do not repeat each run with beastgen tune --backend replay")
    parser.add_argument("--no-overhead", action="store_true")
    parser.add_argument("--no-construction", action="store_true")
    parser.add_argument("--construction-cap", type=float, default=1800.0, metavar="SECONDS")
    parser.add_argument("--construction-spaces", nargs="+", default=["gemm_clblast", "gemm"],
                        help="T1 spaces of data/reference-spaces/, or gemm: the flagship")
    parser.add_argument("--json", default=None, metavar="OUT",
                        help="write every run's numbers here (after each file)")
    parser.add_argument("--resume", action="store_true",
                        help="keep the files the --json file already holds, run the others")
    parser.add_argument("--summary-of", nargs="+", default=None, metavar="JSON",
                        help="only print the summary of earlier runs' --json files (files split "
                             "over processes)")
    args = parser.parse_args(argv)
    if args.summary_of:
        rows = []
        for path in args.summary_of:
            with open(path) as f:
                rows += json.load(f)
        summary(rows, args.budget)
        compared = sum(r.get("compared", 0) for r in rows)
        print(f"identical to beastgen tune --backend replay: "
              f"{sum(r.get('identical', 0) for r in rows)} of {compared} runs")
        return 0
    started = time.perf_counter()
    files = sorted(glob.glob(os.path.join(REPO, "data", "replay", "*.json.gz")))
    rows = []
    if args.resume and args.json and os.path.isfile(args.json):
        with open(args.json) as f:
            rows = json.load(f)
    done = {r["file"] for r in rows}
    for path in files:
        if not any(fnmatch.fnmatch(os.path.basename(path), p) for p in args.files) or \
                os.path.basename(path) in done:
            continue
        others = [f for f in files if f != path and reference_t1(f) == reference_t1(path)]
        rows += benchmark(path, others, args.seeds, args.budget, args.kt_strategies,
                          args.variants, not args.no_check)
        if args.json:  # after each file: a long run that stops keeps what it measured
            with open(args.json, "w") as f:
                json.dump(rows, f, default=str, indent=1)
    identical = sum(r.get("identical", 0) for r in rows)
    compared = sum(r.get("compared", 0) for r in rows)
    if rows:
        summary(rows, args.budget)
        if compared:
            print(f"identical to beastgen tune --backend replay: {identical} of {compared} runs"
                  + ("" if identical == compared else "  <-- DIFFERENCES"))
    if not args.no_overhead:
        overhead(args.budget)
    if not args.no_construction:
        construction(args.construction_cap, args.construction_spaces)
    print(f"\nbenchmark took {time.perf_counter() - started:.0f} s")
    return 0 if identical == compared else 1


if __name__ == "__main__":
    sys.exit(main())
