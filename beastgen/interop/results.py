"""Tuning results for other tools: a Kernel Tuner cache file and the community's T4 results format.

Both take a run's description and result rows as :func:`beastgen.harness.store.read_run` returns
them (times in seconds) and give a JSON document with times in milliseconds, as both formats use.

- Kernel Tuner cache (``kernel_tuner.util.process_cache``): ``device_name``, ``kernel_name``,
  ``problem_size``, ``tune_params_keys``, ``tune_params``, ``objective`` and ``cache``, one entry per
  configuration keyed ``"v1,v2,..."`` (the values in ``tune_params_keys`` order). Its ``time`` is
  beastgen's time (the fastest timed run) and ``times`` every timed run; a failed run stores Kernel
  Tuner's error name (``CompilationFailedConfig``, ``RuntimeFailedConfig``) as its time. The file
  loads in Kernel Tuner's simulation mode (``tune_kernel(..., cache=FILE, simulation_mode=True)``)
  and in beastgen's ``--replay``.
- T4 results (``schema/T4/1.0.0/results-schema.json``, shipped with Kernel Tuner): one record per
  configuration with ``configuration``, ``times.runtimes``, ``invalidity``, ``correctness``,
  ``objectives`` and ``measurements``.
"""
from __future__ import annotations

import datetime
import json
import math

from ..errors import BeastError
from ..support.output import AtomicOutput

T4_SCHEMA_VERSION = "1.0.0"

# beastgen status -> Kernel Tuner's error name in a cache file (ok has a time instead)
_KERNEL_TUNER_ERRORS = {"compile": "CompilationFailedConfig", "launch": "RuntimeFailedConfig",
                        "timeout": "RuntimeFailedConfig", "wrong_result": "RuntimeFailedConfig"}
# beastgen status -> T4 invalidity
_T4_INVALIDITY = {"ok": "correct", "compile": "compile", "launch": "runtime", "timeout": "timeout",
                  "wrong_result": "correctness"}


def _milliseconds(seconds):
    return None if seconds is None else seconds * 1000.0


def _runtimes_ms(row: dict) -> list:
    """Every timed run of an ok result in milliseconds (its time alone if the runs were not kept)."""
    return [_milliseconds(t) for t in row["times"] or [row["time"]]]


def _parameter_names(rows: list[dict]) -> list[str]:
    names = []
    for row in rows:
        names += [name for name in row["config"] if name not in names]
    return names


def kernel_tuner_header(columns: list[str], settings: dict, replay=None, kernel=None,
                        space_name: str = "") -> dict:
    """What a Kernel Tuner cache file of a tune run needs that its result rows do not hold, recorded
    with the run (``export``): ``kernel_name``, ``problem_size`` and ``tune_params_keys``, each as
    the Kernel Tuner caller has them. A replay run takes them from its file (``replay``: its
    ``kernel_name``, ``problem_size``, ``keys``, the order of the caller's ``tune_params``, and
    ``device_name``);
    otherwise the kernel's name (else ``space_name``), the values of its ``problem_size`` settings
    (else every integer setting) and the space's iterators in declaration order (``columns``)."""
    if replay is not None:
        keys = list(replay.keys) + [name for name in columns if name not in replay.keys]
        return {"kernel_name": replay.kernel_name, "problem_size": list(replay.problem_size),
                "tune_params_keys": keys, "device_name": replay.device_name}
    if kernel is not None and kernel.problem_size:
        problem_size = [settings[name] for name in kernel.problem_size]
    else:
        problem_size = [v for v in settings.values() if isinstance(v, int) and not isinstance(v, bool)]
    return {"kernel_name": kernel.name if kernel is not None else space_name,
            "problem_size": [_plain(v) for v in problem_size], "tune_params_keys": list(columns)}


def kernel_tuner_cache(description: dict, rows: list[dict], kernel_name: str | None = None,
                       device_name: str | None = None, where: str | None = None) -> dict:
    """A Kernel Tuner cache document of the run's results, with the kernel name, problem size and
    parameter order recorded with the run (:func:`kernel_tuner_header`; Kernel Tuner checks all
    three when it loads the file). ``kernel_name`` and ``device_name`` (default: the replay file's,
    else the run's device profile) override. A run recorded before beastgen kept the header: the space's name, the
    integer settings, and the parameters in the order the rows hold them. Two configurations with
    one key (values holding commas) are an error naming ``where`` (the store): never one lost."""
    header = description.get("export") or {}
    keys = header.get("tune_params_keys") or _parameter_names(rows)
    tune_params = {name: sorted({row["config"][name] for row in rows}, key=_sort_key) for name in keys}
    cache = {}
    for row in rows:
        values = [row["config"][name] for name in keys]
        entry = dict(zip(keys, values))
        if row["status"] == "ok":
            entry["time"] = _milliseconds(row["time"])
            entry["times"] = _runtimes_ms(row)
        else:
            entry["time"] = _KERNEL_TUNER_ERRORS.get(row["status"], "RuntimeFailedConfig")
        entry["timestamp"] = _timestamp(row["recorded"])
        key = kernel_tuner_key(values)
        if key in cache:
            raise key_clash(key, {k: cache[key][k] for k in keys}, dict(zip(keys, values)),
                            "use --format t4, which keeps every configuration", where)
        cache[key] = entry
    settings = description["settings"]
    problem_size = header.get("problem_size", [v for v in settings.values()
                                               if isinstance(v, int) and not isinstance(v, bool)])
    return {"device_name": device_name or header.get("device_name") or description["device"],
            "kernel_name": kernel_name or header.get("kernel_name") or description["space"],
            "problem_size": problem_size, "tune_params_keys": keys, "tune_params": tune_params,
            "objective": "time", "cache": cache}


def kernel_tuner_key(values) -> str:
    """Kernel Tuner's cache key of a configuration: its values (in ``tune_params_keys`` order)
    joined by commas."""
    return ",".join(str(v) for v in values)


def key_clash(key: str, first: dict, second: dict, instead: str, where: str | None = None):
    """The error for two configurations that Kernel Tuner's key cannot tell apart (a value holding
    a comma, or values that print alike: ``1`` and ``"1"``): written, one would replace the other."""
    return BeastError(f"configurations {first} and {second} have the same Kernel Tuner cache key "
                      f"{key!r} (the values joined by commas), so a Kernel Tuner cache file cannot "
                      f"hold both; {instead}", where)


def t4_results(description: dict, rows: list[dict]) -> dict:
    """A T4 results document (schema 1.0.0) of the run's results, times in milliseconds."""
    results = []
    for row in rows:
        ok = row["status"] == "ok"
        runtimes = _runtimes_ms(row) if ok else []
        results.append({
            "timestamp": _timestamp(row["recorded"]),
            "configuration": dict(row["config"]),
            "objectives": ["time"],
            "times": {"runtimes": runtimes},
            "invalidity": _T4_INVALIDITY.get(row["status"], "runtime"),
            "correctness": 0 if row["status"] == "wrong_result" else 1,
            "measurements": [{"name": "time", "value": _milliseconds(row["time"]), "unit": "ms"}]
            if ok else [],
        })
    return {"schema_version": T4_SCHEMA_VERSION, "results": results,
            "metadata": {"timeunit": "milliseconds", "space": description["space"],
                         "device": description["device"], "backend": description["backend"],
                         "strategy": description["strategy"], "settings": description["settings"]}}


def _plain(value):
    return value.item() if hasattr(value, "item") else value


def _sort_key(value):
    return (0, value, "") if isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value) else (1, 0, str(value))


def _timestamp(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).isoformat()


def write_results(document: dict, path: str) -> None:
    """Write ``document`` as JSON to ``path``, whole or not at all."""
    with AtomicOutput(path) as temporary, open(temporary, "w", encoding="utf-8") as f:
        json.dump(document, f, indent=1)
        f.write("\n")
