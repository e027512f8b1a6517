"""What a cold flagship count cannot go below: its parts as whole processes beside the C nest.

    python benchmarks/bench_cold_floor.py [--rounds N] [--clean-python PYTHON] [--baseline DIR]

The rows run alternately in each round (a change in the machine's load falls on all alike); each
is the median of whole processes, in wall time and in CPU time (user + sys of the child and of what
it waited for: gcc's cc1, as and ld), each with its ratio to the C nest binary of the same rounds
(``bench_enumeration.C_NEST``, gcc -O2):

- ``python -c pass`` and ``python -c "import networkx"`` with this interpreter (its environment's
  ``.pth`` files and distributions: networkx scans every installed distribution's entry points
  for its backends) and, with ``--clean-python``, with an interpreter of a virtual environment that
  holds networkx alone (what a user's environment is closer to);
- ``gcc -O2`` and ``gcc -Og`` of the C a cold count compiles (the flagship's ``split_nodes`` and
  ``count_claimed``, as ``compiler/native.py`` calls the compiler), written by this checkout;
- ``count cold`` (an empty ``--generated-dir`` each round) and ``count warm`` of
  ``spaces/gemm.py``, and with ``--baseline DIR`` the same from another checkout
  (``PYTHONPATH=DIR``).

The floor of a cold count with networkx in the planner is the interpreter's start, the import of
networkx, gcc and the count itself, one after the other (the C source needs the plan, the plan the
dependency graph): the sum of those rows, before any of beastgen's own work.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cli import compile_c_nest
from bench_enumeration import FLAGSHIP_COUNT, REPO


def timed(command: list[str], env: dict, cwd: str = REPO, expect: str | None = None,
          stdin=None) -> tuple[float, float]:
    """(wall, CPU) seconds of one whole process; its output must contain ``expect``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, env=env, cwd=cwd, stdin=stdin)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if proc.returncode != 0 or (expect and expect not in proc.stdout.decode()):
        raise SystemExit(f"{' '.join(command)} failed or miscounted:\n{proc.stdout.decode()}\n"
                         f"{proc.stderr.decode()}")
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--clean-python", help="the python of a virtual environment with networkx alone")
    parser.add_argument("--baseline", help="another checkout whose cold and warm counts run in the same rounds")
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="bench-cold-floor-")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "BEASTGEN_GENERATED_DIR")}
    env["PYTHONPATH"] = REPO
    binary = compile_c_nest(work)
    flagship = f"{FLAGSHIP_COUNT:,} valid configurations"
    count = [sys.executable, "-m", "beastgen", "count", "spaces/gemm.py", "--generated-dir"]
    sources = os.path.join(work, "sources")
    timed(count + [sources], env, expect=flagship)  # writes the C source a cold count compiles
    c_source = next(os.path.join(sources, n) for n in os.listdir(sources) if n.endswith(".c"))
    compiler = shutil.which("cc") or shutil.which("gcc")

    def gcc(optimization: str):
        with open(c_source, "rb") as source:
            return timed([compiler, optimization, "-fwrapv", "-pipe", "-shared", "-fPIC", "-o",
                          os.path.join(work, "lib.so"), "-x", "c", "-", "-lm"], env, stdin=source)

    runs = {"c_nest": lambda r: timed([binary], env, expect=str(FLAGSHIP_COUNT)),
            "python -c pass": lambda r: timed([sys.executable, "-c", "pass"], env),
            "import networkx": lambda r: timed([sys.executable, "-c", "import networkx"], env)}
    if args.clean_python:
        runs["python -c pass (clean venv)"] = lambda r: timed([args.clean_python, "-c", "pass"], {})
        runs["import networkx (clean venv)"] = lambda r: timed([args.clean_python, "-c", "import networkx"], {})
    runs["gcc -O2 (the count's C)"] = lambda r: gcc("-O2")
    runs["gcc -Og (the count's C)"] = lambda r: gcc("-Og")
    checkouts = [("", REPO)] + ([(" (baseline)", os.path.abspath(args.baseline))] if args.baseline else [])
    for label, checkout in checkouts:
        checkout_env = dict(env, PYTHONPATH=checkout)
        warm = os.path.join(work, f"warm{label.strip()}")
        timed(count + [warm], checkout_env, checkout, flagship)
        runs[f"count cold{label}"] = lambda r, e=checkout_env, c=checkout, l=label: timed(
            count + [os.path.join(work, f"cold{l.strip()}{r}")], e, c, flagship)
        runs[f"count warm{label}"] = lambda r, e=checkout_env, c=checkout, w=warm: timed(
            count + [w], e, c, flagship)

    rows: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    loads = [os.getloadavg()[0]]
    for round_ in range(args.rounds):
        for name, run in runs.items():
            rows[name].append(run(round_))
        loads.append(os.getloadavg()[0])
        print(f"round {round_ + 1} done", file=sys.stderr, flush=True)
    nest_wall = statistics.median(w for w, _ in rows["c_nest"])
    nest_cpu = statistics.median(c for _, c in rows["c_nest"])
    print(f"{args.rounds} alternating rounds, whole processes, medians (load average {min(loads):.1f} "
          f"to {max(loads):.1f} on {os.cpu_count()} cores)")
    print(f"{'what':<32} {'wall s':>8} {'/ C nest':>8} {'CPU s':>8} {'/ C nest':>8}")
    for name, values in rows.items():
        wall, cpu = statistics.median(w for w, _ in values), statistics.median(c for _, c in values)
        print(f"{name:<32} {wall:>8.3f} {wall / nest_wall:>8.2f} {cpu:>8.3f} {cpu / nest_cpu:>8.2f}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
