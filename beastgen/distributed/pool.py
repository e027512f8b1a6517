"""``beastgen tune --scheduler``: the candidates run on Dask workers holding a GPU (the worker
resource ``GPU``), one batch at a time per GPU worker. The search itself is the harness's one loop
(:meth:`beastgen.harness.tuning.Tuning.search`: the strategy, the results store on the driver's
machine, the limits, branch and bound's cuts); this module is its batch runner on the cluster
(:class:`OnGPUWorkers`), and answers the loop's set-up (:meth:`TunePool.setup_backend`).

Batches: a Dask task costs milliseconds of scheduling, more than a replayed measurement, so the
driver sends candidates in batches sized to take about :data:`BATCH_SECONDS` on a worker (learnt
from the batches that came back; the first holds one candidate), one per GPU worker at a time, or
two when candidates are fast (:data:`QUEUE_BELOW_SECONDS`: replayed ones), so that a worker never
waits for the driver.

Pruning (a branch-and-bound strategy's: ``Strategy.prunes``; any other strategy, exhaustive among
them, runs every candidate it proposes) stays exact and shared: a batch carries the best time and
the violated bound terms known when it was sent, and a worker reads newer ones from a Dask
``Variable`` (published by the driver whenever its best improves, and by a worker when it measures
a better time), so a cut made on one worker prunes on all. A worker cuts a candidate whose valid
bound is not below the best it knows (never runs it); the search loop sends cut candidates again
only if their bound term was later violated. Branch and bound proves its best only after every
batch in flight has come back; a bound violation among them reopens the search.

Nothing of the driver's file system is needed on a worker: the space file, the modules beside it
that it imports and the kernel sources travel in the recipe (:mod:`.shipping`), and so does a
replay file's content. The driver reads the replay file too: a configuration missing from it is
answered there by the search loop, as locally, and never sent to a worker. A search stopped
(Ctrl-C, a kill) resumes from the store as locally: what was recorded is answered from it, the
batches in flight run again.

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
from ..harness.batches import CUT, BatchRunner
from ..harness.isolate import DaemonicProcess
from ..harness.kernel import find_kernel
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
    status :data:`~beastgen.harness.batches.CUT` for the cut ones."""
    start = time.perf_counter()
    context = _CONTEXTS.get(recipe.key())
    if context is None:
        context = _CONTEXTS[recipe.key()] = _Context(recipe)
    known = _SharedBest(shared, best, violated)
    outcomes = []
    for config, bound, bottleneck in batch:
        known.refresh()
        if prunes and known.cuts(bound, bottleneck):
            outcomes.append((CUT, None, None, None))
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

    def batches(self, space, profile, settings, iterations, source, prunes: bool,
                state) -> OnGPUWorkers:
        """The search loop's batch runner on this cluster's GPU workers; ``prunes``: whether the
        strategy is branch and bound (the workers cut by the best time); ``state``: the search's
        (its best time and violated terms are shared with the workers)."""
        return OnGPUWorkers(self.client, self.slots, self.recipe(space, profile, settings, iterations,
                                                                 source), prunes, state)


#: a batch is sized to take about this long on a worker (a task costs milliseconds of scheduling)
BATCH_SECONDS = 0.25
#: ... and holds at most this many candidates (the strategy learns from results between batches)
MAX_BATCH = 256
#: candidates faster than this (replayed ones) queue a second batch per GPU worker, which waits
#: on the worker while one runs; slower ones (real kernels) one batch per worker, so that every
#: batch is sent with the newest best time
QUEUE_BELOW_SECONDS = 0.005


class OnGPUWorkers(BatchRunner):
    """The search loop's batch runner on a cluster: each batch is one Dask task on a GPU worker,
    the search's best time and violated terms shared with the workers (a Dask ``Variable``)."""

    def __init__(self, client, slots: int, recipe: MeasureRecipe, prunes: bool, state):
        self.distributed = import_distributed()
        self.client, self.slots, self.prunes, self.state = client, slots, prunes, state
        self.recipe = shared(client, recipe, "measure-recipe")  # rerun when its workers are lost
        self.shared_name = f"beastgen-best-{os.urandom(8).hex()}"
        self.shared = self.distributed.Variable(self.shared_name, client=client)
        self.published = None  # set before the first batch goes out: workers read it
        self.completions = self.distributed.as_completed(loop=client.loop)
        self.tasks: dict = {}  # future -> its [(candidate, key), ...]
        self.in_flight = 0
        self.seconds_per_candidate = None  # on a worker, learnt from the batches

    def batch_size(self) -> int:
        if self.seconds_per_candidate is None:
            return 1
        return max(1, min(MAX_BATCH, int(BATCH_SECONDS / max(self.seconds_per_candidate, 1e-9))))

    def full(self) -> bool:
        """One batch per GPU worker in flight, two when candidates are fast."""
        fast = self.seconds_per_candidate is not None and self.seconds_per_candidate < QUEUE_BELOW_SECONDS
        return len(self.tasks) >= (2 if fast else 1) * self.slots

    def send(self, batch: list) -> None:
        self.publish()
        future = self.client.submit(
            _measure_batch, self.recipe, [(c.config, c.bound, c.bottleneck) for c, _ in batch],
            self.state.best_time, tuple(sorted(map(str, self.state.violated_terms))), self.shared_name,
            self.prunes, resources={GPU: 1}, pure=False, key=f"beastgen-measure-{os.urandom(8).hex()}")
        self.tasks[future] = batch
        self.in_flight += len(batch)
        self.completions.add(future)

    def publish(self) -> None:
        """The best and violated terms into the shared Variable, when they changed."""
        now = (self.state.best_time, tuple(sorted(map(str, self.state.violated_terms))))
        if now != self.published:
            self.shared.set(now)
            self.published = now

    def collect(self, block: bool) -> list:
        if self.tasks:
            self.publish()  # what the search learnt since: for the batches running now
        while block and self.tasks:  # until one still in flight is done (skip those collected)
            if next(self.completions) in self.tasks:
                break
        done = []
        for future in [f for f in self.tasks if f.done()]:
            batch = self.tasks.pop(future)
            self.in_flight -= len(batch)
            outcomes = _outcomes(future)
            if outcomes is None:  # it killed its workers: its candidates again, one per task
                if len(batch) == 1:
                    candidate, key = batch[0]
                    done.append((candidate, key, ("launch", None, None, "the configuration killed "
                                                  "every Dask worker that ran it")))
                else:
                    for one in batch:
                        self.send([one])
                continue
            outcomes, seconds = outcomes
            ran = sum(1 for o in outcomes if o[0] != CUT)
            if ran:
                per = seconds / ran
                self.seconds_per_candidate = per if self.seconds_per_candidate is None else \
                    0.5 * (self.seconds_per_candidate + per)
            done += [(candidate, key, outcome) for (candidate, key), outcome in zip(batch, outcomes)]
        return done

    def close(self) -> None:
        if self.tasks:
            self.client.cancel(list(self.tasks))
        with contextlib.suppress(OSError, TimeoutError):  # the scheduler may be gone
            self.shared.delete()


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
