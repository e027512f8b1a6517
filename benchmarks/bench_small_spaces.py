"""Small real spaces, whole processes: ``beastgen count`` of every T1 file in
``data/reference-spaces/`` against Kernel Tuner's whole process building the same ``Searchspace``.

    python benchmarks/bench_small_spaces.py [--repeats N] [--spaces hotspot ...]

Per T1 file, each round runs alternately (so a change in the machine's load falls on all alike):

- ``kernel_tuner``: ``python -c`` reading the JSON, evaluating its ``Values`` and building
  ``kernel_tuner.searchspace.Searchspace(tune_params, restrictions, 1024)`` (python-constraint2,
  Kernel Tuner's default), printing its size: interpreter start, imports, everything;
- ``constraint``: a python-constraint2 process solving the same problem (``Problem`` with the
  restrictions as string constraints, ``len(getSolutions())``);
- ``beastgen cold``: ``beastgen count FILE.json`` with an empty generated directory (no plan
  cache, no compiled library);
- ``beastgen warm``: the same command again on the directory a previous run filled.

The table gives medians and the ratios of the medians to Kernel Tuner's and python-constraint2's.
Every count is checked against the JSON's known count.

``script`` is the Kernel Tuner script of ``tests/test_convert.py`` (tune_params and restrictions:
strings, a lambda and a function): Kernel Tuner's whole process builds its ``Searchspace`` (the
restrictions as Kernel Tuner's parser takes them, ``AS_STRINGS``), beastgen counts the space file
``beastgen convert`` wrote from it (converted once, before the rounds); python-constraint2 alone is
not run on it (its restrictions are Python functions, not strings).

``--baseline DIR`` (another checkout, e.g. ``main``) adds its ``beastgen cold`` and ``beastgen
warm`` rows in the same rounds (run from ``DIR`` with ``PYTHONPATH=DIR``).

``prl_4x4`` and ``prl_8x8`` are tiny T1 spaces written by this script (:data:`TINY_SPACES`: 4
parameters of 4 values and 8 of 9, block, tile, unroll and vector sizes under product limits):
stand-ins for the prl_4x4/prl_8x8 spaces that issue 40 names, which are not in
``../shared/reference-spaces/``. prl_4x4's nest is bounded small (counted whole in the calling
thread); prl_8x8's bound (48 million loop iterations) is not, so it shows the count that begins in
the calling thread and starts helper threads only where work remains.

Then, in one process (imports done, ``--in-process-repeats`` runs each, medians): the
python-constraint2 solve (``len(problem.getSolutions())``) against beastgen's warm count
(``plan.count()`` of the plan-cached plan: the C library; ``first``: the first count of a plan just
read from the plan cache, what a script's one count waits) and the NumPy walk with no compiler
(``compiler/vectorised.py``), as ratios (the issue's target: the count itself >= 100x
python-constraint2). With ``--baseline``, the baseline's warm count (median and first) is measured
in a process of its own between this process's rows, and shown beside them.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cli import REPO, timed  # noqa: E402 - one whole process, its output checked
SPACES_DIR = os.path.join(REPO, "data", "reference-spaces")
COUNTS = {"dedispersion": 11_130, "hotspot": 82_984, "gemm_clblast": 116_928,
          "convolution_milo": 4_362, "script": 90, "prl_4x4": 114, "prl_8x8": 819}
#: tiny T1 spaces written by this script: (parameters, their values, conditions)
TINY_SPACES = {
    "prl_4x4": (["block_size_x", "block_size_y", "tile_size_x", "tile_size_y"], "[1, 2, 4, 8]",
                ["block_size_x * block_size_y >= 4", "tile_size_x * tile_size_y <= 8",
                 "block_size_x * tile_size_x <= 16"]),
    "prl_8x8": (["block_size_x", "block_size_y", "tile_size_x", "tile_size_y", "unroll_x", "unroll_y",
                 "vector_x", "vector_y"], "[2 ** i for i in range(9)]",
                ["32 <= block_size_x * block_size_y <= 128", "tile_size_x * tile_size_y <= 4",
                 "unroll_x * unroll_y <= 4", "vector_x * vector_y <= 2",
                 "block_size_x * tile_size_x <= 64", "unroll_x <= tile_size_x", "unroll_y <= tile_size_y"]),
}
TESTS_DIR = os.path.join(REPO, "tests")

_READ_T1 = """\
import json, sys
with open(sys.argv[1]) as f:
    space = json.load(f)["ConfigurationSpace"]
tune_params = {p["Name"]: eval(p["Values"], {}) for p in space["TuningParameters"]}
restrictions = [c["Expression"] for c in space["Conditions"]]
"""
KERNEL_TUNER = _READ_T1 + """\
from kernel_tuner.searchspace import Searchspace
print(Searchspace(tune_params, restrictions, 1024).size)
"""
CONSTRAINT = _READ_T1 + """\
from constraint import Problem
problem = Problem()
for name, values in tune_params.items():
    problem.addVariable(name, values)
for restriction in restrictions:
    problem.addConstraint(restriction)
print(len(problem.getSolutions()))
"""


KT_SCRIPT_SPACE = """\
import runpy, sys
script = runpy.run_path(sys.argv[1], run_name="bench")
from kernel_tuner.searchspace import Searchspace
print(Searchspace(script["tune_params"](), script["AS_STRINGS"], 1024).size)
"""


def t1_path(space: str, work: str) -> str:
    """The T1 file of ``space``: a reference space's, or a tiny one written into ``work``."""
    if space not in TINY_SPACES:
        return os.path.join(SPACES_DIR, f"{space}.json")
    path = os.path.join(work, f"{space}.json")
    if not os.path.exists(path):
        names, values, conditions = TINY_SPACES[space]
        document = {"General": {"BenchmarkName": space, "OutputFormat": "JSON"},
                    "ConfigurationSpace": {
                        "TuningParameters": [{"Name": n, "Type": "int", "Values": values, "Default": 1}
                                             for n in names],
                        "Conditions": [{"Parameters": [n for n in names if n in c], "Expression": c}
                                       for c in conditions]}}
        with open(path, "w", encoding="utf-8") as f:
            json.dump(document, f, indent=1)
    return path


#: a warm count in a process of its own (``--baseline``): argv = T1 file, generated dir, repeats;
#: prints [median seconds, first count's seconds, count]
WARM_COUNT = """\
import json, statistics, sys, time
from beastgen.loading.plancache import compile_cached
path, generated, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3])
compile_cached(path, generated_dir=generated).count()
plan = compile_cached(path, generated_dir=generated)
start = time.perf_counter()
count = plan.count()
first = time.perf_counter() - start
times = []
for _ in range(repeats):
    start = time.perf_counter()
    plan.count()
    times.append(time.perf_counter() - start)
print(json.dumps([statistics.median(times), first, count]))
"""


def script_files(work: str, env: dict) -> tuple[str, str]:
    """test_convert's Kernel Tuner script written into ``work``, and the space file ``beastgen
    convert`` makes of it."""
    sys.path.insert(0, TESTS_DIR)
    from test_convert import SCRIPT  # noqa: E402 - the tests' Kernel Tuner script, as people write them
    script, space = os.path.join(work, "kt_script.py"), os.path.join(work, "kt_script_space.py")
    with open(script, "w", encoding="utf-8") as f:
        f.write(SCRIPT)
    timed([sys.executable, "-m", "beastgen", "convert", script, "-o", space], "", env)
    return script, space


def whole_processes(args, work: str, env: dict) -> dict:
    """{(space, what): [seconds of each round]}"""
    rows: dict[tuple[str, str], list[float]] = {}
    for space in args.spaces:
        count = COUNTS[space]
        if space == "script":
            script, path = script_files(work, env)
            peers = {"kernel_tuner": [sys.executable, "-c", KT_SCRIPT_SPACE, script]}
        else:
            path = t1_path(space, work)
            peers = {"kernel_tuner": [sys.executable, "-c", KERNEL_TUNER, path],
                     "constraint": [sys.executable, "-c", CONSTRAINT, path]}
        count_line = f"{count:,} valid configurations"
        warm_dir = os.path.join(work, f"{space}-warm")
        beastgen = [sys.executable, "-m", "beastgen", "count", path, "--generated-dir"]
        timed([*beastgen, warm_dir], count_line, env)  # fill the caches
        trees = [("", env, REPO)]
        if args.baseline:
            base = os.path.abspath(args.baseline)
            trees.append((" (baseline)", dict(env, PYTHONPATH=base), base))
            timed([*beastgen, warm_dir + "-base"], count_line, trees[1][1], base)
        for round_ in range(args.repeats):
            runs = {name: (lambda c=command: timed(c, str(count), env)) for name, command in peers.items()}
            for mark, tree_env, tree in trees:
                runs["beastgen cold" + mark] = lambda d=os.path.join(work, f"{space}-cold{round_}{mark}"), \
                    e=tree_env, t=tree: timed([*beastgen, d], count_line, e, t)
                runs["beastgen warm" + mark] = lambda d=warm_dir + ("-base" if mark else ""), e=tree_env, \
                    t=tree: timed([*beastgen, d], count_line, e, t)
            for name, run in runs.items():
                rows.setdefault((space, name), []).append(run())
            print(f"{space}: round {round_ + 1} done", file=sys.stderr, flush=True)
    return rows


def print_whole(args, rows: dict) -> None:
    print(f"whole processes, median of {args.repeats} alternating runs (load average at the end: "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    print(f"{'space':<17} {'what':<25} {'median s':>9} {'/ KT':>6} {'/ constraint':>13}")
    for space in args.spaces:
        kt = statistics.median(rows[(space, "kernel_tuner")])
        pc = statistics.median(rows[(space, "constraint")]) if (space, "constraint") in rows else None
        for name in ("kernel_tuner", "constraint", "beastgen cold", "beastgen warm",
                     "beastgen cold (baseline)", "beastgen warm (baseline)"):
            if (space, name) not in rows:
                continue
            median = statistics.median(rows[(space, name)])
            versus = f"{median / pc:>13.2f}" if pc else f"{'-':>13}"
            print(f"{space:<17} {name:<25} {median:>9.3f} {median / kt:>6.2f} {versus}")


def in_process(args, work: str) -> None:
    """The counts themselves, in this process: python-constraint2's solve against beastgen's warm
    count (C library; its first count too) and its NumPy walk, and the baseline's warm count."""
    sys.path.insert(0, REPO)
    import subprocess
    import time

    from constraint import Problem

    from beastgen.compiler.vectorised import VectorisedNest
    from beastgen.loading.plancache import compile_cached

    def median_seconds(run, expect) -> float:
        times = []
        for _ in range(args.in_process_repeats):
            start = time.perf_counter()
            got = run()
            times.append(time.perf_counter() - start)
            if got != expect:
                raise SystemExit(f"miscounted: {got} where {expect} was expected")
        return statistics.median(times)

    def baseline_count(path: str, generated: str, count: int) -> tuple[float, float]:
        base = os.path.abspath(args.baseline)
        env = dict(os.environ, PYTHONPATH=base)
        env.pop("BEASTGEN_GENERATED_DIR", None)
        out = subprocess.run([sys.executable, "-c", WARM_COUNT, path, generated, str(args.in_process_repeats)],
                             capture_output=True, text=True, env=env, cwd=base, check=True).stdout
        median, first, got = json.loads(out.splitlines()[-1])
        if got != count:
            raise SystemExit(f"the baseline miscounted: {got} where {count} was expected")
        return median, first

    print(f"\nin one process, median of {args.in_process_repeats} runs each (load average "
          f"{os.getloadavg()[0]:.1f}); ratio: python-constraint2's time / beastgen's")
    header = (f"{'space':<17} {'constraint s':>12} {'beastgen s':>11} {'ratio':>8} {'first s':>9} "
              f"{'ratio':>8} {'numpy s':>9} {'ratio':>8}")
    if args.baseline:
        header += f" {'base s':>9} {'ratio':>8} {'base 1st':>9} {'ratio':>8}"
    print(header)
    for space in (s for s in args.spaces if s != "script"):
        path = t1_path(space, work)
        with open(path, encoding="utf-8") as f:
            document = json.load(f)["ConfigurationSpace"]
        tune_params = {p["Name"]: eval(p["Values"], {}) for p in document["TuningParameters"]}  # noqa: S307
        restrictions = [c["Expression"] for c in document["Conditions"]]

        def solve():
            problem = Problem()
            for name, values in tune_params.items():
                problem.addVariable(name, values)
            for restriction in restrictions:
                problem.addConstraint(restriction)
            return len(problem.getSolutions())
        generated = os.path.join(work, f"{space}-in-process")
        count = COUNTS[space]
        compile_cached(path, generated_dir=generated).count()  # builds, records, compiles
        plan = compile_cached(path, generated_dir=generated)  # from the plan cache, as a warm run
        start = time.perf_counter()
        if plan.count() != count:
            raise SystemExit(f"{space}: miscounted")
        first = time.perf_counter() - start
        nest = VectorisedNest(compile_cached(path, generated_dir=generated).plan)
        pc, bg, vec = (median_seconds(solve, count), median_seconds(plan.count, count),
                       median_seconds(nest.count, count))
        row = (f"{space:<17} {pc:>12.5f} {bg:>11.7f} {pc / bg:>7.0f}x {first:>9.6f} {pc / first:>7.0f}x "
               f"{vec:>9.5f} {pc / vec:>7.1f}x")
        if args.baseline:
            base, base_first = baseline_count(path, generated + "-base", count)
            row += f" {base:>9.7f} {pc / base:>7.0f}x {base_first:>9.6f} {pc / base_first:>7.0f}x"
        print(row, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--in-process-repeats", type=int, default=5, help="in-process runs (default 5)")
    parser.add_argument("--spaces", nargs="+", default=sorted(COUNTS), choices=sorted(COUNTS))
    parser.add_argument("--skip-whole", action="store_true", help="only the in-process table")
    parser.add_argument("--baseline", help="another checkout whose beastgen rows run in the same rounds")
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="bench-small-")
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: Python's bytecode cache on
    env.pop("BEASTGEN_GENERATED_DIR", None)
    try:
        if not args.skip_whole:
            print_whole(args, whole_processes(args, work, env))
        in_process(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
