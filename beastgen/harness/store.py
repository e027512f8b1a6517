"""SQLite results store: one row per (run, configuration), written as each result arrives.

WAL mode and one transaction per row keep the file consistent; a row that is already there is never
overwritten (``INSERT OR IGNORE``), so resuming a run skips what it measured before. One process
at a time holds a store (``PATH.lock``): a second ``tune`` on it is refused with a clear message.
A run's ``settings`` JSON also holds, under ``__export__`` (no setting can be named so), what an
export of its results needs that the rows do not hold (``interop.results.kernel_tuner_header``).
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import sqlite3
import time

from ..errors import BeastError

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run TEXT PRIMARY KEY, space TEXT, device TEXT, backend TEXT, strategy TEXT, settings TEXT,
    created REAL);
CREATE TABLE IF NOT EXISTS results (
    run TEXT NOT NULL, config_key TEXT NOT NULL, config TEXT NOT NULL,
    status TEXT NOT NULL,            -- ok, compile, launch, wrong_result, timeout, unmeasured
    time REAL,                       -- seconds (the minimum of the timed runs), NULL unless ok
    times TEXT, bound REAL, bottleneck TEXT, message TEXT, recorded REAL,
    PRIMARY KEY (run, config_key));
"""


_EXPORT = "__export__"  # the key of the export's header in a run's settings JSON
_RESULT_COLUMNS = ["run", "config_key", "config", "status", "time", "times", "bound", "bottleneck",
                   "message", "recorded"]
_RUN_COLUMNS = ["run", "space", "device", "backend", "strategy", "settings", "created"]
_SQLITE_MAGIC = b"SQLite format 3\0"


def _lock_exclusively(path: str, shown: str):
    """Hold ``PATH.lock`` (``path`` resolved: a symbolic link to a store locks the store itself)
    for as long as the store is open: a second ``tune`` on the same results store would measure
    everything the first one does, so it is refused with a clear message. The holder removes the
    file on close (:func:`_unlock`), so a lock taken on a file no longer at the path is retried."""
    lock_path = f"{path}.lock"
    while True:
        try:
            handle = open(lock_path, "a+", encoding="utf-8")
        except OSError as e:
            raise BeastError(f"cannot open the results store's lock file: {e.strerror}",
                             lock_path) from None
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise BeastError(f"the results store is in use by another beastgen tune ({holder}); "
                             "wait for it to finish, or give another file with --results",
                             shown) from None
        if _is_at_path(handle, lock_path):
            break
        handle.close()  # its holder removed it after we opened it: take the one there now
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}")
    handle.flush()
    return handle


def _is_at_path(handle, path: str) -> bool:
    """Whether the open file ``handle`` is still the file at ``path``."""
    try:
        here = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(handle.fileno())
    return (mine.st_dev, mine.st_ino) == (here.st_dev, here.st_ino)


def _unlock(handle) -> None:
    """Remove the lock file while still holding it (a taker that opened it before finds it gone
    from the path and retries), then release it."""
    with contextlib.suppress(OSError):
        os.unlink(handle.name)
    handle.close()


def check_is_store(path: str, shown: str) -> None:
    """Refuse (one :class:`BeastError`) an existing file that is not a beastgen results store or
    is damaged, reading it only: a refused file is left as it was. A new or empty file passes."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(_SQLITE_MAGIC))
    except FileNotFoundError:
        return
    except OSError as e:
        raise BeastError(f"cannot read the results store: {e.strerror or e}", shown) from None
    if not head:
        return
    if head != _SQLITE_MAGIC:
        raise BeastError("not a beastgen results store (not an SQLite database); give another "
                         "file with --results", shown)
    try:
        db = sqlite3.connect(f"file:{_uri_path(path)}?mode=ro", uri=True)
        try:
            tables = {name: [row[0] for row in db.execute("SELECT name FROM pragma_table_info(?)", (name,))]
                      for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                                "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")}
            check = db.execute("PRAGMA quick_check").fetchone()[0]
        finally:
            db.close()
    except sqlite3.Error as e:
        raise BeastError(f"cannot open the results store: {e}", shown) from None
    if tables and tables != {"runs": _RUN_COLUMNS, "results": _RESULT_COLUMNS}:
        raise BeastError(f"not a beastgen results store (it holds the tables "
                         f"{', '.join(sorted(tables))}, not runs and results with beastgen's "
                         f"columns); give another file with --results", shown)
    if check != "ok":
        raise BeastError(f"the results store is damaged ({check}); give another file with "
                         "--results", shown)


def _uri_path(path: str) -> str:
    from urllib.parse import quote

    return quote(os.path.abspath(path))


def config_key(config: dict) -> str:
    return json.dumps({k: _plain(v) for k, v in config.items()}, sort_keys=True)


def _plain(value):
    return value.item() if hasattr(value, "item") else value


class Store:
    """The results store at ``path``: refused before anything in it changes when it is another
    SQLite database or damaged; held by one process at a time."""

    def __init__(self, path: str):
        self.path = path
        real = os.path.realpath(path)
        self._lock = _lock_exclusively(real, path)
        try:
            check_is_store(real, path)
            self._open(real)
        except BeastError:
            _unlock(self._lock)
            raise

    def _open(self, real: str) -> None:
        try:
            self.db = sqlite3.connect(real, timeout=60.0, isolation_level=None)
        except sqlite3.Error as e:
            raise BeastError(f"cannot open the results store: {e}", self.path) from None
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(SCHEMA)
        except sqlite3.Error as e:
            self.db.close()
            raise BeastError(f"cannot open the results store: {e}", self.path) from None

    def open_run(self, run: str, **description) -> None:
        """Record the run: ``space``, ``device``, ``backend``, ``strategy``, ``settings``, ``export``."""
        settings = dict(description.get("settings", {}), **{_EXPORT: description.get("export", {})})
        with self._writing():
            self.db.execute("INSERT OR IGNORE INTO runs VALUES (?, ?, ?, ?, ?, ?, ?)",
                            (run, description.get("space"), description.get("device"),
                             description.get("backend"), description.get("strategy"),
                             json.dumps(settings, default=str), time.time()))

    def results(self, run: str) -> dict[str, dict]:
        """config_key -> row, for everything this run recorded."""
        try:
            return dict(_result_rows(self.db, run, self.path))
        except sqlite3.Error as e:
            raise BeastError(f"cannot read the results store: {e}", self.path) from None

    @contextlib.contextmanager
    def _writing(self):
        """A failed write (a full disk) is one error; the rows written before it stay."""
        try:
            yield
        except sqlite3.Error as e:
            raise BeastError(f"cannot write the results store: {e}; the results recorded so far "
                             "are kept (free some space and run the same tune again to go on)",
                             self.path) from None

    def record(self, run: str, key: str, config: dict, status: str, time_s=None, times=None,
               bound=None, bottleneck=None, message=None) -> bool:
        """Write one result in its own transaction; False if the run already had this row."""
        bound = None if bound is None or not math.isfinite(bound) else float(bound)
        with self._writing(), self.db:  # autocommit: the one INSERT is its own transaction
            cursor = self.db.execute(
                "INSERT OR IGNORE INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run, key, config_key(config), status, time_s,
                 json.dumps(times) if times is not None else None, bound, bottleneck, message,
                 time.time()))
        return cursor.rowcount == 1

    def close(self) -> None:
        self.db.close()
        _unlock(self._lock)


def latest_run_size(path: str) -> tuple[str, int] | None:
    """(run, rows) of the run that recorded a result last in the store at ``path`` (read-only), or
    None when there is no such store or no result."""
    if not os.path.isfile(path):
        return None
    try:
        db = sqlite3.connect(f"file:{os.path.abspath(path)}?mode=ro", uri=True)
        try:
            return db.execute("SELECT run, COUNT(*) FROM results GROUP BY run "
                              "ORDER BY MAX(recorded) DESC LIMIT 1").fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return None


def _result_rows(db, run: str, shown: str):
    """(config_key, row) for each result of ``run``, in the order recorded; a row that beastgen
    did not write is one error naming it."""
    cursor = db.execute("SELECT config_key, config, status, time, times, bound, bottleneck, message, "
                        "recorded FROM results WHERE run = ? ORDER BY recorded", (run,))
    for key, config, status, time_s, times, bound, bottleneck, message, recorded in cursor:
        try:
            row = {"config": json.loads(config), "status": status, "time": time_s,
                   "times": json.loads(times) if times else None,
                   "bound": bound if bound is not None else math.nan,
                   "bottleneck": bottleneck, "message": message, "recorded": recorded}
            problem = _row_problem(key, row)
        except (TypeError, ValueError, RecursionError) as e:
            problem = f"unreadable JSON ({e})"
        if problem:
            raise BeastError(f"the results store has a damaged row (run {run!r}, configuration "
                             f"{str(key)[:80]!r}): {problem}", shown)
        yield key, row


def _row_problem(key, row: dict) -> str | None:
    """What is wrong with a result row, or None."""
    def number(value):
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    if not isinstance(key, str) or not isinstance(row["config"], dict):
        return "the configuration is not a JSON object"
    if not isinstance(row["status"], str):
        return f"the status is {row['status']!r}, not a text"
    if row["time"] is not None and not number(row["time"]):
        return f"the time is {row['time']!r}, not a number"
    if row["times"] is not None and not (isinstance(row["times"], list)
                                         and all(number(t) for t in row["times"])):
        return "the times are not a list of numbers"
    if not number(row["bound"]):
        return f"the bound is {row['bound']!r}, not a number"
    return None


def read_run(path: str, run: str | None = None) -> tuple[dict, list[dict]]:
    """(the run's description, its result rows in the order recorded) from the store at ``path``,
    opened read-only (no lock: a running ``tune`` is not disturbed). ``run`` defaults to the latest
    run; the description has ``run``, ``space``, ``device``, ``backend``, ``strategy``,
    ``settings`` (a dict), ``created`` (seconds since the epoch) and ``export`` (a dict, empty for
    a run recorded before beastgen kept it)."""
    if not os.path.isfile(path):
        raise BeastError("no results store there (tune writes one with --results)", path)
    try:
        db = sqlite3.connect(f"file:{os.path.abspath(path)}?mode=ro", uri=True)
        try:
            runs = db.execute("SELECT run, space, device, backend, strategy, settings, created "
                              "FROM runs ORDER BY created").fetchall()
            if not runs:
                raise BeastError("the results store holds no run", path)
            chosen = runs[-1] if run is None else next((r for r in runs if r[0] == run), None)
            if chosen is None:
                raise BeastError(f"no run '{run}' in the results store; it holds "
                                 f"{', '.join(r[0] for r in runs)}", path)
            rows = [row for _, row in _result_rows(db, chosen[0], path)]
        finally:
            db.close()
    except sqlite3.Error as e:
        raise BeastError(f"not a readable beastgen results store: {e}", path) from None
    description = dict(zip(("run", "space", "device", "backend", "strategy", "settings", "created"),
                           chosen))
    description["settings"] = json.loads(description["settings"] or "{}")
    description["export"] = description["settings"].pop(_EXPORT, {})
    return description, rows


def read_runs(path: str, strategy: str | None = None) -> list[tuple[dict, list[dict]]]:
    """Every run of the store at ``path`` (only those of ``strategy`` when given) with its rows, as
    :func:`read_run` gives one, oldest first; opened read-only, once."""
    if not os.path.isfile(path):
        raise BeastError("no results store there (tune writes one with --results)", path)
    out = []
    try:
        db = sqlite3.connect(f"file:{_uri_path(path)}?mode=ro", uri=True)
        try:
            for row in db.execute("SELECT run, space, device, backend, strategy, settings, created "
                                  "FROM runs WHERE ? IS NULL OR strategy = ? ORDER BY created",
                                  (strategy, strategy)).fetchall():
                description = dict(zip(_RUN_COLUMNS, row))
                description["settings"] = json.loads(description["settings"] or "{}")
                description["export"] = description["settings"].pop(_EXPORT, {})
                out.append((description, [r for _, r in _result_rows(db, row[0], path)]))
        finally:
            db.close()
    except sqlite3.Error as e:
        raise BeastError(f"not a readable beastgen results store: {e}", path) from None
    return out
