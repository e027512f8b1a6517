"""Issue 12: no user text runs as code; hostile input gets a clear error (see README "Security")."""
import ast
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import beastgen
from beastgen.quoting import comment_text, docstring_text, shell_command
from beastgen.compiler.runtime import compile_space


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path, monkeypatch):
    """The payloads write the marker ``pwned`` in the working directory, a temporary one."""
    monkeypatch.chdir(tmp_path)


def _payloads(marker):
    """Texts that would run ``open('pwned', 'w')`` (``marker``) if pasted unescaped into the
    generated module."""
    code = f"open({marker.name!r}, 'w')"
    return [
        f'a""";{code};"""',  # closes the header docstring
        f"a''';{code};'''",
        f"a\n{code}\n#",  # newline: out of a comment, or a new line in the docstring
        f"a\r{code}\r#",
        f'\\""";{code};"""\\',  # backslashes around the quotes
        f'x"\x00\u2028\u00e9\U0001F600 "{code}',  # NUL, a Unicode line separator, non-ASCII
        '"',
        "\\",
    ]


SETTING_SPACE = """\
import beastgen as beast
kname = beast.setting("x")
x = beast.range(1, 4)
@beast.iterator
def y():
    '''DOC'''
    v = 1
    while v <= x:
        yield v
        v += 1
small = beast.filter(x * y > 6)
"""


def _check_module(plan, marker, texts):
    """Import the generated module: nothing runs, and the header docstring holds ``texts`` exactly."""
    tree = ast.parse(plan.source)
    assert isinstance(tree.body[0], ast.Expr)  # the docstring, then only imports and definitions
    assert all(isinstance(node, (ast.Expr, ast.Import, ast.ImportFrom, ast.Assign, ast.FunctionDef))
               for node in tree.body)
    assert "\x00" not in plan.source
    module = plan.module
    assert not marker.exists()
    for text in texts:
        assert text in module.__doc__
    assert plan.count() == sum(1 for x in range(1, 4) for y in range(1, x + 1) if x * y <= 6)
    assert not marker.exists()


@pytest.mark.parametrize("index", range(8))
def test_setting_value_never_runs(tmp_path, index):
    marker = tmp_path / "pwned"
    payload = _payloads(marker)[index]
    path = tmp_path / "space.py"
    path.write_text(SETTING_SPACE)
    space = beastgen.load(str(path))
    plan = compile_space(space, "h100", {"kname": payload}, generated_dir=str(tmp_path / "gen"))
    _check_module(plan, marker, [f"kname={payload!r}"])


@pytest.mark.parametrize("index", range(8))
def test_iterator_docstring_never_runs(tmp_path, index):
    marker = tmp_path / "pwned"
    payload = _payloads(marker)[index]
    path = tmp_path / "space.py"
    path.write_text(SETTING_SPACE.replace("'''DOC'''", repr(payload)))
    space = beastgen.load(str(path))
    plan = compile_space(space, "h100", {}, generated_dir=str(tmp_path / "gen"))
    _check_module(plan, marker, [])
    assert plan.module.y__generate.py_func.__doc__ == payload  # the function's source round-trips


@pytest.mark.parametrize("index", [0, 1, 2, 3, 4, 5])
def test_space_file_name_and_directory_never_run(tmp_path, index):
    marker = tmp_path / "pwned"
    payload = _payloads(marker)[index].replace("/", "\u2215").replace("\x00", "")  # a file name
    directory = tmp_path / payload
    directory.mkdir()
    path = directory / f"{payload}.py"
    path.write_text(SETTING_SPACE)
    space = beastgen.load(str(path))
    assert space.name == payload
    plan = compile_space(space, "h100", {}, generated_dir=str(tmp_path / "gen"))
    assert os.path.dirname(plan.path) == str(tmp_path / "gen")  # the name is no path
    _check_module(plan, marker, [f"space:      {payload} (", f"space {payload!r} generated"])


@pytest.mark.parametrize("index", [0, 2, 5])
def test_t1_file_name_never_runs(tmp_path, index):
    marker = tmp_path / "pwned"
    payload = _payloads(marker)[index].replace("/", "\u2215").replace("\x00", "")
    path = tmp_path / f"{payload}.json"
    path.write_text(json.dumps({"ConfigurationSpace": {
        "TuningParameters": [{"Name": "x", "Values": "[1, 2, 3]"}, {"Name": "y", "Values": "[1, 2, 3]"}],
        "Conditions": [{"Expression": "y <= x and x * y <= 6"}]}}))
    plan = compile_space(beastgen.load(str(path)), "h100", {}, generated_dir=str(tmp_path / "gen"))
    _check_module(plan, marker, [f"space:      {payload} ("])


@pytest.mark.parametrize("index", range(7))
def test_device_name_and_file_never_run(tmp_path, index):
    marker = tmp_path / "pwned"
    payload = _payloads(marker)[index]
    file_name = payload.replace("/", "\u2215").replace("\x00", "")
    path = tmp_path / f"{file_name}.toml"
    path.write_text(f'base = "h100"\nname = {json.dumps(payload, ensure_ascii=False)}\n')
    space_path = tmp_path / "space.py"
    space_path.write_text(SETTING_SPACE)
    plan = compile_space(beastgen.load(str(space_path)), str(path), {},
                         generated_dir=str(tmp_path / "gen"))
    assert plan.specialized.device.name == payload
    assert os.path.dirname(plan.path) == str(tmp_path / "gen")
    _check_module(plan, marker, [f"device:     {file_name} ({payload}; profile"])


def test_regenerate_line_is_one_quoted_shell_command(tmp_path):
    """README's regeneration loop evals the `regenerate:` line: it runs exactly `beastgen generate`
    with the right arguments, or is no command at all."""
    if shutil.which("bash") is None:
        pytest.skip("needs bash")
    marker = tmp_path / "pwned"
    directory = tmp_path / "a b;$(touch pwned)`touch pwned`&"
    directory.mkdir()
    path = directory / "space.py"
    path.write_text(SETTING_SPACE)
    space = beastgen.load(str(path))
    for value, quotable in [("$(touch pwned); touch pwned", True), ("it's", False), ('a"b', False),
                            ("a\nb", False)]:
        plan = compile_space(space, "h100", {"kname": value}, generated_dir=str(tmp_path / "gen"))
        plan.write()
        script = ('beastgen() { printf "%s\\n" "$@" > args; }\n'
                  f'eval "$(sed -n \'s/^regenerate: //p\' {shell_command([plan.path])})"')
        result = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True)
        assert not marker.exists()
        args = (tmp_path / "args").read_text().splitlines() if (tmp_path / "args").exists() else []
        if quotable:
            assert args == ["generate", space.path, "--device", "h100", "--set", f"kname={value}"]
        else:
            assert args == [] and "regenerate: (not as one shell command" in plan.source
        assert result.returncode in (0, 127)  # 127: the line is prose, no command named "(not"
        (tmp_path / "args").unlink(missing_ok=True)


def test_quoting_round_trips():
    texts = ['"""', "'''", "\\", "\\\\\"", "a\nb\r\x00\x7f\u2028\U0001F600é", "\udcff", ""]
    for text in texts:
        assert ast.literal_eval(f'"""{docstring_text(text)}"""') == text
        assert ast.literal_eval(f'"""x{docstring_text(text)}"""') == "x" + text
        assert "\n" not in comment_text(text) and "\r" not in comment_text(text)
    assert shell_command(["a b", "c"]) == "'a b' c"
    assert shell_command(["it's"]) is None


def test_name_subclass_with_custom_repr_is_not_a_constant(tmp_path):
    """A module constant is printed with repr(): only exact int/float/str/bool qualify."""
    path = tmp_path / "space.py"
    path.write_text(textwrap.dedent("""\
        import beastgen as beast
        class Sneaky(int):
            def __repr__(self):
                return "__import__('os').system('touch pwned')"
        LIMIT = Sneaky(3)
        x = beast.range(1, 4)
        @beast.filter
        def big():
            return x > LIMIT
        """))
    with pytest.raises(beastgen.errors.SpaceError) as e:
        compile_space(beastgen.load(str(path)), "h100", {}, generated_dir=str(tmp_path / "gen")).count()
    assert "LIMIT" in str(e.value)


# -- Ctrl-C, long counts, output files ---------------------------------------------------------------
BIG_SPACE = """\
import beastgen as beast
a = beast.range(0, 10000)
b = beast.range(0, 10000)
c = beast.range(0, 10000)
odd = beast.filter((a + b * c) % 7 == 3)
"""


@pytest.fixture(scope="module")
def big_space(tmp_path_factory):
    """A 1e12-point space compiled once (Numba's cache), so children start in about a second."""
    directory = tmp_path_factory.mktemp("big")
    path = directory / "big.py"
    path.write_text(BIG_SPACE)
    plan = compile_space(beastgen.load(str(path)), "h100", {}, generated_dir=str(directory / "gen"))
    plan.count(chunk=(0, 1))
    plan.estimate(samples=2, method="knuth")
    plan.estimate(samples=2)
    plan.enumerate(chunk=(0, 0))
    return directory


def _interrupt(directory, args, wait_for, timeout=60, signal_number=None):
    """Run ``python -m beastgen ARGS`` in ``directory``, send SIGINT (or ``signal_number``) once
    stderr or stdout shows ``wait_for`` (plus two seconds), and return (exit status, seconds it took
    to exit, output)."""
    import signal
    import sys
    import time

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    child = subprocess.Popen([sys.executable, "-m", "beastgen", *args, "--generated-dir", "gen"],
                             cwd=directory, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
    output = ""
    deadline = time.monotonic() + timeout
    while wait_for not in output:
        line = child.stdout.readline()
        assert line and time.monotonic() < deadline, output
        output += line
    time.sleep(2.0)  # a signal during start-up has once been lost (see the issue 12 note)
    child.send_signal(signal_number or signal.SIGINT)
    sent = time.monotonic()
    rest, _ = child.communicate(timeout=10)
    return child.returncode, time.monotonic() - sent, output + rest


def test_ctrl_c_stops_a_long_count_within_a_second_after_warning(big_space):
    status, seconds, output = _interrupt(big_space, ["count", "big.py"], "will take about")
    assert status == 130 and seconds < 1.5, output
    assert "beastgen estimate big.py" in output and "Traceback" not in output
    assert output.rstrip().endswith("beastgen: interrupted (Ctrl-C)")


@pytest.mark.parametrize("name, raised", [("SIGINT", KeyboardInterrupt), ("SIGTERM", "Terminated"),
                                          ("SIGHUP", "Terminated")])
def test_an_interruption_a_callback_swallows_is_noted(name, raised):
    """Ctrl-C or SIGTERM inside a ctypes callback (as llvmlite's, while Numba compiles) is printed
    and dropped by ctypes; interruptions_noted still holds it (and keeps ctypes from printing it), so the compile reports an interruption
    with its own exit status (130, 143, 129), not an error."""
    import ctypes
    import signal
    from beastgen.support import interrupt

    signum = getattr(signal, name)
    callback = ctypes.CFUNCTYPE(None)(lambda: os.kill(os.getpid(), signum))
    unraisable = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "unraisablehook", unraisable.append)
        with interrupt.sigterm_as_interrupt(), interrupt.interruptions_noted() as noted:
            callback()  # the exception is raised inside the callback, and swallowed there
    assert unraisable == []  # not printed
    raised = getattr(interrupt, raised) if isinstance(raised, str) else raised
    assert [type(e) for e in noted] == [raised]
    assert getattr(noted[0], "signal", signal.SIGINT) == signum
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handlers put back
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


@pytest.mark.parametrize("method", ["chen", "knuth"])
def test_ctrl_c_stops_an_estimate(big_space, method):
    status, seconds, output = _interrupt(
        big_space, ["estimate", "big.py", "--method", method, "--samples", "1000000000"], "settings:")
    assert status == 130 and seconds < 1.5, output


SPARSE_SPACE = BIG_SPACE.replace("% 7 == 3", "% 100003 != 3")  # 1e12 points, about 1e7 rows


def test_ctrl_c_during_enumerate_leaves_no_output(big_space):
    """A long enumeration whose rows fit in memory (a bigger one is refused before it starts)."""
    path = big_space / "sparse.py"
    path.write_text(SPARSE_SPACE)
    plan = compile_space(beastgen.load(str(path)), "h100", {}, generated_dir=str(big_space / "gen"))
    plan.estimate(seconds=0.0, method="knuth")
    plan.enumerate(chunk=(0, 0))
    status, seconds, output = _interrupt(big_space, ["enumerate", "sparse.py", "-o", "out.csv"],
                                         "settings:")
    assert status == 130 and seconds < 1.5, output
    assert not [p for p in os.listdir(big_space) if p.startswith((".out", "out"))]


@pytest.mark.parametrize("name, status", [("SIGTERM", 143), ("SIGHUP", 129)])
def test_sigterm_or_sighup_during_enumerate_leaves_no_output(big_space, name, status):
    """SIGHUP (a closed terminal: issue 37, G3) is handled as SIGTERM: no .partial file is left."""
    import signal

    (big_space / "sparse.py").write_text(SPARSE_SPACE)  # rows that fit: the enumeration starts
    status_now, seconds, output = _interrupt(big_space, ["enumerate", "sparse.py", "-o", "term.csv"],
                                             "settings:", signal_number=getattr(signal, name))
    assert status_now == status and seconds < 1.5, output
    assert output.rstrip().endswith(f"beastgen: terminated ({name})") and "Traceback" not in output
    assert not [p for p in os.listdir(big_space) if p.startswith((".term", "term"))]


def test_sighup_while_an_output_is_written_removes_it(tmp_path):
    """G3 (export-results, enumerate -o): SIGHUP while the temporary file is written raises like
    SIGTERM inside beastgen's handler, and the temporary file goes; an output checked but never
    entered (the work failed first: M6) leaves nothing either."""
    import signal
    from beastgen.support.interrupt import Terminated, sigterm_as_interrupt
    from beastgen.support.output import AtomicOutput

    with sigterm_as_interrupt():
        with pytest.raises(Terminated) as e:
            with AtomicOutput(str(tmp_path / "x.json")) as temporary:
                with open(temporary, "w") as f:
                    f.write("half")
                os.kill(os.getpid(), signal.SIGHUP)
                for _ in range(10 ** 7):  # the handler runs at the next bytecode
                    pass
    assert e.value.exit_status == 129 and os.listdir(tmp_path) == []
    checked = AtomicOutput(str(tmp_path / "y.json"))
    assert os.listdir(tmp_path) == [] and checked.temporary is None


def test_enumerate_csv_defuses_formulas_and_keeps_numbers(tmp_path):
    """Issue 37, E2 (CSV injection): a text value a spreadsheet would run as a formula (``=``, ``+``,
    ``-``, ``@``, tab, carriage return first) is written with a leading ``'`` (OWASP); numbers,
    negative ones included, and texts that are plain numbers stay as they are."""
    import csv
    from beastgen.cli import main

    strings = ['=HYPERLINK("http://127.0.0.1/x?"&A1,"click")', "+1+1", "-2+3", "@SUM(1)", "\tTAB",
               "\rCR", "-7", "+1.5e3", "a,b", 'q"uote', "plain"]
    (tmp_path / "t.json").write_text(json.dumps({
        "General": {"BenchmarkName": "csvinj", "OutputFormat": "JSON"},
        "ConfigurationSpace": {"TuningParameters": [
            {"Name": "s", "Type": "string", "Values": json.dumps(strings), "Default": "plain"},
            {"Name": "n", "Type": "int", "Values": "[-3, 2]", "Default": 2},
            {"Name": "f", "Type": "float", "Values": "[-0.5]", "Default": -0.5}],
            "Conditions": []}}))
    assert main(["enumerate", str(tmp_path / "t.json"), "-o", str(tmp_path / "x.csv"),
                 "--generated-dir", str(tmp_path / "gen")]) == 0
    with open(tmp_path / "x.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["s", "n", "f"]
    written = {row[0] for row in rows[1:]}
    assert written == {"'" + s if s[0] in "=+-@\t\r" and s not in ("-7", "+1.5e3") else s
                       for s in strings}
    assert {row[1] for row in rows[1:]} == {"-3", "2"} and {row[2] for row in rows[1:]} == {"-0.5"}


SMALL_STRINGS = """\
import beastgen as beast
s = beast.values("a,b", 'say "hi"', "line\\nbreak", "plain")
n = beast.range(1, 3)
"""


def test_enumerate_csv_quotes_values(tmp_path):
    import csv
    from beastgen.cli import main

    (tmp_path / "s.py").write_text(SMALL_STRINGS)
    assert main(["enumerate", "s.py", "-o", "out.csv", "--generated-dir", "gen"]) == 0
    with open(tmp_path / "out.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["s", "n"]
    assert sorted(r[0] for r in rows[1:]) == sorted(["a,b", 'say "hi"', "line\nbreak", "plain"] * 2)
    assert [p for p in os.listdir(tmp_path) if p.endswith(".partial")] == []


@pytest.mark.parametrize("output, message", [
    ("s.py/out.csv", "a part of its directory is a file"),
    ("gen", "unknown output format"),
    ("out.txt", "unknown output format"),
    ("dir.csv", "the output is a directory"),
])
def test_enumerate_bad_output_path_fails_before_the_work(tmp_path, capsys, output, message):
    from beastgen.cli import main

    (tmp_path / "s.py").write_text(SMALL_STRINGS)
    (tmp_path / "dir.csv").mkdir()
    (tmp_path / "gen").mkdir()
    assert main(["enumerate", "s.py", "-o", output, "--generated-dir", "gen"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and output in err
    assert os.listdir(tmp_path / "gen") == []  # nothing was generated: the check came first


def test_enumerate_into_read_only_directory(tmp_path, capsys):
    from beastgen.cli import main

    if os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    (tmp_path / "s.py").write_text(SMALL_STRINGS)
    (tmp_path / "ro").mkdir(mode=0o500)
    assert main(["enumerate", "s.py", "-o", "ro/out.csv", "--generated-dir", "gen"]) == 2
    assert "cannot write the output there: Permission denied" in capsys.readouterr().err


def test_failed_write_leaves_no_file(tmp_path):
    from beastgen.errors import BeastError
    from beastgen.support.output import AtomicOutput

    target = tmp_path / "out.csv"
    with pytest.raises(BeastError, match="No space left on device"):
        with AtomicOutput(str(target)) as temporary:
            open(temporary, "w").write("half")
            raise OSError(28, "No space left on device")
    assert os.listdir(tmp_path) == []


# -- low: bad files and arguments -------------------------------------------------------------------
@pytest.mark.parametrize("name", ["s.py", "s.json"])
def test_non_utf8_file_is_one_error(tmp_path, capsys, name):
    from beastgen.cli import main

    (tmp_path / name).write_bytes(b"x = 1\n\xff\xfe\n")
    assert main(["count", name]) == 2
    err = capsys.readouterr().err
    assert err == f"beastgen: error: {name}: not a UTF-8 text file (byte 6)\n"


@pytest.mark.parametrize("top", ["0", "-3"])
def test_rank_top_must_be_positive(tmp_path, capsys, top):
    from beastgen.cli import main

    (tmp_path / "s.py").write_text(SMALL_STRINGS)
    assert main(["rank", "s.py", "--top", top]) == 2
    assert f"--top must be at least 1, got {top}" in capsys.readouterr().err


@pytest.mark.parametrize("condition", ["9 ** 9 ** 9 > x", "x < 2 ** 5000"])
def test_huge_constant_folding_is_refused(tmp_path, capsys, condition):
    import time
    from beastgen.cli import main

    (tmp_path / "t.json").write_text(json.dumps({"ConfigurationSpace": {
        "TuningParameters": [{"Name": "x", "Values": "[1, 2, 3]"}],
        "Conditions": [{"Expression": condition}]}}))
    start = time.monotonic()
    assert main(["count", "t.json"]) == 2
    assert time.monotonic() - start < 5
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "t.json:Conditions[0]" in err
    assert "limit of constant folding" in err or "is too large" in err


def test_huge_power_of_settings_is_refused(tmp_path, capsys):
    from beastgen.cli import main

    (tmp_path / "s.py").write_text("import beastgen as beast\ne = beast.setting(9)\n"
                                   "x = beast.range(1, 4)\nbig = beast.filter(x > e ** e ** e)\n")
    assert main(["count", "s.py"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "s.py:4" in err and "limit of constant folding" in err


def test_read_only_generated_directory_is_one_error(tmp_path, capsys):
    from beastgen.cli import main

    if os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    (tmp_path / "s.py").write_text(SMALL_STRINGS)
    (tmp_path / "gen").mkdir(mode=0o500)
    assert main(["count", "s.py", "--generated-dir", "gen"]) == 2
    err = capsys.readouterr().err
    assert "beastgen: error: gen/" in err and "cannot write the generated enumerator" in err


def test_unreachable_tls_scheduler_is_one_error():
    pytest.importorskip("distributed")
    from beastgen.distributed import Cluster
    from beastgen.errors import BeastError

    with pytest.raises(BeastError, match="cannot reach the Dask scheduler at 'tls://127.0.0.1:9'"):
        with Cluster("tls://127.0.0.1:9", timeout=2):
            pass


def test_foreign_or_damaged_results_store_is_one_error(tmp_path):
    import sqlite3
    from beastgen.errors import BeastError
    from beastgen.harness.store import Store

    foreign = tmp_path / "foreign.db"
    db = sqlite3.connect(foreign)
    db.execute("CREATE TABLE results (id INTEGER, name TEXT)")
    db.commit()
    db.close()
    with pytest.raises(BeastError, match="not a beastgen results store"):
        Store(str(foreign))
    damaged = tmp_path / "damaged.db"
    store = Store(str(damaged))
    store.open_run("r", space="s")
    store.record("r", "k", {"x": 1}, "ok", 1.0)
    store.close()
    data = bytearray(damaged.read_bytes())
    data[100:len(data)] = b"\xff" * (len(data) - 100)
    damaged.write_bytes(bytes(data))
    with pytest.raises(BeastError, match="results store"):
        Store(str(damaged))
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database at all" * 100)
    with pytest.raises(BeastError, match=r"not a beastgen results store \(not an SQLite database\)"):
        Store(str(garbage))


def _sha256s(directory):
    import hashlib

    return {name: hashlib.sha256((directory / name).read_bytes()).hexdigest()
            for name in sorted(os.listdir(directory)) if not name.endswith(".lock")}


@pytest.mark.parametrize("schema", [
    "CREATE TABLE results (id INTEGER, name TEXT)",
    "CREATE TABLE notes (text TEXT)",
    "CREATE TABLE runs (run TEXT); CREATE TABLE results (run TEXT)",
    'CREATE TABLE "x) --" (a TEXT); CREATE TABLE runs (run TEXT)',  # a table name read as data, never SQL
])
def test_a_foreign_database_is_refused_unchanged(tmp_path, schema):
    """Refused before anything changes: no WAL switch, no table added, byte-identical."""
    import sqlite3
    from beastgen.errors import BeastError
    from beastgen.harness.store import Store

    db = sqlite3.connect(tmp_path / "other.db")
    db.executescript(schema + "; PRAGMA user_version = 7;")
    db.close()
    before = _sha256s(tmp_path)
    with pytest.raises(BeastError) as e:
        Store(str(tmp_path / "other.db"))
    assert "other.db: not a beastgen results store" in str(e.value) and "\n" not in str(e.value)
    after = _sha256s(tmp_path)
    assert {name: after[name] for name in before} == before
    assert not [name for name in after if name.startswith("other.db-")]  # no WAL, no journal


def test_a_symbolic_link_to_a_store_is_the_store(tmp_path, store_held_elsewhere):
    from beastgen.errors import BeastError
    from beastgen.harness.store import Store

    path = str(tmp_path / "run.db")
    os.symlink(path, tmp_path / "link.db")
    with store_held_elsewhere(path):
        with pytest.raises(BeastError, match=r"link.db: the results store is in use"):
            Store(str(tmp_path / "link.db"))


@pytest.mark.parametrize("column, value, problem", [
    ("config", "{not json", "unreadable JSON"),
    ("config", "[1, 2]", "not a JSON object"),
    ("time", "'fast'", "the time is 'fast'"),
    ("times", "'[1, \"a\"]'", "the times are not a list of numbers"),
    ("status", "X'01'", "the status is b'\\x01'"),
])
def test_a_damaged_store_row_is_one_error(tmp_path, column, value, problem):
    import sqlite3
    from beastgen.errors import BeastError
    from beastgen.harness.store import Store, read_run

    path = str(tmp_path / "run.db")
    store = Store(path)
    store.open_run("r", space="s")
    store.record("r", "k", {"x": 1}, "ok", 1.0, [1.0, 2.0], 0.5)
    store.close()
    db = sqlite3.connect(path)
    if column == "config":
        db.execute("UPDATE results SET config = ?", (value,))
    else:
        db.execute(f"UPDATE results SET {column} = {value}")
    db.commit()
    db.close()
    for read in [lambda: Store(path).results("r"), lambda: read_run(path)]:
        with pytest.raises(BeastError, match="damaged row") as e:
            read()
        assert problem in str(e.value) and "\n" not in str(e.value)


def test_a_full_store_is_one_error_and_keeps_its_rows(tmp_path):
    """SQLite's 'database or disk is full' (here a page limit: the same SQLITE_FULL as a full
    disk) is one line; every row written before it is still there."""
    from beastgen.errors import BeastError
    from beastgen.harness.store import Store, read_run

    path = str(tmp_path / "run.db")
    store = Store(path)
    store.open_run("r", space="s")
    store.db.execute(f"PRAGMA max_page_count = {store.db.execute('PRAGMA page_count').fetchone()[0] + 1}")
    written = 0
    with pytest.raises(BeastError, match="cannot write the results store: database or disk is full; "
                                         "the results recorded so far are kept"):
        for i in range(10000):
            store.record("r", str(i), {"x": i, "pad": "x" * 200}, "ok", 1.0)
            written += 1
    store.close()
    assert 0 < written == len(read_run(path)[1])


@pytest.mark.parametrize("text, message", [
    ('{"a":' * 100000 + "1" + "}" * 100000, "not a T1 space file"),  # read with room to nest (deep.py)
    (json.dumps({"ConfigurationSpace": {"TuningParameters": [{"Name": "x", "Values": "[1, 2]"}],
                                        "Conditions": ["(" * 20000 + "x" + ")" * 20000 + " > 1"]}}),
     "Conditions[0]"),
    (json.dumps({"ConfigurationSpace": {"TuningParameters": [{"Name": "x", "Values": "[" + "9" * 5000 + "]"}]}}),
     "TuningParameters[0]"),
])
def test_hostile_t1_files_are_one_error(tmp_path, capsys, text, message):
    from beastgen.cli import main

    (tmp_path / "t.json").write_text(text)
    assert main(["count", "t.json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("beastgen: error: t.json") and message in err


def test_deep_replay_file_is_one_error(tmp_path):
    from beastgen.errors import BeastError
    from beastgen.harness.recorded import load_replay

    (tmp_path / "r.json").write_text('{"a":' * 100000 + "1" + "}" * 100000)
    with pytest.raises(BeastError, match="nested too deeply"):
        load_replay(str(tmp_path / "r.json"))


def _gzip(data: bytes) -> bytes:
    import gzip
    return gzip.compress(data, mtime=0)  # the same bytes, so the same test ids, in every process


_CACHE = {"tune_params_keys": ["x"], "cache": {"1": {"x": 1, "time": 2.0}}}


@pytest.mark.parametrize("name, content, message", [
    ("r.json", b"[1, 2]", "its JSON is a list, not an object"),
    ("r.json", b"null", "its JSON is null, not an object"),
    ("r.json", json.dumps({"cache": {}}).encode(), "it has no 'tune_params_keys'"),
    ("r.json", json.dumps({**_CACHE, "tune_params_keys": "x"}).encode(), "not a list of names"),
    ("r.json", json.dumps({**_CACHE, "cache": [1]}).encode(), "'cache' is a list, not an object"),
    ("r.json", json.dumps({**_CACHE, "cache": {"1": 5}}).encode(), "cache entry '1' is a number"),
    ("r.json", json.dumps({**_CACHE, "cache": {"1": {"time": 1}}}).encode(), "no value of 'x'"),
    ("r.json", json.dumps({**_CACHE, "cache": {"1": {"x": [1], "time": 1}}}).encode(),
     "'x' is a list, not a value"),
    ("r.json", json.dumps({**_CACHE, "problem_size": {"n": 1}}).encode(), "'problem_size' is an object"),
    ("r.json.gz", _gzip(json.dumps(_CACHE).encode())[:-12], "not a Kernel Tuner cache file (JSON)"),
    ("r.json.gz", _gzip(json.dumps(_CACHE).encode())[:10] + b"\xff" * 40, "invalid block type"),
    ("r.json.gz", b"plain text", "cannot read replay file: Not a gzipped file"),
])
def test_malformed_replay_file_is_one_error(tmp_path, name, content, message):
    from beastgen.errors import BeastError
    from beastgen.harness.recorded import load_replay

    (tmp_path / name).write_bytes(content)
    with pytest.raises(BeastError) as e:
        load_replay(str(tmp_path / name))
    assert message in str(e.value) and "\n" not in str(e.value)
    assert str(e.value).startswith(str(tmp_path / name))


def test_a_well_formed_replay_file_still_loads(tmp_path):
    from beastgen.harness.recorded import load_replay

    (tmp_path / "r.json").write_text(json.dumps({**_CACHE, "problem_size": 4096}))
    replay = load_replay(str(tmp_path / "r.json"))
    assert replay.times == {(1,): 0.002} and replay.problem_size == [4096]


def test_huge_integer_literal_in_space_file_is_one_error(tmp_path, capsys):
    from beastgen.cli import main

    (tmp_path / "s.py").write_text(f"import beastgen as beast\nx = beast.values({'9' * 5000})\n")
    assert main(["count", "s.py"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "s.py:2" in err


def _children(pid):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open(f"/proc/{entry}/stat").read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_tune_worker_dies_with_its_parent(tmp_path):
    """kill -9 of the driver while its worker hangs: the worker goes too (no orphan spinning)."""
    import signal
    import sys
    import time

    script = ("import functools, time\n"
              "from beastgen.harness.isolate import Isolated\n"
              "Isolated(functools.partial(time.sleep, 1000))._start()\n")  # the worker hangs
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    driver = subprocess.Popen([sys.executable, "-c", script], env=env)
    deadline = time.monotonic() + 30
    workers = []
    while not workers and time.monotonic() < deadline:
        time.sleep(0.2)
        workers = [w for c in _children(driver.pid) for w in [c, *_children(c)]]
    time.sleep(2)  # the spawned worker is running Python (the hang) by now
    workers = [w for c in _children(driver.pid) for w in [c, *_children(c)]]
    assert workers
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(os.path.exists(f"/proc/{w}") and
                                              open(f"/proc/{w}/stat").read().split()[2] != "Z"
                                              for w in workers):
        time.sleep(0.1)
    alive = [w for w in workers if os.path.exists(f"/proc/{w}")
             and open(f"/proc/{w}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"]
    assert alive == []


def test_second_process_on_one_results_store_is_refused(tmp_path, store_held_elsewhere):
    from beastgen.errors import BeastError
    from beastgen.harness.store import Store

    path = str(tmp_path / "run.db")
    with store_held_elsewhere(path):
        with pytest.raises(BeastError, match=r"in use by another beastgen tune \(pid \d+\)"):
            Store(path)
    Store(path).close()  # free again once the first is gone (kill -9 included)


def test_a_taker_never_holds_a_store_its_holder_removed(tmp_path, monkeypatch):
    """The lock is the store file's own (no file beside it). A store that a refused run created
    is removed on close, still locked; a taker that opened it before that finds it gone from its
    name once it has the lock, and takes (creates) the one there now."""
    from beastgen.harness import store as store_module

    path = str(tmp_path / "run.db")
    store_module.Store(path).close()
    assert os.listdir(tmp_path) == []  # created, nothing recorded: removed
    first = store_module.Store(path)
    real_flock, taken = store_module.fcntl.flock, []

    def flock_after_the_holder_closes(fd, operation):
        if not taken:
            taken.append(os.fstat(fd).st_ino)
            first.close()  # between the taker's open and its flock
        return real_flock(fd, operation)

    monkeypatch.setattr(store_module.fcntl, "flock", flock_after_the_holder_closes)
    second = store_module.Store(path)
    monkeypatch.undo()
    assert taken and os.fstat(second._lock).st_ino == os.stat(path).st_ino
    with pytest.raises(store_module.BeastError, match="in use by another beastgen tune"):
        store_module.Store(path)
    second.close()
    assert os.listdir(tmp_path) == []


@pytest.fixture
def full_disk(tmp_path):
    """``full_disk(kib)``: a directory on a tmpfs of that size (a real 'No space left on device');
    skipped where mounting is not allowed."""
    mounted = []

    def mount(kib):
        path = tmp_path / f"full{len(mounted)}"
        path.mkdir()
        if os.geteuid() != 0 or shutil.which("mount") is None or subprocess.run(
                ["mount", "-t", "tmpfs", "-o", f"size={kib}k,mode=755", "tmpfs", str(path)],
                capture_output=True).returncode != 0:
            pytest.skip("needs to mount a small tmpfs (root)")
        mounted.append(path)
        return path

    try:
        yield mount
    finally:
        for path in mounted:
            subprocess.run(["umount", str(path)], check=True)


def test_a_full_disk_under_the_generated_directory_is_one_error(tmp_path, full_disk, capsys):
    from beastgen.cli import main

    full = full_disk(4)
    (tmp_path / "s.py").write_text(SMALL_STRINGS)
    assert main(["count", "s.py", "--generated-dir", str(full / "gen")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot write the generated enumerator: No space left on device" in err
    assert [n for n in os.listdir(full / "gen") if n != "__pycache__"] == []  # no temporary file


def test_a_full_disk_under_the_results_store_is_one_error(full_disk):
    from beastgen.errors import BeastError
    from beastgen.harness.store import Store, read_run

    path = str(full_disk(96) / "run.db")
    store, written = None, 0
    try:
        with pytest.raises(BeastError, match="(cannot write|cannot open) the results store") as e:
            store = Store(path)
            store.open_run("r", space="s")
            for i in range(1000):
                store.record("r", str(i), {"x": i, "pad": "x" * 100}, "ok", 1.0)
                written += 1
    finally:
        if store is not None:
            store.close()
    assert "\n" not in str(e.value) and written > 0, e.value
    assert len(read_run(path)[1]) == written


def test_a_full_disk_under_the_output_is_one_error(tmp_path, full_disk, capsys):
    from beastgen.cli import main

    full = full_disk(4)
    (tmp_path / "s.py").write_text("import beastgen as beast\nx = beast.range(0, 5000)\n")
    assert main(["enumerate", "s.py", "-o", str(full / "out.csv"), "--generated-dir", "gen"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No space left on device" in err, err
    assert os.listdir(full) == []  # the temporary file is gone
