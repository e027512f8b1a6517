"""Issue 28: no planted file ever runs. A generated directory that another user could write
(sticky or not, through its group, through a directory above it or a symbolic link) is refused with
one line; a library is loaded only once its recorded sha256 matches (checked before it is mapped),
a plan record or module only when no one else may write it; a damaged library is rebuilt."""
import json
import os
import subprocess

import pytest

import beastgen
from beastgen.compiler.runtime import compile_space


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path, monkeypatch):
    """Commands run in a temporary directory; a planted constructor writes ``pwned`` there."""
    monkeypatch.chdir(tmp_path)


SMALL_STRINGS = """\
import beastgen as beast
s = beast.values("a,b", 'say "hi"', "line\\nbreak", "plain")
n = beast.range(1, 3)
"""


@pytest.mark.parametrize("mode, why", [(0o777, "is writable by everyone"),
                                       (0o1777, "the sticky bit does not help"),
                                       (0o770, "is writable by its group")])
def test_generated_directory_others_may_write_is_refused(tmp_path, capsys, mode, why):
    """/tmp, /dev/shm, any 1777 or group-writable directory: another user could plant the module
    or library under the name beastgen loads. One line, nothing written there."""
    from beastgen.cli import main

    (tmp_path / "s.py").write_text(SMALL_STRINGS)
    (tmp_path / "gen").mkdir()
    os.chmod(tmp_path / "gen", mode)
    assert main(["count", "s.py", "--generated-dir", "gen"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("beastgen: error: gen: the generated directory ")
    assert why in err and "BEASTGEN_GENERATED_DIR" in err and "private directory" in err
    assert os.listdir(tmp_path / "gen") == []


@pytest.mark.parametrize("mode, refused", [(0o777, True), (0o1777, False), (0o775, True), (0o755, False)])
def test_directories_above_the_generated_one(tmp_path, capsys, mode, refused):
    """Through a directory above it that others may write (unless sticky), the generated directory
    itself could be replaced."""
    from beastgen.cli import main

    (tmp_path / "s.py").write_text(SMALL_STRINGS)
    (tmp_path / "shared" / "gen").mkdir(parents=True)
    os.chmod(tmp_path / "shared", mode)
    assert main(["count", "s.py", "--generated-dir", "shared/gen"]) == (2 if refused else 0)
    err = capsys.readouterr().err
    assert (f"goes through {tmp_path / 'shared'}, which is writable by" in err) == refused, err


def test_a_symbolic_link_to_the_generated_directory_must_be_yours(tmp_path, capsys):
    """A link in a sticky shared directory (/tmp) that another user made could be pointed
    elsewhere later; one of yours to a private directory is fine."""
    from beastgen.cli import main

    if os.geteuid() != 0:
        pytest.skip("makes a link owned by another user (root only)")
    (tmp_path / "s.py").write_text(SMALL_STRINGS)
    (tmp_path / "shared").mkdir()
    os.chmod(tmp_path / "shared", 0o1777)
    (tmp_path / "private").mkdir()
    os.symlink(tmp_path / "private", tmp_path / "shared" / "gen")
    assert main(["count", "s.py", "--generated-dir", "shared/gen"]) == 0
    os.lchown(tmp_path / "shared" / "gen", 12345, 12345)
    assert main(["count", "s.py", "--generated-dir", "shared/gen"]) == 2
    assert "belongs to another user (uid 12345)" in capsys.readouterr().err


def test_the_generated_directory_is_created_private(tmp_path):
    old = os.umask(0o002)  # a group-writable umask must not make the directory refused next time
    try:
        (tmp_path / "s.py").write_text(SMALL_STRINGS)
        plan = compile_space(beastgen.load(str(tmp_path / "s.py")), "h100", {},
                             generated_dir=str(tmp_path / "a" / "gen"))
        assert plan.count() == 8
        plan.write()  # the Numba module (a count in C does not need it)
    finally:
        os.umask(old)
    for path in ["a", "a/gen", plan.path]:
        assert not os.stat(tmp_path / path).st_mode & 0o022, path
    assert os.stat(tmp_path / "a" / "gen" / "__pycache__").st_mode & 0o777 == 0o700


PLANTED_C = """\
#include <stdio.h>
#include <stdint.h>
__attribute__((constructor)) static void planted(void) { fclose(fopen("pwned", "w")); }
int64_t count(int64_t lo, int64_t hi) { return 1234; }
int64_t split_nodes(void) { return 1; }
int64_t fill(void) { return 0; }
int64_t count_claimed(void) { return 1234; }
"""
PLANTED_SPACE = "import beastgen as beast\nx = beast.range(1, 50)\nf = beast.filter(x % 7 == 0)\n"


def _plant_library(tmp_path, directory):
    """A library whose constructor writes ``pwned``, under the name the count of PLANTED_SPACE
    loads from ``directory``; the space file's path."""
    from beastgen.compiler import native

    if native.c_compiler() is None:
        pytest.skip("needs a C compiler")
    (tmp_path / "s.py").write_text(PLANTED_SPACE)
    probe = compile_space(beastgen.load(str(tmp_path / "s.py")), "h100", {},
                          generated_dir=str(tmp_path / "probe"))
    target = native.library_path(str(directory), "s", probe.native_source(), probe.c_optimization)
    (tmp_path / "planted.c").write_text(PLANTED_C)
    subprocess.run([native.c_compiler(), *native.C_FLAGS, "-o", target, str(tmp_path / "planted.c")],
                   check=True)
    return str(tmp_path / "s.py"), target


def test_planted_library_in_a_sticky_world_writable_directory_never_loads(tmp_path, monkeypatch,
                                                                          capsys):
    from beastgen.cli import main

    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    _plant_library(tmp_path, shared)
    monkeypatch.setenv("BEASTGEN_GENERATED_DIR", str(shared))
    assert main(["count", "s.py"]) == 2
    assert not (tmp_path / "pwned").exists()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{shared}: the generated directory is writable by everyone" in err


@pytest.mark.parametrize("cached", [False, True])
def test_a_library_not_built_here_is_compiled_again_unread(tmp_path, cached):
    """In a private directory, a library already under the expected name that beastgen did not
    record (planted earlier, copied in) is replaced before anything maps it: its constructor never runs."""
    from beastgen.compiler import native
    from beastgen.plancache import compile_cached

    gen = tmp_path / "gen"
    gen.mkdir()
    path, target = _plant_library(tmp_path, gen)
    planted = native.library_digest(target)
    plan = (compile_cached(path, "h100", generated_dir=str(gen)) if cached else
            compile_space(beastgen.load(path), "h100", {}, generated_dir=str(gen)))
    assert plan.count() == 42 and plan.native is not None
    assert not (tmp_path / "pwned").exists()
    assert native.library_digest(target) not in (None, planted)
    assert native.recorded_digest(target) == native.library_digest(target)


def test_planted_module_and_record_never_run(tmp_path, capsys):
    """A generated module and plan record copied into a 1777 directory are refused; in a private
    directory, a record or module that others may write is no record: the module is generated again."""
    import hashlib
    from beastgen.cli import main

    (tmp_path / "s.py").write_text(PLANTED_SPACE)
    private = tmp_path / "gen"
    assert main(["count", "s.py", "--generated-dir", "gen"]) == 0
    record_name = next(n for n in os.listdir(private) if n.endswith(".plan.json"))
    record = json.loads((private / record_name).read_text())
    planted = f"open({str(tmp_path / 'pwned')!r}, 'w').close()\n"
    record["module_sha256"] = hashlib.sha256(planted.encode()).hexdigest()
    record.pop("native", None)
    for directory, mode, file_mode in [(tmp_path / "shared", 0o1777, 0o644),
                                       (private, 0o755, 0o666)]:
        directory.mkdir(exist_ok=True)
        os.chmod(directory, mode)
        for name, text in [(record_name, json.dumps(record)), (record["module"], planted)]:
            (directory / name).unlink(missing_ok=True)
            (directory / name).write_text(text)
            os.chmod(directory / name, file_mode)
        capsys.readouterr()
        status = main(["count", "s.py", "--generated-dir", str(directory)])
        assert not (tmp_path / "pwned").exists()
        assert status == (2 if mode == 0o1777 else 0), capsys.readouterr()
    assert main(["generate", "s.py", "--generated-dir", str(private)]) == 0  # the module, now
    assert (private / record["module"]).read_text() != planted
    assert not os.stat(private / record["module"]).st_mode & 0o022


def test_damaged_library_is_rebuilt_never_a_crash(tmp_path):
    """A truncated library (a full disk, a copy cut short) is found by its sha256 before it is
    mapped, and compiled again: no SIGBUS, the right count, warm (plan cache) and cold."""
    import sys
    from beastgen.compiler import native

    if native.c_compiler() is None:
        pytest.skip("needs a C compiler")
    (tmp_path / "s.py").write_text(PLANTED_SPACE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path),
               BEASTGEN_GENERATED_DIR=str(tmp_path / "gen"))
    command = [sys.executable, "-m", "beastgen", "count", "s.py"]
    for cold in [False, True]:
        run = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
        assert run.returncode == 0 and "42 valid configurations" in run.stdout, run
        (library,) = [tmp_path / "gen" / n for n in os.listdir(tmp_path / "gen") if n.endswith(".so")]
        size = library.stat().st_size
        with open(library, "r+b") as f:
            f.truncate(size // 2)
        if cold:
            for name in os.listdir(tmp_path / "gen"):
                if name.endswith(".plan.json"):
                    os.remove(tmp_path / "gen" / name)
        run = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
        assert run.returncode == 0 and "42 valid configurations" in run.stdout, run
        assert "Traceback" not in run.stderr and library.stat().st_size == size


def test_a_failed_c_compile_leaves_no_temporary_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CC", "false")
    monkeypatch.setenv("BEASTGEN_VECTORISED", "0")  # Numba counts, so its module is written
    (tmp_path / "s.py").write_text(PLANTED_SPACE)
    plan = compile_space(beastgen.load(str(tmp_path / "s.py")), "h100", {},
                         generated_dir=str(tmp_path / "gen"))
    assert plan.count() == 42 and plan.native is None
    assert "the C compiler (" in capsys.readouterr().err
    assert sorted(n for n in os.listdir(tmp_path / "gen") if n != "__pycache__") == [
        os.path.basename(plan.path)]
