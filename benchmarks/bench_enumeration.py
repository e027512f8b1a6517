"""Enumeration benchmark: beastgen against the tools people use today, on the flagship GEMM space and
on the three community reference spaces.

    python benchmarks/bench_enumeration.py [--cap SECONDS] [--repeats N] [--quick]
                                           [--spaces gemm hotspot ...] [--tools ...]
                                           [--json-out benchmarks/results.json]

Spaces: ``gemm`` (spaces/gemm.py on h100 with its default settings, precision s, trans_a =
trans_b = 0: 459,316 valid configurations), ``dedispersion``, ``hotspot`` and ``gemm_clblast``
(spaces/<name>.py, transcribed from the T1 JSON files of the AutoTuningAssociation benchmark_hub in
shared/reference-spaces/).

Tools (each run counts the valid configurations; every count is checked against beastgen's):

- ``beastgen_cold``: a fresh process with an empty Numba cache and a fresh generated directory:
  ``beastgen count SPACE --json --generated-dir TMP`` with NUMBA_CACHE_DIR=TMP2. Its time is the
  wall time of the whole process (interpreter start, imports, load, plan, generate, compile, count);
  the JSON also records beastgen's own ``total_seconds`` (everything after the imports).
- ``beastgen_warm``: compiled code cached, one process: the ``seconds`` of ``plan.count()``.
- ``beastgen_enum``: the same plan's ``plan.enumerate()`` (wall time), which materializes every
  configuration as a NumPy structured array, as the peers below materialize theirs as lists.
- ``beastgen_enum_threads``: ``plan.enumerate(jobs=os.cpu_count())``: balanced chunks of split
  nodes on one thread per core (the census of the split nodes included in the time).
- ``kernel_tuner``: ``kernel_tuner.searchspace.Searchspace(tune_params, restrictions, max_threads)``
  (python-constraint2, its default solver); the construction time.
- ``pyatf``: ``pyatf.search_space.SearchSpace(*tps)``: the chain-of-trees construction; the count is
  its ``constrained_size``.
- ``kt_bruteforce``: the same Searchspace with ``framework="bruteforce"`` (``itertools.product`` and
  the restrictions checked on every point). Not run when the Cartesian product is so large that
  it cannot finish within the cap even at 10 million points per second (reported as ">cap").
- ``python_nest``, ``c_nest`` (flagship only): the loop nest written by hand with every filter
  placed as early as a competent engineer would, in plain Python, and in C compiled with gcc -O2
  (the benchmark writes the C source into a temporary directory, compiles and runs it; the time is
  measured inside the program, without compilation).

Every peer runs in a subprocess with a time limit: a run that needs more than ``--cap`` seconds is
reported as ">cap". A tool repeats its run ``--repeats`` times and the median is reported; a run
longer than 20 s is not repeated, nor one that would take the tool's total past the cap.
``--quick`` skips the slowest peers (the plain-Python nest, Kernel Tuner's brute force, and Kernel
Tuner and pyATF on the flagship space).

Peers that are not installed (``pip install -e '.[bench]'``) are reported and skipped.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import io
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE_DIR = os.environ.get("BEASTGEN_REFERENCE_SPACES",
                               os.path.join(os.path.dirname(REPO), "shared", "reference-spaces"))
RESULT_MARK = "@@RESULT "

SPACES = ["gemm", "dedispersion", "hotspot", "gemm_clblast"]
TOOLS = ["beastgen_cold", "beastgen_warm", "beastgen_enum", "beastgen_enum_threads", "kernel_tuner", "pyatf", "kt_bruteforce",
         "python_nest", "c_nest"]
FLAGSHIP_ONLY = {"python_nest", "c_nest"}
QUICK_SKIPS = {("python_nest", "gemm"), ("kernel_tuner", "gemm"), ("pyatf", "gemm")} | {
    ("kt_bruteforce", s) for s in SPACES}
PEER_PACKAGES = {"kernel_tuner": "kernel_tuner", "kt_bruteforce": "kernel_tuner", "pyatf": "pyatf"}
FLAGSHIP_COUNT = 459_316
FLAGSHIP_SETTINGS = {"device": "h100"}  # default settings: precision s, trans_a = trans_b = 0


# ==================================================================================================
# The spaces as the peers write them
# ==================================================================================================
def reference_space(name: str):
    """(names, values, conditions) of a T1 JSON reference space (trusted file: eval'd here)."""
    with open(os.path.join(REFERENCE_DIR, f"{name}.json"), encoding="utf-8") as f:
        space = json.load(f)["ConfigurationSpace"]
    names = [p["Name"] for p in space["TuningParameters"]]
    values = [eval(p["Values"], {}) for p in space["TuningParameters"]]  # noqa: S307 - trusted
    conditions = [c["Expression"] for c in space["Conditions"]]
    return names, values, conditions


# -- the flagship space (shared/spaces/gemm.md) on h100, precision s, trans_a = trans_b = 0 -------
# Device constants substituted: max_threads_per_block 1024, max_threads_dim_x/y 1024, warp_size 32,
# max_shared_mem_per_block 49152, max_regs_per_thread 255, regs_per_sm 65536,
# max_threads_per_sm 2048, max_blocks_per_sm 32, shared_mem_per_sm 233472; elem_bytes 4,
# elem_words 1, dim_vec 4. Dependent domains become static domains plus restrictions:
# blk_m in range(dim_m, 129, dim_m) is blk_m in 1..128 with blk_m % dim_m == 0, and so on.
FLAGSHIP_VALUES = {
    "dim_m": list(range(1, 1025)), "dim_n": list(range(1, 1025)),
    "blk_m": list(range(1, 129)), "blk_n": list(range(1, 129)), "blk_k": list(range(1, 65)),
    "vector": [0, 1],
    "blk_m_a": list(range(1, 129)), "blk_n_a": list(range(1, 65)),   # blk_m // 1, blk_k
    "blk_m_b": list(range(1, 65)), "blk_n_b": list(range(1, 129)),   # blk_k // 1, blk_n
    "tex_a": [0, 1], "tex_b": [0, 1],
}
_TL = "(1 + 3 * vector)"  # type_len = 4 if vector else 1 (python-constraint2's parser has no if/else)
_THREADS = "(dim_m * dim_n)"
_THR_M, _THR_N = "(blk_m // dim_m)", "(blk_n // dim_n)"
_SMEM = "((blk_m * blk_k + blk_k * blk_n) * 4)"
_REGS = (f"(1 * ({_THR_M} * {_THR_N} + {_THR_M} + {_THR_N}"
         f" + (blk_m * blk_k + blk_k * blk_n + {_THREADS} - 1) // {_THREADS}) + 16)")
#: every restriction is true for a valid configuration (the negation of gemm.md's filters)
FLAGSHIP_RESTRICTIONS = [
    # the dependent domains
    "blk_m % dim_m == 0", "blk_n % dim_n == 0",
    f"blk_m_a <= blk_m // {_TL}", "blk_n_a <= blk_k", f"blk_m_b <= blk_k // {_TL}", "blk_n_b <= blk_n",
    # the 10 filters
    f"{_THREADS} <= 1024",                                            # over_max_threads
    f"{_THREADS} % 32 == 0",                                          # partial_warp
    f"blk_m_a * blk_n_a == {_THREADS}",                               # a_shape
    f"blk_m_b * blk_n_b == {_THREADS}",                               # b_shape
    f"blk_m % (blk_m_a * {_TL}) == 0", "blk_k % blk_n_a == 0",        # a_incongruent
    f"blk_k % (blk_m_b * {_TL}) == 0", "blk_n % blk_n_b == 0",        # b_incongruent
    f"{_SMEM} <= 49152",                                              # over_max_shmem
    f"{_REGS} <= 255",                                                # over_max_regs
    f"min(32, 2048 // {_THREADS}, 65536 // ({_REGS} * {_THREADS}), 233472 // {_SMEM})"
    f" * {_THREADS} * 4 >= 2048",                                     # low_occupancy
    f"5 * {_THR_M} * {_THR_N} >= 6 * ({_THR_M} + {_THR_N})",           # low_fma_ratio
]


def space_for_peers(name: str):
    """(names, values, restrictions) as Kernel Tuner and pyATF take them."""
    if name == "gemm":
        return list(FLAGSHIP_VALUES), list(FLAGSHIP_VALUES.values()), list(FLAGSHIP_RESTRICTIONS)
    return reference_space(name)


def cartesian_size(values) -> int:
    size = 1
    for v in values:
        size *= len(v)
    return size


def space_file(name: str) -> str:
    return os.path.join(REPO, "spaces", f"{name}.py")


# ==================================================================================================
# Workers: each runs in its own subprocess and prints one RESULT line per timed run
# ==================================================================================================
def emit(**record):
    print(RESULT_MARK + json.dumps(record), flush=True)


#: a run longer than this (seconds) is not repeated: its median is that one run
LONG_RUN = 20.0


def repeat(run, repeats: int, cap: float):
    """Call ``run()`` -> (count, seconds) up to ``repeats`` times, emitting each; stop early after a
    long run (LONG_RUN) or when the next run would push the total past the cap."""
    total = 0.0
    for _ in range(repeats):
        count, seconds = run()
        emit(count=count, seconds=seconds)
        total += seconds
        if seconds > LONG_RUN or total + seconds > cap:
            break


def quiet(function, *args, **kwargs):
    """Call with the peer's own prints swallowed (stdout carries the RESULT lines)."""
    with contextlib.redirect_stdout(io.StringIO()):
        return function(*args, **kwargs)


def worker_beastgen_warm(space: str, repeats: int, cap: float, enumerate_: bool = False,
                         jobs: int = 1):
    import beastgen
    generated_dir = tempfile.mkdtemp(prefix="bench-generated-")
    plan = beastgen.load(space_file(space)).specialize(generated_dir=generated_dir,
                                                       **FLAGSHIP_SETTINGS)
    plan.count()  # compile
    if enumerate_:
        plan.enumerate(jobs=jobs)  # compile fill (and the census)

        def run():
            start = time.perf_counter()
            rows = plan.enumerate(jobs=jobs)
            return len(rows), time.perf_counter() - start
    else:
        def run():
            n = plan.count()
            return n, plan.last_seconds
    repeat(run, repeats, cap)


def worker_kernel_tuner(space: str, repeats: int, cap: float, framework: str = "PythonConstraint"):
    from kernel_tuner.searchspace import Searchspace
    names, values, restrictions = space_for_peers(space)

    def run():
        tune_params = dict(zip(names, (list(v) for v in values)))
        start = time.perf_counter()
        # max_threads = 1024: the JSON's MAX_THREADS; Kernel Tuner adds block_size_x * block_size_y
        # * block_size_z <= max_threads where those parameters exist, which every reference space
        # already implies, so the counts are the T1 counts
        searchspace = quiet(Searchspace, tune_params, list(restrictions), 1024, framework=framework)
        return searchspace.size, time.perf_counter() - start
    repeat(run, repeats, cap)


def pyatf_parameters(space: str):
    """pyATF tuning parameters: each restriction attached to the last parameter (in the declaration
    order) that it reads, those at one parameter and-ed into its constraint."""
    from pyatf import TP, Interval, Set
    names, values, restrictions = space_for_peers(space)
    attached = {name: [] for name in names}
    for restriction in restrictions:
        used = {n.id for n in ast.walk(ast.parse(restriction, mode="eval")) if isinstance(n, ast.Name)}
        last = max((names.index(u) for u in used if u in names), default=0)
        attached[names[last]].append(restriction)
    tps = []
    for name, vals in zip(names, values):
        vals = list(vals)
        if all(isinstance(v, int) and not isinstance(v, bool) for v in vals) and len(vals) > 1 \
                and vals == list(range(vals[0], vals[-1] + 1)):
            domain = Interval(vals[0], vals[-1])
        else:
            domain = Set(*vals)
        constraint = None
        if attached[name]:
            used = {n.id for r in attached[name] for n in ast.walk(ast.parse(r, mode="eval"))
                    if isinstance(n, ast.Name) and n.id in names} | {name}
            params = [n for n in names if n in used]
            source = f"lambda {', '.join(params)}: " + " and ".join(f"({r})" for r in attached[name])
            constraint = eval(source, {})  # noqa: S307 - the restrictions above (trusted)
        tps.append(TP(name, domain, constraint))
    return tps


def worker_pyatf(space: str, repeats: int, cap: float):
    from pyatf.search_space import SearchSpace

    def run():
        tps = pyatf_parameters(space)
        start = time.perf_counter()
        searchspace = quiet(SearchSpace, *tps, verbosity=0)
        return searchspace.constrained_size, time.perf_counter() - start
    repeat(run, repeats, cap)


def python_nest() -> int:
    """The flagship space (h100, s, nn) as a plain-Python loop nest, filters placed by hand."""
    n = 0
    for dim_m in range(1, 1024 + 1):
        for dim_n in range(1, 1024 + 1):
            threads = dim_m * dim_n
            if threads > 1024:                                       # over_max_threads
                continue
            if threads % 32 != 0:                                    # partial_warp
                continue
            for blk_m in range(dim_m, 128 + 1, dim_m):
                thr_m = blk_m // dim_m
                for blk_n in range(dim_n, 128 + 1, dim_n):
                    thr_n = blk_n // dim_n
                    if 5 * thr_m * thr_n < 6 * (thr_m + thr_n):      # low_fma_ratio
                        continue
                    for blk_k in range(1, 64 + 1):
                        smem = (blk_m * blk_k + blk_k * blk_n) * 4
                        if smem > 49152:                             # over_max_shmem
                            continue
                        regs = (thr_m * thr_n + thr_m + thr_n
                                + (blk_m * blk_k + blk_k * blk_n + threads - 1) // threads) + 16
                        if regs > 255:                               # over_max_regs
                            continue
                        blocks = min(32, 2048 // threads, 65536 // (regs * threads), 233472 // smem)
                        if blocks * threads * 4 < 2048:              # low_occupancy
                            continue
                        for vector in (0, 1):
                            type_len = 4 if vector else 1
                            for blk_m_a in range(1, blk_m // type_len + 1):
                                if blk_m % (blk_m_a * type_len) != 0:     # a_incongruent (1)
                                    continue
                                for blk_n_a in range(1, blk_k + 1):
                                    if blk_m_a * blk_n_a != threads:     # a_shape
                                        continue
                                    if blk_k % blk_n_a != 0:             # a_incongruent (2)
                                        continue
                                    for blk_m_b in range(1, blk_k // type_len + 1):
                                        if blk_k % (blk_m_b * type_len) != 0:   # b_incongruent (1)
                                            continue
                                        for blk_n_b in range(1, blk_n + 1):
                                            if blk_m_b * blk_n_b != threads:   # b_shape
                                                continue
                                            if blk_n % blk_n_b != 0:           # b_incongruent (2)
                                                continue
                                            for tex_a in (0, 1):
                                                for tex_b in (0, 1):
                                                    n += 1
    return n


def worker_python_nest(space: str, repeats: int, cap: float):
    def run():
        start = time.perf_counter()
        n = python_nest()
        return n, time.perf_counter() - start
    repeat(run, repeats, cap)


C_NEST = r"""
/* The flagship space (shared/spaces/gemm.md) on h100, precision s, trans_a = trans_b = 0, as a
   hand-written C loop nest with every filter placed by hand. Written by bench_enumeration.py. */
#include <stdio.h>
#include <time.h>

#define MAX_THREADS_PER_BLOCK 1024
#define MAX_THREADS_DIM_X 1024
#define MAX_THREADS_DIM_Y 1024
#define WARP_SIZE 32
#define MAX_SHARED_MEM_PER_BLOCK 49152
#define MAX_REGS_PER_THREAD 255
#define REGS_PER_SM 65536
#define MAX_THREADS_PER_SM 2048
#define MAX_BLOCKS_PER_SM 32
#define SHARED_MEM_PER_SM 233472
#define MAX_BLK 128
#define MAX_BLK_K 64
#define ELEM_BYTES 4
#define ELEM_WORDS 1
#define DIM_VEC 4

static long min4(long a, long b, long c, long d) {
    long m = a < b ? a : b;
    m = m < c ? m : c;
    return m < d ? m : d;
}

static long long count(void) {
    long long n = 0;
    for (long dim_m = 1; dim_m <= MAX_THREADS_DIM_X; dim_m++)
    for (long dim_n = 1; dim_n <= MAX_THREADS_DIM_Y; dim_n++) {
        long threads = dim_m * dim_n;
        if (threads > MAX_THREADS_PER_BLOCK) continue;                 /* over_max_threads */
        if (threads % WARP_SIZE != 0) continue;                        /* partial_warp */
        for (long blk_m = dim_m; blk_m <= MAX_BLK; blk_m += dim_m) {
            long thr_m = blk_m / dim_m;
            for (long blk_n = dim_n; blk_n <= MAX_BLK; blk_n += dim_n) {
                long thr_n = blk_n / dim_n;
                if (5 * thr_m * thr_n < 6 * (thr_m + thr_n)) continue;  /* low_fma_ratio */
                for (long blk_k = 1; blk_k <= MAX_BLK_K; blk_k++) {
                    long smem = (blk_m * blk_k + blk_k * blk_n) * ELEM_BYTES;
                    if (smem > MAX_SHARED_MEM_PER_BLOCK) continue;     /* over_max_shmem */
                    long regs = ELEM_WORDS * (thr_m * thr_n + thr_m + thr_n
                                + (blk_m * blk_k + blk_k * blk_n + threads - 1) / threads) + 16;
                    if (regs > MAX_REGS_PER_THREAD) continue;          /* over_max_regs */
                    long blocks = min4(MAX_BLOCKS_PER_SM, MAX_THREADS_PER_SM / threads,
                                       REGS_PER_SM / (regs * threads), SHARED_MEM_PER_SM / smem);
                    if (blocks * threads * 4 < MAX_THREADS_PER_SM) continue;  /* low_occupancy */
                    for (int vector = 0; vector <= 1; vector++) {
                        long type_len = vector ? DIM_VEC : 1;
                        for (long blk_m_a = 1; blk_m_a <= blk_m / type_len; blk_m_a++) {
                            if (blk_m % (blk_m_a * type_len) != 0) continue;   /* a_incongruent */
                            for (long blk_n_a = 1; blk_n_a <= blk_k; blk_n_a++) {
                                if (blk_m_a * blk_n_a != threads) continue;    /* a_shape */
                                if (blk_k % blk_n_a != 0) continue;            /* a_incongruent */
                                for (long blk_m_b = 1; blk_m_b <= blk_k / type_len; blk_m_b++) {
                                    if (blk_k % (blk_m_b * type_len) != 0) continue;  /* b_incongruent */
                                    for (long blk_n_b = 1; blk_n_b <= blk_n; blk_n_b++) {
                                        if (blk_m_b * blk_n_b != threads) continue;   /* b_shape */
                                        if (blk_n % blk_n_b != 0) continue;           /* b_incongruent */
                                        for (int tex_a = 0; tex_a <= 1; tex_a++)
                                        for (int tex_b = 0; tex_b <= 1; tex_b++)
                                            n++;
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    return n;
}

int main(void) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long long n = count();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%lld %.9f\n", n, (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec));
    return 0;
}
"""


WORKERS = {
    "beastgen_warm": lambda s, r, c: worker_beastgen_warm(s, r, c),
    "beastgen_enum": lambda s, r, c: worker_beastgen_warm(s, r, c, enumerate_=True),
    "beastgen_enum_threads": lambda s, r, c: worker_beastgen_warm(s, r, c, enumerate_=True,
                                                                  jobs=os.cpu_count() or 1),
    "kernel_tuner": lambda s, r, c: worker_kernel_tuner(s, r, c),
    "kt_bruteforce": lambda s, r, c: worker_kernel_tuner(s, r, c, framework="bruteforce"),
    "pyatf": worker_pyatf,
    "python_nest": worker_python_nest,
}


# ==================================================================================================
# The driver
# ==================================================================================================
class Outcome:
    """What one tool did on one space: run times, counts, or why it has none."""

    def __init__(self, tool, space):
        self.tool, self.space = tool, space
        self.seconds: list[float] = []
        self.counts: list[int] = []
        self.status = "ok"  # ok | >cap | skipped | unavailable | error
        self.note = ""
        self.extra: dict = {}

    @property
    def median(self):
        return statistics.median(self.seconds) if self.seconds else None

    @property
    def count(self):
        return self.counts[0] if self.counts else None

    def as_dict(self):
        return {"tool": self.tool, "space": self.space, "status": self.status, "note": self.note,
                "median_seconds": self.median, "seconds": self.seconds, "count": self.count,
                **self.extra}


def run_worker(tool, space, args) -> Outcome:
    outcome = Outcome(tool, space)
    command = [sys.executable, os.path.abspath(__file__), "--worker", tool, space,
               "--repeats", str(args.repeats), "--cap", str(args.cap)]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=args.cap + args.grace,
                              cwd=REPO)
        stdout, stderr, timed_out = proc.stdout, proc.stderr, False
    except subprocess.TimeoutExpired as e:
        stdout = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        stderr = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        timed_out = True
    for line in stdout.splitlines():
        if line.startswith(RESULT_MARK):
            record = json.loads(line[len(RESULT_MARK):])
            if record["seconds"] > args.cap:
                timed_out = True
                continue
            outcome.seconds.append(record["seconds"])
            outcome.counts.append(record["count"])
    if not outcome.seconds:
        if timed_out:
            outcome.status, outcome.note = ">cap", f"no run finished within {args.cap:g} s"
        else:
            outcome.status = "error"
            outcome.note = (stderr.strip().splitlines() or ["no output"])[-1][:300]
    return outcome


def run_beastgen_cold(space, args) -> Outcome:
    outcome = Outcome("beastgen_cold", space)
    executable = shutil.which("beastgen")
    base = [executable] if executable else [sys.executable, "-m", "beastgen"]
    totals = []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory(prefix="bench-cold-") as tmp:
            generated_dir, cache_dir = os.path.join(tmp, "generated"), os.path.join(tmp, "numba-cache")
            os.makedirs(cache_dir)
            env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir}
            env.pop("BEASTGEN_GENERATED_DIR", None)
            command = base + ["count", space_file(space), "--device", FLAGSHIP_SETTINGS["device"],
                              "--json", "--generated-dir", generated_dir]
            start = time.perf_counter()
            try:
                proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO,
                                      timeout=args.cap + args.grace)
            except subprocess.TimeoutExpired:
                outcome.status, outcome.note = ">cap", f"no run finished within {args.cap:g} s"
                return outcome
            wall = time.perf_counter() - start
        if proc.returncode != 0:
            outcome.status = "error"
            outcome.note = (proc.stderr.strip().splitlines() or ["no output"])[-1][:300]
            return outcome
        record = json.loads(proc.stdout.strip().splitlines()[-1])
        outcome.seconds.append(wall)
        outcome.counts.append(record["count"])
        totals.append(record["total_seconds"])
    outcome.extra["total_seconds_median"] = statistics.median(totals)
    outcome.extra["measure"] = "wall time of the whole process"
    return outcome


def run_c_nest(space, args) -> Outcome:
    outcome = Outcome("c_nest", space)
    compiler = shutil.which("gcc") or shutil.which("cc")
    if not compiler:
        outcome.status, outcome.note = "unavailable", "no C compiler (gcc) found"
        return outcome
    with tempfile.TemporaryDirectory(prefix="bench-c-") as tmp:
        source, binary = os.path.join(tmp, "gemm_nest.c"), os.path.join(tmp, "gemm_nest")
        with open(source, "w", encoding="utf-8") as f:
            f.write(C_NEST)
        start = time.perf_counter()
        proc = subprocess.run([compiler, "-O2", "-o", binary, source], capture_output=True, text=True)
        outcome.extra["compile_seconds"] = time.perf_counter() - start
        if proc.returncode != 0:
            outcome.status, outcome.note = "error", proc.stderr.strip()[:300]
            return outcome
        total = 0.0
        for _ in range(args.repeats):
            try:
                proc = subprocess.run([binary], capture_output=True, text=True, timeout=args.cap)
            except subprocess.TimeoutExpired:
                break
            count, seconds = proc.stdout.split()
            outcome.counts.append(int(count))
            outcome.seconds.append(float(seconds))
            total += float(seconds)
            if float(seconds) > LONG_RUN or total + float(seconds) > args.cap:
                break
    if not outcome.seconds:
        outcome.status, outcome.note = ">cap", f"no run finished within {args.cap:g} s"
    return outcome


def peer_available(tool) -> str | None:
    """None when the tool can run, else why not."""
    package = PEER_PACKAGES.get(tool)
    if package is None:
        return None
    import importlib.util
    if importlib.util.find_spec(package) is None:
        return f"{package} is not installed (pip install -e '.[bench]')"
    return None


def measure(tool, space, args) -> Outcome:
    if tool in FLAGSHIP_ONLY and space != "gemm":
        outcome = Outcome(tool, space)
        outcome.status, outcome.note = "skipped", "hand-written for the flagship space only"
        return outcome
    if args.quick and (tool, space) in QUICK_SKIPS:
        outcome = Outcome(tool, space)
        outcome.status, outcome.note = "skipped", "--quick"
        return outcome
    why = peer_available(tool)
    if why:
        outcome = Outcome(tool, space)
        outcome.status, outcome.note = "unavailable", why
        return outcome
    if tool == "kt_bruteforce":
        size = cartesian_size(space_for_peers(space)[1])
        if size > args.cap * 1e7:
            outcome = Outcome(tool, space)
            outcome.status = ">cap"
            outcome.note = (f"not run: the Cartesian product has {size:.3g} points, more than "
                            f"{args.cap:g} s at 10 million points per second")
            return outcome
    if tool == "beastgen_cold":
        return run_beastgen_cold(space, args)
    if tool == "c_nest":
        return run_c_nest(space, args)
    return run_worker(tool, space, args)


# -- reporting -------------------------------------------------------------------------------------
def fmt_seconds(outcome: Outcome) -> str:
    if outcome.status == ">cap":
        return ">cap"
    if outcome.status in ("skipped", "unavailable"):
        return "-"
    if outcome.status == "error":
        return "error"
    return f"{outcome.median:.3g}"


def fmt_ratio(outcome: Outcome, base: Outcome | None, cap: float) -> str:
    if base is None or base.median is None or not base.median:
        return "-"
    if outcome.status == ">cap":
        return f">{cap / base.median:.3g}x"
    if outcome.median is None:
        return "-"
    ratio = outcome.median / base.median
    return f"{ratio:.3g}x" if ratio < 1e4 else f"{ratio:.2e}x"


def report(results, spaces, tools, args) -> tuple[str, list[str]]:
    from beastgen.support.table import format_table

    mismatches = []
    for space in spaces:
        expected = results[space]["beastgen_warm"].count
        if space == "gemm" and expected is not None and expected != FLAGSHIP_COUNT:
            mismatches.append(f"{space}: beastgen counts {expected:,}, gemm.md says {FLAGSHIP_COUNT:,}")
        for tool in tools:
            outcome = results[space][tool]
            if outcome.counts and (len(set(outcome.counts)) != 1 or outcome.count != expected):
                mismatches.append(f"{space}: {tool} counts {sorted(set(outcome.counts))}, "
                                  f"beastgen {expected}")
                outcome.extra["count_mismatch"] = True

    headers = ["space", "valid"] + tools
    seconds_rows = [[space, f"{results[space]['beastgen_warm'].count or 0:,}"]
                    + [fmt_seconds(results[space][t]) for t in tools] for space in spaces]
    ratio_tools = [t for t in tools if t not in ("beastgen_warm",)]
    warm_rows = [[space] + [fmt_ratio(results[space][t], results[space]["beastgen_warm"], args.cap)
                            for t in ratio_tools] for space in spaces]
    cold_tools = [t for t in tools if t not in ("beastgen_cold",)]
    cold_rows = [[space] + [fmt_ratio(results[space][t], results[space]["beastgen_cold"], args.cap)
                            for t in cold_tools] for space in spaces]
    notes = []
    for space in spaces:
        for tool in tools:
            o = results[space][tool]
            if o.note and o.status not in ("skipped",):
                notes.append(f"  {space}/{tool}: {o.status}: {o.note}")
            elif o.seconds and len(o.seconds) < args.repeats and tool != "beastgen_cold":
                notes.append(f"  {space}/{tool}: {len(o.seconds)} run(s): runs over {LONG_RUN:g} s "
                             "are not repeated, nor runs that would pass the cap")
    text = "\n".join([
        f"Median seconds per tool (cap {args.cap:g} s per run, up to {args.repeats} runs each; "
        "'-' = not applicable / skipped / unavailable):",
        format_table(headers, seconds_rows), "",
        "Time relative to beastgen warm (count only, compiled code cached):",
        format_table(["space"] + ratio_tools, warm_rows), "",
        "Time relative to beastgen cold (fresh process, empty caches):",
        format_table(["space"] + cold_tools, cold_rows),
        *(["", "Notes:", *notes] if notes else []),
    ])
    return text, mismatches


def environment() -> dict:
    info = {"python": platform.python_version(), "platform": platform.platform(),
            "cpu_count": os.cpu_count(), "processor": platform.processor()}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    from importlib.metadata import PackageNotFoundError, version
    for package in ("beastgen", "numba", "numpy", "kernel_tuner", "python-constraint2", "pyatf"):
        try:
            info[package] = version(package)
        except PackageNotFoundError:
            info[package] = None
    return info


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cap", type=float, default=120.0,
                        help="time limit of one run of one tool, seconds (default 120)")
    parser.add_argument("--repeats", type=int, default=5, help="runs per tool (median; default 5)")
    parser.add_argument("--quick", action="store_true",
                        help="skip the slowest peers (python_nest, kt_bruteforce, and Kernel Tuner "
                             "and pyATF on the flagship space)")
    parser.add_argument("--spaces", nargs="+", choices=SPACES, default=SPACES)
    parser.add_argument("--tools", nargs="+", choices=TOOLS, default=TOOLS)
    parser.add_argument("--grace", type=float, default=60.0,
                        help="extra seconds a worker process gets beyond the cap for its start-up "
                             "and imports (default 60)")
    parser.add_argument("--json-out", default=os.path.join(REPO, "benchmarks", "results.json"))
    parser.add_argument("--worker", nargs=2, metavar=("TOOL", "SPACE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        tool, space = args.worker
        WORKERS[tool](space, args.repeats, args.cap)
        return 0

    tools = list(dict.fromkeys(["beastgen_warm", "beastgen_cold"] + args.tools))
    tools = [t for t in TOOLS if t in tools]
    for tool in tools:
        why = peer_available(tool)
        if why:
            print(f"note: {tool} skipped: {why}", file=sys.stderr)
    results = {}
    started = time.perf_counter()
    for space in args.spaces:
        results[space] = {}
        for tool in tools:
            print(f"[{time.perf_counter() - started:7.1f} s] {space}: {tool} ...", file=sys.stderr,
                  flush=True)
            outcome = measure(tool, space, args)
            results[space][tool] = outcome
            shown = fmt_seconds(outcome)
            print(f"            {shown} ({outcome.status}{': ' + outcome.note if outcome.note else ''}; "
                  f"count {outcome.count})", file=sys.stderr, flush=True)

    text, mismatches = report(results, args.spaces, tools, args)
    print(text)
    if mismatches:
        print("\n" + "!" * 78)
        print("COUNT MISMATCH: a tool disagrees with beastgen:")
        for m in mismatches:
            print("  " + m)
        print("!" * 78)
    else:
        print("\nAll counts agree with beastgen's.")

    if args.json_out:
        record = {
            "command": " ".join([os.path.relpath(sys.argv[0], REPO)] + sys.argv[1:]),
            "cap_seconds": args.cap, "repeats": args.repeats, "quick": args.quick,
            "environment": environment(),
            "flagship": {"space": "spaces/gemm.py", **FLAGSHIP_SETTINGS,
                         "settings": "defaults (precision s, trans_a 0, trans_b 0)"},
            "results": {space: {tool: results[space][tool].as_dict() for tool in tools}
                        for space in args.spaces},
            "mismatches": mismatches,
            "table": text,
        }
        os.makedirs(os.path.dirname(os.path.abspath(args.json_out)), exist_ok=True)
        with open(args.json_out, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=2)
        print(f"wrote {os.path.relpath(args.json_out)}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
