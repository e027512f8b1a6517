"""The worker process of ``test_differential.py``: counts a space on the paths it is asked for and
answers one JSON line per request. It runs apart from pytest so that a path that dies of a signal
(SIGFPE, SIGSEGV) or hangs is a failure the test reports, not the end of the test run.

Request (one JSON line on stdin): ``{"file", "settings": {name: text}, "paths": [...], "generated"}``.
Before each path it writes ``{"begin": path}``; then ``{"results": {path: outcome}}``, each outcome
``{"count": n}``, ``{"refused": one line}`` (a clear error) or ``{"error": text}`` (anything else:
a traceback, a message of several lines, a count that is no integer or is negative).
Paths: ``reference`` (:class:`beastgen.compiler.reference.ReferenceEnumerator`), ``api-<target>``
(``beastgen.load(file).specialize(...).count()``), ``cli-<target>`` (``beastgen count FILE --json``
in this process), ``enumerate-<target>`` (``enumerate()``'s rows against the reference's), with
target ``c`` (the default), ``numpy`` (``BEASTGEN_NATIVE=0``: NumPy where it counts, else Numba)
or ``numba`` (``BEASTGEN_NATIVE=0 BEASTGEN_VECTORISED=0``); ``convert:<out>`` (``beastgen convert
FILE -o out``).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import traceback
from collections import Counter

import beastgen
from beastgen.cli import main
from beastgen.compiler.reference import ReferenceEnumerator
from beastgen.errors import BeastError

TARGETS = {"c": ("1", "0"), "numpy": ("0", "1"), "numba": ("0", "0")}
ROWS_LIMIT = 4000  # enumerate only spaces this small (the reference's rows are Python objects)


@contextlib.contextmanager
def target(name: str):
    native, vectorised = TARGETS[name]
    saved = {key: os.environ.get(key) for key in ("BEASTGEN_NATIVE", "BEASTGEN_VECTORISED")}
    os.environ["BEASTGEN_NATIVE"], os.environ["BEASTGEN_VECTORISED"] = native, vectorised
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def refusal(error: BaseException) -> dict:
    text = str(error)
    return {"refused": text} if isinstance(error, BeastError) and text and "\n" not in text \
        else {"error": "".join(traceback.format_exception(error))[-3000:]}


def a_count(value) -> dict:
    if type(value) is not int or value < 0:
        return {"error": f"the count is {value!r} ({type(value).__name__})"}
    return {"count": value}


def reference(file: str, settings: dict) -> dict:
    try:
        space = beastgen.load(file)
    except BeastError as e:
        return refusal(e)
    try:
        return a_count(ReferenceEnumerator(space, None, settings).count())
    except Exception as e:  # noqa: BLE001 - the oracle failing is a finding too
        return {"error": "".join(traceback.format_exception(e))[-3000:]}


def api(file: str, settings: dict, generated: str, name: str) -> dict:
    with target(name):
        try:
            return a_count(beastgen.load(file).specialize(generated_dir=generated, **settings).count())
        except Exception as e:  # noqa: BLE001 - sorted by refusal()
            return refusal(e)


def cli(file: str, settings: dict, generated: str, name: str) -> dict:
    words = ["count", file, "--json", "--no-progress", "--generated-dir", generated]
    for key, value in settings.items():
        words += ["--set", f"{key}={value}"]
    out, err = io.StringIO(), io.StringIO()
    with target(name), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(words)
        except SystemExit as e:
            status = e.code
        except Exception as e:  # noqa: BLE001 - a traceback out of the command line
            return {"error": "".join(traceback.format_exception(e))[-3000:]}
    lines = err.getvalue().strip().splitlines()
    if status == 0 and "Traceback" not in err.getvalue():
        try:
            return a_count(json.loads(out.getvalue().strip().splitlines()[-1])["count"])
        except (ValueError, KeyError, IndexError):
            return {"error": f"no count in {out.getvalue()[-500:]!r}"}
    if status == 2 and len(lines) == 1 and lines[0].startswith("beastgen: error: "):
        return {"refused": lines[0][len("beastgen: error: "):]}
    return {"error": f"exit status {status}: {(out.getvalue() + err.getvalue())[-3000:]}"}


def canonical(value, kind: str):
    if kind == "float":
        return repr(float(value))  # -0.0 and nan as themselves
    return int(value) if kind in ("int", "bool") else repr(value)


def rows(file: str, settings: dict, generated: str, name: str) -> dict:
    """The rows of ``enumerate()`` against the reference's, as multisets (NaN and -0.0 kept)."""
    with target(name):
        try:
            plan = beastgen.load(file).specialize(generated_dir=generated, **settings)
            table = plan.enumerate()
        except Exception as e:  # noqa: BLE001 - sorted by refusal()
            return refusal(e)
    kinds = {column: plan.specialized.items[column].value_type for column in plan.columns}
    found = Counter(tuple(canonical(row[c], kinds[c]) for c in plan.columns) for row in table)
    expected = Counter(tuple(canonical(config[c], kinds[c]) for c in plan.columns)
                       for config in ReferenceEnumerator(beastgen.load(file), None, settings).configurations())
    if found != expected:
        return {"error": f"rows differ: {sorted((found - expected).items())[:5]} more, "
                         f"{sorted((expected - found).items())[:5]} fewer"}
    return {"count": sum(found.values())}


def convert(file: str, out: str) -> dict:
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            status = main(["convert", file, "-o", out])
        except Exception as e:  # noqa: BLE001
            return {"error": "".join(traceback.format_exception(e))[-3000:]}
    if status == 0:
        return {"count": 0}
    lines = stderr.getvalue().strip().splitlines()
    if status == 2 and len(lines) == 1:
        return {"refused": lines[0]}
    return {"error": f"exit status {status}: {stderr.getvalue()[-3000:]}"}


def run(request: dict) -> dict:
    file, settings, generated = request["file"], request.get("settings", {}), request["generated"]
    results = {}
    for path in request["paths"]:
        print(json.dumps({"begin": path}), flush=True)
        kind, _, name = path.partition("-")
        if path == "reference":
            results[path] = reference(file, settings)
        elif path.startswith("convert:"):
            results[path] = convert(file, path[len("convert:"):])
        elif kind == "api":
            results[path] = api(file, settings, generated, name)
        elif kind == "cli":
            results[path] = cli(file, settings, generated, name)
        elif kind == "enumerate":
            results[path] = rows(file, settings, generated, name)
        else:
            results[path] = {"error": f"unknown path {path}"}
    return results


def serve() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        print(json.dumps({"results": run(request)}, default=str), flush=True)


if __name__ == "__main__":
    serve()
