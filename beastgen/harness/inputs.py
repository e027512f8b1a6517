"""Tuning across inputs (ISAAC): the ``--inputs`` SPEC, random inputs drawn from it, and the
collection of random (input, configuration) pairs into the results store.

A SPEC names ranges of settings, e.g. ``M=64..2048 N=64..2048 K=64..1024 precision=s,d``:
``NAME=LO..HI`` an integer range drawn log-uniformly, ``NAME=A,B,C`` a choice drawn uniformly,
``NAME=V`` one value. Each drawn input is specialized and compiled (the enumerator decides which
configurations are valid for it), and its configurations are drawn uniformly from its own valid set
(every valid configuration enumerated, then distinct ones picked by index: exact). Each input is one
run of the store (its settings recorded with it), so the rows keep the input they were measured on.
The draws depend only on the seed: the same command after a kill draws the same pairs, and those
already stored are not measured again.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import time
from dataclasses import dataclass

import numpy as np

from ..compiler.runtime import compile_space
from ..compiler.specialize import resolve_settings
from ..errors import BeastError
from ..interop.results import kernel_tuner_header
from ..loading.load import load
from .kernel import find_kernel
from .store import DEFAULT_PATH, Store, config_key
from .strategies.base import candidate_of
from .tuning import DEFAULT_ITERATIONS, measure, setup_backend

#: the strategy name of a collection run in the store
STRATEGY = "inputs"
#: inputs in a row with no valid configuration before a collection gives up
MAX_EMPTY_INPUTS = 100
#: the most valid configurations of one input listed (every one, with its bound) in memory
MAX_ROWS = 20_000_000


@dataclass(frozen=True)
class InputRange:
    """One setting of a SPEC: ``low``..``high`` (integers, log-uniform) or ``choices``."""

    name: str
    low: int | None = None
    high: int | None = None
    choices: tuple = ()

    def draw(self, rng: np.random.Generator):
        if self.choices:
            return self.choices[int(rng.integers(len(self.choices)))]
        value = math.exp(rng.uniform(math.log(self.low), math.log(self.high + 1)))
        return min(int(value), self.high)

    def as_json(self) -> dict:
        return {"choices": list(self.choices)} if self.choices else {"low": self.low, "high": self.high}

    def text(self) -> str:
        return ",".join(map(str, self.choices)) if self.choices else f"{self.low}..{self.high}"


@dataclass(frozen=True)
class InputSpec:
    """The parsed SPEC: one :class:`InputRange` per named setting, in the order written."""

    ranges: tuple

    def draw(self, rng: np.random.Generator) -> dict:
        return {r.name: r.draw(rng) for r in self.ranges}

    def text(self) -> str:
        return " ".join(f"{r.name}={r.text()}" for r in self.ranges)


def parse_inputs(text: str, space) -> InputSpec:
    """The SPEC ``text`` for ``space``; a bad word, or a setting the space lacks, is one error."""
    ranges, seen = [], set()
    for word in text.split():
        name, sep, value = word.partition("=")
        if not sep or not name or not value:
            raise BeastError(f"--inputs expects NAME=LOW..HIGH, NAME=A,B,... or NAME=VALUE words, "
                             f"got {word!r}")
        if name not in space.settings:
            raise BeastError(f"--inputs: no setting named '{name}' in space '{space.name}'; its "
                             f"settings: {', '.join(space.settings) or 'none'}", space.path)
        if name in seen:
            raise BeastError(f"--inputs names '{name}' twice")
        seen.add(name)
        ranges.append(_parse_range(name, value, space))
    if not ranges:
        raise BeastError("--inputs is empty: name at least one setting, e.g. M=64..2048")
    return InputSpec(tuple(ranges))


def _parse_range(name: str, value: str, space) -> InputRange:
    if ".." in value:
        low, _, high = value.partition("..")
        try:
            low, high = int(low, 0), int(high, 0)
        except ValueError:
            raise BeastError(f"--inputs {name}={value}: a range is two integers LOW..HIGH") from None
        if not 1 <= low <= high:
            raise BeastError(f"--inputs {name}={value}: a range needs 1 <= LOW <= HIGH (sizes are "
                             "drawn log-uniformly)")
        for end in (low, high):
            resolve_settings(space, {name: str(end)})  # the setting's own type and limits
        return InputRange(name, low, high)
    words = [v for v in value.split(",")]
    if any(not w for w in words):
        raise BeastError(f"--inputs {name}={value}: an empty choice")
    choices = tuple(resolve_settings(space, {name: w})[name] for w in words)
    if len(set(choices)) != len(choices):
        raise BeastError(f"--inputs {name}={value}: a choice is listed twice")
    return InputRange(name, choices=choices)


def input_settings(spec: InputSpec, seed: int, index: int, fixed: dict) -> dict:
    """The ``index``-th input of a collection: ``fixed`` settings with the SPEC's drawn over them."""
    return {**fixed, **spec.draw(np.random.default_rng([seed, index]))}


def every_row(plan):
    """Every valid configuration of ``plan`` (a structured array), with the fields ``bound`` and
    ``bottleneck`` where the space has bound terms (one compiled ``rank`` of them all)."""
    count = plan.count()
    if count > MAX_ROWS:
        raise BeastError(f"this input has {count:,} valid configurations, more than the {MAX_ROWS:,} "
                         "that tuning across inputs lists in memory: restrict the space with --set",
                         plan.specialized.space.path)
    if not plan.bound_terms:
        return plan.enumerate()
    return plan.rank(max(count, 1))


def sample_rows(plan, k: int, seed: int, index: int):
    """``k`` distinct valid configurations of ``plan`` (all of them when it has fewer), drawn
    uniformly: every valid configuration enumerated (:func:`every_row`), then chosen by index."""
    rows = every_row(plan)
    if not len(rows):
        return rows
    order = np.random.default_rng([seed, index, 1]).permutation(len(rows))
    return rows[np.sort(order[:k])]  # a prefix of one permutation: a larger k keeps these


@dataclass
class Collection:
    """What :func:`collect` did."""

    pairs: int = 0  # pairs in the store for this collection (now and before)
    ran_now: int = 0
    resumed: int = 0
    inputs: int = 0
    empty_inputs: int = 0
    failures: int = 0
    seconds: float = 0.0

    def report(self, results: str) -> str:
        return (f"collected {self.pairs:,} (input, configuration) pairs over {self.inputs:,} inputs "
                f"({self.ran_now:,} measured now, {self.resumed:,} from the results store, "
                f"{self.failures:,} failed; {self.empty_inputs:,} inputs had no valid configuration) "
                f"in {self.seconds:.1f} s; results: {results}")


def collect(space_path: str, spec_text: str, pairs: int, per_input: int = 4, backend: str = "opencl",
            device=None, settings: dict | None = None, results: str = DEFAULT_PATH,
            seed: int = 0, iterations: int | None = None, generated_dir: str | None = None,
            log=None) -> Collection:
    """Measure ``pairs`` random (input, configuration) pairs, ``per_input`` configurations of each
    input (the last input fewer), into the store ``results`` (see the module docstring)."""
    log = log or (lambda message: print(message, file=sys.stderr, flush=True))
    if pairs < 1 or per_input < 1:
        raise BeastError("--pairs and --per-input must be at least 1")
    if backend == "replay":
        raise BeastError("--inputs measures on a device: use --backend opencl or cuda (a replay file "
                         "holds one problem size)")
    space = load(space_path)
    spec = parse_inputs(spec_text, space)
    fixed = dict(settings or {})
    clash = [r.name for r in spec.ranges if r.name in fixed]
    if clash:
        raise BeastError(f"--set {clash[0]} and --inputs {clash[0]}: give the setting one way")
    kernel = find_kernel(space)
    if kernel is None:
        raise BeastError(f"space '{space.name}' declares no kernel (beast.kernel(...)): nothing to run",
                         space.path)
    profile, runner, language = setup_backend(backend, device, None, space)
    bench = InputBench(runner, kernel, profile, language, iterations)
    done = Collection()
    start, empty_in_a_row, index = time.perf_counter(), 0, 0
    store = Store(results)
    try:
        while done.pairs < pairs:
            plan = compile_space(space, device=profile, generated_dir=generated_dir,
                                 settings=input_settings(spec, seed, index, fixed))
            rows = sample_rows(plan, min(per_input, pairs - done.pairs), seed, index)
            index += 1
            if not len(rows):
                done.empty_inputs += 1
                empty_in_a_row += 1
                if empty_in_a_row >= MAX_EMPTY_INPUTS:
                    raise BeastError(f"{MAX_EMPTY_INPUTS} inputs in a row have no valid configuration; "
                                     "narrow --inputs or change --set", space.path)
                continue
            empty_in_a_row = 0
            done.inputs += 1
            _measure_input(store, plan, rows, space, bench, backend, done, log)
    finally:
        runner.close()
        store.close()
    done.seconds = time.perf_counter() - start
    return done


class InputBench:
    """Measures configurations of any input on one runner: each input's arrays and expected outputs
    are made when a configuration of it is first measured."""

    def __init__(self, runner, kernel, profile, language: str, iterations: int | None = None):
        self.runner, self.kernel, self.profile, self.language = runner, kernel, profile, language
        self.source = kernel.source_text(language)
        self.iterations = iterations or kernel.iterations or DEFAULT_ITERATIONS
        self.settings = None

    def measure(self, settings: dict, config: dict) -> tuple:
        """(status, time, times, message) of ``config`` at the input ``settings`` (typed)."""
        if settings != self.settings:
            args = self.kernel.make_arguments(settings)
            self.expected = self.kernel.expected(args, settings)
            self.tolerance = self.kernel.tolerance_for(settings)
            self.runner.set_args(args)
            self.settings = dict(settings)
        return measure(self.runner, self.kernel, config, settings, self.profile, self.language,
                       self.source, self.iterations, self.expected, self.tolerance)


def _measure_input(store, plan, rows, space, bench, backend, done, log) -> None:
    """Measure ``rows`` of one input (those not yet in the store) into its run."""
    typed = dict(plan.specialized.settings)
    run = run_id(space, bench.profile, typed, backend, bench.source)
    store.open_run(run, space=space.name, device=bench.profile.key, backend=backend,
                   strategy=STRATEGY, settings=typed,
                   export=kernel_tuner_header(plan.columns, typed, None, bench.kernel, space.name))
    previous = store.results(run)
    bounded = bool(plan.bound_terms)
    for row in rows:
        candidate = candidate_of(row, plan.columns, bounded)
        key = config_key(candidate.config)
        done.pairs += 1
        if key in previous:
            done.resumed += 1
            continue
        status, time_s, times, message = bench.measure(typed, candidate.config)
        store.record(run, key, candidate.config, status, time_s, times, candidate.bound,
                     candidate.bottleneck, message)
        done.ran_now += 1
        done.failures += status != "ok"
        if done.ran_now % 25 == 0:
            log(f"{done.pairs:,} pairs ({done.ran_now:,} measured now)")


def run_id(space, profile, settings: dict, backend: str, source: str) -> str:
    """The store's run of one input of a collection."""
    return "inputs-" + hashlib.sha256(json.dumps({
        "space": os.path.abspath(space.path), "source": space.source_hash,
        "device": profile.fingerprint(), "settings": {k: str(v) for k, v in settings.items()},
        "backend": backend, "strategy": STRATEGY,
        "kernel": hashlib.sha256(source.encode()).hexdigest()}, sort_keys=True).encode()).hexdigest()[:20]
