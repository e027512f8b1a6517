"""The plan cache answers an unchanged command without the compiler, and rebuilds whenever the
space file, a local file it imports, the settings or the device change; long value lists compile
as arrays and count right."""
import json
import os
import subprocess
import sys
import uuid

import pytest
from conftest import PATIENCE_SECONDS, REPO

from beastgen.compiler.model import load
from beastgen.compiler.runtime import Executable, compile_space
from beastgen.loading.plancache import CachedExecutable, compile_cached

SPACE = """\
import beastgen as beast
import {helper} as helper

n = beast.setting(6)
x = beast.range(1, n + 1)
y = beast.range(1, helper.LIMIT + 1)
odd = beast.filter((x + y) % 2 == 1)
"""


@pytest.fixture
def space_with_helper(tmp_path, monkeypatch):
    """A space file importing a local helper module (a fresh name, so no import is shared)."""
    helper = f"plancache_helper_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{helper}.py").write_text("LIMIT = 4\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "cached_space.py"
    path.write_text(SPACE.format(helper=helper))
    return str(path), tmp_path / f"{helper}.py"


def _built(path, generated, **options):
    plan = compile_cached(path, generated_dir=generated, **options)
    plan.write()  # the module the record names must exist for the record to hold
    return plan


def test_unchanged_command_answers_from_the_cache(space_with_helper, tmp_path):
    path, _ = space_with_helper
    generated = str(tmp_path / "gen")
    built = _built(path, generated)
    assert not isinstance(built.executable, CachedExecutable)
    cached = compile_cached(path, generated_dir=generated)
    assert isinstance(cached.executable, CachedExecutable)
    assert cached.path == built.path and cached.columns == built.columns == ["x", "y"]
    assert cached.target == built.target
    assert cached.count() == built.count() == 12
    # a second kind of executable, not a built one that skips its constructor: whatever the
    # executable's own constructor sets, the cached one has too, and the roles are the same
    assert set(vars(Executable(None))) <= set(vars(cached.executable))
    assert [type(role) for role in (cached.counter, cached.enumerator, cached.estimator, cached.ranker)] \
        == [type(role) for role in (built.counter, built.enumerator, built.estimator, built.ranker)]
    assert cached.count(jobs=2) == cached.enumerate().size == 12 and cached.stats().count == 12


@pytest.mark.parametrize("change", ["space file", "helper", "setting", "device"])
def test_a_change_rebuilds(space_with_helper, tmp_path, change):
    path, helper = space_with_helper
    generated = str(tmp_path / "gen")
    _built(path, generated)
    options = {}
    if change == "space file":
        with open(path, "a") as f:
            f.write("even_x = beast.filter(x % 2 == 0)\n")
    elif change == "helper":
        helper.write_text("LIMIT = 5  # was 4\n")  # a new size: Python's bytecode cache sees it
        sys.modules.pop(helper.stem, None)  # a new process imports it afresh
    elif change == "setting":
        options = {"settings": {"n": 7}}
    else:
        options = {"device": "a100"}
    rebuilt = compile_cached(path, generated_dir=generated, **options)
    assert not isinstance(rebuilt.executable, CachedExecutable)
    expected = {"space file": 6, "helper": 15, "setting": 14, "device": 12}[change]
    assert rebuilt.count() == expected


def test_a_changed_module_is_not_trusted_from_the_record(space_with_helper, tmp_path):
    path, _ = space_with_helper
    generated = str(tmp_path / "gen")
    plan = _built(path, generated)
    with open(plan.path, "a") as f:
        f.write("# edited\n")
    assert not isinstance(compile_cached(path, generated_dir=generated).executable, CachedExecutable)


WARM_SPACES = {
    "warm.py": "import beastgen as beast\nx = beast.range(1, 9)\ny = beast.values(1, 2, 3)\n"
               "f = beast.filter(x == y)\n",
    "warm.json": json.dumps({"ConfigurationSpace": {
        "TuningParameters": [{"Name": "x", "Values": "list(range(1, 9))"},
                             {"Name": "y", "Values": "[1, 2, 3]"}],
        "Conditions": [{"Expression": "x != y"}]}}),
}


@pytest.mark.parametrize("name", sorted(WARM_SPACES))
def test_a_warm_command_imports_no_sympy(tmp_path, name):
    """A second `beastgen count` on the same space (a .py space file or a T1 .json) imports neither
    sympy, networkx nor the planner, nor (counting through the C target) Numba or NumPy, nor (on
    the default device, whose profile the key covers as package data) the TOML parser."""
    space = tmp_path / name
    space.write_text(WARM_SPACES[name])
    probe = ("import sys\nfrom beastgen.cli import main\ncode = main(['count', sys.argv[1]])\n"
             "heavy = [m for m in ('sympy', 'networkx', 'beastgen.compiler.plan', "
             "'beastgen.compiler.specialize', 'numba', 'numpy', 'tomllib') if m in sys.modules]\nprint('HEAVY', heavy)\n")
    env = dict(os.environ, PYTHONPATH=REPO, BEASTGEN_GENERATED_DIR=str(tmp_path / "gen"))
    runs = [subprocess.run([sys.executable, "-c", probe, str(space)], capture_output=True, text=True,
                           env=env, cwd=tmp_path, timeout=PATIENCE_SECONDS) for _ in range(2)]
    assert all("21 valid configurations" in run.stdout for run in runs), runs
    assert "HEAVY []" not in runs[0].stdout  # the first run builds the plan
    assert "HEAVY []" in runs[1].stdout, runs[1].stdout


def test_a_changed_t1_file_rebuilds(tmp_path):
    """The record of a T1 file is keyed on its content: a changed condition counts afresh."""
    space = tmp_path / "changing.json"
    space.write_text(WARM_SPACES["warm.json"])
    generated = str(tmp_path / "gen")
    assert _built(str(space), generated).count() == 21
    cached = compile_cached(str(space), generated_dir=generated)
    assert isinstance(cached.executable, CachedExecutable) and cached.count() == 21
    space.write_text(WARM_SPACES["warm.json"].replace("x != y", "x == y"))
    rebuilt = compile_cached(str(space), generated_dir=generated)
    assert not isinstance(rebuilt.executable, CachedExecutable)
    assert rebuilt.count() == 3


def test_a_1024_value_list_counts_right(write_space, generated_dir):
    values = [3 * i + 1 for i in range(1024)]
    path = write_space(f"import beastgen as beast\nx = beast.values({', '.join(map(str, values))})\n"
                       "y = beast.range(1, 9)\nodd = beast.filter((x + y) % 2 == 1)\n")
    plan = compile_space(load(path), generated_dir=generated_dir)
    assert "x__VALUES = np.array(" in plan.source
    expected = sum(1 for x in values for y in range(1, 9) if (x + y) % 2 == 0)
    assert plan.count() == expected == 4096
    assert len(plan.enumerate()) == expected


def test_a_count_in_c_writes_no_numba_module(tmp_path):
    """The Numba module is generated and written only when a Numba path first needs it; the
    record then learns its sha256 and checks it as before."""
    from beastgen.compiler import native

    if native.c_compiler() is None:
        pytest.skip("needs a C compiler")
    space = tmp_path / "lazy.json"
    space.write_text(WARM_SPACES["warm.json"])
    generated = str(tmp_path / "gen")
    built = compile_cached(str(space), generated_dir=generated)
    assert built.count() == 21 and built.native is not None
    assert not os.path.exists(built.path)
    cached = compile_cached(str(space), generated_dir=generated)
    assert isinstance(cached.executable, CachedExecutable) and cached.count() == 21
    assert not os.path.exists(cached.path)
    assert cached.stats().count == 21  # Numba: the module is written now
    assert os.path.exists(cached.path)
    again = compile_cached(str(space), generated_dir=generated)
    assert isinstance(again.executable, CachedExecutable) and again.count() == 21
    with open(again.path, "a") as f:
        f.write("# edited\n")
    assert not isinstance(compile_cached(str(space), generated_dir=generated).executable, CachedExecutable)


def test_a_cold_build_works_out_its_key_while_the_compiler_runs(space_with_helper, tmp_path,
                                                                  monkeypatch):
    """Where nothing is recorded for the space and device, the record's key (beastgen's source and
    the space's local imports hashed) is worked out while the C compiler runs; where a record for
    other settings is there, before the build (it may answer). Either way the next run reads it."""
    from beastgen.loading import plancache
    from beastgen.compiler import native
    if native.c_compiler() is None:
        pytest.skip("needs a C compiler")
    path, _ = space_with_helper
    generated = tmp_path / "gen"
    compiling, real_key = [], plancache._cache_key

    def key(*args):  # the compiler's source, named by this process, is there while it runs
        compiling.append(any(f".{os.getpid()}.c" in p.name for p in generated.iterdir()))
        return real_key(*args)
    monkeypatch.setattr(plancache, "_cache_key", key)
    cold = compile_cached(path, generated_dir=str(generated))
    assert compiling == [] and cold.count() == 12 and compiling == [True]
    other = compile_cached(path, generated_dir=str(generated), settings={"n": 7})
    assert compiling == [True, False] and other.count() == 14
    warm = compile_cached(path, generated_dir=str(generated))
    assert isinstance(warm.executable, CachedExecutable) and warm.count() == 12


def test_a_built_in_device_is_keyed_by_its_name_and_beastgen_s_source(space_with_helper, tmp_path):
    """The default device and the same built-in device named on the command line share a record
    (a built-in profile is package data, which beastgen's source in the key covers); another
    built-in device, or a profile of the user's own with the same key, do not."""
    from beastgen.devices import load_profile
    path, _ = space_with_helper
    generated = str(tmp_path / "gen")
    assert not isinstance(_built(path, generated).executable, CachedExecutable)
    assert isinstance(compile_cached(path, device="h100", generated_dir=generated).executable, CachedExecutable)
    assert not isinstance(compile_cached(path, device="a100", generated_dir=generated).executable, CachedExecutable)
    built_in = load_profile("h100")
    own = type(built_in)(built_in.key, built_in.name, dict(built_in.properties, sm_count=1), "mine.toml")
    assert not isinstance(compile_cached(path, device=own, generated_dir=generated).executable, CachedExecutable)
