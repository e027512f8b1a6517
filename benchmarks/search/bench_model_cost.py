"""The default search's own cost on a large space, without a GPU: the CPU time of its models per
proposal (``model_ms_per_proposal`` of ``beastgen tune --json``) on the flagship space
``spaces/gemm.py`` (default settings, h200 profile: 459,316 valid configurations), beside the same
on a 17,956-configuration replay file of ``data/replay``.

    python benchmarks/search/bench_model_cost.py [--budget 100] [--repeats 3] [--keep DIR]
    python benchmarks/search/bench_model_cost.py --direct [SIZE ...]   # the search alone

The flagship space has no replay file, so this script writes one (Kernel Tuner's cache format, what
``--backend replay --replay FILE`` reads) holding every valid configuration with a SYNTHETIC time:
its lower bound (``beastgen rank``'s, the plan's ``rank_all``) times a deterministic pseudo-random
factor ``1.2 * 2**u``, ``u`` uniform in [0, 2) (NumPy's generator, seed 0, in enumeration order).
The times are made up: this measures what the search costs on a space this large, never how fast
any configuration is or how well the search finds the best (a real GPU's times order differently).

Each run is the whole command ``beastgen tune SPACE --device h200 --backend replay --replay FILE
--budget N --json`` (this tree's: ``python -m beastgen`` in the repository; a fresh results store,
default settings: no thread variables set), repeated;
the table gives the median over the repeats of the model's CPU milliseconds per proposal (its
set-up included, as the tune reports it), per evaluation (a configuration answered by the file:
on the TITAN RTX file most proposals are configurations of the space that the file lacks, which
cost the model little) and of the command's wall seconds. ``--direct`` runs the search alone
(no store, no replay) on the space and on a random subset of it of each SIZE (default 17,956, a
replay file's size): the same parameters, bounds and times, so what differs is the count alone.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPACE = os.path.join(REPO, "spaces", "gemm.py")
DEVICE = "h200"
SMALL = (os.path.join(REPO, "spaces", "gemm_clblast.py"),
         os.path.join(REPO, "data", "replay", "gemm_clblast_rtx_titan.json.gz"))


def flagship_rows(generated_dir: str):
    """(every valid configuration of ``spaces/gemm.py`` at default settings on the h200 profile,
    with its bound, as :func:`~beastgen.harness.strategies.base.all_rows` gives them; the plan)."""
    sys.path.insert(0, REPO)
    import beastgen
    from beastgen.devices import load_profile
    from beastgen.harness.strategies.base import all_rows

    plan = beastgen.load(SPACE).specialize(device=load_profile(DEVICE), generated_dir=generated_dir)
    return all_rows(plan), plan


def synthetic_seconds(bounds: np.ndarray) -> np.ndarray:
    """The made-up time of each configuration: its bound times 1.2 * 2**U(0, 2)."""
    return bounds * 1.2 * 2.0 ** (2.0 * np.random.default_rng(0).random(len(bounds)))


def write_synthetic_replay(path: str, generated_dir: str) -> int:
    """Every valid configuration of ``spaces/gemm.py`` (default settings, h200) with a synthetic
    time (module docstring) into the Kernel Tuner cache file ``path``; returns their count."""
    rows, plan = flagship_rows(generated_dir)
    columns = list(plan.columns)
    milliseconds = synthetic_seconds(rows["bound"].astype(float)) * 1e3
    settings = plan.specialized.settings
    values = [rows[c].tolist() for c in columns]
    cache = {}
    for k, ms in enumerate(milliseconds.tolist()):
        config = [column[k] for column in values]
        record = dict(zip(columns, config))
        record["time"] = ms
        cache[",".join(map(str, config))] = record
    data = {"device_name": "NVIDIA H200", "kernel_name": "gemm",
            "problem_size": [settings["M"], settings["N"], settings["K"]],
            "tune_params_keys": columns,
            "tune_params": {c: sorted(set(v)) for c, v in zip(columns, values)},
            "objective": "time",
            "note": "SYNTHETIC times (bound x 1.2 x 2**U(0,2)): a cost benchmark, not measurements",
            "cache": cache}
    with gzip.open(path, "wt", compresslevel=1) as out:
        json.dump(data, out)
    return len(rows)


def direct(generated_dir: str, sizes: list[int], proposals: int, repeats: int) -> None:
    """The search itself (:class:`~beastgen.harness.strategies.guided.GuidedSearch`, as ``tune``
    builds it) on the flagship space's configurations and on random subsets of ``sizes`` of them
    (the same parameters, bounds and synthetic times; the subset is the whole space the search
    sees): the model's CPU ms per proposal, its set-up included, median over ``repeats``."""
    from beastgen.harness.strategies.guided.strategy import GuidedSearch, _codes, _numbers
    rows, plan = flagship_rows(generated_dir)
    terms = list(plan.bound_terms)
    codes = np.stack([_codes(rows[c]) for c in plan.columns], axis=1)
    values = np.stack([_numbers(rows[c]) for c in plan.columns], axis=1)
    names, index = np.unique(rows["bottleneck"].astype(str), return_inverse=True)
    term = np.array([terms.index(t) for t in names], dtype=np.int64)[index.reshape(-1)]
    bounds = rows["bound"].astype(float)
    seconds = synthetic_seconds(bounds)
    print(f"| configurations the search sees | proposals | model ms/proposal | each run |\n"
          f"|---:|---:|---:|---|")
    for size in sizes:
        keep = (np.sort(np.random.default_rng(9).choice(len(bounds), size, replace=False))
                if size < len(bounds) else np.arange(len(bounds)))
        each = []
        for _ in range(repeats):
            search = GuidedSearch(codes[keep], bounds[keep], term[keep], values[keep])
            best = np.inf
            for _ in range(proposals):
                i = search.next(best)
                search.observe(i, seconds[keep][i])
                best = min(best, seconds[keep][i])
            each.append(search.model_seconds * 1e3 / proposals)
        print(f"| {len(keep):,} | {proposals} | {statistics.median(each):.1f} | "
              f"{', '.join(f'{x:.1f}' for x in each)} |", flush=True)


def tune(space: str, replay: str, budget: int, workdir: str, device: str | None) -> dict:
    """One ``beastgen tune --json`` run (a fresh store): its JSON and the command's wall time."""
    store = tempfile.mktemp(suffix=".db", dir=workdir)
    command = [sys.executable, "-m", "beastgen", "tune", space, "--backend", "replay", "--replay", replay,
               "--budget", str(budget), "--results", store, "--no-progress", "--json",
               "--generated-dir", os.path.join(workdir, "generated")]
    if device:
        command[5:5] = ["--device", device]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO)  # this tree's beastgen
    wall = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["wall_seconds"] = wall
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=100, help="proposals per run (default 100)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per file (default 3)")
    parser.add_argument("--keep", help="write the synthetic file here (reused when present)")
    parser.add_argument("--direct", type=int, nargs="*", metavar="SIZE",
                        help="instead: the search alone on the whole space and on random subsets "
                             "of these sizes (default 17956) of it")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as workdir:
        if args.direct is not None:
            direct(os.path.join(workdir, "generated"), (args.direct or [17956]) + [459316],
                   args.budget, args.repeats)
            return
        path = os.path.join(args.keep or workdir, "gemm_synthetic_h200.json.gz")
        if not os.path.exists(path):
            started = time.perf_counter()
            count = write_synthetic_replay(path, os.path.join(workdir, "generated"))
            print(f"wrote {path}: {count:,} configurations, synthetic times "
                  f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
        cases = [("spaces/gemm.py, 459,316 configurations (synthetic h200 file)", SPACE, path,
                  DEVICE),
                 ("spaces/gemm_clblast.py, 116,928 configurations (TITAN RTX file: 17,956)",
                  *SMALL, None)]
        print("| space (replay) | proposals | evaluated | model ms/proposal | model ms/evaluation "
              "| wall s | each run's ms/proposal |\n|---|---:|---:|---:|---:|---:|---|")
        for name, space, replay, device in cases:
            runs = [tune(space, replay, args.budget, workdir, device) for _ in range(args.repeats)]
            per = statistics.median(r["model_ms_per_proposal"] for r in runs)
            each = statistics.median(r["model_cpu_seconds"] * 1e3 / r["evaluated"] for r in runs)
            wall = statistics.median(r["wall_seconds"] for r in runs)
            print(f"| {name} | {runs[0]['proposals']} | {runs[0]['evaluated']} | {per:.1f} | "
                  f"{each:.1f} | {wall:.1f} | "
                  f"{', '.join(format(r['model_ms_per_proposal'], '.1f') for r in runs)} |",
                  flush=True)

if __name__ == "__main__":
    main()
