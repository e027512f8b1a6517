"""Counting, statistics and enumeration in chunks on Dask workers.

The generated enumerator walks its first ``split_level`` loop levels in every chunk; the valid
prefixes of that depth are the split nodes, numbered in walk order. The driver estimates the
subtree of every node (``CompiledPlan.split_census``: Knuth descents below each node estimate its
valid configurations and the loop iterations enumerating them takes), cuts the nodes into
contiguous ranges of about equal estimated work (:func:`balanced_chunks`) and sends
one task per range. Each worker rebuilds the same compiled plan from a :class:`PlanRecipe` (the
shipped space file is loaded again there: a space holds the user's functions, which need not pickle) and
runs ``count`` / ``stats`` / ``enumerate`` with ``chunk=(lo, hi)``; an estimate splits its samples
into tasks of independent random streams and merges their sums.
"""
from __future__ import annotations

import concurrent.futures
import hashlib
import io
import json
import math
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from ..compiler.runtime import Estimate, Stats, compile_space
from ..compiler.runtime.chunking import balanced_chunks
from ..errors import BeastError
from ..loading.load import load
from ..support.output import AtomicOutput, write_parquet
from ..version import __version__
from .cluster import import_distributed, raise_worker_error, shared, worker_count
from .shipping import SpaceFiles, check_same_enumerator, importable_beside, worker_generated_dir

#: chunks per worker: enough that a worker finishing early takes more, few enough to stay cheap
CHUNKS_PER_WORKER = 4
#: Knuth descents for the balance estimate, over all split nodes (about 0.7 s for the flagship's
#: 464 nodes), and the least and most per node: Knuth's estimator has a heavy tail, and with 32
#: descents per node the flagship's chunks come out 1.8x the mean instead of 1.2x
CENSUS_DESCENTS = 1_000_000
SAMPLES_PER_NODE = (32, 4096)
#: where the census would need more than CENSUS_DESCENTS (over 31,250 split nodes: a wide space,
#: where it cost as much as the whole count), the nodes are cut into equal ranges instead, this
#: many times more of them: thousands of nodes in each even out, and Dask hands the chunks to the
#: workers as they finish
EVEN_SPLIT_FACTOR = 4
#: how long a run waits for a worker when every worker is gone (lost, and none started again)
NO_WORKER_SECONDS = 60.0
PART_NAME = "part-{:05d}.parquet"
METADATA_NAME = "_beastgen.json"


# -- splitting --------------------------------------------------------------------------------------
def plan_chunks(plan, n_chunks: int, samples_per_node: int | None = None, seed: int = 0):
    """(chunks, the census of the split nodes, or None) for ``plan``: the chunks balance the
    estimated work (loop iterations), which is what a chunk's time follows; by default
    CENSUS_DESCENTS descents are shared among the split nodes (within SAMPLES_PER_NODE), and where
    they cannot give each node its least, there is no census: ``n_chunks * EVEN_SPLIT_FACTOR``
    equal ranges of nodes."""
    if samples_per_node is None:
        nodes = plan.split_node_count()
        low, high = SAMPLES_PER_NODE
        if nodes * low > CENSUS_DESCENTS or plan.huge_scanned_level() is not None:
            return balanced_chunks(np.zeros(nodes), n_chunks * EVEN_SPLIT_FACTOR), None  # equal
        samples_per_node = max(low, min(high, CENSUS_DESCENTS // max(nodes, 1)))
    census = plan.split_census(samples_per_node=samples_per_node, seed=seed)
    return balanced_chunks(census.iterations, n_chunks), census


def chunk_estimates(estimates, chunks) -> list[float]:
    """The estimate of each chunk (sums over its nodes); none without a census."""
    if estimates is None:
        return []
    return [float(np.sum(estimates[lo:hi])) for lo, hi in chunks]


def _estimates(census, what: str):
    return getattr(census, what) if census is not None else None


# -- rebuilding the plan on a worker ----------------------------------------------------------------
@dataclass(frozen=True)
class PlanRecipe:
    """What a worker needs to rebuild a compiled plan, none of it from the driver's file system: the
    space's files (:class:`~.shipping.SpaceFiles`), the device profile, every setting's value, and
    the driver's beastgen version, space path and generated source (the worker checks that it
    generates the same enumerator, then compiles the driver's source into its own generated
    directory)."""

    space: SpaceFiles
    device: object  # DeviceProfile (a frozen dataclass: pickles)
    settings: tuple  # ((name, value), ...)
    space_path: str  # as the driver's generated source names it
    source: str
    version: str

    @classmethod
    def of(cls, plan) -> "PlanRecipe":
        spec = plan.specialized
        space = spec.space
        if not space.path or not os.path.exists(space.path):
            raise BeastError(f"space '{space.name}' was not loaded from a file: a distributed run "
                             "loads the space file again on every worker")
        return cls(SpaceFiles.of(space.path), spec.device, tuple(spec.settings.items()), space.path,
                   plan.source, __version__)

    def key(self) -> tuple:
        return (self.space.digest, self.device.fingerprint(), repr(self.settings),
                hashlib.sha256(self.source.encode()).hexdigest(), self.version)


_PLANS: dict = {}  # per worker process: recipe key -> CompiledPlan


def worker_plan(recipe: PlanRecipe):
    """The compiled plan of ``recipe`` in this process (built once, then cached): the shipped space
    loaded from this worker's generated directory, compiled there."""
    key = recipe.key()
    plan = _PLANS.get(key)
    if plan is not None:
        return plan
    path = recipe.space.materialize()
    with importable_beside(path):
        space = load(path)
    plan = compile_space(space, device=recipe.device, settings=dict(recipe.settings),
                         generated_dir=worker_generated_dir())
    check_same_enumerator(recipe.version, recipe.source, recipe.space_path, plan.source, space.path)
    plan.source = recipe.source  # byte for byte the driver's (its messages name the driver's paths)
    _PLANS[key] = plan
    return plan


# -- worker tasks -----------------------------------------------------------------------------------
def _count_task(recipe: PlanRecipe, chunk: tuple[int, int]):
    plan = worker_plan(recipe)
    n = plan.count(chunk=chunk)
    return n, plan.last_seconds


def _stats_task(recipe: PlanRecipe, chunk: tuple[int, int]):
    plan = worker_plan(recipe)
    return plan.stats(chunk=chunk)


def _enumerate_task(recipe: PlanRecipe, chunk: tuple[int, int], path: str, token: str):
    """Enumerate one chunk into the Parquet file ``path`` (written under a hidden name, then
    renamed) when this worker sees the driver's output directory (it holds the driver's ``token``
    file); else the Parquet bytes go back to the driver, which writes them. (rows, seconds of the
    enumeration, the bytes or None)."""
    plan = worker_plan(recipe)
    configs = plan.enumerate(chunk=chunk)
    seconds = plan.last_seconds
    directory, name = os.path.split(path)
    if not os.path.exists(os.path.join(directory, token)):
        buffer = io.BytesIO()
        write_parquet(buffer, configs)
        return len(configs), seconds, buffer.getvalue()
    tmp = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
    try:
        write_parquet(tmp, configs)
        os.replace(tmp, path)
    except BaseException:  # a full disk, a cancelled task: no half part left
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return len(configs), seconds, None


def _estimate_task(recipe: PlanRecipe, part: tuple[int, int], method: str):
    """(sum, sum of squares, seconds) of ``samples`` estimates from the random stream ``seed``
    (``part = (samples, seed)``)."""
    samples, seed = part
    plan = worker_plan(recipe)
    total, total_sq = plan.estimate_sums(samples, seed, method)
    return float(total), float(total_sq), plan.last_seconds


# -- the driver -------------------------------------------------------------------------------------
@dataclass
class ChunkedRun:
    """What a distributed count or enumeration did: per chunk its node range, estimated and actual
    configurations, estimated work (loop iterations: what the chunks balance) and the worker's
    enumeration seconds."""

    count: int
    chunks: list
    estimated: list
    actual: list
    worker_seconds: list
    seconds: float  # wall time of the distributed part (census, tasks, merge)
    census_seconds: float
    workers: int
    estimated_work: list = field(default_factory=list)

    def balance(self) -> dict:
        """max/mean over the chunks (1.0 is perfect balance) of the estimated work and of the
        measured seconds."""
        def ratio(sizes):
            mean = sum(sizes) / len(sizes) if sizes else 0
            return max(sizes) / mean if mean else math.nan
        return {"chunks": len(self.chunks), "work_max_over_mean": ratio(self.estimated_work),
                "seconds_max_over_mean": ratio(self.worker_seconds)}

    def as_dict(self) -> dict:
        return {"workers": self.workers, "chunks": [list(c) for c in self.chunks],
                "estimated": self.estimated, "actual": self.actual,
                "estimated_work": self.estimated_work,
                "worker_seconds": self.worker_seconds, "census_seconds": self.census_seconds,
                "seconds": self.seconds, **self.balance()}


def _run_tasks(client, function, recipe, chunks, extra=None, progress=True, what="chunks"):
    """One task per chunk; the results in chunk order (with a progress bar over chunks). A task
    lost with its worker is computed again (its result is taken once it is back); with no worker
    left for NO_WORKER_SECONDS, one line."""
    distributed = import_distributed()
    recipe_future = shared(client, recipe, "recipe")  # rerun with the tasks of a lost worker
    futures = [client.submit(function, recipe_future, chunk, *(extra(i) if extra else ()),
                             key=f"beastgen-{function.__name__.strip('_')}-{i}-{os.urandom(4).hex()}",
                             pure=False)
               for i, chunk in enumerate(chunks)]
    position = {future.key: i for i, future in enumerate(futures)}
    results, missing = [None] * len(futures), set(position)
    bar = _progress_bar(progress, len(futures), what)
    completed = distributed.as_completed(futures, loop=client.loop)
    idle_since = time.monotonic()
    try:
        while missing:
            ready = completed.next_batch(block=False)
            for future in ready:
                if future.status in ("error", "cancelled"):
                    raise_worker_error(future)
                try:
                    results[position[future.key]] = future.result(timeout=NO_WORKER_SECONDS)
                except distributed.TimeoutError:  # lost with its worker since: computed again
                    completed.add(future)
                    continue
                except concurrent.futures.CancelledError:  # forgotten by the scheduler meanwhile
                    raise BeastError("the Dask scheduler cancelled a task of this run (its workers "
                                     "or the scheduler went away); run the command again") from None
                missing.discard(future.key)
                if bar is not None:
                    bar.update(1)
            if ready:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since > 1.0:  # nothing for a while: any worker left?
                _check_workers_left(client, len(futures) - len(missing), len(futures), what)
                idle_since = time.monotonic()
            else:
                time.sleep(0.02)
        return results
    finally:
        if bar is not None:
            bar.close()
        client.cancel([*futures, recipe_future])


def _check_workers_left(client, done: int, total: int, what: str) -> None:
    """One line when the cluster has had no worker for NO_WORKER_SECONDS (every worker of the run
    lost and none started again): Dask would wait for one forever."""
    deadline = time.monotonic() + NO_WORKER_SECONDS
    while not client.nthreads():
        if time.monotonic() > deadline:
            raise BeastError(f"every Dask worker is gone and none joined within "
                             f"{NO_WORKER_SECONDS:g} s ({done} of {total} {what} done); start "
                             "workers and run the command again")
        time.sleep(0.2)


def _progress_bar(enabled: bool, total: int, unit: str):
    if not enabled:
        return None
    try:  # optional: no bar without tqdm
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit=unit[:-1] if unit.endswith("s") else unit, file=sys.stderr,
                dynamic_ncols=True, disable=None)


def _prepare(plan, client, n_chunks, samples_per_node):
    workers = worker_count(client)
    start = time.perf_counter()
    chunks, census = plan_chunks(plan, n_chunks or CHUNKS_PER_WORKER * workers, samples_per_node)
    return workers, chunks, census, time.perf_counter() - start


def count(plan, client, n_chunks: int | None = None, samples_per_node: int | None = None,
          progress: bool = True) -> ChunkedRun:
    """The number of valid configurations of ``plan``, counted in chunks on the cluster."""
    start = time.perf_counter()
    if plan.plan is None:
        return ChunkedRun(0, [], [], [], [], 0.0, 0.0, 0)
    workers, chunks, census, census_seconds = _prepare(plan, client, n_chunks, samples_per_node)
    results = _run_tasks(client, _count_task, PlanRecipe.of(plan), chunks, progress=progress)
    actual = [int(n) for n, _ in results]
    return ChunkedRun(sum(actual), chunks, chunk_estimates(_estimates(census, 'configurations'), chunks), actual,
                      [float(s) for _, s in results], time.perf_counter() - start, census_seconds, workers,
                      chunk_estimates(_estimates(census, 'iterations'), chunks))


def merge_stats(plan, parts: list):
    """One :class:`~beastgen.compiler.runtime.Stats` from those of chunks partitioning the split nodes.

    Every chunk walks the levels above the split level, so their iterations (and the rejections
    and errors of what is placed there) are the same in every chunk and are taken once; what is
    below the split nodes is summed."""

    if not parts:
        return plan.stats(chunk=(0, 0)) if plan.plan is not None else Stats(0, [], {}, {}, 0.0)
    k = plan.split_level
    level_of = {}
    for index, level in enumerate(plan.plan.levels):
        for item in level.items:
            level_of[item.name] = index
        level_of[level.iterator.name] = index

    def merged(name, values):
        if level_of.get(name, len(plan.plan.levels)) < k:
            if any(v != values[0] for v in values):
                raise BeastError(f"internal error: chunks disagree on '{name}' above the split "
                                 f"level ({values}): the chunks' statistics cannot be merged")
            return values[0]
        return sum(values)

    levels = [(name, merged(name, [p.levels[i][1] for p in parts]))
              for i, (name, _) in enumerate(parts[0].levels)]
    rejections = {name: merged(name, [p.rejections.get(name, 0) for p in parts])
                  for name in parts[0].rejections}
    error_names = list(dict.fromkeys(n for p in parts for n in p.errors))
    errors = {name: merged(name, [p.errors.get(name, 0) for p in parts]) for name in error_names}
    return Stats(sum(p.count for p in parts), levels, rejections, {n: v for n, v in errors.items() if v},
                 sum(p.seconds for p in parts))


def stats(plan, client, n_chunks: int | None = None, samples_per_node: int | None = None,
          progress: bool = True):
    """(merged Stats, ChunkedRun) of ``plan``, computed in chunks on the cluster."""
    start = time.perf_counter()
    if plan.plan is None:
        return plan.stats(), ChunkedRun(0, [], [], [], [], 0.0, 0.0, 0)
    workers, chunks, census, census_seconds = _prepare(plan, client, n_chunks, samples_per_node)
    parts = _run_tasks(client, _stats_task, PlanRecipe.of(plan), chunks, progress=progress)
    merged = merge_stats(plan, parts)
    run = ChunkedRun(merged.count, chunks, chunk_estimates(_estimates(census, 'configurations'), chunks),
                     [p.count for p in parts], [p.seconds for p in parts],
                     time.perf_counter() - start, census_seconds, workers,
                      chunk_estimates(_estimates(census, 'iterations'), chunks))
    return merged, run


def prepare_directory(directory: str) -> None:
    """Make ``directory`` ready for a partitioned dataset: created when missing; an old dataset's
    parts (and its metadata) are removed; anything else in it is an error."""
    if os.path.splitext(directory)[1].lower() in (".csv", ".npy"):
        raise BeastError("a distributed enumeration writes a partitioned Parquet dataset: -o takes "
                         f"a directory (part-00000.parquet, ... go into it), not '{directory}'")
    if os.path.isfile(directory):
        raise BeastError("a distributed enumeration writes a partitioned Parquet dataset into a "
                         "directory, and this is a file", directory)
    os.makedirs(directory, exist_ok=True)
    other = [name for name in os.listdir(directory) if not name.startswith((".", "_"))
             and not (name.startswith("part-") and name.endswith(".parquet"))]
    if other:
        raise BeastError(f"the output directory holds other files ({', '.join(sorted(other)[:3])}"
                         f"{', ...' if len(other) > 3 else ''}): give an empty or new directory",
                         directory)
    for name in os.listdir(directory):
        if (name.startswith("part-") and name.endswith(".parquet")) or name == METADATA_NAME:
            os.remove(os.path.join(directory, name))


def enumerate_to_parquet(plan, client, directory: str, n_chunks: int | None = None,
                         samples_per_node: int | None = None, progress: bool = True) -> ChunkedRun:
    """Every valid configuration of ``plan``, written by the workers as the partitioned Parquet
    dataset ``directory/part-00000.parquet, ...``: the parts in order hold the rows of the local
    ``enumerate()`` in its order. ``_beastgen.json`` records the space, the parts and their rows."""
    try:  # optional (beastgen[data]): only Parquet output needs it
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise BeastError("writing .parquet needs pyarrow: pip install 'beastgen[data]'") from None
    start = time.perf_counter()
    prepare_directory(directory)
    directory = os.path.abspath(directory)
    recipe = PlanRecipe.of(plan) if plan.plan is not None else None
    if recipe is None:  # empty space: one empty part with the right columns
        write_parquet(os.path.join(directory, PART_NAME.format(0)), plan.enumerate())
        run = ChunkedRun(0, [], [], [0], [0.0], time.perf_counter() - start, 0.0, 0)
    else:
        workers, chunks, census, census_seconds = _prepare(plan, client, n_chunks, samples_per_node)
        token = f".beastgen-driver-{os.urandom(8).hex()}"  # a worker seeing it shares the directory
        with open(os.path.join(directory, token), "w", encoding="utf-8"):
            pass
        try:
            results = _run_tasks(client, _enumerate_task, recipe, chunks, progress=progress,
                                 extra=lambda i: (os.path.join(directory, PART_NAME.format(i)), token))
        finally:
            os.remove(os.path.join(directory, token))
        for i, (_, _, data) in enumerate(results):
            if data is not None:  # from a worker that does not see this directory
                with AtomicOutput(os.path.join(directory, PART_NAME.format(i))) as temporary:
                    with open(temporary, "wb") as f:
                        f.write(data)
        actual = [int(n) for n, _, _ in results]
        run = ChunkedRun(sum(actual), chunks, chunk_estimates(_estimates(census, 'configurations'), chunks), actual,
                         [float(s) for _, s, _ in results], time.perf_counter() - start, census_seconds,
                         workers, chunk_estimates(_estimates(census, 'iterations'), chunks))
    spec = plan.specialized
    with open(os.path.join(directory, METADATA_NAME), "w", encoding="utf-8") as f:
        json.dump({"space": spec.space.name, "path": spec.space.path, "device": spec.device.key,
                   "settings": {k: (v.item() if hasattr(v, "item") else v)
                                for k, v in spec.settings.items()},
                   "columns": plan.columns, "count": run.count,
                   "parts": [{"file": PART_NAME.format(i), "rows": n, "split_nodes": list(c)}
                             for i, (n, c) in enumerate(zip(run.actual, run.chunks or [(0, 0)]))]},
                  f, indent=1, default=str)
    return run


#: samples per estimate task (Chen's runs are far more work than Knuth's descents)
ESTIMATE_TASK_SAMPLES = {"knuth": 25_000, "chen": 2_500}


def estimate_parts(samples: int, method: str) -> list[int]:
    """``samples`` cut into tasks of at most :data:`ESTIMATE_TASK_SAMPLES` (the last one smaller)."""
    size = ESTIMATE_TASK_SAMPLES[method]
    return [min(size, samples - start) for start in range(0, samples, size)]


def estimate(plan, client, samples: int | None = None, seed: int = 0, method: str = "chen") -> Estimate:
    """:meth:`~beastgen.compiler.runtime.CompiledPlan.estimate` in tasks of
    :data:`ESTIMATE_TASK_SAMPLES`, task ``i`` drawing from the random stream ``seed + i``, their sums
    merged into one estimate; on the cluster ``client``, or in this process (``client`` None: the
    same tasks, the same estimate)."""
    if method not in ESTIMATE_TASK_SAMPLES:
        raise BeastError(f"unknown estimation method {method!r} (knuth or chen)")
    samples = plan.ESTIMATE_SAMPLES[method] if samples is None else int(samples)
    if plan.plan is None or samples < 1:
        return plan.estimate(samples, seed, method)
    parts = [(n, seed + i) for i, n in enumerate(estimate_parts(samples, method))]
    start = time.perf_counter()
    if client is None:
        sums = [plan.estimate_sums(n, part_seed, method) for n, part_seed in parts]
    else:
        results = _run_tasks(client, _estimate_task, PlanRecipe.of(plan), parts,
                             extra=lambda i: (method,), progress=False, what="tasks")
        sums = [result[:2] for result in results]
    total = math.fsum(s for s, _ in sums)
    total_sq = math.fsum(s for _, s in sums)
    return Estimate.of_sums(total, total_sq, samples, time.perf_counter() - start, method)
