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
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cli import REPO, timed  # noqa: E402 - one whole process, its output checked
SPACES_DIR = os.path.join(REPO, "data", "reference-spaces")
COUNTS = {"dedispersion": 11_130, "hotspot": 82_984, "gemm_clblast": 116_928}

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--spaces", nargs="+", default=sorted(COUNTS), choices=sorted(COUNTS))
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="bench-small-")
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: Python's bytecode cache on
    env.pop("BEASTGEN_GENERATED_DIR", None)
    rows: dict[tuple[str, str], list[float]] = {}
    for space in args.spaces:
        path = os.path.join(SPACES_DIR, f"{space}.json")
        count = COUNTS[space]
        count_line = f"{count:,} valid configurations"
        warm_dir = os.path.join(work, f"{space}-warm")
        beastgen = [sys.executable, "-m", "beastgen", "count", path, "--generated-dir"]
        timed([*beastgen, warm_dir], count_line, env)  # fill the caches
        for round_ in range(args.repeats):
            runs = {
                "kernel_tuner": lambda: timed([sys.executable, "-c", KERNEL_TUNER, path], str(count), env),
                "constraint": lambda: timed([sys.executable, "-c", CONSTRAINT, path], str(count), env),
                "beastgen cold": lambda d=os.path.join(work, f"{space}-cold{round_}"): timed(
                    [*beastgen, d], count_line, env),
                "beastgen warm": lambda: timed([*beastgen, warm_dir], count_line, env),
            }
            for name, run in runs.items():
                rows.setdefault((space, name), []).append(run())
            print(f"{space}: round {round_ + 1} done", file=sys.stderr, flush=True)

    print(f"whole processes, median of {args.repeats} alternating runs (load average at the end: "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    print(f"{'space':<13} {'what':<14} {'median s':>9} {'/ KT':>6} {'/ constraint':>13}")
    for space in args.spaces:
        kt = statistics.median(rows[(space, "kernel_tuner")])
        pc = statistics.median(rows[(space, "constraint")])
        for name in ("kernel_tuner", "constraint", "beastgen cold", "beastgen warm"):
            median = statistics.median(rows[(space, name)])
            print(f"{space:<13} {name:<14} {median:>9.3f} {median / kt:>6.2f} {median / pc:>13.2f}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
