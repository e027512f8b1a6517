"""The tuning loop: a strategy proposes configurations, a backend measures them (verified against a
NumPy reference the first time each runs), the store records every result as it arrives. One loop
(:meth:`Tuning.search`) holds the search; a batch runner (:mod:`.batches`) measures, in this
process or on a Dask pool's GPU workers.

Failures (compile error, launch failure, wrong result, timeout) are recorded with their message
and the search goes on. A measured time below a configuration's lower bound is a violated bound:
it is reported loudly, and the violated term no longer prunes anything.
"""
from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from ..compiler.runtime import compile_space
from ..devices import load_profile
from ..devices.opencl import get_device, opencl_profile, parse_device
from ..errors import BeastError
from ..interop.results import kernel_tuner_header
from ..loading.load import load
from ..support.units import format_seconds
from .backends.base import KernelFailure, time_problem
from .backends.cuda import CUDABackend, import_pycuda
from .backends.opencl import OpenCLBackend
from .backends.replay import ReplayBackend
from .batches import CUT, BatchRunner, MeasureHere
from .isolate import Isolated
from .kernel import find_kernel, verify
from .priors import prior_matrix
from .store import DEFAULT_PATH, Store, config_key
from .strategies import ALIASES, DEFAULT, STRATEGIES, SearchState

#: timed runs per configuration (after the verification run); the time kept is their minimum
#: (noise on a shared machine only ever adds time)
DEFAULT_ITERATIONS = 7


@dataclass(frozen=True)
class Limits:
    """When a search stops before it has run or cut every candidate: ``budget`` runs in this
    invocation, ``seconds`` of wall time, or a measured time of at most ``good_enough`` seconds
    (the kernel is fast enough for its user), or once the strategy's models are ``confidence``
    sure that nothing left is faster by more than their tolerance (a model's estimate, not a
    proof). The one search loop checks them, wherever the candidates run."""
    budget: int | None = None
    seconds: float | None = None
    good_enough: float | None = None
    confidence: float | None = None

    #: how the reasons below begin: a search stopped by one of them proves nothing
    EARLY = ("budget", "time limit", "good enough", "confident")

    def reached(self, ran: int, start: float, best_time: float, state=None) -> str:
        """Why the search stops now, after ``ran`` runs in this invocation begun at ``start``
        (``time.perf_counter()``) with ``best_time`` the best so far and ``state`` the search's
        (its models' confidence) ("" while it goes on)."""
        if self.good_enough is not None and best_time <= self.good_enough:
            return f"good enough: {format_seconds(best_time)} is at most {format_seconds(self.good_enough)}"
        if self.confidence is not None and state is not None and state.confidence >= self.confidence:
            return f"confident: {confidence_line(state.confidence, state.tolerance)}"
        if self.budget is not None and ran >= self.budget:
            return f"budget of {self.budget} runs spent"
        if self.seconds is not None and time.perf_counter() - start >= self.seconds:
            return f"time limit of {self.seconds:g} s reached"
        return ""


@dataclass
class TuneResult:
    space: str
    device: str
    backend: str
    strategy: str
    settings: dict
    results_path: str
    best_config: dict | None = None
    best_time: float = math.inf
    best_bound: float = math.nan
    best_bottleneck: str | None = None
    proven: bool = False
    lower_bound: float = math.nan  # branch and bound: the optimum is at least this (seconds)
    has_bounds: bool = True  # the space declares bound terms
    exhaustive: int = 0  # valid configurations of the space
    surviving: int | None = None  # of those, bound below the best measured time
    evaluated: int = 0  # configurations measured by this run (ok or failed), resumed ones included
    ran_now: int = 0  # of those, measured in this invocation
    resumed: int = 0  # answered from the results store
    unmeasured: int = 0  # proposed, but not in the backend's recorded measurements (a replay file)
    failures: dict = field(default_factory=dict)  # kind -> count
    failure_examples: list = field(default_factory=list)
    bound_violations: list = field(default_factory=list)
    stopped: str = ""  # why the search ended
    seconds: float = 0.0
    points: list = field(default_factory=list)  # (bound, time) of every measured configuration
    recorded_in: str = ""  # the backend's recorded measurements, as messages name them
    confidence: float = math.nan  # the models' estimate that the best is within tolerance
    tolerance: float = 0.01
    proposals: int = 0  # configurations the strategy proposed in this invocation
    model_seconds: float = 0.0  # CPU time of the strategy's models (:class:`SearchState`)
    measure_seconds: float = 0.0  # wall time of measuring in this invocation

    def as_dict(self) -> dict:
        return {"space": self.space, "device": self.device, "backend": self.backend,
                "strategy": self.strategy, "settings": self.settings, "results": self.results_path,
                "best_config": self.best_config,
                "best_time_ms": self.best_time * 1e3 if math.isfinite(self.best_time) else None,
                "best_bound_ms": self.best_bound * 1e3 if math.isfinite(self.best_bound) else None,
                "best_bottleneck": self.best_bottleneck, "proven": self.proven,
                "certificate": self.certificate(),
                "lower_bound_ms": self.lower_bound * 1e3 if math.isfinite(self.lower_bound) else None,
                "exhaustive": self.exhaustive, "surviving": self.surviving,
                "evaluated": self.evaluated, "ran_now": self.ran_now, "resumed": self.resumed,
                "unmeasured": self.unmeasured, "failures": self.failures,
                "failure_examples": self.failure_examples,
                "bound_violations": self.bound_violations, "stopped": self.stopped,
                "seconds": self.seconds,
                "confidence": self.confidence if math.isfinite(self.confidence) else None,
                "tolerance": self.tolerance, "proposals": self.proposals,
                "model_cpu_seconds": self.model_seconds,
                "model_ms_per_proposal": self.model_seconds / self.proposals * 1e3 if self.proposals else None,
                "measure_seconds": self.measure_seconds}

    def certificate(self) -> str:
        """"optimal" (proven), "at most X% above the optimum" / "at most N.Nx the optimum" (best time
        over the lower bound of the optimum), or "" (nothing is known)."""
        if self.proven:
            return "optimal"
        return _certificate(self.best_time, self.lower_bound)

    def verdict(self) -> str:
        """One line: how sure the search is of its best."""
        if self.proven and self.evaluated >= self.exhaustive:
            return "optimal: every valid configuration was measured"
        if self.proven:
            return (f"the best is PROVEN optimal by the bounds ({self.exhaustive - self.evaluated:,} "
                    "configurations cut)")
        certificate = self.certificate() and f"the best is {self.certificate()}"
        if not self.has_bounds:
            certificate = "no bound terms: no certificate (the best among the measured)"
        return f"not proven optimal ({self.stopped})" + (f"; {certificate}" if certificate else "")

    def report(self) -> str:
        lines = [f"space {self.space} on {self.device} ({self.backend} backend), strategy {self.strategy}"]
        if self.best_config is None:
            lines.append("no configuration was measured successfully")
        else:
            lines.append(f"best time {format_seconds(self.best_time)}"
                         + (f", its bound {format_seconds(self.best_bound)} ({self.best_bottleneck})"
                            if math.isfinite(self.best_bound) else ""))
            lines.append(f"best configuration: {self.best_config}")
        surviving = "?" if self.surviving is None else f"{self.surviving:,}"
        lines.append(f"valid configurations (exhaustive): {self.exhaustive:,}; bound below the best "
                     f"time (surviving): {surviving}; run: {self.evaluated:,} ({self.ran_now:,} now, "
                     f"{self.resumed:,} from the results store)"
                     + (f"; unmeasured (not in {self.recorded_in}): {self.unmeasured:,}" if self.unmeasured else ""))
        lines.append(self.verdict())
        if math.isfinite(self.confidence):
            lines.append(f"a model's estimate: {confidence_line(self.confidence, self.tolerance)}")
        if self.proposals:
            lines.append(f"the search's own work: {self.model_seconds:.1f} s of CPU in its models "
                         f"({self.model_seconds / self.proposals * 1e3:.1f} ms per proposal, "
                         f"{self.proposals:,} proposals); measuring: {self.measure_seconds:.1f} s")
        if self.failures:
            lines.append("failures: " + ", ".join(f"{k} {v}" for k, v in sorted(self.failures.items())))
            for example in self.failure_examples[:5]:
                lines.append(f"  {example['status']}: {example['config']}: "
                             f"{example['message'].splitlines()[0] if example['message'] else ''}")
        if self.bound_violations:
            lines.append(f"BOUND VIOLATIONS: {len(self.bound_violations)} configurations ran faster "
                         "than their lower bound (the model or the device profile is wrong):")
            for v in self.bound_violations[:5]:
                lines.append(f"  {v['term']}: bound {format_seconds(v['bound_seconds'])} > measured "
                             f"{format_seconds(v['time_seconds'])}: {v['config']}")
        lines.append(f"results: {self.results_path}; search took {self.seconds:.1f} s")
        return "\n".join(lines)


def _replay(device, replay_path, space):
    if not replay_path:
        raise BeastError("--backend replay needs --replay FILE (a Kernel Tuner cache file)")
    runner = ReplayBackend(replay_path)
    return (load_profile(device) if device else runner.device_profile(space)), runner, None


def _opencl(device, replay_path, space):
    _measured_live(replay_path)
    if device and str(device).lower().endswith(".toml"):  # a calibrated profile (beastgen calibrate)
        profile = load_profile(device)
        index = parse_device(str(profile.properties.get("calibrated_device", "opencl:0")))
    else:
        index = parse_device(device)
        profile = opencl_profile(get_device(index), index)
    return profile, Isolated(functools.partial(OpenCLBackend, index)), "opencl"


def _cuda(device, replay_path, space):
    _measured_live(replay_path)
    import_pycuda()
    profile = load_profile(device or "auto")
    runner = Isolated(functools.partial(CUDABackend, 0))
    runner.check_setup()  # nvcc, architecture, driver: one clear error before anything is stored
    return profile, runner, "cuda"


def _measured_live(replay_path) -> None:
    """A live backend measures: a replay file is not for it."""
    if replay_path:
        raise BeastError("--replay goes with --backend replay")


#: backend name -> its set-up: (device, replay file, space) -> (profile, runner, source language);
#: the runner (:class:`.backends.base.Runner`) answers the problem size, the parameter check and
#: "unmeasured" itself
BACKENDS = {"opencl": _opencl, "cuda": _cuda, "replay": _replay}


def setup_backend(backend: str, device, replay_path, space=None):
    """(profile, runner, language) for a backend name (:data:`BACKENDS`); ``space``: the loaded space
    (a replay without a matching built-in profile needs to know whether it reads the device)."""
    if backend not in BACKENDS:
        raise BeastError(f"unknown backend '{backend}': use {', '.join(BACKENDS)}")
    return BACKENDS[backend](device, replay_path, space)


def tune(space_path: str, backend: str = "opencl", device=None, settings: dict | None = None,
         replay: str | None = None, budget: int | None = None, time_limit: float | None = None,
         results: str = DEFAULT_PATH, strategy: str = DEFAULT, seed: int = 0,
         iterations: int | None = None, generated_dir: str | None = None, progress: bool = True,
         plot: str | None = None, log=None, pool=None, priors: list[str] | None = None,
         good_enough: float | None = None, strategy_options: dict | None = None,
         confidence: float | None = None) -> TuneResult:
    """Search ``space_path`` for its fastest configuration (see the module docstring). With a
    ``pool`` (:class:`beastgen.distributed.pool.TunePool`), every candidate runs on a Dask worker
    holding a GPU; the results store stays on this machine. ``priors``: measurement files of the
    same space from elsewhere (:mod:`.priors`) that warm-start the default strategy. The search
    stops early after ``budget`` runs, ``time_limit`` seconds, or once a configuration runs in at
    most ``good_enough`` seconds, or once the strategy's models are ``confidence`` sure that no
    configuration left is more than 1% faster (:class:`Limits`). ``strategy_options``: {name:
    value} of the strategy's option table (``--strategy-option``; the guided search's:
    docs/search.md)."""
    tuning = Tuning(space_path, backend, strategy, seed,
                    Limits(budget, time_limit, good_enough, confidence),
                    log or (lambda message: print(message, file=sys.stderr, flush=True)), pool, priors,
                    strategy_options)
    tuning.setup(device, dict(settings or {}), replay, results, iterations, generated_dir)
    result = tuning.run(progress)
    if plot:
        plot_results(result, plot)
    return result


class Tuning:
    """One search: :meth:`setup` (space, backend, plan, results store, strategy), :meth:`run` (the
    search loop, :meth:`search`, with the candidates measured here or on a pool's GPU workers), and
    the accounting of every result (:meth:`account`) into the :class:`TuneResult` and the
    :class:`SearchState` the strategy reads."""

    def __init__(self, space_path: str, backend: str, strategy: str, seed: int, limits: Limits,
                 log, pool, priors, strategy_options: dict | None = None):
        strategy = ALIASES.get(strategy, strategy)
        if strategy not in STRATEGIES:
            raise BeastError(f"unknown strategy '{strategy}': use {', '.join(STRATEGIES)}")
        if priors and not STRATEGIES[strategy].uses_priors:
            raise BeastError(f"--prior orders the search of the default strategy ({DEFAULT}); "
                             f"'{strategy}' does not read priors")
        if limits.budget is not None and limits.budget < 1:
            raise BeastError("--budget must be at least 1")
        if limits.good_enough is not None and not limits.good_enough > 0:
            raise BeastError(f"--good-enough must be a time above zero, not {limits.good_enough:g} s")
        if limits.confidence is not None and not 0 < limits.confidence < 1:
            raise BeastError(f"--confidence must be between 0 and 1 (0.95: 95% sure), not "
                             f"{limits.confidence:g}")
        if limits.confidence is not None and not STRATEGIES[strategy].estimates_confidence:
            raise BeastError(f"--confidence stops a search whose models estimate it (the default, "
                             f"{DEFAULT}); '{strategy}' makes no such estimate")
        self.space_path, self.backend, self.strategy, self.seed = space_path, backend, strategy, seed
        self.limits, self.log, self.pool, self.priors = limits, log, pool, priors
        self.strategy_options = dict(strategy_options or {})
        STRATEGIES[strategy].resolve_options(self.strategy_options, bool(priors))  # before any work
        self.state = SearchState()
        self.unmeasured_bounds = []  # bounds of proposed configurations the backend cannot answer
        self.bar = None

    def setup(self, device, settings: dict, replay, results: str, iterations, generated_dir) -> None:
        """Load the space, set up the backend (its problem size joins ``settings``), compile the
        plan, prepare the kernel's arguments, open the run in the results store."""
        space = self.space = load(self.space_path)
        kernel = self.kernel = find_kernel(space)
        pool = self.pool
        self.profile, runner, self.language = (pool.setup_backend(space) if pool is not None else
                                               setup_backend(self.backend, device, replay, space))
        self.runner = runner
        imposed = runner.problem_settings(kernel, space)
        settings = {**imposed, **settings}  # compared after conversion, below
        if imposed:
            self.log(f"problem size from {runner.recorded_in}: {imposed}")
        if kernel is None and self.language is not None:
            raise BeastError(f"space '{space.name}' declares no kernel (beast.kernel(...)): nothing to "
                             f"run on the {self.backend} backend", space.path)
        plan = self.plan = compile_space(space, device=self.profile, settings=settings,
                                         generated_dir=generated_dir)
        typed = self.settings = dict(plan.specialized.settings)
        for name, value in imposed.items():
            if typed.get(name) != value:
                raise BeastError(f"--set {name}={typed.get(name)} contradicts {runner.recorded_in}'s "
                                 f"problem size ({name}={value})", replay)
        runner.check_parameters(plan.columns)
        self.source = kernel.source_text(self.language) if self.language else ""
        self.expected, self.tolerance = {}, 0.0
        if self.language and pool is None:  # on a cluster, each GPU worker builds its own
            args = kernel.make_arguments(typed)
            self.expected = kernel.expected(args, typed)
            self.tolerance = kernel.tolerance_for(typed)
            runner.set_args(args)
        self.iterations = iterations or (kernel.iterations if kernel else DEFAULT_ITERATIONS)
        self.open_run(results)

    def open_run(self, results: str) -> None:
        """The run's identity (what it measures, how it searches), its row in the store and what the
        store already holds of it."""
        space, profile, source, recording = self.space, self.profile, self.source, self.runner.recording
        self.run_id = hashlib.sha256(json.dumps({
            "space": os.path.abspath(space.path), "source": space.source_hash,
            "device": profile.fingerprint(), "settings": {k: str(v) for k, v in self.settings.items()},
            "backend": self.backend, "strategy": self.strategy, "seed": self.seed,
            **({"strategy_options": self.strategy_options} if self.strategy_options else {}),
            "kernel": (hashlib.sha256(source.encode()).hexdigest() if source else
                       recording and os.path.abspath(recording.path)),
        }, sort_keys=True).encode()).hexdigest()[:20]
        self.store = Store(results)
        self.store.open_run(self.run_id, space=space.name, device=profile.key, backend=self.backend,
                            strategy=self.strategy, settings=self.settings, export=kernel_tuner_header(
                                self.plan.columns, self.settings, recording, self.kernel, space.name))
        self.previous = self.store.results(self.run_id)
        self.result = TuneResult(space.name, f"{profile.key} ({profile.name})", self.backend,
                                 self.strategy, {k: (v.item() if hasattr(v, "item") else v)
                                                 for k, v in self.settings.items()}, results)
        self.result.recorded_in = self.runner.recorded_in

    def run(self, progress: bool) -> TuneResult:
        """Search until every candidate is run or cut, or a limit is reached; the result."""
        result, pool = self.result, self.pool
        self.chosen = STRATEGIES[self.strategy](self.plan, self.seed, functools.partial(
            prior_matrix, list(self.priors)) if self.priors else None, self.strategy_options)
        self.start = time.perf_counter()
        self.bar = _progress_bar(progress, min(self.limits.budget or math.inf, self.plan.count())
                                 if progress else None)
        for key, row in self.previous.items():  # what the store holds counts before the search starts
            self.account(key, row["config"], row["status"], row["time"], row["bound"],
                         row["bottleneck"], row["message"], False)
        try:
            if pool is not None:  # every candidate runs on a Dask GPU worker
                batches = pool.batches(self.space, self.profile, self.settings, self.iterations,
                                       self.source, self.chosen.prunes, self.state)
            else:
                batches = MeasureHere(self.measure_here)
            result.stopped = self.search(batches) or "every candidate was run"
        finally:
            if self.bar is not None:
                self.bar.close()
            self.runner.close()
            self.store.close()
        self.conclude()
        return result

    def measure_here(self, config: dict) -> tuple:
        """(status, time, times, message) of ``config`` measured by this process's runner."""
        return measure(self.runner, self.kernel, config, self.settings, self.profile, self.language,
                       self.source, self.iterations, self.expected, self.tolerance)

    def search(self, batches: BatchRunner) -> str:
        """The search loop: the strategy proposes, the store answers what it holds, the runner what
        its recorded measurements lack (unmeasured), and ``batches`` measures the rest, a batch at a
        time (one candidate here, so the strategy sees each result before its next proposal);
        why it stopped ("" when every candidate was run or cut).

        With batches in flight (on a cluster), the limits count them as run; a candidate the runner
        cut by the best it knew is sent again if a later result made it a candidate after all; and
        a proof reached while batches were in flight holds only if none of them violated a bound,
        else the strategy searches again."""
        state = self.state
        proposals = self.chosen.propose(state)
        sent: set[str] = set()  # keys sent or answered in this invocation
        cut: list = []  # (candidate, key) the runner cut by the best it knew
        again: list = []  # of those, the ones to send before the strategy's next candidates
        violations_at_end = None  # violated terms when the strategy ran out
        try:
            while True:
                self.take(batches, False, sent, cut)
                if batches.in_flight and (batches.full() or self.over(batches.in_flight)):
                    self.take(batches, True, sent, cut)
                    continue
                batch, stop = self.next_batch(proposals, batches, sent, again)
                if stop:
                    return stop
                if batch:
                    started = time.perf_counter()
                    batches.send(batch)
                    self.result.measure_seconds += time.perf_counter() - started
                    continue
                # the strategy ran out
                if violations_at_end is None:
                    violations_at_end = len(state.violated_terms)
                if batches.in_flight:
                    self.take(batches, True, sent, cut)
                    continue
                if state.proven and len(state.violated_terms) > violations_at_end:
                    # a run in flight at the proof violated a bound: what it pruned comes back
                    state.proven, violations_at_end = False, None
                    proposals = self.chosen.propose(state)
                    continue
                again += [(c, k) for c, k in cut if k not in state.times
                          and (c.bottleneck in state.violated_terms or not c.bound >= state.best_time)]
                cut.clear()
                if not again:
                    return ""
        finally:
            batches.close()

    def over(self, in_flight: int) -> str:
        """Why the search stops now ("" while it goes on), the ``in_flight`` runs counted as run."""
        return self.limits.reached(self.result.ran_now + in_flight, self.start, self.state.best_time,
                                   self.state)

    def next_batch(self, proposals, batches: BatchRunner, sent: set, again: list):
        """(the next batch of (candidate, key), why the search stops or ""): the candidates
        ``again``, then the strategy's, up to the runner's batch size and the budget left; those
        the store holds or the runner cannot answer are answered here, not sent. An empty batch
        without a reason: the strategy ran out."""
        size = batches.batch_size()
        if self.limits.budget is not None:
            size = min(size, self.limits.budget - self.result.ran_now - batches.in_flight)
        batch: list = []
        while len(batch) < max(size, 1):
            if again:
                candidate, key = again.pop()
            else:
                candidate = next(proposals, None)
                if candidate is None:
                    break
                key = config_key(candidate.config)
            if key in sent or key in self.previous:
                continue
            stop = self.over(batches.in_flight + len(batch))
            if stop:
                return [], stop
            sent.add(key)
            missing = self.runner.unmeasured(candidate.config)
            if missing:
                self.measured(candidate, key, "unmeasured", None, None, missing)
                continue
            batch.append((candidate, key))
        return batch, ""

    def take(self, batches: BatchRunner, block: bool, sent: set, cut: list) -> None:
        """What came back from ``batches`` (waiting for it with ``block``) into the store and the
        accounting; the cut candidates into ``cut``."""
        started = time.perf_counter()
        outcomes = batches.collect(block)
        if block:
            self.result.measure_seconds += time.perf_counter() - started
        for candidate, key, outcome in outcomes:
            if outcome[0] == CUT:
                sent.discard(key)
                cut.append((candidate, key))
            else:
                self.measured(candidate, key, *outcome)

    def measured(self, candidate, key, status, time_s, times, message) -> None:
        """A fresh result: recorded (unless the backend could not answer it: it answers the same
        again), accounted, counted on the progress bar."""
        if status != "unmeasured":
            self.store.record(self.run_id, key, candidate.config, status, time_s, times,
                              candidate.bound, candidate.bottleneck, message)
        self.account(key, candidate.config, status, time_s, candidate.bound, candidate.bottleneck,
                     message, True)
        if self.bar is not None and status != "unmeasured":
            self.bar.update(1)

    def account(self, key, config, status, time_s, bound, bottleneck, message, fresh) -> None:
        """One result (fresh, or from the store) into the result's counts, failures, best and bound
        violations, and into the search state."""
        result, state = self.result, self.state
        if status == "unmeasured":
            result.unmeasured += 1
            self.unmeasured_bounds.append(bound)
            return
        if status == "ok" and time_problem(time_s):  # e.g. a store written before this check
            status, message = "invalid_time", f"recorded time unusable: {time_problem(time_s)}"
        result.evaluated += 1
        if fresh:
            result.ran_now += 1
        else:
            result.resumed += 1
        if status != "ok":
            result.failures[status] = result.failures.get(status, 0) + 1
            if len(result.failure_examples) < 20:
                result.failure_examples.append({"config": config, "status": status, "message": message})
            state.times[key] = math.inf
            return
        state.times[key] = time_s
        result.points.append((bound, time_s))
        if math.isfinite(bound) and time_s < bound:
            result.bound_violations.append({"config": config, "bound_seconds": bound,
                                            "time_seconds": time_s, "term": bottleneck})
            state.violated_terms.add(bottleneck)
            _write(self.bar, self.log, f"BOUND VIOLATION: measured {format_seconds(time_s)} is below "
                                       f"the lower bound {format_seconds(bound)} of term '{bottleneck}' "
                                       f"for {config}; '{bottleneck}' no longer prunes")
        if time_s < state.best_time:
            state.best_time, state.best_key = time_s, key
            result.best_config, result.best_time = config, time_s
            result.best_bound, result.best_bottleneck = bound, bottleneck
        if self.bar is not None:
            certificate = _certificate(state.best_time, state.lower_bound)
            sure = (f", {math.floor(state.confidence * 100):g}% sure within {state.tolerance:.0%}"
                    if math.isfinite(state.confidence) else "")
            self.bar.set_postfix_str(f"best {format_seconds(state.best_time)}"
                                     + (f", {certificate}" if certificate else "") + sure)

    def conclude(self) -> None:
        """What the search proved: the lower bound of the optimum, proven or not (and why it
        stopped), the exhaustive and surviving counts."""
        result, state, plan = self.result, self.state, self.plan
        result.has_bounds = bool(plan.bound_terms)
        result.lower_bound = state.lower_bound if result.has_bounds else math.nan
        result.proven = state.proven and not result.stopped.startswith(Limits.EARLY)
        # neither measured nor cut by the final best time: no proof, whatever the bounds; the optimum
        # of the space may be among them, so the lower bound of the optimum is theirs too
        missing = [bound for bound in self.unmeasured_bounds if not bound >= result.best_time]
        if missing:
            result.lower_bound = min(result.lower_bound, min(missing))
        if not result.proven and result.has_bounds and not missing and result.lower_bound >= result.best_time:
            result.proven = True  # stopped just as nothing open could beat the best any more
        if result.proven and missing:
            result.proven = False
            result.stopped = (f"best among the measured: {len(missing):,} configurations the bounds "
                              f"did not cut are missing from {result.recorded_in}")
        if result.proven:
            result.stopped = "proven"
        result.seconds = time.perf_counter() - self.start
        result.confidence, result.tolerance = state.confidence, state.tolerance
        result.model_seconds, result.proposals = state.model_seconds, state.proposals
        result.exhaustive = self.chosen.known_count if self.chosen.known_count is not None else plan.count()
        result.surviving = _surviving(plan, self.chosen, state.best_time)
        if result.exhaustive == 0:
            why = plan.why_empty()
            result.proven, result.stopped = False, "the space is empty" + (f": {why}" if why else "")


def confidence_line(confidence: float, tolerance: float) -> str:
    """"95.2% sure the best is within 1% of the space's optimum" (rounded down)."""
    return (f"{math.floor(confidence * 1000) / 10:g}% sure the best is within {tolerance:.0%} of the "
            "space's optimum")


def _certificate(best: float, lower: float) -> str:
    """What best time over the optimum's lower bound says: "" when nothing is known."""
    if not (math.isfinite(best) and lower > 0):
        return ""
    if lower >= best:
        return "optimal"
    ratio = best / lower
    return f"at most {ratio - 1:.1%} above the optimum" if ratio < 2 else f"at most {ratio:.1f}x the optimum"


def _surviving(plan, strategy, best: float) -> int | None:
    """Valid configurations whose bound is below the best measured time."""
    if not plan.bound_terms or not math.isfinite(best):
        return None
    bounds = getattr(strategy, "scanned_bounds", None)
    if bounds is not None and (strategy.known_count is not None or
                               (len(bounds) and bounds.max() >= best)):
        return int(np.sum(bounds < best))
    return plan.count(float(np.nextafter(best, 0)))


def measure(runner, kernel, config, settings, profile, language, source, iterations, expected,
            tolerance):
    """(status, time, times, message) of one configuration, measured by ``runner`` (a
    :class:`.backends.base.Runner`) and verified against ``expected``."""
    try:
        launch = runner.launch(kernel, config, settings, profile, language, source)
        run = runner.measure(launch, iterations, list(expected), kernel.timeout if kernel else math.inf)
        problem = verify(run.outputs, expected, tolerance)
        if problem:
            return "wrong_result", None, run.times, problem
        if not run.times:
            return "launch", None, None, "no timed run"
        problem = next((p for p in map(time_problem, run.times) if p), None)
        if problem:  # never a best time, never compared with a bound
            return "invalid_time", None, None, f"measured time unusable: {problem}"
        return "ok", float(min(run.times)), [float(t) for t in run.times], None
    except KernelFailure as e:
        return e.kind, None, None, e.message


def _progress_bar(enabled: bool, total):
    if not enabled:
        return None
    try:  # optional: no bar without tqdm
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit="run", file=sys.stderr, dynamic_ncols=True, disable=None)


def _write(bar, log, message: str) -> None:
    if bar is not None:
        bar.write(message, file=sys.stderr)
    else:
        log(message)


def plot_results(result: TuneResult, path: str) -> None:
    """Measured time against lower bound (log-log), with the line time = bound: every point must lie
    above it; points below are violated bounds."""
    try:  # optional (beastgen[plot]), and slow to import: only for --plot
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise BeastError("--plot needs matplotlib: pip install 'beastgen[plot]'") from None
    points = [(b, t) for b, t in result.points if math.isfinite(b) and b > 0]
    fig, ax = plt.subplots(figsize=(8.4, 4.8))
    if points:
        bounds, times = np.array(points).T
        ok = times >= bounds
        ax.scatter(bounds[ok] * 1e3, times[ok] * 1e3, s=8, alpha=0.6, label="measured")
        if (~ok).any():
            ax.scatter(bounds[~ok] * 1e3, times[~ok] * 1e3, s=16, color="red", label="bound violated")
        low, high = min(bounds.min(), times.min()) * 1e3, max(bounds.max(), times.max()) * 1e3
        ax.plot([low, high], [low, high], color="gray", linewidth=1, label="time = bound")
        ax.axhline(result.best_time * 1e3, color="green", linewidth=1, linestyle="--",
                   label=f"best {format_seconds(result.best_time)}")
        ax.set_xscale("log")
        ax.set_yscale("log")
    ax.set_xlabel("lower bound (ms)")
    ax.set_ylabel("measured time (ms)")
    ax.set_title(f"{result.space} on {result.device.split(' (')[0]}: {result.strategy}, "
                 f"{result.evaluated} runs")
    # beside the axes: the points lie above the diagonal, in the upper left a legend would cover
    if points:  # none: no legend (matplotlib would warn that it has no entries)
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0, fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
