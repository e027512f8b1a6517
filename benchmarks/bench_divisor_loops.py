"""Divisor loops (``facts.divides_next``, narrowed by ``facts.divisor_narrowing``): loop iterations
and warm in-process count times of this checkout against another one (``--baseline``, e.g. the
main checkout), in one run: one worker process per checkout, each holding the space compiled,
asked in turn (alternating, so a change of load hits both alike).

    PYTHONPATH=. python benchmarks/bench_divisor_loops.py --baseline /work/main
                      [--spaces spaces/gemm.py ...] [--device h100] [--repeats 9]

Rows: ``iterations C``: loop iterations of the C ``count`` (a counter at every level entered,
filters ending their loops, in a library of its own); ``iterations stats``: the levels' iterations
that ``--stats`` reports (the Numba ``count_with_stats`` walk); each also per valid configuration.
``count()``: ``CompiledPlan.count()`` warm (what ``beastgen count`` runs: the C library's threads
claiming split nodes, here one); ``C count``, ``Numba count``: the generated ``count`` of each
target, whole; ``stats()``: ``CompiledPlan.stats()``. Times: the median of ``--repeats`` runs, in
seconds; the load average is printed before and after.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EVERYTHING = 2 ** 62
TIMED = ("count()", "C count", "Numba count", "stats()")


# --------------------------------------------------------------------------------------------------
# The worker: one checkout's beastgen (its PYTHONPATH), one space compiled
# --------------------------------------------------------------------------------------------------
def c_iterations(plan, directory: str) -> int:
    """Loop iterations of the C count: the checkout's own ``CCount`` with a counter at every level."""
    from beastgen.compiler import native
    from beastgen.compiler.analysis.symbolic import SymbolicContext
    from beastgen.compiler.codegen.c.expression import c_source, value_tables
    from beastgen.compiler.codegen.c.functions import CCount

    class IterationCount(CCount):
        def enter(self, index: int) -> None:
            super().enter(index)
            self.emit("_iterations += 1;")

    lines = IterationCount(plan, SymbolicContext(plan.specialized.items)).write()
    source = "\n".join([c_source("prelude.h"), c_source("divisors.h"), *value_tables(plan),
                        "static int64_t _iterations = 0;", *lines,
                        "int64_t iterations(void) { return _iterations; }"]) + "\n"
    library = ctypes.CDLL(os.path.abspath(native.build_library(directory, "iterations", source, "-O0")[0]))
    library.count.argtypes, library.count.restype = native.SIGNATURES["count"], ctypes.c_int64
    library.iterations.restype = ctypes.c_int64
    native.exact_count(library.count, 0, EVERYTHING)
    return library.iterations()


def worker(space: str, device: str) -> None:
    """Compile ``space``, print its facts as one JSON line, then time what each stdin line names."""
    import beastgen
    from beastgen.compiler.native import exact_count

    directory = tempfile.mkdtemp(prefix="bench_divisor_loops_")
    plan = beastgen.load(space).specialize(device=device, generated_dir=directory)
    count = plan.count()
    stats = plan.stats()
    module = plan.module
    exact_count(module.count, 0, EVERYTHING)  # compiled here, not timed
    runs = {"count()": plan.count, "C count": lambda: plan.native.count(0, EVERYTHING),
            "Numba count": lambda: exact_count(module.count, 0, EVERYTHING), "stats()": plan.stats}
    print(json.dumps({"count": count, "stats iterations": sum(n for _, n in stats.levels),
                      "C iterations": c_iterations(plan.plan, directory),
                      "rejections": stats.rejections}), flush=True)
    for line in sys.stdin:
        start = time.perf_counter()
        runs[line.strip()]()
        print(time.perf_counter() - start, flush=True)


# --------------------------------------------------------------------------------------------------
# The driver
# --------------------------------------------------------------------------------------------------
class Worker:
    def __init__(self, checkout: str, space: str, device: str):
        env = dict(os.environ, PYTHONPATH=checkout)
        self.process = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", space, device],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
                                        cwd=checkout)
        self.facts = json.loads(self.process.stdout.readline())

    def time(self, what: str) -> float:
        self.process.stdin.write(what + "\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def compare(space: str, baseline: str, device: str, repeats: int) -> list[list[str]]:
    workers = {"baseline": Worker(baseline, space, device), "branch": Worker(REPO, space, device)}
    facts = {name: w.facts for name, w in workers.items()}
    assert facts["baseline"]["count"] == facts["branch"]["count"], "the counts differ"
    assert facts["baseline"]["rejections"] == facts["branch"]["rejections"], "the rejections differ"
    times = {name: {what: [] for what in TIMED} for name in workers}
    for _ in range(repeats):
        for what in TIMED:
            for name, w in workers.items():
                times[name][what].append(w.time(what))
    for w in workers.values():
        w.close()
    valid = facts["branch"]["count"]
    rows = []
    for key in ("C iterations", "stats iterations"):
        before, after = facts["baseline"][key], facts["branch"][key]
        rows.append([key, f"{before:,}", f"{after:,}", f"{before / after:.2f}"])
        rows.append(["  per valid", f"{before / valid:.1f}", f"{after / valid:.1f}", ""])
    for what in TIMED:
        before, after = (statistics.median(times[name][what]) for name in ("baseline", "branch"))
        rows.append([f"{what} s", f"{before:.4f}", f"{after:.4f}", f"{before / after:.2f}"])
    return rows


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", required=True, help="the checkout to compare with (its repository root)")
    parser.add_argument("--spaces", nargs="*", default=[os.path.join(REPO, "spaces", "gemm.py")])
    parser.add_argument("--device", default="h100")
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    for path in args.spaces:
        space = os.path.abspath(path)
        print(f"\n{os.path.basename(space)} on {args.device}: {os.path.abspath(args.baseline)} (baseline) -> "
              f"{REPO} (branch), medians of {args.repeats} runs, alternating")
        rows = compare(space, os.path.abspath(args.baseline), args.device, args.repeats)
        widths = [max(len(r[i]) for r in rows + [["", "baseline", "branch", "ratio"]]) for i in range(4)]
        for row in [["", "baseline", "branch", "ratio"]] + rows:
            print(row[0].ljust(widths[0]), *(cell.rjust(w) for cell, w in zip(row[1:], widths[1:])))
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
