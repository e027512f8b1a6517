"""SQLite results store: one row per (run, configuration), written as each result arrives.

WAL mode and one transaction per row keep the file consistent; a row that is already there is never
overwritten (``INSERT OR IGNORE``), so resuming a run skips what it measured before. A run's row is
written with its first result, so a run refused before it measures anything (a bad prior, say)
leaves no run behind, and a store file that such a run created is removed again.

One process at a time holds a store: it locks the store file itself (``flock`` on the file, so the
lock belongs to the file's identity, whatever name reaches it: a symbolic link, a relative path, a
name holding ``#`` or ``?``). A store with more than one hard link is refused: SQLite keeps its
journal (``-wal``) beside the name it was opened by, so results written through one name would be
lost, or would damage the file, when it is next opened through the other. Every connection is made
by :func:`connect`, with the name quoted into an SQLite URI, and only to a regular file; what is
read is first checked to be beastgen's (tables ``runs`` and ``results``, not views, with beastgen's
columns), and every query stops within a number of SQLite steps in proportion to the file's size,
or at Ctrl-C (SIGTERM, SIGHUP).

A run's ``settings`` JSON also holds, under ``__export__`` (no setting can be named so), what an
export of its results needs that the rows do not hold (``interop.results.kernel_tuner_header``).
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import math
import os
import signal
import sqlite3
import stat
import threading
import time

from ..errors import BeastError
from ..support.interrupt import TERMINATING

#: the store a tuning writes to and resumes from when none is named (``tune``, ``--inputs`` collection,
#: ``beastgen tune --results``): this is its one owner
DEFAULT_PATH = "beastgen-results.db"

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
#: SQLite steps a query may take per byte of the store (and at least): a query of a beastgen store
#: takes a few per byte; one that does not end (a crafted store) is stopped
_STEPS_PER_BYTE, _MIN_STEPS = 200, 10 ** 8
#: SQLite steps between two looks at the step budget and at a pending Ctrl-C
_PROGRESS_EVERY = 10000
_FIX = "give another file with --results"


def store_file(path: str, shown: str | None = None) -> os.stat_result | None:
    """What ``path`` (a symbolic link followed) is when it may be a results store: a regular file
    with one link; None when there is nothing there; one :class:`BeastError` otherwise (a FIFO, a
    device such as /dev/zero, a directory, a file with hard links)."""
    shown = shown or path
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise BeastError(f"cannot read the results store: {e.strerror or e}", shown) from None
    _check_store_file(info, shown)
    return info


def _check_store_file(info: os.stat_result, shown: str) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise BeastError("not a beastgen results store (not a regular file)", shown)
    if info.st_nlink > 1:
        raise BeastError(f"the results store has {info.st_nlink} names (hard links); SQLite keeps "
                         "its journal beside the name it opens, so results written through one "
                         "name would be lost or damage the file through another: give it one "
                         "name (copy it)", shown)


def connect(path: str, shown: str | None = None, write: bool = False) -> sqlite3.Connection:
    """A connection to the store at ``path``, the one way beastgen opens one: the name quoted into
    an SQLite URI (``#``, ``?`` and ``%`` are part of the name), read-only unless ``write``; each
    query stopped after a number of steps in proportion to the file's size
    (:data:`_STEPS_PER_BYTE`) or at a pending Ctrl-C (see :func:`_reading`)."""
    shown = shown or path
    info = store_file(path, shown)
    if info is None and not write:
        raise BeastError("no results store there (tune writes one with --results)", shown)
    db = sqlite3.connect(f"file:{_uri_path(path)}?mode={'rwc' if write else 'ro'}", uri=True,
                         timeout=60.0, isolation_level=None if write else "DEFERRED",
                         factory=_Connection)
    db.beastgen_steps = max(_MIN_STEPS, _STEPS_PER_BYTE * (info.st_size if info else 0))
    return db


class _Connection(sqlite3.Connection):
    """A connection that knows its step budget (``beastgen_steps``: see :func:`connect`)."""

    beastgen_steps = _MIN_STEPS


@contextlib.contextmanager
def _reading(db: sqlite3.Connection, shown: str):
    """Queries of ``db`` within the block stop after the connection's step budget (one
    :class:`BeastError`: the store is not one beastgen wrote) or at Ctrl-C, SIGTERM or SIGHUP (the
    signal is then raised again, as if it came after the query). In the main thread the signals
    only mark themselves while the block runs: SQLite runs no Python between its steps, so a
    handler that raised would be lost inside it."""
    steps = [0]
    pending: list[int] = []

    def progress() -> int:
        steps[0] += _PROGRESS_EVERY
        return 1 if pending or steps[0] > db.beastgen_steps else 0

    previous = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, *TERMINATING):
            if signal.getsignal(signum) is not signal.SIG_IGN:
                previous[signum] = signal.signal(signum, lambda signum, frame: pending.append(signum))
    db.set_progress_handler(progress, _PROGRESS_EVERY)
    try:
        try:
            yield
        except sqlite3.OperationalError as e:
            if "interrupted" in str(e) and not pending:
                raise BeastError(f"not a readable beastgen results store: reading it took over "
                                 f"{db.beastgen_steps:,} SQLite steps (a store of this size takes "
                                 f"far fewer)", shown) from None
            if not pending:
                raise
    finally:
        db.set_progress_handler(None, 0)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if pending:
            signal.raise_signal(pending[0])  # the handler that was there runs now (Ctrl-C...)
            raise KeyboardInterrupt  # (where that handler did not raise)


def check_schema(db: sqlite3.Connection, shown: str, fix: str = _FIX) -> bool:
    """Refuse (one :class:`BeastError`) a database that is not a beastgen results store: it holds
    the plain tables ``runs`` and ``results`` with beastgen's columns and nothing else (a view
    could run any query, a trigger any statement on a write); read from the schema alone, before
    any query of the data. False for an empty database (nothing in it yet: a new store)."""
    with _reading(db, shown):
        schema = db.execute("SELECT type, name, sql FROM sqlite_master "
                            "WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'").fetchall()
        if not schema:
            return False
        kinds = {name: kind for kind, name, _ in schema}
        columns = {}
        if len(schema) == 2 and kinds == {"runs": "table", "results": "table"} and not any(
                (sql or "").lstrip().upper().startswith("CREATE VIRTUAL") for _, _, sql in schema):
            columns = {name: [row[0] for row in db.execute("SELECT name FROM pragma_table_info(?)",
                                                            (name,))] for name in kinds}
    if columns != {"runs": _RUN_COLUMNS, "results": _RESULT_COLUMNS}:
        described = ", ".join(f"{kind} {name!r}" for name, kind in sorted(kinds.items())[:6])
        raise BeastError(f"not a beastgen results store (it holds {described}; a store holds the "
                         f"tables runs and results with beastgen's columns, and nothing else); "
                         f"{fix}", shown)
    return True


def _lock_exclusively(path: str, shown: str) -> tuple[int, bool]:
    """The store file at ``path`` opened (a symbolic link followed; created when missing) and locked
    (``flock``) for as long as the store is open: a second ``tune`` on the same file, whatever
    name it gives, would measure everything the first one does, so it is refused with a clear
    message. (descriptor, whether this call created the file). A file no longer at ``path`` once
    locked (its holder removed it: see :meth:`Store.close`) is let go and the one there taken."""
    while True:
        created = True
        try:
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            except FileExistsError:
                created = False
                fd = os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as e:
            raise BeastError(f"cannot open the results store: {e.strerror}", shown) from None
        try:
            info = os.fstat(fd)
            _check_store_file(info, shown)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise BeastError(f"cannot lock the results store: {e.strerror}", shown) from None
                raise BeastError(f"the results store is in use by another beastgen tune "
                                 f"({_lock_holder(info)}); wait for it to finish, or {_FIX}",
                                 shown) from None
            if _is_at_path(info, path):
                return fd, created
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def _is_at_path(info: os.stat_result, path: str) -> bool:
    """Whether the file ``info`` describes is still the one at ``path``."""
    try:
        here = os.stat(path)
    except OSError:
        return False
    return (info.st_dev, info.st_ino) == (here.st_dev, here.st_ino)


def _lock_holder(info: os.stat_result) -> str:
    """Who holds the lock of the file ``info`` describes (``pid N`` from /proc/locks), or
    "another process"."""
    identity = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            for line in f:
                words = line.split()
                if "->" not in words and "FLOCK" in words and identity in words:
                    return f"pid {words[words.index(identity) - 1]}"
    except OSError:
        pass
    return "another process"


def check_is_store(path: str, shown: str, fd: int | None = None) -> None:
    """Refuse (one :class:`BeastError`) an existing file that is not a beastgen results store or
    is damaged, reading it only: a refused file is left as it was. A new or empty file passes.
    ``fd``: the file already open (the lock's descriptor), read for its first bytes."""
    if fd is None and store_file(path, shown) is None:
        return
    try:
        if fd is not None:
            head = os.pread(fd, len(_SQLITE_MAGIC), 0)
        else:
            with open(path, "rb") as f:
                head = f.read(len(_SQLITE_MAGIC))
    except OSError as e:
        raise BeastError(f"cannot read the results store: {e.strerror or e}", shown) from None
    if not head:
        return
    if head != _SQLITE_MAGIC:
        raise BeastError("not a beastgen results store (not an SQLite database); give another "
                         "file with --results", shown)
    try:
        db = connect(path, shown)
        try:
            if check_schema(db, shown):
                with _reading(db, shown):
                    check = db.execute("PRAGMA quick_check").fetchone()[0]
            else:
                check = "ok"
        finally:
            db.close()
    except sqlite3.Error as e:
        raise BeastError(f"cannot open the results store: {e}", shown) from None
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
    SQLite database or damaged; held by one process at a time (see the module docstring)."""

    def __init__(self, path: str):
        self.path = path
        self._lock, self._created = _lock_exclusively(path, path)
        self._runs: dict[str, tuple] = {}  # opened, their row not written yet: written with a result
        self._wrote_run = False
        try:
            check_is_store(path, path, self._lock)
            self._open(path)
        except BaseException:
            self._let_go()
            raise

    def _open(self, path: str) -> None:
        try:
            self.db = connect(path, self.path, write=True)
        except sqlite3.Error as e:
            raise BeastError(f"cannot open the results store: {e}", self.path) from None
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(SCHEMA)
        except sqlite3.Error as e:
            self.db.close()
            raise BeastError(f"cannot open the results store: {e}", self.path) from None
        if not _is_at_path(os.fstat(self._lock), path):  # (SQLite opened it by its name)
            self.db.close()
            raise BeastError("the results store was replaced while it was opened", self.path)

    def open_run(self, run: str, **description) -> None:
        """The run: ``space``, ``device``, ``backend``, ``strategy``, ``settings``, ``export``. Its row
        is written with its first result (a run that records nothing leaves no row)."""
        settings = dict(description.get("settings", {}), **{_EXPORT: description.get("export", {})})
        self._runs[run] = (run, description.get("space"), description.get("device"),
                           description.get("backend"), description.get("strategy"),
                           json.dumps(settings, default=str), time.time())

    def results(self, run: str) -> dict[str, dict]:
        """config_key -> row, for everything this run recorded."""
        try:
            with _reading(self.db, self.path):
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
        """Write one result in its own transaction (with the run's row, the first time); False if
        the run already had this row."""
        bound = None if bound is None or not math.isfinite(bound) else float(bound)
        with self._writing(), self.db:  # one transaction
            if run in self._runs:
                self.db.execute("BEGIN")
                self.db.execute("INSERT OR IGNORE INTO runs VALUES (?, ?, ?, ?, ?, ?, ?)",
                                self._runs[run])
            cursor = self.db.execute(
                "INSERT OR IGNORE INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run, key, config_key(config), status, time_s,
                 json.dumps(times) if times is not None else None, bound, bottleneck, message,
                 time.time()))
        self._runs.pop(run, None)
        self._wrote_run = True
        return cursor.rowcount == 1

    def close(self) -> None:
        """Close the store; a file that this store created and that holds no run is removed (a
        run refused before it measured anything leaves nothing)."""
        try:
            empty = self._created and not self._wrote_run and \
                self.db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0
        except sqlite3.Error:
            empty = False
        self.db.close()
        if empty and _is_at_path(os.fstat(self._lock), self.path):
            for suffix in ("", "-wal", "-shm", "-journal"):
                with contextlib.suppress(OSError):
                    os.unlink(self.path + suffix)
        self._let_go()

    def _let_go(self) -> None:
        """Release the lock (a taker that opened the file before it was removed finds it gone
        from its name once it has the lock, and takes the one there)."""
        os.close(self._lock)


def latest_run_size(path: str) -> tuple[str, int] | None:
    """(run, rows) of the run that recorded a result last in the store at ``path`` (read-only), or
    None when there is no such store, no result, or it cannot be read."""
    try:
        db = connect(path)
        try:
            if not check_schema(db, path):
                return None
            with _reading(db, path):
                return db.execute("SELECT run, COUNT(*) FROM results GROUP BY run "
                                  "ORDER BY MAX(recorded) DESC LIMIT 1").fetchone()
        finally:
            db.close()
    except (sqlite3.Error, BeastError):
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
    try:
        db = connect(path)
        try:
            if not check_schema(db, path, "give a store that beastgen tune wrote"):
                raise BeastError("the results store holds no run", path)
            with _reading(db, path):
                runs = db.execute("SELECT run, space, device, backend, strategy, settings, created "
                                  "FROM runs ORDER BY created").fetchall()
                if not runs:
                    raise BeastError("the results store holds no run", path)
                chosen = runs[-1] if run is None else next((r for r in runs if r[0] == run), None)
                if chosen is None:
                    raise BeastError(f"no run '{run}' in the results store; it holds "
                                     f"{', '.join(str(r[0]) for r in runs)}", path)
                rows = [row for _, row in _result_rows(db, chosen[0], path)]
        finally:
            db.close()
    except sqlite3.Error as e:
        raise BeastError(f"not a readable beastgen results store: {e}", path) from None
    return _description(chosen, path), rows


def _description(row, shown: str) -> dict:
    """A run's row as :func:`read_run` describes it."""
    description = dict(zip(_RUN_COLUMNS, row))
    try:
        settings = json.loads(description["settings"] or "{}")
    except (TypeError, ValueError, RecursionError):
        settings = None
    if not isinstance(settings, dict):
        raise BeastError(f"the results store has a damaged run (run {str(row[0])[:80]!r}): its "
                         f"settings are not a JSON object", shown)
    description["settings"] = settings
    export = settings.pop(_EXPORT, {})
    description["export"] = export if isinstance(export, dict) else {}
    return description


def read_runs(path: str, strategy: str | None = None) -> list[tuple[dict, list[dict]]]:
    """Every run of the store at ``path`` (only those of ``strategy`` when given) with its rows, as
    :func:`read_run` gives one, oldest first; opened read-only, once."""
    out = []
    try:
        db = connect(path)
        try:
            if not check_schema(db, path, "give a store that beastgen tune wrote"):
                return []
            with _reading(db, path):
                for row in db.execute("SELECT run, space, device, backend, strategy, settings, "
                                      "created FROM runs WHERE ? IS NULL OR strategy = ? "
                                      "ORDER BY created", (strategy, strategy)).fetchall():
                    out.append((_description(row, path),
                                [r for _, r in _result_rows(db, row[0], path)]))
        finally:
            db.close()
    except sqlite3.Error as e:
        raise BeastError(f"not a readable beastgen results store: {e}", path) from None
    return out
