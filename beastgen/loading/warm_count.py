"""The warm count's short way: ``beastgen count SPACE.json [--generated-dir DIR] [--json]`` (a T1
space, the default device) answered from the plan cache's record and the C library it names, with
nothing else imported: no argparse, device database, dataclasses or compiled-plan classes. On a
small space Python's start-up and imports are most of a warm count; this way they are those of
``json``, ``hashlib`` and ``ctypes``.

The plan cache (:mod:`beastgen.loading.plancache`) writes, beside its record, an index named by a key of
what a default-device T1 count depends on (beastgen's version and source, the file's path and
content; the default device's profile is package data, so beastgen's source covers it): the
record's name and key. The short way reads it under the same trust rules as the plan cache (the
generated directory checked, the index, record and library this user's alone, the library's
sha256 the recorded one) and answers only where the full command would print the same: the
record names a library holding ``count``, the nest is bounded small (counted in the calling
thread) and the space is not empty (the full command says why). Anything else, or anything that
does not hold, goes the full way.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import time

from ..compiler import native
from ..errors import BeastError, display_path
from ..support.generated_dir import PrivateDirectory, generated_directory, open_private_directory
from ..support.interrupt import SMALL_NEST_ITERATIONS
from ..version import __version__

INDEX_SUFFIX = ".warm.json"
#: the most a plan record or index may hold (a record is a few hundred bytes)
MAX_RECORD_BYTES = 1 << 20
#: the beastgen package's folder (this file is in its loading/)
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WHOLE = (0, 2 ** 62)  # every split node (as runtime.chunking.WHOLE)
TARGET_FIELDS = {"space", "path", "device", "device_name", "device_source", "settings"}


@functools.cache
def package_digest() -> str:
    """sha256 over beastgen's own source, the C target's headers included: a changed compiler
    rebuilds, even at the same version (read once a process)."""
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(PACKAGE_DIR):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".py", ".toml", ".h")):
                with open(os.path.join(folder, name), "rb") as f:
                    digest.update(name.encode() + b"\0" + f.read())
    return digest.hexdigest()


def index_name(shown: str) -> str | None:
    """The file name of the index of a default-device count of the T1 file ``shown`` (as
    :func:`~beastgen.errors.display_path` shows it) in the generated directory; None when the file
    cannot be read."""
    try:
        with open(shown, "rb") as f:
            content = f.read()
    except OSError:
        return None
    key = json.dumps({"beastgen": [__version__, package_digest()], "path": shown,
                      "space": hashlib.sha256(content).hexdigest()}, sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()[:24] + INDEX_SUFFIX


def describe(target: dict, default_device: bool) -> str:
    """The two lines a command prints about its target (a plan record's ``target``)."""
    default = " (the built-in default; choose with --device)" if default_device else ""
    settings = ", ".join(f"{k}={v!r}" for k, v in target["settings"].items()) or "none"
    return (f"space {target['space']} ({target['path']}) on {target['device']} "
            f"({target['device_name']}){default}\nsettings: {settings}")


def run(argv: list[str]) -> int | None:
    """``beastgen count`` by the short way: its exit status, or None where it does not apply (the
    full command line then runs, and reports any error)."""
    chosen = _plain_count(argv)
    if chosen is None or not native.enabled():
        return None
    start = time.perf_counter()
    space, generated_dir, as_json = chosen
    try:
        directory = open_private_directory(generated_directory(generated_dir), create=False)
    except BeastError:
        return None
    if directory is None:
        return None
    index = read_json(directory, index_name(display_path(space)))
    record = read_json(directory, str(index.get("record"))) if index else None
    library = _library(directory, record) if record and record.get("key") == index.get("key") else None
    if library is None:
        return None
    nest = native.load(library, ("count",))
    if nest is None:
        return None
    begun = time.perf_counter()
    count = nest.count(*WHOLE) * int(record["counted_tail"])
    seconds = time.perf_counter() - begun
    if count == 0:
        return None
    target = record["target"]
    total = time.perf_counter() - start
    print(describe(target, target["device_source"] == "built-in"))
    print(f"{count:,} valid configurations (enumeration {seconds:.3f} s, total {total:.2f} s)")
    if as_json:
        print(json.dumps({"space": target["space"], "path": target["path"], "device": target["device"],
                          "settings": target["settings"], "count": count, "seconds": seconds,
                          "total_seconds": total}))
    return 0


def _plain_count(argv: list[str]) -> tuple[str, str | None, bool] | None:
    """(space, generated directory, --json) of ``count SPACE.json [--generated-dir DIR] [--json]``
    in any order; None for any other command line."""
    if not argv or argv[0] != "count":
        return None
    words, space, generated_dir, as_json = argv[1:], None, None, False
    while words:
        word = words.pop(0)
        if word == "--json":
            as_json = True
        elif word == "--generated-dir" and words and not words[0].startswith("-"):
            generated_dir = words.pop(0)
        elif word.startswith("--generated-dir="):
            generated_dir = word.partition("=")[2]
        elif space is None and word.endswith(".json") and not word.startswith("-"):
            space = word
        else:
            return None
    return (space, generated_dir or None, as_json) if space else None


def read_json(directory: PrivateDirectory, name: str | None) -> dict | None:
    """The JSON object in the file ``name`` of ``directory`` when it is this user's alone (read
    through the directory's descriptor) and at most :data:`MAX_RECORD_BYTES`; None otherwise."""
    data = directory.read(name, limit=MAX_RECORD_BYTES) if name else None
    if data is None:
        return None
    try:
        data = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _library(directory: PrivateDirectory, record: dict) -> native.Library | None:
    """The record's library (checked: :class:`~beastgen.compiler.native.Library`) when it holds
    ``count``, the nest is bounded small, the file is a plain name in ``directory``, this user's
    alone, with the recorded sha256."""
    known, bound, target = record.get("native"), record.get("iteration_bound"), record.get("target")
    if (not isinstance(known, dict) or "count" not in (known.get("functions") or ())
            or not isinstance(bound, int) or bound > SMALL_NEST_ITERATIONS
            or not isinstance(target, dict) or not TARGET_FIELDS <= set(target)
            or not isinstance(target["settings"], dict)
            or not isinstance(record.get("counted_tail"), str) or not record["counted_tail"].isdigit()):
        return None
    return native.recorded_library(directory, known)
