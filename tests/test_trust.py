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
        plan.module  # the Numba module, written, and its cache (a count in C needs neither)
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
    from beastgen.loading.plancache import compile_cached

    gen = tmp_path / "gen"
    gen.mkdir()
    path, target = _plant_library(tmp_path, gen)
    planted = _sha256(target)
    plan = (compile_cached(path, "h100", generated_dir=str(gen)) if cached else
            compile_space(beastgen.load(path), "h100", {}, generated_dir=str(gen)))
    assert plan.count() == 42 and plan.native is not None
    assert not (tmp_path / "pwned").exists()
    assert _sha256(target) != planted
    from beastgen.support.generated_dir import open_private_directory
    recorded = native.recorded_digest(open_private_directory(str(gen)), os.path.basename(target))
    assert recorded.sha256 == _sha256(target) == plan.native.sha256


def _sha256(path) -> str:
    import hashlib
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


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


# -- issue 37: trust by construction --------------------------------------------------------------
#: the attacker of the cold-run race (../shared/notes/probes-round4, attacker.py), run as another
#: user: it says "ready", then waits for the victim's C source in ATT/gen and swaps the directory
#: (or, with "first", makes ATT/gen its own before the victim does), putting its source under the
#: victim's name; it says what happened on stdout
RACE_ATTACKER = r"""
import os, sys
att, evil, mode = sys.argv[1], open(sys.argv[2]).read(), sys.argv[3]
gen = os.path.join(att, "gen")
if mode == "first":
    os.mkdir(gen); os.chmod(gen, 0o777)
print("ready", flush=True)
while True:
    try:
        names = os.listdir(gen)
    except OSError:
        continue
    hits = [n for n in names if n.endswith(".c") and n.count(".") == 2]
    if hits or (mode == "first" and names):
        try:
            if mode != "first":
                os.rename(gen, gen + ".victim")
                os.mkdir(gen); os.chmod(gen, 0o777)
            for n in hits:
                with open(os.path.join(gen, n), "w") as f:
                    f.write(evil)
            print("swapped", hits, flush=True)
        except OSError as e:
            print("refused:", e, flush=True)
        sys.exit(0)
"""
RACE_LIBRARY = r"""
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
__attribute__((constructor)) static void pwn(void) {
    FILE *f = fopen(getenv("PWNED_FILE"), "a");
    if (f) { fputs("evil library loaded\n", f); fclose(f); }
}
int64_t count(int64_t lo, int64_t hi) { return 4242; }
int64_t split_nodes(void) { return 1; }
int64_t count_claimed(void *a, int64_t b, int64_t c) { return 4242; }
"""
RACE_SPACE = "import beastgen as beast\nx = beast.range(1, 50)\nf = beast.filter(x % 7 == 0)\n"


@pytest.fixture
def another_user():
    """(uid, gid) of a user other than this one (``nobody``) that can run a Python here, and that
    Python; skipped unless this is root (only root can run a process as another user)."""
    import pwd
    import shutil
    import sys
    from beastgen.compiler import native

    if os.geteuid() != 0:
        pytest.skip("runs an attacker as another user (root only)")
    if native.c_compiler() is None:
        pytest.skip("needs a C compiler")
    try:
        user = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("needs a user 'nobody' to play the attacker")
    for python in (sys.executable, shutil.which("python3"), "/usr/bin/python3"):
        try:
            if python and subprocess.run([python, "-c", "pass"], user=user.pw_uid, cwd="/",
                                         group=user.pw_gid, extra_groups=[],
                                         capture_output=True).returncode == 0:
                return user.pw_uid, user.pw_gid, python
        except OSError:  # not this user's to run
            continue
    pytest.skip("no Python that the user 'nobody' may run")


def _race(tmp_path, attacker, setup: str) -> tuple[subprocess.CompletedProcess, str, bool]:
    """One cold count raced by the attacker (``setup``: "owned", the generated directory's parent
    belongs to the attacker; "sticky", it is a world-writable sticky directory such as /tmp;
    "first", that too, and the attacker makes the generated directory before the victim): the
    victim's run, what the attacker said, and whether the attacker's library was loaded."""
    import sys
    import tempfile

    uid, gid, python = attacker
    att = tempfile.mkdtemp(prefix="beastgen-race-")  # under /tmp: the attacker can reach it
    try:
        os.chmod(att, 0o755 if setup == "owned" else 0o1777)
        if setup == "owned":
            os.chown(att, uid, gid)
        scripts = tempfile.mkdtemp(prefix="beastgen-race-attacker-")
        os.chmod(scripts, 0o755)
        for name, text in [("attacker.py", RACE_ATTACKER), ("evil.c", RACE_LIBRARY)]:
            with open(os.path.join(scripts, name), "w") as f:
                f.write(text)
            os.chmod(os.path.join(scripts, name), 0o644)
        pwned = tmp_path / "PWNED"
        pwned.unlink(missing_ok=True)
        (tmp_path / "s.py").write_text(RACE_SPACE)
        attacking = subprocess.Popen(
            [python, os.path.join(scripts, "attacker.py"), att, os.path.join(scripts, "evil.c"),
             setup], user=uid, group=gid, extra_groups=[], cwd="/", stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)
        try:
            assert attacking.stdout.readline() == "ready\n"  # (an event, not a duration)
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), PWNED_FILE=str(pwned),
                       BEASTGEN_GENERATED_DIR=os.path.join(att, "gen"))
            victim = subprocess.run([sys.executable, "-m", "beastgen", "count", "s.py"],
                                    cwd=tmp_path, env=env, capture_output=True, text=True,
                                    timeout=900)  # (a guard)
        finally:
            attacking.kill()
            said = attacking.communicate()[0]
        return victim, said, pwned.exists()
    finally:
        subprocess.run(["rm", "-rf", att, scripts], check=True)


def _check_race(victim, said, loaded, setup):
    assert not loaded and "4,242" not in victim.stdout, (victim, said)
    assert "Traceback" not in victim.stderr, victim.stderr
    if setup == "sticky":  # the victim's own directory in a sticky one: nobody can swap it
        assert victim.returncode == 0 and "\n42 valid configurations" in victim.stdout, victim
        assert "swapped" not in said, said
    else:
        assert victim.returncode == 2 and victim.stderr.count("\n") == 1, victim
        assert "belongs to another user" in victim.stderr, victim.stderr


@pytest.mark.parametrize("setup", ["owned", "sticky", "first"])
def test_the_cold_run_race_is_lost(tmp_path, another_user, setup):
    """Issue 37, F1: the generated directory does not exist yet. Where its parent belongs to
    another user (or that user made the directory first), the run is refused before anything is
    written; where the parent is a sticky shared one, the directory beastgen creates is its own
    and nobody else can swap it. The attacker's library is never loaded."""
    _check_race(*_race(tmp_path, another_user, setup), setup)


@pytest.mark.slow
def test_the_cold_run_race_is_lost_every_time(tmp_path, another_user):
    """repro/race.sh twenty times for each setup: 0 of 60 load the attacker's library (before:
    the attacker won 9 of 10)."""
    for setup in ["owned", "sticky", "first"]:
        for _ in range(20):
            _check_race(*_race(tmp_path, another_user, setup), setup)


def test_the_library_loaded_is_the_one_hashed(tmp_path):
    """A library is mapped from the descriptor whose bytes were hashed: replacing the file at its
    name afterwards (here by its owner) changes nothing that is loaded."""
    from beastgen.compiler import native

    from beastgen.support.generated_dir import open_private_directory

    if native.c_compiler() is None:
        pytest.skip("needs a C compiler")
    directory = open_private_directory(str(tmp_path / "gen"))
    built = native.build_library(directory, "s", "#include <stdint.h>\n"
                                 "int64_t split_nodes(void) { return 7; }\n", "-O0")
    (tmp_path / "planted.c").write_text(PLANTED_C)
    subprocess.run([native.c_compiler(), *native.C_FLAGS, "-o", str(tmp_path / "planted.so"),
                    str(tmp_path / "planted.c")], check=True)
    os.replace(tmp_path / "planted.so", built.path)
    assert native.load(built, ("split_nodes",)).split_nodes() == 7
    assert not (tmp_path / "pwned").exists()


def test_a_directory_made_by_another_user_where_beastgen_creates_one_is_refused(tmp_path, capsys):
    """Created, then checked: a directory in the way that is not this user's (made by another user
    between the look and the mkdir) is refused, and nothing is written into it."""
    from beastgen.cli import main

    if os.geteuid() != 0:
        pytest.skip("makes a directory owned by another user (root only)")
    (tmp_path / "s.py").write_text(SMALL_STRINGS)
    (tmp_path / "shared").mkdir(mode=0o1777)
    os.chmod(tmp_path / "shared", 0o1777)
    (tmp_path / "shared" / "gen").mkdir()
    os.chown(tmp_path / "shared" / "gen", 12345, 12345)
    assert main(["count", "s.py", "--generated-dir", "shared/gen/deeper"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "belongs to another user (uid 12345)" in err
    assert os.listdir(tmp_path / "shared" / "gen") == []


def test_sighup_during_the_c_compile_stops_it_and_leaves_nothing(tmp_path):
    """G2: SIGHUP (a closed terminal) while the C compiler runs: the compiler and what it started
    are stopped, the temporary files removed, the exit status 129 with one line."""
    import signal
    import sys
    import time

    started = tmp_path / "started"
    compiler = tmp_path / "slow-cc"
    # a compiler driver that starts a child (as gcc starts cc1), says both pids, and waits
    compiler.write_text(f"#!/bin/sh\nsleep 300 &\necho $$ $! > {started}.tmp\n"
                        f"mv {started}.tmp {started}\nwait\n")
    compiler.chmod(0o755)
    (tmp_path / "s.py").write_text(RACE_SPACE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), CC=str(compiler))
    child = subprocess.Popen([sys.executable, "-m", "beastgen", "count", "s.py", "--generated-dir",
                              "gen"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 600  # (a guard: the test waits for events)
    while not started.exists():  # the compiler is running
        assert child.poll() is None and time.monotonic() < deadline, child.communicate()
        time.sleep(0.02)
    pids = [int(p) for p in started.read_text().split()]
    child.send_signal(signal.SIGHUP)
    out, err = child.communicate(timeout=600)
    deadline = time.monotonic() + 600
    assert child.returncode == 129, (out, err)
    assert err.splitlines()[-1] == "beastgen: terminated (SIGHUP)" and "Traceback" not in err
    assert sorted(os.listdir(tmp_path / "gen")) == []
    for pid in pids:  # stopped (killed, then reaped by init): gone within a while
        while os.path.exists(f"/proc/{pid}") and _state(pid) not in ("Z", None):
            assert time.monotonic() < deadline, f"compiler process {pid} still runs"
            time.sleep(0.02)


def _state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None
