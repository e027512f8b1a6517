"""Issue 37, one lock per store file: the results store is locked by the file's identity, whatever
name reaches it (symbolic links, relative and absolute paths, ``#`` and ``?`` in the name); a store
with hard links is refused (SQLite keeps its journal beside each name); every connection goes
through one helper with the name quoted into the URI; a run leaves no row before its inputs are
accepted; a database that is not a beastgen store (a view, a trigger) is refused from its schema,
any query stops within a budget of steps or at Ctrl-C; a prior or replay that is a FIFO or
/dev/zero is one line (the round-4 probes F2, F8, F11, F13, P12, P14)."""
import json
import os
import sqlite3
import threading

import pytest

from beastgen.errors import BeastError
from beastgen.harness.store import Store, read_run, read_runs

TINY = """\
import beastgen as beast
a = beast.values(1, 2, 3, 4, 5, 6, 7, 8)
b = beast.values(1, 2, 3, 4)
f = beast.filter(a * b > 24)
lb = beast.bound(a * 1e-3)
"""


def _cache(path, time_of):
    """A Kernel Tuner cache file of TINY's configurations (times in ms from ``time_of(a, b)``)."""
    cache = {f"{a},{b}": {"a": a, "b": b, "time": time_of(a, b), "times": [time_of(a, b)] * 3}
             for a in range(1, 9) for b in range(1, 5) if a * b <= 24}
    path.write_text(json.dumps({"device_name": "tinydev", "kernel_name": "tiny", "problem_size": [1],
                                "tune_params_keys": ["a", "b"], "cache": cache}))


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    """A directory holding TINY (tiny.py), its replay (replay.json) and priors; the working one."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BEASTGEN_GENERATED_DIR", str(tmp_path / "gen"))
    (tmp_path / "tiny.py").write_text(TINY)
    _cache(tmp_path / "replay.json", lambda a, b: a + 0.1 * b + 0.05)
    _cache(tmp_path / "prior_good.json", lambda a, b: a + 0.1 * b)
    _cache(tmp_path / "p_allneg.json", lambda a, b: -1.0)
    return tmp_path


def _tune(results, *options):
    from beastgen.cli import main
    return main(["tune", "tiny.py", "--backend", "replay", "--replay", "replay.json", "--no-progress",
                 "--strategy", "exhaustive", "--results", results, *options])


def _store_with_a_run(path, rows=3, run="r"):
    store = Store(str(path))
    store.open_run(run, space="tiny", settings={})
    for i in range(rows):
        store.record(run, str(i), {"a": i}, "ok", 1.0 + i)
    store.close()


# -- F2, F8: one lock per file, whatever the name ---------------------------------------------------
@pytest.mark.parametrize("name", ["run.db", "run#3.db", "q?x=1.db", "p%41.db"])
def test_one_lock_per_store_file_whatever_the_name(tmp_path, monkeypatch, name, store_held_elsewhere):
    """Held through one name, the store is refused through every other spelling of it, each
    message naming the holder; no lock file is left beside it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    os.symlink(name, tmp_path / "link.db")
    os.symlink(tmp_path, tmp_path / "dirlink")
    _store_with_a_run(tmp_path / name)
    with store_held_elsewhere(str(tmp_path / name)) as pid:
        for spelling in [name, f"./{name}", f"sub/../{name}", str(tmp_path / name), "link.db",
                         f"dirlink/{name}", f"{tmp_path}/dirlink/./sub/../link.db"]:
            with pytest.raises(BeastError, match=rf"in use by another beastgen tune \(pid {pid}\)"):
                Store(spelling)
    assert not [n for n in os.listdir(tmp_path) if "lock" in n]


def test_a_store_with_hard_links_is_refused_and_keeps_every_result(tiny, capsys):
    """repro/hardlink.sh: two tunes through two hard links of one store both wrote, and the store
    was destroyed. A store with more than one name is refused, for writing and for reading, and
    keeps every result it had."""
    _store_with_a_run(tiny / "hla.db", rows=5)
    os.link(tiny / "hla.db", tiny / "hlb.db")
    before = (tiny / "hla.db").read_bytes()
    for results in ["hla.db", "hlb.db"]:
        assert _tune(results) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{results}: the results store has 2 names (hard links)" in err
    with pytest.raises(BeastError, match="2 names"):
        read_run(str(tiny / "hlb.db"))
    os.unlink(tiny / "hlb.db")
    assert (tiny / "hla.db").read_bytes() == before and len(read_run(str(tiny / "hla.db"))[1]) == 5


def test_two_tunes_at_once_through_two_names_one_is_refused(tiny, capsys, store_held_elsewhere):
    """The same store through a symbolic link while a tune holds it: refused, its results kept."""
    os.symlink("held.db", tiny / "other.db")
    with store_held_elsewhere(str(tiny / "held.db")):
        assert _tune("other.db") == 2
    assert "other.db: the results store is in use by another beastgen tune" in capsys.readouterr().err
    assert _tune("other.db") == 0  # free again


@pytest.mark.parametrize("name", ["run#3.db", "q?x=1.db", "p%41.db"])
def test_a_store_named_with_uri_characters_is_that_file(tiny, capsys, name):
    """F8: ``#`` became a fragment and ``?`` a query of the unquoted URI: another file (``run``)
    was read, and created. Now the store is the file named, for every reader."""
    from beastgen.cli import main

    (tiny / "run").write_bytes(b"")  # what the unquoted URI would open
    _store_with_a_run(tiny / "p.db", rows=10)
    assert _tune(name) == 0
    capsys.readouterr()
    assert main(["export-results", name, "--format", "kernel_tuner", "-o", "o.json"]) == 0
    assert "wrote 30 results" in capsys.readouterr().out
    assert len(read_run(name)[1]) == 30 and len(read_runs(name)) == 1
    from beastgen.harness.store import latest_run_size
    assert latest_run_size(name)[1] == 30
    assert (tiny / "run").read_bytes() == b"" and not (tiny / "q").exists()


# -- F11: no run row before the run's inputs are accepted ------------------------------------------
def test_a_refused_prior_leaves_no_run_and_no_new_store(tiny, capsys):
    """The prior was read after the run's row was written: a refused prior left an empty run as the
    store's latest (and a new, empty store file)."""
    from beastgen.cli import main

    assert _tune("fresh.db", "--strategy", "guided", "--prior", "p_allneg.json") == 2
    assert "fewer than two successful measurements" in capsys.readouterr().err
    assert not (tiny / "fresh.db").exists()
    assert _tune("kept.db") == 0
    latest = read_run("kept.db")[0]["run"]
    assert _tune("kept.db", "--strategy", "guided", "--prior", "p_allneg.json", "--seed", "5") == 2
    assert read_run("kept.db")[0]["run"] == latest and len(read_runs("kept.db")) == 1
    capsys.readouterr()
    assert main(["export-results", "kept.db", "--format", "kernel_tuner", "-o", "x.json"]) == 0
    assert "wrote 30 results" in capsys.readouterr().out


def test_the_store_as_its_own_prior_reads_its_previous_run(tiny, capsys):
    """P19: ``--prior own.db --results own.db`` read the run just opened (empty)."""
    assert _tune("own.db") == 0
    assert _tune("own.db", "--strategy", "guided", "--prior", "own.db", "--seed", "3") == 0
    assert "holds no result" not in capsys.readouterr().err
    assert len(read_runs("own.db")) == 2


# -- F13: a store that is not beastgen's --------------------------------------------------------------
def _crafted(path, script):
    db = sqlite3.connect(path)
    db.executescript(script)
    db.commit()
    db.close()


RUNS = ("CREATE TABLE runs (run TEXT PRIMARY KEY, space TEXT, device TEXT, backend TEXT, "
        "strategy TEXT, settings TEXT, created REAL);"
        "INSERT INTO runs VALUES ('r1', 'tiny', 'tinydev', 'replay', 'guided', '{}', 1.0);")
RESULTS = ("CREATE TABLE results (run TEXT NOT NULL, config_key TEXT NOT NULL, config TEXT NOT NULL,"
           " status TEXT NOT NULL, time REAL, times TEXT, bound REAL, bottleneck TEXT, message TEXT,"
           " recorded REAL, PRIMARY KEY (run, config_key));")
ENDLESS_VIEW = (RUNS + "CREATE VIEW results AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT "
                "x + 1 FROM c) SELECT 'r1' AS run, 'k' || x AS config_key, '{\"a\": 1}' AS config, "
                "'ok' AS status, 0.001 AS time, NULL AS times, NULL AS bound, NULL AS bottleneck, "
                "NULL AS message, x AS recorded FROM c;")


@pytest.mark.parametrize("script, holds", [
    (ENDLESS_VIEW, "view 'results'"),  # repro/make_view_store.py: the export sorted forever
    (RUNS + RESULTS + "CREATE TRIGGER t AFTER INSERT ON results BEGIN DELETE FROM runs; END;",
     "trigger 't'"),
    (RUNS + RESULTS + "CREATE TABLE extra (x);", "table 'extra'"),
    (RUNS + "CREATE VIRTUAL TABLE results USING fts5(run, config_key, config, status, time, times,"
     " bound, bottleneck, message, recorded);", "table 'results'"),
])
def test_a_crafted_store_is_refused_from_its_schema(tiny, capsys, script, holds):
    """Every reader (export-results, --prior, predict's model fit) and the writer refuse it in one
    line, before any query of its data, and leave it unchanged."""
    import time
    from beastgen.cli import main

    _crafted(tiny / "crafted.db", script)
    before = (tiny / "crafted.db").read_bytes()
    start = time.monotonic()
    assert main(["export-results", "crafted.db", "--format", "kernel_tuner", "-o", "o.json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "crafted.db: not a beastgen results store" in err and holds in err
    assert time.monotonic() - start < 30
    for read in [read_run, read_runs, Store]:
        with pytest.raises(BeastError, match="not a beastgen results store"):
            read(str(tiny / "crafted.db"))
    assert _tune("out.db", "--strategy", "guided", "--prior", "crafted.db") == 2
    assert "crafted.db: not a beastgen results store" in capsys.readouterr().err
    assert (tiny / "crafted.db").read_bytes() == before and not (tiny / "o.json").exists()


def test_a_query_stops_after_its_step_budget(tmp_path):
    """The second line of defence: a query that does not end (here an endless recursion) is
    stopped after the store's step budget, as one error."""
    from beastgen.harness import store as store_module

    _crafted(tmp_path / "s.db", RUNS + RESULTS)
    db = store_module.connect(str(tmp_path / "s.db"))
    with pytest.raises(BeastError, match="reading it took over .* SQLite steps"):
        with store_module._reading(db, "s.db"):
            db.execute("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                       "SELECT COUNT(*) FROM c").fetchone()


def test_ctrl_c_stops_a_query(tmp_path, monkeypatch):
    """Ctrl-C while SQLite runs a query (no Python runs between its steps) is heard within its
    progress handler: KeyboardInterrupt, as if it came after the query."""
    from beastgen.harness import store as store_module

    _crafted(tmp_path / "s.db", RUNS + RESULTS)
    db = store_module.connect(str(tmp_path / "s.db"))
    db.beastgen_steps = 10 ** 15  # would take days
    started = threading.Event()

    def progress_started():
        started.wait(60)
        os.kill(os.getpid(), __import__("signal").SIGINT)
    threading.Thread(target=progress_started, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        with store_module._reading(db, "s.db"):
            started.set()
            db.execute("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                       "SELECT COUNT(*) FROM c").fetchone()


# -- P12, P14: a prior or replay that is not a regular file -----------------------------------------
def _within(seconds, function):
    """``function()``'s outcome (its value or its exception) in a thread that must end within
    ``seconds`` (a FIFO would block it forever)."""
    outcome = {}

    def run():
        try:
            outcome["value"] = function()
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            outcome["error"] = e
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "blocked"
    return outcome


@pytest.mark.parametrize("name, target", [("z.json", "/dev/zero"), ("z.db", "/dev/zero"),
                                          ("fifo.json", "fifo"), ("fifo.db", "fifo"),
                                          ("fifo.json.gz", "fifo"), ("dir.json", "dir")])
def test_a_prior_that_is_not_a_regular_file_is_one_line(tmp_path, name, target):
    from beastgen.harness.priors import load_source
    from beastgen.harness.recorded import load_replay

    path = tmp_path / name
    if target == "fifo":
        os.mkfifo(path)
    elif target == "dir":
        path.mkdir()
    else:
        os.symlink(target, path)
    readers = [load_source] + ([load_replay] if ".json" in name else [])
    for read in readers:
        outcome = _within(60, lambda: read(str(path)))
        error = outcome.get("error")
        assert isinstance(error, BeastError), outcome
        assert "regular file" in str(error) or "directory" in str(error), error
        assert "\n" not in str(error)


def test_a_replay_fifo_is_one_line(tiny, capsys):
    from beastgen.cli import main

    os.mkfifo(tiny / "fifo.json")
    outcome = _within(300, lambda: main(["tune", "tiny.py", "--backend", "replay", "--replay",
                                         "fifo.json", "--no-progress", "--results", "r.db"]))
    assert outcome.get("value") == 2, outcome
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "fifo.json: cannot read replay file: not a regular file" in err


def test_an_oversized_replay_is_refused_before_it_is_decoded(tmp_path, monkeypatch):
    import gzip
    from beastgen.harness import recorded

    monkeypatch.setattr(recorded, "MAX_REPLAY_BYTES", 1000)
    (tmp_path / "big.json").write_text(" " * 2000)
    with gzip.open(tmp_path / "bomb.json.gz", "wb") as f:
        f.write(b" " * 100000)
    for name in ["big.json", "bomb.json.gz"]:
        with pytest.raises(BeastError, match="it holds over"):
            recorded.load_replay(str(tmp_path / name))
