"""Whole-process timings of the command line beside the hand-written C nest.

    python benchmarks/bench_cli.py [--repeats N] [--cold-repeats N]

Each row is the median wall time of whole processes (interpreter start, imports, everything),
the rows run alternately in each round so that a change in the machine's load falls on all of
them alike, and the ratio is to the C nest binary of ``bench_enumeration.py`` (gcc -O2, the
flagship gemm on h100 with its filters placed by hand) measured in the same rounds:

- ``c_nest``: the C binary (compiled once, before the rounds);
- ``count warm``: ``beastgen count spaces/gemm.py`` with its plan cache and Numba cache filled;
- ``count cold``: the same with an empty generated directory (no plan cache, no Numba cache);
- ``1024 values cold``: ``beastgen count`` of a space with one parameter of 1024 listed values,
  cold (what it takes to compile);
- ``small KT space cold``: ``beastgen count data/reference-spaces/hotspot.json`` (a Kernel Tuner
  space in T1 JSON: 82,984 valid), cold;
- ``small KT space cold, no C``: the same with ``BEASTGEN_NATIVE=0`` (as with no C compiler): the
  NumPy walk of ``compiler/vectorised.py`` where Numba would compile first;
- ``count --set M=<new>``: warm cache, a problem size never used before (a new M each round);
- ``estimate``: ``beastgen estimate spaces/gemm.py`` (the default: a 1.5 s budget), warm.

Every count is checked (the flagship's 459,316; the 1024-value space's 4,096).

``--baseline DIR`` (another checkout, e.g. ``main``) adds, in the same rounds, its ``count warm``,
``count cold`` and ``small KT space cold`` rows (marked ``(baseline)``): run from ``DIR`` with
``PYTHONPATH=DIR``, so the two versions' ratios come from one run.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_enumeration import C_NEST, FLAGSHIP_COUNT, REPO

#: a small Kernel Tuner space (T1 JSON of the AutoTuningAssociation benchmark hub) and its count
SMALL_SPACE = os.path.join(REPO, "data", "reference-spaces", "hotspot.json")
SMALL_SPACE_COUNT = 82_984
LONG_VALUES = [3 * i + 1 for i in range(1024)]
LONG_VALUES_COUNT = 4096  # (x + y) even for y in 1..8: half of 1024 * 8


def compile_c_nest(directory: str) -> str:
    compiler = shutil.which("gcc") or shutil.which("cc")
    if not compiler:
        raise SystemExit("no C compiler (gcc) found: the C nest is the baseline of every ratio")
    source, binary = os.path.join(directory, "gemm_nest.c"), os.path.join(directory, "gemm_nest")
    with open(source, "w", encoding="utf-8") as f:
        f.write(C_NEST)
    subprocess.run([compiler, "-O2", "-o", binary, source], check=True)
    return binary


def timed(command: list[str], expect: str, env: dict | None = None, cwd: str = REPO) -> float:
    """Wall seconds of one whole process; its output must contain ``expect``."""
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd)
    seconds = time.perf_counter() - start
    if proc.returncode != 0 or expect not in proc.stdout:
        raise SystemExit(f"{' '.join(command)} failed or miscounted:\n{proc.stdout}\n{proc.stderr}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="rounds of the warm rows (default 5)")
    parser.add_argument("--cold-repeats", type=int, default=3, help="rounds with cold rows (default 3)")
    parser.add_argument("--baseline", help="another checkout whose rows run in the same rounds")
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="bench-cli-")
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    # as installed: Python's bytecode cache on (an installed package has it; some sandboxes turn it off)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    beastgen = [sys.executable, "-m", "beastgen"]
    flagship = f"{FLAGSHIP_COUNT:,} valid configurations"
    binary = compile_c_nest(work)
    long_space = os.path.join(work, "long_values.py")
    with open(long_space, "w", encoding="utf-8") as f:
        f.write(f"import beastgen as beast\nx = beast.values({', '.join(map(str, LONG_VALUES))})\n"
                "y = beast.range(1, 9)\nodd = beast.filter((x + y) % 2 == 1)\n")
    warm_dir = os.path.join(work, "warm")
    warm = [*beastgen, "count", "spaces/gemm.py", "--generated-dir", warm_dir]
    estimate = [*beastgen, "estimate", "spaces/gemm.py", "--generated-dir", warm_dir]
    timed(warm, flagship, env)  # fill the caches
    timed(estimate, "valid configurations", env)
    base = os.path.abspath(args.baseline) if args.baseline else None
    base_env = dict(env, PYTHONPATH=base or "")
    base_warm = [*beastgen, "count", "spaces/gemm.py", "--generated-dir", os.path.join(work, "base-warm")]
    if base:
        timed(base_warm, flagship, base_env, base)

    rows: dict[str, list[float]] = {}
    for round_ in range(max(args.repeats, args.cold_repeats)):
        runs = {"c_nest": lambda: timed([binary], str(FLAGSHIP_COUNT)),
                "count warm": lambda: timed(warm, flagship, env),
                "count --set M=<new>": lambda m=1024 + 64 * round_: timed(
                    warm + ["--set", f"M={m}"], "valid configurations", env),
                "estimate": lambda: timed(estimate, "valid configurations", env)}
        if round_ < args.cold_repeats:
            cold_dir = os.path.join(work, f"cold{round_}")
            runs["count cold"] = lambda d=cold_dir: timed(
                [*beastgen, "count", "spaces/gemm.py", "--generated-dir", d], flagship, env)
            runs["1024 values cold"] = lambda d=os.path.join(work, f"long{round_}"): timed(
                [*beastgen, "count", long_space, "--generated-dir", d],
                f"{LONG_VALUES_COUNT:,} valid configurations", env)
            runs["small KT space cold"] = lambda d=os.path.join(work, f"small{round_}"): timed(
                [*beastgen, "count", SMALL_SPACE, "--generated-dir", d],
                f"{SMALL_SPACE_COUNT:,} valid configurations", env)
            runs["small KT space cold, no C"] = lambda d=os.path.join(work, f"small-numpy{round_}"): timed(
                [*beastgen, "count", SMALL_SPACE, "--generated-dir", d],
                f"{SMALL_SPACE_COUNT:,} valid configurations", dict(env, BEASTGEN_NATIVE="0"))
        if base:
            runs["count warm (baseline)"] = lambda: timed(base_warm, flagship, base_env, base)
        if base and round_ < args.cold_repeats:
            runs["count cold (baseline)"] = lambda d=os.path.join(work, f"base-cold{round_}"): timed(
                [*beastgen, "count", "spaces/gemm.py", "--generated-dir", d], flagship, base_env, base)
            runs["small KT space cold (baseline)"] = lambda d=os.path.join(work, f"base-small{round_}"): timed(
                [*beastgen, "count", SMALL_SPACE, "--generated-dir", d],
                f"{SMALL_SPACE_COUNT:,} valid configurations", base_env, base)
        if round_ >= args.repeats:
            runs = {k: v for k, v in runs.items()
                    if k.startswith(("c_nest", "count cold", "1024 values cold", "small KT space cold"))}
        for name, run in runs.items():
            rows.setdefault(name, []).append(run())
        print(f"round {round_ + 1} done", file=sys.stderr, flush=True)

    c_nest = statistics.median(rows["c_nest"])
    print(f"whole processes, median of alternating runs (load average at the end: "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    print(f"{'what':<32} {'runs':>4} {'median s':>9} {'/ C nest':>9}")
    for name, seconds in rows.items():
        median = statistics.median(seconds)
        print(f"{name:<32} {len(seconds):>4} {median:>9.3f} {median / c_nest:>9.2f}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
