"""The C target of the count (codegen/c/, compiler/native.py): the same counts as the Numba
nest and the reference enumerator, Python's semantics where C's differ, and every way it can be
absent (no compiler, a failing compiler, a plan it cannot print, BEASTGEN_NATIVE=0) falling back to
Numba with the right count. tests/test_properties.py checks it on random spaces too."""
import os
import subprocess
import sys

import pytest
from conftest import PATIENCE_SECONDS, REFERENCE_DIR, REPO

from beastgen.compiler.native import exact_count
import beastgen
from beastgen.compiler import native
from beastgen.compiler.codegen.c.expression import Unsupported, c_comment
from beastgen.compiler.codegen.c.module import generate_c_module
from beastgen.compiler.reference import ReferenceEnumerator
from beastgen.compiler.runtime import compile_space
from beastgen.loading.plancache import CachedExecutable, compile_cached

WHOLE = (0, 2 ** 62)
CHUNKS = [(0, 1), (1, 3), (3, 2 ** 62)]

SHIPPED = [("spaces/gemm.py", "h100", {}),
           ("spaces/conv2d.py", "h100", {}),
           ("spaces/gemm.py", "v100", {"precision": "d", "trans_a": 0, "trans_b": 1}),
           ("spaces/gemm.py", "titanrtx", {"trans_a": 1}),
           ("spaces/gemm_clblast.py", "titanrtx", {}),
           ("spaces/reduction.py", "h100", {}),
           ("spaces/hotspot.py", "a100", {}),
           ("spaces/dedispersion.py", "h100", {})]


def test_the_c_target_prints_the_shipped_spaces():
    """Which shipped spaces the C target covers (hpl's function iterator keeps it on Numba)."""
    covered = {}
    for name in ("gemm", "gemm_clblast", "reduction", "hotspot", "dedispersion", "conv2d", "hpl"):
        plan = compile_space(beastgen.load(os.path.join(REPO, "spaces", f"{name}.py")), "h100")
        try:
            generate_c_module(plan.plan)
            covered[name] = True
        except Unsupported:
            covered[name] = False
    assert covered == {"gemm": True, "gemm_clblast": True, "reduction": True, "hotspot": True,
                       "dedispersion": True, "conv2d": True, "hpl": False}


@pytest.mark.parametrize("path, device, settings", SHIPPED + [
    (os.path.join(REFERENCE_DIR, f"{name}.json"), "h100", {})
    for name in ("dedispersion", "gemm_clblast", "hotspot")])
def test_native_count_equals_the_numba_count(path, device, settings, generated_dir):
    space = beastgen.load(os.path.join(REPO, path))
    plan = compile_space(space, device, settings, generated_dir)
    assert plan.native is not None
    numba_count = exact_count(plan.module.count, *WHOLE)  # prefixes above the counted tail (see counted_tail)
    assert plan.native.count(*WHOLE) == numba_count
    assert numba_count * plan.counted_tail == plan.count() == plan.count(jobs=2)
    assert plan.native.split_nodes() == plan.module.split_nodes()
    assert [plan.native.count(*c) for c in CHUNKS] == [exact_count(plan.module.count, *c) for c in CHUNKS]


SEMANTICS = """\
import math
import beastgen as beast

a = beast.range(-7, 8)
b = beast.range(-4, 5)
f = beast.values(-2.5, -1.0, 0.0, 0.5, 3.0)
colour = beast.values('red', 'green', 'blue', 'red')
c = beast.range(a, 4, b)                  # a step of either sign, or zero (rejected)

q = a // b                                # floor division and modulo of negatives; b == 0 rejects
r = a % b
fq = f // (b * 0.5)                       # CPython's float divmod
fm = f % (b - 0.5)
td = a / b
p = f ** b                                # 0.0 ** negative raises
big = 10.0 ** (a * 50)                    # overflows (raises) for a >= 7
@beast.derived
def up():                                 # one return: an expression, int() included
    return math.ceil(f * a) + math.floor(f - b) + int(f * 3)

lo = beast.min(a, f, c)                   # ints among floats
hi = beast.max(a, b, 2)
either = beast.where(a > 0, a, f)
product = a * b                           # read by the bound alone (not computed by the count) ...
ratio = 12 // product                     # ... but read by this value, which may raise: it is

keep = beast.filter((q + r + c) % 3 == 0)
f1 = beast.filter(fq > fm + td)
f2 = beast.filter(p > 50.0)
f3 = beast.filter((big < 1.0) & (colour == 'red') | (colour == 'blue') & (up > 2))
f4 = beast.filter(lo + hi + either > 6.5)
time = beast.bound(1e-9 * product)
"""


def test_python_semantics(write_space, generated_dir):
    """Negative floor division and modulo, float divmod, true division, float powers that raise,
    ceil/floor/int, min/max of mixed types, string tests, a value that raises though only a bound
    reads it: the C target counts what Python's reference enumerator counts."""
    space = beastgen.load(write_space(SEMANTICS, "semantics.py"))
    plan = compile_space(space, "h100", {}, generated_dir)
    assert plan.native is not None
    expected = sum(1 for _ in ReferenceEnumerator(space, "h100", {}).configurations())
    assert 0 < expected
    assert plan.native.count(*WHOLE) * plan.counted_tail == expected
    assert sum(plan.native.count(*c) for c in CHUNKS) * plan.counted_tail == expected


def test_a_space_function_counts_through_numba(write_space, generated_dir):
    space = beastgen.load(write_space("""\
        import beastgen as beast
        x = beast.range(1, 30)

        @beast.filter
        def composite():
            for d in range(2, x):
                if x % d == 0:
                    return True
            return False
        """, "function.py"))
    plan = compile_space(space, "h100", {}, generated_dir)
    assert plan.native is None
    assert plan.count() == 11  # 1 and the ten primes below 30


@pytest.mark.parametrize("setting, message", [
    ({"BEASTGEN_NATIVE": "0"}, ""),
    ({"CC": "/nonexistent/cc"}, ""),
    ({"CC": "false"}, "the C compiler (")])
def test_without_a_working_c_compiler_numba_counts(setting, message, write_space, tmp_path,
                                                   monkeypatch, capsys):
    for key, value in setting.items():
        monkeypatch.setenv(key, value)
    space = beastgen.load(write_space("import beastgen as beast\nx = beast.range(1, 9)\n"
                                      "y = beast.range(1, 9)\nf = beast.filter((x * y) % 3 == 0)\n"))
    plan = compile_space(space, "h100", {}, str(tmp_path / "gen"))
    assert plan.native is None
    assert plan.count() == 36  # x and y both not multiples of 3
    assert message in capsys.readouterr().err
    # (a nest this small counts in NumPy, compiler/vectorised.py: nothing is written at all)
    assert not list((tmp_path / "gen").glob("*.so"))


def test_the_plan_cache_checks_the_library(write_space, tmp_path):
    """The record names the library and its sha256: a library changed on disk is rebuilt."""
    path = write_space("import beastgen as beast\nx = beast.range(1, 50)\nf = beast.filter(x % 7 == 0)\n")
    generated = str(tmp_path / "gen")
    built = compile_cached(path, generated_dir=generated)
    assert built.count() == 42 and built.native is not None
    library = built.native.path
    cached = compile_cached(path, generated_dir=generated)
    assert isinstance(cached.executable, CachedExecutable) and cached.count() == 42 and cached.native.path == library
    os.remove(library)  # a changed file (removed first: this process still maps the old one)
    with open(library, "wb") as f:
        f.write(b"not a library")
    again = compile_cached(path, generated_dir=generated)
    assert isinstance(again.executable, CachedExecutable)
    assert again.count() == 42 and again.native is not None
    with open(library, "rb") as f:
        assert f.read(4) == b"\x7fELF"  # compiled again
    assert again.native_source() == built.native_source()  # the record has no plan: built from the space


def test_user_text_stays_inside_c_comments(tmp_path, generated_dir):
    """A path with a backslash, '*/' or a newline cannot end a comment or splice the next line."""
    text = c_comment("a */ b \\\nint x;")
    assert "\\" not in text and "\n" not in text
    folder = tmp_path / "odd *" / " name \\"  # the path holds "*/" and ends in a backslash
    folder.mkdir(parents=True)
    path = folder / "space.py"
    path.write_text("import beastgen as beast\nx = beast.range(1, 9)\nf = beast.filter(x > 5)\n")
    plan = compile_space(beastgen.load(str(path)), "h100", {}, generated_dir)
    source = generate_c_module(plan.plan)
    assert "\\" not in "".join(line for line in source.splitlines() if line.lstrip().startswith("//"))
    assert plan.native.count(*WHOLE) * plan.counted_tail == 5


def test_a_warm_count_command_uses_the_library(tmp_path):
    env = dict(os.environ, PYTHONPATH=REPO, BEASTGEN_GENERATED_DIR=str(tmp_path / "gen"))
    command = [sys.executable, "-m", "beastgen", "count", os.path.join(REPO, "spaces", "gemm.py")]
    runs = [subprocess.run(command, capture_output=True, text=True, env=env, timeout=PATIENCE_SECONDS)
            for _ in range(2)]
    assert all("459,316 valid configurations" in run.stdout for run in runs), runs
    assert "compiling" not in runs[1].stderr
    assert [name for name in os.listdir(tmp_path / "gen") if name.endswith(".so")]


def test_a_count_compiles_only_its_functions_the_rest_on_first_use(tmp_path):
    """A count's library holds only what the count calls (``count`` for a small nest); ``fill``
    (an enumeration) builds the library of every function once, which the plan record then names:
    a warm process loads both from the record, compiling nothing, with the same rows."""
    import json
    if native.c_compiler() is None:
        pytest.skip("needs a C compiler")
    path = tmp_path / "s.py"
    path.write_text("import beastgen as beast\nx = beast.range(1, 50)\ny = beast.range(1, 5)\n"
                    "f = beast.filter((x + y) % 7 == 0)\n")
    generated = str(tmp_path / "gen")
    built = compile_cached(str(path), generated_dir=generated)
    assert built.count() == 168 and built.native.functions == ("count",)
    assert len(list((tmp_path / "gen").glob("*.so"))) == 1
    rows = built.enumerate()
    assert len(rows) == 168 and all((x + y) % 7 != 0 for x, y in rows.tolist())
    assert len(list((tmp_path / "gen").glob("*.so"))) == 2
    (record_path,) = (tmp_path / "gen").glob("*.plan.json")
    record = json.loads(record_path.read_text())
    assert record["native"]["functions"] == ["count"]
    assert record["native_all"]["functions"] == list(native.SIGNATURES)
    cached = compile_cached(str(path), generated_dir=generated)
    assert isinstance(cached.executable, CachedExecutable) and cached.count() == 168
    libraries = {p: p.stat().st_mtime_ns for p in (tmp_path / "gen").glob("*.so")}
    assert (cached.enumerate() == rows).all()
    assert cached.native.split_nodes() == built.native.split_nodes()
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "gen").glob("*.so")} == libraries
    assert os.path.basename(cached.executable.library_of_every_function().path) == record["native_all"]["library"]


def test_a_command_that_enumerates_compiles_one_library(tmp_path):
    """``enumerate`` and ``export`` load the library of every function first (commands/common.py's
    learn_size): their count and fill come from one compile, recorded for the next run."""
    if native.c_compiler() is None:
        pytest.skip("needs a C compiler")
    path = tmp_path / "s.py"
    path.write_text("import beastgen as beast\nx = beast.range(1, 50)\nf = beast.filter(x % 7 == 0)\n")
    generated = str(tmp_path / "gen")
    plan = compile_cached(str(path), generated_dir=generated)
    plan.load_every_native_function()
    assert plan.count() == 42 and len(plan.enumerate()) == 42
    assert plan.native.functions == tuple(native.SIGNATURES)
    assert len(list((tmp_path / "gen").glob("*.so"))) == 1
    cached = compile_cached(str(path), generated_dir=generated)
    cached.load_every_native_function()
    assert isinstance(cached.executable, CachedExecutable) and cached.native.path == plan.native.path


def _fake_compiler(tmp_path, script: str) -> str:
    """An executable standing in for the C compiler (``$CC``)."""
    path = tmp_path / "fake-cc"
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return str(path)


def test_a_compile_that_fails_while_python_works_on_is_one_line_and_keeps_the_record(
        write_space, tmp_path, monkeypatch, capsys):
    """The C compiler runs beside the Python work that follows it (native.build_library's
    ``while_compiling``); when it fails late, the count says so in one line, counts without it,
    leaves no temporary file and keeps the plan record (the next run reads it)."""
    import json

    from beastgen.cli import main
    monkeypatch.setenv("CC", _fake_compiler(tmp_path, "sleep 0.3\necho 'cc1: fatal error: no room' >&2\n"
                                                      "exit 1\n"))
    path = write_space("import beastgen as beast\nx = beast.range(1, 50)\nf = beast.filter(x % 7 == 0)\n")
    generated = tmp_path / "gen"
    assert main(["count", path, "--generated-dir", str(generated)]) == 0
    out, err = capsys.readouterr()
    assert "42 valid configurations" in out
    assert [line for line in err.splitlines() if line.startswith("beastgen:")] == [
        line for line in err.splitlines() if "the C compiler" in line and "no room" in line]
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert [p.name.endswith(".plan.json") for p in generated.iterdir() if p.is_file()] == [True]
    (record,) = generated.glob("*.plan.json")
    assert json.loads(record.read_text())["columns"] == ["x"]
    cached = compile_cached(path, generated_dir=str(generated))
    assert isinstance(cached.executable, CachedExecutable) and cached.count() == 42  # (the compiler is tried again)


def test_work_beside_the_compiler_that_raises_stops_it(tmp_path):
    """Ctrl-C (or an error) in the work done while the compiler runs stops the compiler at once
    and removes its files."""
    import time
    compiler = _fake_compiler(tmp_path, "sleep 60\n")
    folder = tmp_path / "gen"
    folder.mkdir()
    calls = []

    def interrupted():
        calls.append(sorted(p.name for p in folder.iterdir()))
        raise KeyboardInterrupt
    start = time.perf_counter()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CC", compiler)
        with pytest.raises(KeyboardInterrupt):
            native.build_library(str(folder), "s", "int64_t count(void);\n", "-O0", interrupted)
    assert time.perf_counter() - start < 30
    assert len(calls) == 1 and calls[0][0].endswith(".c")  # the source, written before it ran
    assert not list(folder.iterdir())


def test_work_beside_the_compiler_runs_while_it_compiles(tmp_path):
    """``while_compiling`` runs once, before the library is in place; the library then loads."""
    if native.c_compiler() is None:
        pytest.skip("needs a C compiler")
    source = "#include <stdint.h>\nint64_t split_nodes(void) { return 7; }\n"
    seen = []
    built = native.build_library(str(tmp_path), "s", source, "-O0",
                                 lambda: seen.append(sorted(p.suffix for p in tmp_path.iterdir())))
    assert seen == [[".c"]]
    assert native.load(built, ("split_nodes",)).split_nodes() == 7
    again = native.build_library(str(tmp_path), "s", source, "-O0", lambda: seen.append("again"))
    assert again[:2] == built[:2] and seen == [[".c"]]  # a library already built: nothing compiles


def test_an_error_beside_the_compiler_is_that_error_not_the_compiler_s(tmp_path, capsys):
    """An OSError of the work beside the compiler (say a local import that vanished while its
    digest was taken) comes out as itself: not reported as the compiler failing."""
    if native.c_compiler() is None:
        pytest.skip("needs a C compiler")

    def vanished():
        raise FileNotFoundError(2, "No such file or directory", "helper.py")
    with pytest.raises(FileNotFoundError):
        native.build_library(str(tmp_path), "s", "int x;\n", "-O0", vanished)
    assert "C compiler" not in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
