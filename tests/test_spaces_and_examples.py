"""The shipped spaces and the examples (gemm.py and the transcribed reference spaces have their
own tests).

Every space loads, compiles and counts to its recorded value on the default device (h100) with
default settings (regression values, measured when the space was written), agrees with the naive
reference enumerator on settings small enough for it, and every example script runs.

Numba compilation dominates: plans are compiled once per module into one generated directory, which
the example scripts (run as subprocesses, all at once) share, so they reuse its on-disk cache.
"""
import dataclasses
import glob
import os
import subprocess
import sys

import pytest

import beastgen
from beastgen.compiler.reference import ReferenceEnumerator
from beastgen.devices import load_profile

from conftest import PATIENCE_SECONDS, REPO

#: space file -> valid configurations on h100 with default settings
DEFAULT_COUNTS = {
    "spaces/reduction.py": 21_060,
    "spaces/conv2d.py": 106_686,
    "spaces/hpl.py": 334_854,
    "examples/01_basics.py": 60,
    "examples/02_functions.py": 1_022,
}


def _shrunk(key, **properties):
    """A built-in profile with smaller limits: fewer values for the naive reference to try."""
    profile = load_profile(key)
    return dataclasses.replace(profile, key=f"{key}_small",
                               properties={**profile.properties, **properties})


#: space file -> (device, settings, valid configurations): small enough for the reference
#: enumerator (a few seconds at most), and chosen so that most filters reject something
REDUCED = {
    "spaces/reduction.py": (_shrunk("c2050", max_threads_per_block=256, max_blocks_per_sm=4,
                                    max_threads_per_sm=512),
                            dict(precision="d", op="sum", N=100_000, min_passes=2), 520),
    "spaces/conv2d.py": ("k40", dict(precision="h", max_tile=32, max_thread_tile=2, N=2, C=5, K=16,
                                     H=10, W=12, R=3, S=3), 198),
    "spaces/hpl.py": ("h100", dict(N=2000, nprocs=4, nb_min=16, nb_max=32, nb_step=16,
                                   min_blocks_per_proc=4), 25_650),
    # the examples' default spaces are small already: the same compiled plan is checked
    "examples/01_basics.py": ("h100", {}, 60),
    "examples/02_functions.py": ("h100", {}, 1_022),
}

EXAMPLE_SCRIPTS = ["examples/01_basics.py", "examples/02_functions.py", "examples/03_python_api.py",
                   "examples/04_kernel_tuner.py"]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    return str(tmp_path_factory.mktemp("spaces_generated"))


@pytest.fixture(scope="module")
def compile_plan(generated):
    """compile_plan(path, device, settings) -> CompiledPlan, each compiled once per module."""
    spaces, plans = {}, {}

    def compile_plan(path, device="h100", settings=None):
        settings = settings or {}
        key = (path, getattr(device, "key", device), tuple(sorted(settings.items())))
        if key not in plans:
            if path not in spaces:
                spaces[path] = beastgen.load(os.path.join(REPO, path))
            plans[key] = spaces[path].specialize(device=device, generated_dir=generated, **settings)
        return plans[key]
    return compile_plan


def test_every_space_is_covered():
    """Every shipped space is tested: here, or in another test file that names it (gemm.py and the
    transcribed reference spaces have their own tests)."""
    here = os.path.abspath(__file__)
    others = "".join(open(p, encoding="utf-8").read()
                     for p in glob.glob(os.path.join(REPO, "tests", "*.py"))
                     if os.path.abspath(p) != here)
    for path in glob.glob(os.path.join(REPO, "spaces", "*.py")):
        name = "spaces/" + os.path.basename(path)
        assert name in DEFAULT_COUNTS or os.path.basename(path) in others, f"{name} is not tested"
    examples = {"examples/" + os.path.basename(p)
                for p in glob.glob(os.path.join(REPO, "examples", "*.py"))}
    assert examples == set(EXAMPLE_SCRIPTS)
    assert {p for p in DEFAULT_COUNTS if p.startswith("examples/")} <= examples
    assert set(REDUCED) == set(DEFAULT_COUNTS)


@pytest.mark.parametrize("path", sorted(DEFAULT_COUNTS))
def test_default_count(compile_plan, path):
    plan = compile_plan(path)
    assert plan.empty_reason is None
    assert plan.count() == DEFAULT_COUNTS[path]
    assert os.path.isfile(plan.write())  # the Numba module (a count in C does not need it)


@pytest.mark.parametrize("path", sorted(REDUCED))
def test_reduced_equals_reference(compile_plan, path):
    device, settings, expected = REDUCED[path]
    plan = compile_plan(path, device, settings)
    assert plan.count() == expected
    reference = ReferenceEnumerator(plan.specialized.space, device, settings)
    if not path.startswith("examples/"):
        assert reference.count() == expected
        return
    # the examples enumerate anyway (their scripts reuse this compiled `fill`): compare the sets
    got = plan.enumerate()
    want = {tuple(c[k] for k in plan.columns) for c in reference.configurations()}
    assert len(got) == expected and {tuple(row) for row in got.tolist()} == want


def test_stats_agree_with_count(compile_plan):
    plan = compile_plan("spaces/reduction.py")
    stats = plan.stats()
    assert stats.count == DEFAULT_COUNTS["spaces/reduction.py"]
    assert stats.levels[-1][1] == stats.count          # the innermost level sees only survivors
    assert not stats.errors
    assert "not_reproducible" in plan.specialized.dropped_filters  # deterministic=False
    # string-valued iterators on threads: the same rows, in order
    assert plan.enumerate(jobs=2).tolist() == plan.enumerate().tolist()


@pytest.mark.parametrize("path, device, settings, expected", [
    # a deep reduction on a 7x7 image (ISAAC's Conv8): Q = 7 leaves no vector input loads
    ("spaces/conv2d.py", "h100", dict(N=16, C=832, H=7, W=7, K=128, R=5, S=5, pad=2), 21_504),
])
def test_other_problems(compile_plan, path, device, settings, expected):
    assert compile_plan(path, device, settings).count() == expected


# --------------------------------------------------------------------------------------------------
# Example scripts: run all at once (they compile independently), from a directory other than the
# repository root, sharing the generated directory (and Numba cache) of the tests above.
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def script_runs(generated, tmp_path_factory):
    cwd = str(tmp_path_factory.mktemp("scripts_cwd"))
    env = dict(os.environ, BEASTGEN_GENERATED_DIR=generated,
               PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])))
    procs = {script: subprocess.Popen([sys.executable, os.path.join(REPO, script)], cwd=cwd, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for script in EXAMPLE_SCRIPTS}
    results = {}
    for script, proc in procs.items():
        try:
            output, _ = proc.communicate(timeout=PATIENCE_SECONDS)
        except subprocess.TimeoutExpired:
            proc.kill()
            output, _ = proc.communicate()
        results[script] = (proc.returncode, output)
    return results


@pytest.mark.slow
@pytest.mark.parametrize("script", EXAMPLE_SCRIPTS)
def test_example_script_runs(script_runs, script):
    returncode, output = script_runs[script]
    assert returncode == 0, output


@pytest.mark.slow
def test_python_api_example_output(script_runs):
    _, output = script_runs["examples/03_python_api.py"]
    assert f"{DEFAULT_COUNTS['spaces/reduction.py']:,} configurations" in output
    path = next(line.split(":", 1)[1].strip() for line in output.splitlines()
                if line.startswith("generated source:"))
    assert os.path.isfile(path)


@pytest.mark.slow
def test_basics_example_output(script_runs):
    _, output = script_runs["examples/01_basics.py"]
    assert "h100, default settings: 60 valid configurations" in output
    assert "partial_tiles" in output  # why_empty names the filter that emptied the space


@pytest.mark.slow
def test_example_run_from_the_repository_root_writes_only_to_the_user_cache(tmp_path):
    before = sorted(os.listdir(os.path.join(REPO, "generated")))
    env = {k: v for k, v in os.environ.items() if k != "BEASTGEN_GENERATED_DIR"}
    env.update(XDG_CACHE_HOME=str(tmp_path),
               PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])))
    run = subprocess.run([sys.executable, "examples/01_basics.py"], cwd=REPO, env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=PATIENCE_SECONDS)
    assert run.returncode == 0, run.stdout
    assert sorted(os.listdir(os.path.join(REPO, "generated"))) == before
    assert any(name.startswith("01_basics__") for name in
               os.listdir(tmp_path / "beastgen" / "examples"))
