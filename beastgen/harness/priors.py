"""Measurements of the same space from elsewhere (other GPUs, other problem sizes) as priors of
the default search: Kernel Tuner cache files (``.json``/``.json.gz``) and beastgen results stores.

GPUs differ in speed and in how far their fastest configurations stand out, so each source's
times are put on one scale by rank: a configuration's value is the normal score of its rank among
the source's successful configurations (the standard normal quantile of (rank + 1/2) / count: -3.7
for the fastest of 11,130, 0 for the median). Ranks rather than standardised log times, because a
source whose fastest few stand far out (a long left tail) would otherwise outvote the others in
their mean. A configuration that failed in a source gets the source's slowest value (it is likely
to fail here too); one the source lacks is nan. Priors only order the search; they never cut or
prove anything.
"""
from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from ..errors import BeastError
from .backends.base import time_problem
from .recorded import load_replay
from .store import read_run, store_file


def load_source(path: str) -> tuple[list[str], dict[tuple, float]]:
    """(parameter names, {values in that order: seconds, inf for a failure}) of one prior file."""
    if path.endswith((".json", ".json.gz")):
        replay = load_replay(path)
        times = {key: math.inf for key in replay.failed}
        times.update(replay.times)
        return list(replay.keys), times
    if store_file(path) is None:
        raise BeastError("cannot read prior: no such file", path)
    _, rows = read_run(path)
    if not rows:
        raise BeastError("the prior's results store holds no result", path)
    keys = list(rows[0]["config"])
    times = {}
    for row in rows:
        if row["status"] == "unmeasured":
            continue
        key = tuple(row["config"].get(k) for k in keys)
        ok = row["status"] == "ok" and time_problem(row["time"]) is None
        times[key] = float(row["time"]) if ok else math.inf
    return keys, times


def source_column(times: dict[tuple, float], keys) -> np.ndarray:
    """Each of ``keys``' (parameter values in the source's order) normal score in the source
    ``times`` (see the module docstring), nan where the source lacks it."""
    ordered = np.sort(np.log([t for t in times.values() if math.isfinite(t)]))
    n = len(ordered)
    normal = NormalDist()
    slowest = normal.inv_cdf((n - 0.5) / n)
    column = []
    for key in keys:
        t = times.get(key)
        if t is None:
            column.append(np.nan)
        elif not math.isfinite(t):
            column.append(slowest)
        else:  # the rank among the source's times; ties: the first
            column.append(normal.inv_cdf((np.searchsorted(ordered, math.log(t)) + 0.5) / n))
    return np.array(column, dtype=float)


def prior_matrix(paths: list[str], columns: list[str], rows) -> np.ndarray:
    """One column per prior file: each configuration's (a row of the structured array ``rows``)
    normal score in that source (see the module docstring); an error naming the
    parameters when a source does not match the space."""
    matrix = np.full((len(rows), len(paths)), np.nan)
    for s, path in enumerate(paths):
        keys, times = load_source(path)
        foreign = [k for k in keys if k not in columns]
        if foreign:
            raise BeastError(f"the prior's parameters {foreign} are not parameters of the space "
                             f"(its parameters: {', '.join(columns)})", path)
        if sum(math.isfinite(t) for t in times.values()) < 2:
            raise BeastError("the prior holds fewer than two successful measurements", path)
        column = source_column(times, zip(*(rows[k].tolist() for k in keys)))
        hits = int((~np.isnan(column)).sum())
        matrix[:, s] = column
        if not hits:
            raise BeastError("none of the prior's configurations is a valid configuration of the "
                             "space (different parameter values?)", path)
    return matrix
