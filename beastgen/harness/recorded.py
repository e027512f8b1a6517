"""Real GPU measurements from a Kernel Tuner cache file, and the check of a bound model against them:
no configuration's bound may exceed its measured time, and how many configurations a
branch-and-bound search (Telamon's Algorithm 2: run in increasing order of bound, stop when the next
bound is no better than the best time measured) would have run before proving the best.
"""
from __future__ import annotations

import gzip
import json
import math
import zlib
from dataclasses import dataclass, field

from ..compiler.language.nodes import DeviceProperty
from ..compiler.model import walk_expr
from ..compiler.reference import ReferenceEnumerator
from ..errors import BeastError
from ..support.units import format_seconds
from .backends.base import time_problem


@dataclass
class Replay:
    """Measured configurations: ``times[key]`` in seconds, ``key`` the values of ``keys`` in order."""

    path: str
    device_name: str
    kernel_name: str
    problem_size: list
    keys: list[str]
    times: dict[tuple, float]
    failed: dict[tuple, str] = field(default_factory=dict)  # configurations whose run failed
    fastest: dict[tuple, float] = field(default_factory=dict)  # fastest repetition (``times``)

    def best(self) -> tuple[tuple, float]:
        key = min(self.times, key=self.times.get)
        return key, self.times[key]


#: the most a Kernel Tuner cache file may hold, decompressed (about 250,000 configurations):
#: more is refused before it is decoded, not read until memory runs out (/dev/zero)
MAX_REPLAY_BYTES = 1 << 28


def read_regular_file(path: str, what: str, limit: int | None = None) -> bytes:
    """The bytes of the regular file at ``path`` (a symbolic link followed), decompressed when it
    ends in ``.gz``: one :class:`BeastError` naming ``what`` for anything else (a FIFO, which would
    block forever, a device, a directory) or for more than ``limit`` bytes (default
    :data:`MAX_REPLAY_BYTES`)."""
    import os
    import stat

    limit = MAX_REPLAY_BYTES if limit is None else limit
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise BeastError(f"cannot read {what}: {e.strerror or e}", path) from None
    info = os.fstat(fd)
    too_big = BeastError(f"cannot read {what}: it holds over {limit / 2 ** 20:g} MiB", path)
    if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
        os.close(fd)
        raise too_big if stat.S_ISREG(info.st_mode) else BeastError(
            f"cannot read {what}: not a regular file", path)
    with open(fd, "rb") as raw:
        try:
            if path.endswith(".gz"):
                with gzip.GzipFile(fileobj=raw) as unzipped:
                    data = unzipped.read(limit + 1)
            else:
                data = raw.read(limit + 1)
        except OSError as e:  # (BadGzipFile among them: "Not a gzipped file")
            raise BeastError(f"cannot read {what}: {e.strerror or e}", path) from None
    if len(data) > limit:
        raise too_big
    return data


def _json_of_cache(text: str):
    """The JSON of a Kernel Tuner cache file, also of one Kernel Tuner left open (it appends each
    result as measured and closes the file when the run ends: a failed or interrupted run leaves
    ``...},`` last), read as Kernel Tuner's ``correct_open_cache`` reads it."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        try:
            return json.loads(text.rstrip().rstrip(",") + "\n}\n}")
        except json.JSONDecodeError:
            raise error from None


def load_replay(path: str) -> Replay:
    """Read a Kernel Tuner cache file (``.json`` or ``.json.gz``)."""
    try:
        data = _json_of_cache(read_regular_file(path, "replay file").decode("utf-8"))
    except (json.JSONDecodeError, EOFError, gzip.BadGzipFile, UnicodeDecodeError, zlib.error) as e:
        raise BeastError(f"replay file is not a Kernel Tuner cache file (JSON): {e}", path) from None
    except RecursionError:
        raise BeastError("replay file is nested too deeply to be a Kernel Tuner cache file", path) from None
    problem = cache_problem(data)
    if problem:
        raise BeastError(f"replay file is not a Kernel Tuner cache file: {problem}", path)
    if not isinstance(data.get("problem_size", []), list):
        data["problem_size"] = [data["problem_size"]]
    keys = list(data["tune_params_keys"])
    times, failed, fastest = {}, {}, {}
    for record in data["cache"].values():
        key = tuple(record[k] for k in keys)
        value = record.get("time")
        if isinstance(value, str) or value is None:  # Kernel Tuner's failures: "CompilationFailedConfig"...
            failed[key] = str(value)
            continue
        repetitions = record.get("times") or []
        problems = [time_problem(t / 1000.0 if type(t) in (int, float) else t)  # milliseconds
                    for t in [value] + (repetitions if isinstance(repetitions, list) else [repetitions])]
        problem = next((p for p in problems if p), None)
        if problem:
            failed[key] = f"recorded time unusable: {problem}"
            continue
        times[key] = value / 1000.0
        fastest[key] = min(repetitions, default=value) / 1000.0
    return Replay(path, data.get("device_name", "?"), data.get("kernel_name", "?"),
                  data.get("problem_size", []), keys, times, failed, fastest)


def cache_problem(data) -> str | None:
    """What keeps ``data`` (a decoded JSON file) from being a Kernel Tuner cache file whose entries
    can be looked up by configuration, or None. The times are judged where they are read."""
    if not isinstance(data, dict):
        return f"its JSON is {_json_kind(data)}, not an object"
    for required in ("tune_params_keys", "cache"):
        if required not in data:
            return f"it has no '{required}'"
    keys = data["tune_params_keys"]
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        return "'tune_params_keys' is not a list of names"
    if not isinstance(data["cache"], dict):
        return f"'cache' is {_json_kind(data['cache'])}, not an object"
    size = data.get("problem_size", [])
    if not isinstance(size, (list, int)) or isinstance(size, bool):
        return f"'problem_size' is {_json_kind(size)}, not a list"
    for name, record in data["cache"].items():
        if not isinstance(record, dict):
            return f"cache entry {name[:60]!r} is {_json_kind(record)}, not an object"
        missing = next((k for k in keys if k not in record), None)
        if missing is not None:
            return f"cache entry {name[:60]!r} has no value of {missing!r}"
        odd = next((k for k in keys if not isinstance(record[k], (str, int, float, type(None)))), None)
        if odd is not None:
            return f"cache entry {name[:60]!r}: {odd!r} is {_json_kind(record[odd])}, not a value"
    return None


def _json_kind(value) -> str:
    """What a decoded JSON value is, in JSON's words."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    return {dict: "an object", list: "a list", str: "a string"}.get(type(value), "a number")


@dataclass
class BoundCheck:
    replay: Replay
    space_rows: int  # configurations of the space that the replay's parameter values allow
    matched: int  # of those, measured in the replay
    unmeasured: int  # in the space, not in the replay
    not_in_space: int  # in the replay, not valid in the space
    violations: list[dict]  # configurations whose bound exceeds their measured time
    best_time: float
    best_config: dict
    best_bound: float
    evaluated: int  # runs branch-and-bound needs before the next bound proves the best
    proven: bool
    fastest_violations: list[dict] = field(default_factory=list)  # bound above the fastest repetition
    below_best: int = 0  # measured configurations whose bound is below the best time: B&B must run them
    ratio_quantiles: dict = field(default_factory=dict)  # real/bound: min, 5th percentile, median
    dominates: dict = field(default_factory=dict)  # term -> measured configurations it dominates
    sources: dict = field(default_factory=dict)  # term -> where its counts and rates come from
    facts: dict = field(default_factory=dict)  # term -> {device property: value} it reads

    def as_dict(self) -> dict:
        return {"replay": self.replay.path, "device_name": self.replay.device_name,
                "space_rows": self.space_rows, "matched": self.matched,
                "unmeasured": self.unmeasured, "not_in_space": self.not_in_space,
                "violations": self.violations, "best_time_seconds": self.best_time,
                "best_config": self.best_config, "best_bound_seconds": self.best_bound,
                "evaluated": self.evaluated, "proven": self.proven,
                "fastest_repetition_violations": self.fastest_violations,
                "below_best": self.below_best,
                "fraction_branch_and_bound_runs": self.below_best / self.matched if self.matched else 0.0,
                "real_over_bound": self.ratio_quantiles, "dominates": self.dominates,
                "sources": self.sources, "facts": self.facts}

    def report(self) -> str:
        lines = [f"replay: {self.replay.path} ({self.replay.kernel_name} on {self.replay.device_name}, "
                 f"{len(self.replay.times):,} measured)",
                 f"space configurations with the replay's parameter values: {self.space_rows:,}; "
                 f"measured: {self.matched:,}; unmeasured: {self.unmeasured:,}; measured but not valid "
                 f"in the space: {self.not_in_space:,}"]
        if self.violations:
            lines.append(f"BOUND VIOLATIONS: {len(self.violations):,} configurations have a bound above "
                         "their measured time (the model or the device profile is wrong):")
            for v in self.violations[:10]:
                lines.append(f"  bound {format_seconds(v['bound_seconds'])} > measured "
                             f"{format_seconds(v['time_seconds'])} ({v['bottleneck']}): {v['config']}")
        else:
            lines.append("no bound exceeds its measured time")
        if self.fastest_violations:
            lines.append(f"BOUND VIOLATIONS against the fastest repetition: {len(self.fastest_violations):,}")
            for v in self.fastest_violations[:10]:
                lines.append(f"  bound {format_seconds(v['bound_seconds'])} > fastest "
                             f"{format_seconds(v['time_seconds'])} ({v['bottleneck']}): {v['config']}")
        else:
            lines.append("no bound exceeds its fastest repetition")
        violated = dict.fromkeys(v["bottleneck"] for v in self.violations + self.fastest_violations)
        for term in violated:
            facts = ", ".join(f"{prop} = {value:.6g}" if isinstance(value, float) else f"{prop} = {value}"
                              for prop, value in self.facts.get(term, {}).items())
            lines.append(f"  violated term {term} [{self.sources.get(term) or 'no source'}] reads "
                         f"{facts or 'no device property'}")
        if self.ratio_quantiles:
            q = self.ratio_quantiles
            lines.append(f"real/bound: min {q['min']:.3f}, 5th percentile {q['p5']:.3f}, median {q['median']:.3f}")
        lines.append(f"bound below the best measured time (branch and bound must run them): "
                     f"{self.below_best:,} of {self.matched:,} "
                     f"({self.below_best / self.matched if self.matched else 0:.1%})")
        for term, count in self.dominates.items():
            source = f"  [{self.sources[term]}]" if self.sources.get(term) else ""
            lines.append(f"  {term}: dominates {count:,}{source}")
        share = self.evaluated / self.matched if self.matched else 0.0
        lines.append(f"best measured: {format_seconds(self.best_time)} (bound "
                     f"{format_seconds(self.best_bound)}): {self.best_config}")
        lines.append(f"branch and bound runs {self.evaluated:,} of {self.matched:,} configurations "
                     f"({share:.1%}) in increasing order of bound"
                     + (" before the next bound proves the best" if self.proven
                        else "; the bound never proves the best (it runs them all)"))
        return "\n".join(lines)


def check_bounds(plan, replay: Replay) -> BoundCheck:
    """Check ``plan``'s bound model against the replay's measurements (see the module docstring)."""
    space_rows, rows = measured_rows(plan, replay)
    rows = [(bound, bottleneck, key) for bound, bottleneck, key, _ in rows]
    violations, evaluated, best, best_key, proven = [], 0, math.inf, None, False
    matched_keys = {key for _, _, key in rows}
    for bound, bottleneck, key in rows:
        time = replay.times[key]
        if bound > time:
            violations.append({"config": dict(zip(replay.keys, key)), "bound_seconds": bound,
                               "time_seconds": time, "bottleneck": bottleneck})
    for bound, _, key in rows:  # Telamon's Algorithm 2 over the measured configurations
        time = replay.times[key]
        if bound >= best:
            proven = True
            break
        evaluated += 1
        if time < best:
            best, best_key = time, key
    best_bound = next(b for b, _, key in rows if key == best_key) if best_key else math.inf
    fastest_violations = [
        {"config": dict(zip(replay.keys, key)), "bound_seconds": bound,
         "time_seconds": replay.fastest.get(key, replay.times[key]), "bottleneck": bottleneck}
        for bound, bottleneck, key in rows if bound > replay.fastest.get(key, replay.times[key])]
    ratios = sorted(replay.times[key] / bound for bound, _, key in rows if bound > 0)
    quantiles = ({"min": ratios[0], "p5": _quantile(ratios, 0.05), "median": _quantile(ratios, 0.5)}
                 if ratios else {})
    dominates = {term: 0 for term in plan.bound_terms}
    for _, bottleneck, _ in rows:
        dominates[bottleneck] += 1
    best_time = min((replay.times[key] for _, _, key in rows), default=math.inf)
    return BoundCheck(replay, space_rows, len(matched_keys), space_rows - len(matched_keys),
                      len(set(replay.times) - matched_keys), violations, best,
                      dict(zip(replay.keys, best_key)) if best_key else {}, best_bound, evaluated,
                      proven, fastest_violations,
                      sum(1 for bound, _, _ in rows if bound < best_time), quantiles, dominates,
                      term_sources(plan), term_facts(plan))


def measured_rows(plan, replay: Replay) -> tuple[int, list[tuple[float, str, tuple, dict]]]:
    """How many valid configurations of the space take only parameter values the replay has (its
    measured and failed ones), and (bound, dominating term, replay key, configuration) of each of
    them the replay measured, in increasing order of bound (equal bounds in loop-nest order of
    their values, as ``rank`` orders them). The space is enumerated (natively where a C compiler
    is); bounds are computed for the measured configurations only (``CompiledPlan.bounds_of``)."""
    import numpy as np

    missing = [k for k in replay.keys if k not in plan.columns]
    if missing:
        raise BeastError(f"the replay's parameters {missing} are not iterators of space "
                         f"'{plan.specialized.space.name}'", replay.path)
    rows = plan.enumerate()
    keep = np.ones(len(rows), dtype=bool)
    for i, name in enumerate(replay.keys):
        keep &= _among(rows[name], {key[i] for key in list(replay.times) + list(replay.failed)})
    rows = rows[keep]
    keys = list(zip(*(rows[name].tolist() for name in replay.keys))) if replay.keys else [()] * len(rows)
    measured = np.fromiter((key in replay.times for key in keys), dtype=bool, count=len(keys))
    rows, keys = rows[measured], [key for key, m in zip(keys, measured) if m]
    bounds, terms = plan.bounds_of(rows)
    order = plan.plan.order if plan.plan is not None else plan.columns
    ranked = np.lexsort([rows[name] for name in reversed(order)] + [bounds]) if len(rows) else []
    names, values = plan.bound_terms, {name: rows[name].tolist() for name in plan.columns}
    return int(keep.sum()), [(float(bounds[i]), names[terms[i]], keys[i],
                              {name: column[i] for name, column in values.items()}) for i in ranked]


def _among(column, values: set):
    """Where ``column`` (a NumPy array) holds one of ``values`` (Python's equality: 1 == 1.0)."""
    import numpy as np

    if column.dtype.kind in "biuf":
        wanted = [v for v in values if isinstance(v, (bool, int, float))]
    else:
        wanted = [v for v in values if isinstance(v, str)]
    return np.isin(column, wanted) if wanted else np.zeros(len(column), dtype=bool)


def _quantile(sorted_values: list[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default) of sorted values."""
    position = q * (len(sorted_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def term_sources(plan) -> dict:
    """{bound term: the ``source`` its space declared (``beast.bound(..., source=...)``) or None}."""
    variables = plan.specialized.space.variables
    return {term: getattr(variables[term].obj, "source", None) for term in plan.bound_terms}


def term_facts(plan) -> dict:
    """{bound term: {device property: its value}}: the hardware facts each term reads, through the
    derived values it uses (not through the iterators: their values are the configuration's), from
    the plan's device profile (a violated term names them)."""
    variables = plan.specialized.space.variables
    properties = plan.specialized.device.properties

    def reads(name: str, seen: set) -> set:
        if name in seen or name not in variables or variables[name].kind in ("iterator", "setting"):
            return set()
        seen.add(name)
        variable, found = variables[name], set()
        if variable.function is not None:
            found |= set(variable.function.device_refs)
            for ref in variable.function.space_refs:
                found |= reads(ref, seen)
        if variable.expr is not None:
            for node in walk_expr(variable.expr):
                if isinstance(node, DeviceProperty):
                    found.add(node.prop)
                elif node is not variable.expr and node.name is not None:
                    found |= reads(node.name, seen)
        return found

    return {term: {prop: properties.get(prop) for prop in sorted(reads(term, set()))}
            for term in plan.bound_terms}


def term_samples(plan, replay: Replay) -> list[tuple[tuple, dict]]:
    """(replay key, {term: value}) for every measured configuration of the space, each term
    evaluated on its own (by the reference evaluator)."""
    spec = plan.specialized
    reference = ReferenceEnumerator(spec.space, spec.device, spec.settings)
    samples = []
    for _, _, key, config in measured_rows(plan, replay)[1]:
        samples.append((key, reference.term_values(config)))
    return samples


def plot_terms(replay: Replay, samples: list[tuple[tuple, dict]], path: str, title: str) -> None:
    """One panel per bound term: measured time against the term's value on log-log axes (times and
    bounds span decades), with the y = x line (a point above it, bound over real, is a violation).
    A term of 0 (it raised, or does not apply) has no place on a log axis and is left out."""
    try:  # optional (beastgen[plot]), and slow to import: only for --plot
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise BeastError("--plot needs matplotlib: pip install 'beastgen[plot]'") from None
    terms = list(samples[0][1]) if samples else []
    columns = min(3, max(1, len(terms)))
    rows = max(1, math.ceil(len(terms) / columns))
    fig, axes = plt.subplots(rows, columns, figsize=(4.5 * columns, 4 * rows), squeeze=False)
    real = [replay.times[key] for key, _ in samples]
    for ax, term in zip(axes.flat, terms):
        pairs = [(r, v[term]) for r, (_, v) in zip(real, samples) if r > 0 and v[term] > 0]
        if pairs:
            xs, ys = zip(*pairs)
            ax.scatter(xs, ys, s=3, alpha=0.4)
            low, high = min(xs + ys), max(xs + ys)
            ax.plot([low, high], [low, high], color="black", linewidth=0.8)
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.set_title(term)
        ax.set_xlabel("measured time (s)")
        ax.set_ylabel("bound term (s)")
    for ax in list(axes.flat)[len(terms):]:
        ax.set_visible(False)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

