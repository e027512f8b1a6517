"""``beastgen tune --scheduler``: every candidate runs on a Dask worker holding a GPU (the worker
resource ``GPU``), at most one per GPU worker at a time; the driver runs the strategy and records
every result in the one results store as it arrives.

The strategy decides what runs next, exactly as locally: a candidate is taken from it only when a
GPU worker is free, and only after every result that has come back was given to it, so branch and
bound never starts a candidate whose bound is not below the best time measured so far. Candidates
already running when a better time arrives finish (and are recorded): with G GPU workers, at most
G - 1 runs more than a one-GPU search. Branch and bound proves its best only after every run in
flight has come back; a bound violation among them reopens the search.

On the worker, the backend is the local one, built once per worker process: OpenCL and CUDA kernels
run in a child process under the same watchdog (a hang past the kernel's timeout is killed and
recorded as a timeout). Compile errors, launch failures, wrong results and timeouts come back as
recorded failures; a configuration that kills the Dask worker itself (on every worker Dask retries
it on) is recorded as a launch failure. Any other error on a worker (no device, another space file,
a wrong kernel declaration) stops the search with that error, as it does locally; what was recorded
stays recorded. The watchdog's child process needs non-daemonic Dask workers
(``DASK_DISTRIBUTED__WORKER__DAEMON=False``; ``local:N`` sets it).

:func:`tune_on_cluster` is the entry point; the harness knows nothing of Dask.
"""
from __future__ import annotations

import hashlib
import multiprocessing
import os
import time
from dataclasses import dataclass

from ..devices import load_profile
from ..errors import BeastError
from ..harness.kernel import find_kernel
from ..harness.store import config_key
from ..harness.strategies import STRATEGIES
from ..harness.tune import TuneResult, measure, setup_backend, tune
from ..loading import load
from .cluster import GPU, Cluster, import_distributed, worker_count


@dataclass(frozen=True)
class MeasureRecipe:
    """What a GPU worker needs to measure configurations like the local loop does."""

    space_path: str  # absolute; the workers see the same file (shared filesystem)
    source_hash: str  # of the space file
    backend: str
    device: str | None  # --device as given (opencl:N, a cuda profile...)
    replay: str | None  # absolute path of the Kernel Tuner cache file
    profile: object  # the driver's DeviceProfile: the launches use it, as the plan does
    settings: tuple  # every setting's typed value: ((name, value), ...)
    iterations: int
    kernel_hash: str  # sha256 of the kernel source the driver read ("" for replay)

    def key(self) -> tuple:
        return (self.space_path, self.source_hash, self.backend, self.device, self.replay,
                self.profile.fingerprint(), repr(self.settings), self.kernel_hash)


class _Context:
    """One worker process's backend and verification data for a recipe."""

    def __init__(self, recipe: MeasureRecipe):
        space = load(recipe.space_path)
        if space.source_hash != recipe.source_hash:
            raise BeastError(f"the space file differs on Dask worker {os.uname().nodename} from the "
                             "driver's: tuning on a cluster needs the same file everywhere",
                             recipe.space_path)
        self.kernel = find_kernel(space)
        if recipe.backend != "replay" and multiprocessing.current_process().daemon:
            raise BeastError(f"Dask worker {os.uname().nodename} runs in a daemonic process, which "
                             "cannot start the watchdog process that runs the kernels: start the GPU "
                             "workers with DASK_DISTRIBUTED__WORKER__DAEMON=False in their environment")
        _, self.runner, self.language = setup_backend(recipe.backend, recipe.device, recipe.replay,
                                                      self.kernel)
        self.settings = dict(recipe.settings)
        self.source = self.kernel.source_text(self.language) if self.language else ""
        if self.language and hashlib.sha256(self.source.encode()).hexdigest() != recipe.kernel_hash:
            raise BeastError(f"the kernel source differs on Dask worker {os.uname().nodename} from "
                             "the driver's", recipe.space_path)
        self.expected, self.tolerance = {}, 0.0
        if self.language:
            args = self.kernel.make_arguments(self.settings)
            self.expected = self.kernel.expected(args, self.settings)
            self.tolerance = self.kernel.tolerance_for(self.settings)
            self.runner.set_args(args)


_CONTEXTS: dict = {}  # per worker process: recipe key -> _Context


def _measure_task(recipe: MeasureRecipe, config: dict):
    """(status, time, times, message) of one configuration, measured on this worker."""
    context = _CONTEXTS.get(recipe.key())
    if context is None:
        context = _CONTEXTS[recipe.key()] = _Context(recipe)
    # as locally: what goes wrong with the configuration (KernelFailure) is a result; any other
    # error (a wrong kernel declaration, a broken worker) stops the search, never recorded
    return measure(context.runner, context.kernel, config, context.settings, recipe.profile,
                   context.language, context.source, recipe.iterations, context.expected,
                   context.tolerance)


def _profile_task(backend: str, device: str | None):
    """The device profile a GPU worker's backend reads from its device (opencl:N, cuda auto)."""
    profile, runner, _ = setup_backend(backend, device, None, None)
    if hasattr(runner, "close"):
        runner.close()
    return profile


class TunePool:
    """``with TunePool(address, backend, device, replay) as pool``: connected to the cluster."""

    def __init__(self, address: str, backend: str, device, replay):
        self.cluster = Cluster(address, gpu=True)
        self.backend, self.device, self.replay = backend, device, replay
        self.client = None
        self.slots = 0

    def __enter__(self):
        self.client = self.cluster.__enter__()
        try:
            self.slots = worker_count(self.client, GPU)
        except BaseException:
            self.cluster.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        return self.cluster.__exit__(*exc)

    def setup_backend(self, kernel):
        """(profile, runner, language) as :func:`beastgen.harness.tune.setup_backend` gives them, on
        the driver: replay reads the file here (for the problem size and the parameters); opencl
        and cuda read the profile on a GPU worker, and the driver holds no device (runner None)."""
        if self.backend == "replay":
            return setup_backend(self.backend, self.device, self.replay, kernel)
        if self.replay:
            raise BeastError("--replay goes with --backend replay")
        if self.backend == "cuda" and self.device and self.device.strip().lower() != "auto":
            return load_profile(self.device), None, "cuda"
        future = self.client.submit(_profile_task, self.backend, self.device, resources={GPU: 1},
                                    pure=False)
        try:
            profile = future.result()
        except BeastError as e:
            raise BeastError(f"on a Dask GPU worker: {e.message}", e.where) from None
        return profile, None, self.backend

    def recipe(self, space, profile, settings, iterations, source) -> MeasureRecipe:
        return MeasureRecipe(os.path.abspath(space.path), space.source_hash, self.backend, self.device,
                             os.path.abspath(self.replay) if self.replay else None, profile,
                             tuple(settings.items()), int(iterations),
                             hashlib.sha256(source.encode()).hexdigest() if source else "")

    def search(self, strategy, state, recipe: MeasureRecipe, previous: dict, measured, resumed,
               budget, time_limit, start, result) -> str:
        """Run the search; why it stopped ("" when every candidate was run or pruned).

        ``measured(candidate, key, status, time, times, message)`` records and accounts a fresh
        result, ``resumed(candidate, key)`` one answered from the store; the budget and time limit
        mean what they mean locally (checked before taking a candidate that needs a run)."""
        distributed = import_distributed()
        client = self.client
        inflight: dict = {}  # future -> (candidate, key), in submission order
        seen: set[str] = set()  # keys submitted or answered in this invocation
        proposals = strategy.propose(state)
        violations_at_end = None  # violated terms when the strategy ran out
        completions = distributed.as_completed(loop=client.loop)  # every submitted future, once

        def collect(block: bool) -> None:
            while block and inflight:  # until one still in flight is done (skip those collected)
                if next(completions) in inflight:
                    break
            for future in [f for f in inflight if f.done()]:
                candidate, key = inflight.pop(future)
                measured(candidate, key, *_outcome(future))

        def over() -> str:
            if budget is not None and result.ran_now + len(inflight) >= budget:
                return f"budget of {budget} runs spent"
            if time_limit is not None and time.perf_counter() - start >= time_limit:
                return f"time limit of {time_limit:g} s reached"
            return ""

        try:
            while True:
                collect(block=False)
                if len(inflight) >= self.slots or (over() and inflight):
                    collect(block=True)  # a free GPU, or a run that may not count, first
                    continue
                candidate = next(proposals, None)
                if candidate is None:
                    if violations_at_end is None:
                        violations_at_end = len(state.violated_terms)
                    if inflight:
                        collect(block=True)
                        continue
                    if state.proven and len(state.violated_terms) > violations_at_end:
                        # a run in flight at the proof violated a bound: what it pruned comes back
                        state.proven, violations_at_end = False, None
                        proposals = strategy.propose(state)
                        continue
                    return ""
                key = config_key(candidate.config)
                if key in seen:
                    continue
                if key in previous:
                    seen.add(key)
                    resumed(candidate, key)
                    continue
                stop = over()
                if stop:
                    return stop
                seen.add(key)
                future = client.submit(_measure_task, recipe, candidate.config, resources={GPU: 1},
                                       pure=False, key=f"beastgen-measure-{os.urandom(8).hex()}")
                inflight[future] = (candidate, key)
                completions.add(future)
        finally:
            if inflight:
                client.cancel(list(inflight))


def _outcome(future):
    """(status, time, times, message) of a finished measurement future."""
    distributed = import_distributed()
    if future.status != "error":
        return future.result()
    error = future.exception()
    if isinstance(error, distributed.KilledWorker):
        return ("launch", None, None, f"the configuration killed every Dask worker that ran it: {error}")
    if isinstance(error, BeastError):
        raise BeastError(error.message, error.where)
    raise BeastError(f"a Dask worker failed: {type(error).__name__}: {error}")


def tune_on_cluster(space_path: str, scheduler: str, backend: str = "opencl", device=None,
                    replay: str | None = None, strategy: str = "branch_and_bound",
                    **options) -> TuneResult:
    """:func:`beastgen.harness.tune.tune` with every candidate run on a Dask worker holding a GPU
    (``scheduler``: a Dask scheduler address or ``local:N``)."""
    if strategy not in STRATEGIES:  # before starting a cluster
        raise BeastError(f"unknown strategy '{strategy}': use {', '.join(STRATEGIES)}")
    with TunePool(scheduler, backend, device, replay) as pool:
        return tune(space_path, backend=backend, device=device, replay=replay, strategy=strategy,
                    pool=pool, **options)
