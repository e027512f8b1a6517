"""Small spaces run where the user meets them: a count (stats, enumeration) of a nest whose loop
iterations are bounded small runs in the calling thread, with no thread pool and no split-node
census; a larger one's count begins there and starts helper threads only where work remains."""
import os
import subprocess
import sys
import threading

import pytest
from conftest import PATIENCE_SECONDS, REFERENCE_DIR, REPO

import beastgen
from beastgen.compiler import native, runtime
from beastgen.compiler.runtime import compile_space, counter
from beastgen.loading.plancache import CachedExecutable, compile_cached

SMALL = ("import beastgen as beast\nx = beast.range(1, 40)\ny = beast.values(1, 2, 3, 5, 8)\n"
         "z = beast.range(0, 12, 3)\nf = beast.filter((x * y + z) % 7 == 0)\n")
SMALL_COUNT = sum(1 for x in range(1, 40) for y in (1, 2, 3, 5, 8) for z in range(0, 12, 3)
                  if (x * y + z) % 7 != 0)


@pytest.fixture
def thread_starts(monkeypatch):
    """The names of the threads started while the test runs (every thread, pools' included)."""
    started = []
    original = threading.Thread.start

    def start(self):
        started.append(self.name)
        return original(self)
    monkeypatch.setattr(threading.Thread, "start", start)
    return started


@pytest.mark.parametrize("with_c", ["1", "0"])
def test_a_small_count_runs_in_the_calling_thread(with_c, write_space, tmp_path, monkeypatch,
                                                  thread_starts):
    monkeypatch.setenv("BEASTGEN_NATIVE", with_c)
    plan = compile_space(beastgen.load(write_space(SMALL)), "h100", {}, str(tmp_path / "gen"))
    assert (plan.native is not None) == (with_c == "1")
    assert plan.iteration_bound == 39 + 39 * 5 + 39 * 5 * 4 and plan.small
    assert plan.c_optimization == "-O0"  # compiles faster than -O2 would count faster
    if plan.native is not None:
        assert plan.native.path == native.library_path(
            os.path.dirname(plan.path), "space", plan.native_source(), "-O0")
    plan.count()  # compiles (Numba) before the threads are watched
    plan.enumerate()
    plan.stats()  # generates the Numba module (in a big-stack thread: beastgen.support.deep) and compiles
    thread_starts.clear()
    assert plan.count(jobs=4) == SMALL_COUNT
    assert plan.stats().count == SMALL_COUNT
    assert len(plan.enumerate(jobs=4)) == SMALL_COUNT
    assert thread_starts == []


def test_the_iteration_bound_holds(tmp_path):
    """The bound (product of the domain sizes down to each level) is at least what the nest
    iterates, on the real T1 spaces; the plan cache's record keeps it."""
    generated = str(tmp_path / "gen")
    for name in ("dedispersion", "hotspot", "gemm_clblast"):
        path = os.path.join(REFERENCE_DIR, f"{name}.json")
        plan = compile_cached(path, generated_dir=generated)
        plan.write()
        stats = plan.stats()
        assert sum(iterations for _, iterations in stats.levels) <= plan.iteration_bound
        assert plan.small
        cached = compile_cached(path, generated_dir=generated)
        assert isinstance(cached.executable, CachedExecutable) and cached.iteration_bound == plan.iteration_bound


def test_a_varying_or_large_domain_is_not_small(write_space, tmp_path, thread_starts):
    varying = compile_space(beastgen.load(write_space(
        "import beastgen as beast\nx = beast.range(1, 9)\ny = beast.range(x, 9)\n")),
        "h100", {}, str(tmp_path / "gen"))
    assert varying.iteration_bound is None and not varying.small
    side = int(runtime.SMALL_NEST_ITERATIONS ** 0.5) + 1
    large = compile_space(beastgen.load(write_space(
        f"import beastgen as beast\nx = beast.range(0, {side})\ny = beast.range(0, {side})\n"
        "f = beast.filter(x != y)\n", name="large.py")), "h100", {}, str(tmp_path / "gen"))
    assert large.iteration_bound > runtime.SMALL_NEST_ITERATIONS and not large.small
    assert large.c_optimization == "-O2" and varying.c_optimization == "-O2"


@pytest.mark.parametrize("with_c", ["1", "0"])
def test_a_large_nest_s_count_begins_in_the_calling_thread(with_c, write_space, tmp_path, monkeypatch,
                                                           thread_starts):
    """A nest not bounded small is counted split node by split node in the calling thread (each
    step bounded small: Ctrl-C is heard between them); helper threads start only where work
    remains after HELPERS_AFTER_SECONDS, and take the nodes left: the count is the same."""
    monkeypatch.setenv("BEASTGEN_NATIVE", with_c)
    side = int(runtime.SMALL_NEST_ITERATIONS ** 0.5) + 1
    large = compile_space(beastgen.load(write_space(
        f"import beastgen as beast\nx = beast.range(0, {side})\ny = beast.range(0, {side})\n"
        "f = beast.filter(x * y % 7 == 3)\n", name="large.py")), "h100", {}, str(tmp_path / "gen"))
    residues = [len(range(r, side, 7)) for r in range(7)]
    expected = side * side - sum(residues[a] * residues[b] for a in range(7) for b in range(7)
                                 if a * b % 7 == 3)
    assert not large.small and large.executable.node_iteration_bound == side  # one x: every y
    assert (large.native is not None) == (with_c == "1")
    large.count(jobs=2)  # compiles (Numba's count and census) before the threads are watched
    for jobs in (1, 2):
        monkeypatch.setattr(counter, "HELPERS_AFTER_SECONDS", 1e9)  # however long it takes
        thread_starts.clear()
        assert large.count(jobs=jobs) == expected
        assert thread_starts == []
        monkeypatch.setattr(counter, "HELPERS_AFTER_SECONDS", 0.0)  # helpers after the first step
        thread_starts.clear()
        shares = []
        assert large.count(jobs=jobs, progress=lambda done, seconds: shares.append(done)) == expected
        assert thread_starts and shares == sorted(shares) and shares[-1] == 1.0


def test_a_tiny_space_whose_bound_is_large_starts_no_thread(write_space, tmp_path, thread_starts):
    """Where the nest's bound is past SMALL_NEST_ITERATIONS but its walk is short (the filters cut
    early), the count ends in the calling thread before any helper would start."""
    wide = compile_space(beastgen.load(write_space(
        "import beastgen as beast\n" + "".join(f"p{i} = beast.values(*[2 ** k for k in range(9)])\n"
                                               for i in range(8))
        + "".join(f"f{i} = beast.filter(p{i} * p{i + 1} > 4)\n" for i in range(7)), name="wide.py")),
        "h100", {}, str(tmp_path / "gen"))
    ends = [1] * 9  # sequences of exponents ending in each, adjacent ones summing to at most 2
    for _ in range(7):
        ends = [sum(ends[a] for a in range(9) if a + b <= 2) for b in range(9)]
    expected = sum(ends)
    assert not wide.small
    assert wide.count() == expected  # compiles
    thread_starts.clear()
    assert wide.count(jobs=2) == expected and thread_starts == []


def test_interop_imports_only_what_the_space_needs():
    """Reading a T1 file or building a Kernel Tuner space imports no NumPy (a fresh process)."""
    probe = ("import sys\nfrom beastgen.interop import from_kernel_tuner, load_t1\n"
             "space = from_kernel_tuner({'block_size_x': [32, 64], 'tile': [1, 2]}, ['tile <= 1'])\n"
             "print(sorted(m for m in ('numpy', 'numba', 'sympy') if m in sys.modules))\n")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=PATIENCE_SECONDS,
                         env=dict(os.environ, PYTHONPATH=REPO))
    assert run.stdout.strip() == "[]", run


@pytest.mark.parametrize("with_c", ["1", "0"])
def test_enumerating_a_small_space_counts_it_first(with_c, write_space, tmp_path, monkeypatch, capsys):
    """`enumerate` learns a small space's size by counting it (C or NumPy): no Numba estimator is
    compiled (seconds) for it, and the size it announces is exact."""
    from beastgen.cli import main
    monkeypatch.setenv("BEASTGEN_NATIVE", with_c)
    generated, out = tmp_path / "gen", tmp_path / "rows.csv"
    assert main(["enumerate", write_space(SMALL), "-o", str(out), "--generated-dir", str(generated)]) == 0
    assert len(out.read_text().splitlines()) == SMALL_COUNT + 1
    assert not list(generated.rglob("*.nbi"))  # Numba's cache index: nothing was compiled by it
