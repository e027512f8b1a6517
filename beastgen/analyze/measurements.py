"""The measured configurations of one tuning, as columns: a run of a beastgen results store or a
Kernel Tuner cache file (``.json``/``.json.gz``), the successful configurations only.

A store records the space's name, the device and the settings of each run, and per configuration
the lower bound and the term that dominates it; a Kernel Tuner cache records the parameters, the
times and whatever else its tuning wrote per configuration (``compile_time``, and the metrics and
observers of the tuning script, e.g. ``GFLOP/s`` or hardware counters). What needs the space
(every bound term, the launch shape, occupancy) comes from :mod:`.space_metrics` when the space
file is given; :attr:`Measurements.unavailable` says what could not be had and why.
"""
from __future__ import annotations

import gzip
import json
import math
import os
from dataclasses import dataclass, field

import numpy as np

from ..errors import BeastError
from ..harness.backends.base import time_problem
from ..harness.recorded import load_replay
from ..harness.store import read_run

#: Kernel Tuner's per-configuration bookkeeping, not a metric of the kernel
KERNEL_TUNER_BOOKKEEPING = {"time", "times", "timestamp", "strategy_time", "framework_time",
                            "benchmark_time", "verification_time"}
#: Kernel Tuner's fields with a known unit
KERNEL_TUNER_UNITS = {"compile_time": "ms", "GFLOP/s": "GFLOP/s", "TFLOP/s": "TFLOP/s",
                      "GB/s": "GB/s", "registers": "registers per thread"}
_SQLITE_MAGIC = b"SQLite format 3\0"


@dataclass
class Metric:
    """A quantity known for every measured configuration (NaN where it is not)."""

    values: np.ndarray  # float64, one per configuration
    unit: str  # for the axis label ("s", "bytes", "" for a count or a parameter's value)
    kind: str  # "bound term", "launch", "resource", "derived" (the space's), "recorded" (the file's)
    note: str = ""  # where it comes from (shown in the report)


@dataclass
class Measurements:
    """The successful configurations of one tuning: ``configs[i]`` ran in ``times[i]`` seconds."""

    source: str
    title: str
    parameters: list[str]
    configs: list[dict]
    times: np.ndarray
    failed: int  # configurations whose run failed (not analysed)
    metrics: dict[str, Metric] = field(default_factory=dict)
    performance: np.ndarray | None = None  # higher is better: GFLOP/s, else 1 / time
    performance_label: str = "1 / time (runs per second)"
    performance_axis: str = "1 / time (1/s)"
    unavailable: list[str] = field(default_factory=list)  # what could not be had, and why
    run: dict = field(default_factory=dict)  # a store's run description; {} for a cache file
    device_name: str = ""  # a cache file's device (a store's is run["device"])
    problem_size: list = field(default_factory=list)  # a cache file's problem size

    def parameter_values(self, name: str) -> list:
        return [config[name] for config in self.configs]


def load(path: str, run: str | None = None) -> Measurements:
    """The measurements in ``path``: a Kernel Tuner cache file (``.json``/``.json.gz``) or a
    beastgen results store (its latest run, or ``run``). One :class:`BeastError` for a file that is
    neither, an unknown run, or one with no successful measurement."""
    if not os.path.isfile(path):
        raise BeastError("no such file (give a results store that tune wrote, or a Kernel Tuner "
                         "cache file .json/.json.gz)", path)
    if path.endswith((".json", ".json.gz")):
        if run is not None:
            raise BeastError("--run chooses a run of a results store; a Kernel Tuner cache file "
                             "holds one tuning", path)
        found = _from_cache(path)
    else:
        with open(path, "rb") as f:
            head = f.read(len(_SQLITE_MAGIC))
        if head != _SQLITE_MAGIC:
            raise BeastError("not a beastgen results store (SQLite) nor a Kernel Tuner cache file "
                             "(.json/.json.gz)", path)
        found = _from_store(path, run)
    if not found.configs:
        what = f"run {found.run['run']} of the results store" if found.run else "the cache file"
        raise BeastError(f"{what} holds no successful measurement ({found.failed:,} failed): "
                         "nothing to analyse", path)
    return found


def _from_store(path: str, run: str | None) -> Measurements:
    description, rows = read_run(path, run)
    ok = [row for row in rows if row["status"] == "ok" and row["time"] is not None
          and time_problem(row["time"]) is None]
    failed = sum(1 for row in rows if row["status"] not in ("ok", "unmeasured"))
    parameters = list(ok[0]["config"]) if ok else []
    found = Measurements(path, f"{description['space']} on {description['device']} "
                         f"({description['backend']}, run {description['run']})", parameters,
                         [row["config"] for row in ok], np.array([row["time"] for row in ok], float),
                         failed, run=description)
    bounds = np.array([row["bound"] for row in ok], float)
    if np.isfinite(bounds).any() and (bounds > 0).any():
        found.metrics["bound"] = Metric(np.where(bounds > 0, bounds, np.nan), "s", "recorded",
                                        "the lower bound the tune recorded (its largest term)")
    else:
        found.unavailable.append("the lower bound: the run recorded none (a space without bound terms)")
    return found


def _from_cache(path: str) -> Measurements:
    replay = load_replay(path)  # the checked reading: one clear error for a file that is not one
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        records = {tuple(record[k] for k in replay.keys): record
                   for record in json.load(f)["cache"].values()}
    keys = list(replay.times)
    found = Measurements(path, f"{replay.kernel_name} on {replay.device_name}", list(replay.keys),
                         [dict(zip(replay.keys, key)) for key in keys],
                         np.array([replay.times[key] for key in keys], float), len(replay.failed),
                         device_name=replay.device_name, problem_size=list(replay.problem_size))
    extra = sorted({name for key in keys for name, value in records[key].items()
                    if name not in replay.keys and name not in KERNEL_TUNER_BOOKKEEPING
                    and isinstance(value, (int, float)) and not isinstance(value, bool)})
    for name in extra:
        values = np.array([_number(records[key].get(name)) for key in keys], float)
        if np.isfinite(values).sum() >= 2:
            found.metrics[name] = Metric(values, KERNEL_TUNER_UNITS.get(name, ""), "recorded",
                                         "recorded in the cache file")
    if "GFLOP/s" in found.metrics:
        found.performance = found.metrics["GFLOP/s"].values
        found.performance_label = "GFLOP/s (recorded in the cache file)"
        found.performance_axis = "GFLOP/s"
    return found


def _number(value) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
