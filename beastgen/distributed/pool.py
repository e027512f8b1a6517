"""``beastgen tune --scheduler``: the candidates run on Dask workers holding a GPU (the worker
resource ``GPU``), one batch at a time per GPU worker; the driver runs the strategy and records
every result in the one results store (on its machine only) as it arrives.

Batches: a Dask task costs milliseconds of scheduling, more than a replayed measurement, so the
driver sends candidates in batches sized to take about :data:`BATCH_SECONDS` on a worker (learnt
from the batches that came back; the first holds one candidate), one per GPU worker at a time, or
two when candidates are fast (:data:`QUEUE_BELOW_SECONDS`: replayed ones), so that a worker never
waits for the driver.

Pruning (a branch-and-bound strategy's: ``Strategy.prunes``; any other strategy, exhaustive among
them, runs every candidate it proposes) stays exact and shared: a batch carries the best time and
the violated bound terms known when it was sent, and a worker reads newer ones from a Dask
``Variable`` (published by the driver whenever its best improves, and by a worker when it measures
a better time), so a cut made on one worker prunes on all. A worker cuts a candidate whose valid bound is not below the best it knows
(never runs it); the driver hands cut candidates back to the search only if their bound term was
later violated. Branch and bound proves its best only after every batch in flight has come back;
a bound violation among them reopens the search.

Nothing of the driver's file system is needed on a worker: the space file, the modules beside it
that it imports and the kernel sources travel in the recipe (:mod:`.shipping`), and so does a
replay file's content. A search stopped (Ctrl-C, a kill) resumes from the store as locally: what
was recorded is answered from it, the batches in flight run again.

On the worker, the backend is the local one, built once per worker process: OpenCL and CUDA kernels
run in a child process under the same watchdog (a hang past the kernel's timeout is killed and
recorded as a timeout). Compile errors, launch failures, wrong results and timeouts come back as
recorded failures; a batch that kills the Dask worker itself (on every worker Dask retries it on)
is run again one candidate per task, and the candidate that still kills its workers is recorded as
a launch failure. Any other error on a worker (no device, another beastgen, a wrong kernel
declaration) stops the search with that error, as it does locally; what was recorded stays
recorded. The watchdog's child process needs non-daemonic Dask workers
(``DASK_DISTRIBUTED__WORKER__DAEMON=False``; ``local:N`` sets it).

:func:`tune_on_cluster` is the entry point; the harness knows nothing of Dask.
"""
from __future__ import annotations

import contextlib
import hashlib
import math
import os
import time
from dataclasses import dataclass

from ..devices import load_profile
from ..errors import BeastError
from ..harness.backends.base import Runner
from ..harness.isolate import DaemonicProcess
from ..harness.kernel import find_kernel
from ..harness.store import config_key
from ..harness.strategies import ALIASES, DEFAULT, STRATEGIES
from ..harness.tuning import TuneResult, measure, setup_backend, tune
from ..loading.load import load
from ..support.output import AtomicOutput
from ..version import __version__
from .cluster import GPU, Cluster, import_distributed, raise_worker_error, shared, worker_count
from .shipping import SpaceFiles, check_same_version, importable_beside


@dataclass(frozen=True)
class MeasureRecipe:
    """What a GPU worker needs to measure configurations like the local loop does, none of it from
    the driver's file system: the space's files (with the kernel sources), the replay file's bytes."""

    space: SpaceFiles
    backend: str
    device: str | None  # --device as given (opencl:N, a cuda profile...)
    replay: bytes | None  # the Kernel Tuner cache file's content
    replay_name: str | None  # its file name (.json or .json.gz)
    profile: object  # the driver's DeviceProfile: the launches use it, as the plan does
    settings: tuple  # every setting's typed value: ((name, value), ...)
    iterations: int
    kernel_hash: str  # sha256 of the kernel source the driver read ("" for replay)
    version: str  # the driver's beastgen

    def key(self) -> tuple:
        return (self.space.digest, self.backend, self.device, self.replay_name,
                hashlib.sha256(self.replay or b"").hexdigest(), self.profile.fingerprint(),
                repr(self.settings), self.kernel_hash)


class _Context:
    """One worker process's backend and verification data for a recipe."""

    def __init__(self, recipe: MeasureRecipe):
        host = os.uname().nodename
        check_same_version(recipe.version)
        path = recipe.space.materialize()
        with importable_beside(path):
            space = load(path)
        self.kernel = find_kernel(space)
        replay = None
        if recipe.replay is not None:
            digest = hashlib.sha256(recipe.replay).hexdigest()[:16]
            replay = os.path.join(os.path.dirname(path), f"replay-{digest}-{recipe.replay_name}")
            if not os.path.exists(replay):
                with AtomicOutput(replay) as temporary, open(temporary, "wb") as f:
                    f.write(recipe.replay)
        _, self.runner, self.language = _setup_on_worker(recipe.backend, recipe.device, replay, space)
        self.settings = dict(recipe.settings)
        self.source = self.kernel.source_text(self.language) if self.language else ""
        if self.language and hashlib.sha256(self.source.encode()).hexdigest() != recipe.kernel_hash:
            raise BeastError(f"the kernel source differs on Dask worker {host} from the driver's",
                             space.path)
        self.expected, self.tolerance = {}, 0.0
        if self.language:
            args = self.kernel.make_arguments(self.settings)
            self.expected = self.kernel.expected(args, self.settings)
            self.tolerance = self.kernel.tolerance_for(self.settings)
            self.runner.set_args(args)

    def measure(self, recipe: MeasureRecipe, config: dict):
        # as locally: what goes wrong with the configuration (KernelFailure) is a result; any other
        # error (a wrong kernel declaration, a broken worker) stops the search, never recorded
        return measure(self.runner, self.kernel, config, self.settings, recipe.profile,
                       self.language, self.source, recipe.iterations, self.expected, self.tolerance)


_CONTEXTS: dict = {}  # per worker process: recipe key -> _Context

#: seconds between two reads of the shared best on a worker (a read is a scheduler round trip)
SHARED_REFRESH_SECONDS = 0.05


class _SharedBest:
    """A worker's view of the search's best time and violated bound terms: what the batch was sent
    with, refreshed from (and improvements published to) the Dask ``Variable`` the driver keeps."""

    def __init__(self, name: str | None, best: float, violated):
        self.best, self.violated = best, set(violated)
        self.variable = None
        if name:
            distributed = import_distributed()
            self.variable = distributed.Variable(name, client=distributed.get_client())
        self.read_at = -math.inf  # the first candidate reads it: the batch may have waited

    def refresh(self) -> None:
        if self.variable is None or time.monotonic() - self.read_at < SHARED_REFRESH_SECONDS:
            return
        self.read_at = time.monotonic()
        try:
            best, violated = self.variable.get(timeout=1)
        except Exception:  # noqa: BLE001 - not set yet, or the scheduler is slow: keep what we have
            return
        self.best = min(self.best, best)
        self.violated |= set(violated)

    def cuts(self, bound: float, bottleneck) -> bool:
        """Whether a valid bound of ``bound`` proves the candidate cannot beat the best."""
        return bound >= self.best and bottleneck not in self.violated

    def learn(self, bound: float, bottleneck, status: str, seconds) -> None:
        if status != "ok":
            return
        if math.isfinite(bound) and seconds < bound:
            self.violated.add(bottleneck)
        if seconds < self.best:
            self.best = seconds
            if self.variable is not None:
                self.variable.set((self.best, tuple(sorted(map(str, self.violated)))))


def _measure_batch(recipe: MeasureRecipe, batch: list, best: float, violated: tuple,
                   shared: str | None, prunes: bool = True):
    """Measure a batch of (config, bound, bottleneck) on this worker, in order; where the strategy
    ``prunes`` (branch and bound), a candidate whose valid bound is not below the best known (on
    any worker) is cut, not run. (outcomes, seconds): per candidate (status, time, times, message),
    status "cut" for the cut ones."""
    start = time.perf_counter()
    context = _CONTEXTS.get(recipe.key())
    if context is None:
        context = _CONTEXTS[recipe.key()] = _Context(recipe)
    known = _SharedBest(shared, best, violated)
    outcomes = []
    for config, bound, bottleneck in batch:
        known.refresh()
        if prunes and known.cuts(bound, bottleneck):
            outcomes.append(("cut", None, None, None))
            continue
        outcome = context.measure(recipe, config)
        known.learn(bound, bottleneck, outcome[0], outcome[1])
        outcomes.append(outcome)
    return outcomes, time.perf_counter() - start


def _setup_on_worker(backend: str, device, replay, space=None):
    """:func:`~beastgen.harness.tuning.setup_backend` on a Dask worker, whose process must not be
    daemonic where the backend's runner starts a process (:class:`DaemonicProcess`)."""
    try:
        return setup_backend(backend, device, replay, space)
    except DaemonicProcess as e:
        raise BeastError(f"{e.message}: start the Dask GPU workers with "
                         "DASK_DISTRIBUTED__WORKER__DAEMON=False in their environment") from None


def _profile_task(backend: str, device: str | None):
    """The device profile a GPU worker's backend reads from its device (opencl:N, cuda auto)."""
    profile, runner, _ = _setup_on_worker(backend, device, None)
    runner.close()
    return profile


class _OnWorkers(Runner):
    """The driver's runner for a live backend on a cluster: a live device's answers (no problem
    size imposed, any parameters), and no device here: the GPU workers measure, each with its own
    backend (:class:`_Context`)."""

    def measure(self, launch, iterations, outputs, timeout):
        raise BeastError("on a cluster the Dask GPU workers measure, not the driver")


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

    def setup_backend(self, space):
        """(profile, runner, language) as :func:`beastgen.harness.tuning.setup_backend` gives them, on
        the driver: replay reads the file here (for the problem size and the parameters); opencl
        and cuda read the profile on a GPU worker, and the driver holds no device (its runner is
        :class:`_OnWorkers`)."""
        if self.backend == "replay":
            return setup_backend(self.backend, self.device, self.replay, space)
        if self.replay:
            raise BeastError("--replay goes with --backend replay")
        if self.backend == "cuda" and self.device and self.device.strip().lower() != "auto":
            return load_profile(self.device), _OnWorkers(), "cuda"
        future = self.client.submit(_profile_task, self.backend, self.device, resources={GPU: 1},
                                    pure=False)
        try:
            profile = future.result()
        except BeastError as e:
            raise BeastError(f"on a Dask GPU worker: {e.message}", e.where) from None
        return profile, _OnWorkers(), self.backend

    def recipe(self, space, profile, settings, iterations, source) -> MeasureRecipe:
        kernel = find_kernel(space)
        directory = os.path.dirname(os.path.abspath(space.path))
        kernel_files = tuple(os.path.relpath(os.path.join(directory, path), directory)
                             for path in (kernel.sources.values() if kernel and source else ())
                             if not os.path.isabs(path))
        replay = None
        if self.replay:
            with open(self.replay, "rb") as f:
                replay = f.read()
        return MeasureRecipe(SpaceFiles.of(space.path, kernel_files), self.backend, self.device,
                             replay, os.path.basename(self.replay) if self.replay else None, profile,
                             tuple(settings.items()), int(iterations),
                             hashlib.sha256(source.encode()).hexdigest() if source else "", __version__)

    def search(self, strategy, state, recipe: MeasureRecipe, previous: dict, measured, resumed,
               limits, start, result) -> str:
        """Run the search; why it stopped ("" when every candidate was run or pruned).

        ``measured(candidate, key, status, time, times, message)`` records and accounts a fresh
        result, ``resumed(candidate, key)`` one answered from the store; the ``limits``
        (:class:`beastgen.harness.tuning.Limits`) mean what they mean locally (checked before sending
        a batch, the runs in flight counted as run)."""
        return _Search(self.client, self.slots, strategy, state, recipe, previous, measured, resumed,
                       limits, start, result).run()


#: a batch is sized to take about this long on a worker (a task costs milliseconds of scheduling)
BATCH_SECONDS = 0.25
#: ... and holds at most this many candidates (the strategy learns from results between batches)
MAX_BATCH = 256
#: candidates faster than this (replayed ones) queue a second batch per GPU worker, which waits
#: on the worker while one runs; slower ones (real kernels) one batch per worker, so that every
#: batch is sent with the newest best time
QUEUE_BELOW_SECONDS = 0.005


class _Search:
    """The driver's side of a search on the cluster: candidates go out in batches, results come back
    into the strategy and the store (on this machine only), the best is shared with the workers."""

    def __init__(self, client, slots, strategy, state, recipe, previous, measured, resumed, limits,
                 start, result):
        self.distributed = import_distributed()
        self.client, self.slots, self.strategy, self.state = client, slots, strategy, state
        self.previous, self.measured, self.resumed = previous, measured, resumed
        self.limits, self.start, self.result = limits, start, result
        self.recipe = shared(client, recipe, "measure-recipe")  # rerun when its workers are lost
        self.shared_name = f"beastgen-best-{os.urandom(8).hex()}"
        self.shared = self.distributed.Variable(self.shared_name, client=client)
        self.published = None  # set before the first batch goes out: workers read it
        self.inflight: dict = {}  # future -> [(candidate, key), ...]
        self.queued = 0  # candidates in flight
        self.seen: set[str] = set()  # keys sent or answered in this invocation
        self.cut: list = []  # (candidate, key) cut on a worker by the best it knew
        self.again: list = []  # candidates to send before the strategy's next ones
        self.one_by_one: list = []  # candidates of a batch that killed its workers
        self.seconds_per_candidate = None  # on a worker, learnt from the batches

    def run(self) -> str:
        completions = self.distributed.as_completed(loop=self.client.loop)
        proposals = self.strategy.propose(self.state)
        violations_at_end = None
        try:
            while True:
                self.collect(block=False)
                if len(self.inflight) >= self.depth() * self.slots or (self.over() and self.inflight):
                    self.collect(block=True, completions=completions)
                    continue
                batch, exhausted = self.next_batch(proposals)
                if batch:
                    stop = self.over()
                    if stop:
                        return stop
                    self.send(batch, completions)
                    continue
                if exhausted is not None:
                    return exhausted
                # the strategy ran out
                if violations_at_end is None:
                    violations_at_end = len(self.state.violated_terms)
                if self.inflight:
                    self.collect(block=True, completions=completions)
                    continue
                if self.state.proven and len(self.state.violated_terms) > violations_at_end:
                    # a run in flight at the proof violated a bound: what it pruned comes back
                    self.state.proven, violations_at_end = False, None
                    proposals = self.strategy.propose(self.state)
                    continue
                # cut on a worker by a bound that a later run proved wrong: run them after all
                self.again = [(c, k) for c, k in self.cut if k not in self.state.times
                              and (c.bottleneck in self.state.violated_terms
                                   or not c.bound >= self.state.best_time)]
                self.cut = []
                if not self.again:
                    return ""
        finally:
            if self.inflight:
                self.client.cancel(list(self.inflight))
            with contextlib.suppress(OSError, TimeoutError):  # the scheduler may be gone
                self.shared.delete()

    def over(self) -> str:
        return self.limits.reached(self.result.ran_now + self.queued, self.start, self.state.best_time,
                                   self.state)

    def depth(self) -> int:
        """Batches in flight per GPU worker."""
        fast = self.seconds_per_candidate is not None and self.seconds_per_candidate < QUEUE_BELOW_SECONDS
        return 2 if fast else 1

    def batch_size(self) -> int:
        if self.one_by_one:
            return 1
        size = 1 if self.seconds_per_candidate is None else \
            max(1, min(MAX_BATCH, int(BATCH_SECONDS / max(self.seconds_per_candidate, 1e-9))))
        if self.limits.budget is not None:
            size = min(size, self.limits.budget - self.result.ran_now - self.queued)
        return max(size, 1)

    def next_batch(self, proposals):
        """(the next batch of (candidate, key), None), or ([], why the search stops) when the
        budget or time limit is reached on a candidate that must run, or ([], None) when the
        strategy ran out."""
        if self.one_by_one:
            return [self.one_by_one.pop()], None
        batch, size = [], self.batch_size()
        while len(batch) < size:
            if self.again:
                candidate, key = self.again.pop()
            else:
                candidate = next(proposals, None)
                if candidate is None:
                    break
                key = config_key(candidate.config)
            if key in self.seen:
                continue
            self.seen.add(key)
            if key in self.previous:
                self.resumed(candidate, key)
                continue
            batch.append((candidate, key))
        return batch, None

    def send(self, batch, completions) -> None:
        self.publish()
        future = self.client.submit(
            _measure_batch, self.recipe, [(c.config, c.bound, c.bottleneck) for c, _ in batch],
            self.state.best_time, tuple(sorted(map(str, self.state.violated_terms))), self.shared_name,
            self.strategy.prunes, resources={GPU: 1}, pure=False,
            key=f"beastgen-measure-{os.urandom(8).hex()}")
        self.inflight[future] = batch
        self.queued += len(batch)
        completions.add(future)

    def publish(self) -> None:
        """The best and violated terms into the shared Variable, when they changed."""
        now = (self.state.best_time, tuple(sorted(map(str, self.state.violated_terms))))
        if now != self.published:
            self.shared.set(now)
            self.published = now

    def collect(self, block: bool, completions=None) -> None:
        while block and self.inflight:  # until one still in flight is done (skip those collected)
            if next(completions) in self.inflight:
                break
        for future in [f for f in self.inflight if f.done()]:
            batch = self.inflight.pop(future)
            self.queued -= len(batch)
            outcomes = _outcomes(future)
            if outcomes is None:  # it killed its workers: run its candidates one by one
                if len(batch) == 1:
                    candidate, key = batch[0]
                    self.measured(candidate, key, "launch", None, None, "the configuration killed "
                                  "every Dask worker that ran it")
                else:
                    self.one_by_one += batch
                continue
            outcomes, seconds = outcomes
            ran = sum(1 for o in outcomes if o[0] != "cut")
            if ran:
                per = seconds / ran
                self.seconds_per_candidate = per if self.seconds_per_candidate is None else \
                    0.5 * (self.seconds_per_candidate + per)
            for (candidate, key), outcome in zip(batch, outcomes):
                if outcome[0] == "cut":
                    self.seen.discard(key)
                    self.cut.append((candidate, key))
                else:
                    self.measured(candidate, key, *outcome)
        self.publish()


def _outcomes(future):
    """(outcomes, seconds) of a finished batch; None when it killed every worker that ran it."""
    if future.status == "finished":
        return future.result()
    if isinstance(future.exception(), import_distributed().KilledWorker):
        return None
    raise_worker_error(future)


def tune_on_cluster(space_path: str, scheduler: str, backend: str = "opencl", device=None,
                    replay: str | None = None, strategy: str = DEFAULT,
                    **options) -> TuneResult:
    """:func:`beastgen.harness.tuning.tune` with every candidate run on a Dask worker holding a GPU
    (``scheduler``: a Dask scheduler address or ``local:N``)."""
    strategy = ALIASES.get(strategy, strategy)
    if strategy not in STRATEGIES:  # before starting a cluster
        raise BeastError(f"unknown strategy '{strategy}': use {', '.join(STRATEGIES)}")
    with TunePool(scheduler, backend, device, replay) as pool:
        return tune(space_path, backend=backend, device=device, replay=replay, strategy=strategy,
                    pool=pool, **options)
