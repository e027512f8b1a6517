"""Past one machine: count, statistics, enumeration, estimates and tuning on a Dask cluster give
exactly what the local run gives. The cluster (one for the whole module) is a `dask scheduler` and
a `dask worker` with 2 worker processes, started as separate processes in another directory."""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest

from beastgen.distributed import balanced_chunks
from beastgen.errors import BeastError

from conftest import PATIENCE_SECONDS, REPLAY, REPO

distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.slow  # real Dask processes and clusters

GEMM = os.path.join(REPO, "spaces", "gemm.py")
GEMM_CLBLAST = os.path.join(REPO, "spaces", "gemm_clblast.py")


# -- balanced_chunks (pure) -------------------------------------------------------------------------
def _check_partition(chunks, n):
    assert chunks[0][0] == 0 and chunks[-1][1] == n
    assert all(lo < hi for lo, hi in chunks)  # never empty
    assert all(a[1] == b[0] for a, b in zip(chunks, chunks[1:]))  # contiguous, in order


def test_balanced_chunks_cut_at_the_prefix_sums_closest_to_equal_shares():
    assert balanced_chunks([1] * 10, 3) == [(0, 3), (3, 7), (7, 10)]
    assert balanced_chunks([1] * 8, 4) == [(0, 2), (2, 4), (4, 6), (6, 8)]
    # one heavy node gets a chunk of its own
    assert balanced_chunks([1, 1, 1, 100, 1, 1], 3) == [(0, 3), (3, 4), (4, 6)]
    assert balanced_chunks([5, 1, 1, 1, 1, 1], 2) == [(0, 1), (1, 6)]


def test_balanced_chunks_edge_cases():
    assert balanced_chunks([], 4) == []
    assert balanced_chunks([3.0], 4) == [(0, 1)]
    assert balanced_chunks([1, 2], 5) == [(0, 1), (1, 2)]  # at most one chunk per node
    assert balanced_chunks([7, 7, 7], 0) == [(0, 3)]
    # no estimate (every descent died, NaN, negative): equal numbers of nodes
    assert balanced_chunks([0, 0, 0, 0], 2) == [(0, 2), (2, 4)]
    assert balanced_chunks([float("nan"), -1, float("nan"), 0], 2) == [(0, 2), (2, 4)]
    # all the weight at one end: every chunk still holds a node
    chunks = balanced_chunks([0] * 9 + [1000], 4)
    _check_partition(chunks, 10)
    assert len(chunks) == 4 and chunks[-1] == (9, 10)


def test_balanced_chunks_balance_random_estimates():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 300))
        estimates = rng.exponential(1.0, n) * (rng.random(n) < 0.8)
        m = int(rng.integers(1, 40))
        chunks = balanced_chunks(estimates, m)
        _check_partition(chunks, n)
        assert len(chunks) == min(m, n)
        if estimates.sum() > 0:
            share = estimates.sum() / len(chunks)
            sizes = [estimates[lo:hi].sum() for lo, hi in chunks]
            # a cut is off its target by at most one node: no chunk exceeds a share by more than
            # the two largest nodes
            assert max(sizes) <= share + 2 * estimates.max() + 1e-9


# -- one real cluster for the module -----------------------------------------------------------------
def _stop(process) -> None:
    """End ``process`` and its children (its own process group): SIGTERM, then SIGKILL."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=15)
    except ProcessLookupError:
        pass


@pytest.fixture(scope="module")
def cluster_processes(tmp_path_factory):
    """``dask scheduler`` and ``dask worker`` (2 worker processes of 1 thread, each declaring one
    GPU, not daemonic) started as separate processes in a directory of their own, as a cluster's
    job system would start them: their working directory holds nothing of the project, their
    generated directory is their own. Stopped by process group, also when the tests fail."""
    home = tmp_path_factory.mktemp("cluster")
    scheduler_file = home / "scheduler.json"
    environment = dict(os.environ, PYTHONPATH=REPO, BEASTGEN_GENERATED_DIR=str(home / "worker-generated"),
                       DASK_DISTRIBUTED__WORKER__DAEMON="False")
    def dask(command, *arguments):  # `dask scheduler ...`, with this Python
        return [sys.executable, "-m", f"distributed.cli.dask_{command}", *arguments]

    started = []
    try:
        for command, log in (
                (dask("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                      "--scheduler-file", str(scheduler_file)), "scheduler.log"),
                (dask("worker", "--scheduler-file", str(scheduler_file), "--nworkers", "2",
                      "--nthreads", "1", "--resources", "GPU=1", "--no-dashboard"), "worker.log")):
            with open(home / log, "wb") as output:
                started.append(subprocess.Popen(command, cwd=home, env=environment, stdout=output,
                                                stderr=subprocess.STDOUT, start_new_session=True))
            deadline = time.monotonic() + PATIENCE_SECONDS
            while not scheduler_file.exists() and time.monotonic() < deadline:
                time.sleep(0.2)
        assert scheduler_file.exists(), (home / "scheduler.log").read_text()
        yield {"file": str(scheduler_file), "address": json.loads(scheduler_file.read_text())["address"],
               "home": home}
    finally:
        for process in reversed(started):
            _stop(process)


@pytest.fixture(scope="module")
def cluster(cluster_processes):
    """A client of the module's cluster, once both of its workers have joined."""
    client = distributed.Client(cluster_processes["address"], set_as_default=False,
                                timeout=PATIENCE_SECONDS)
    try:
        client.wait_for_workers(2, timeout=PATIENCE_SECONDS)
        yield client
    finally:
        client.close()


@pytest.fixture(scope="module")
def gemm_local(gemm_h100):
    """Local count, statistics and enumeration of the flagship space (h100, defaults)."""
    return {"count": gemm_h100.count(), "stats": gemm_h100.stats(), "rows": gemm_h100.enumerate()}


def test_distributed_count_and_stats_of_gemm_equal_the_local_ones(cluster, gemm_h100, gemm_local):
    from beastgen import distributed as dist

    run = dist.count(gemm_h100, cluster, progress=False)
    assert run.count == gemm_local["count"] == 459_316
    assert run.workers == 2 and len(run.chunks) == min(8, len(gemm_h100.split_census()))
    assert sum(run.actual) == run.count and len(run.estimated) == len(run.chunks)
    assert run.chunks[0][0] == 0 and all(a[1] == b[0] for a, b in zip(run.chunks, run.chunks[1:]))
    # the census sees the space's size: the estimates add up to about the count
    assert 0.8 * run.count < sum(run.estimated) < 1.25 * run.count

    merged, stats_run = dist.stats(gemm_h100, cluster, n_chunks=5, progress=False)
    local = gemm_local["stats"]
    assert gemm_h100.split_level >= 1  # levels above the split are walked in every chunk
    assert merged.count == local.count
    assert merged.levels == local.levels
    assert merged.rejections == local.rejections
    assert merged.errors == local.errors
    assert sum(stats_run.actual) == local.count and len(stats_run.chunks) == 5


def test_distributed_enumeration_is_a_parquet_dataset_of_the_local_rows(cluster, gemm_h100,
                                                                        gemm_local, tmp_path):
    import pandas as pd
    import pyarrow.dataset as ds

    from beastgen import distributed as dist

    out = tmp_path / "gemm-dataset"
    run = dist.enumerate_to_parquet(gemm_h100, cluster, str(out), progress=False)
    assert run.count == 459_316
    parts = sorted(p.name for p in out.iterdir() if p.name.startswith("part-"))
    assert parts == [f"part-{i:05d}.parquet" for i in range(len(run.chunks))]
    metadata = json.loads((out / "_beastgen.json").read_text())
    assert metadata["count"] == 459_316 and [p["rows"] for p in metadata["parts"]] == run.actual
    expected = pd.DataFrame(gemm_local["rows"])
    table = ds.dataset(str(out), format="parquet").to_table()  # parts in file-name order
    pd.testing.assert_frame_equal(table.to_pandas(), expected)
    # part by part, in order, too (what a reader that lists the parts itself sees)
    concatenated = pd.concat([pd.read_parquet(out / name) for name in parts], ignore_index=True)
    pd.testing.assert_frame_equal(concatenated, expected)


def test_cli_count_through_the_scheduler_file_from_any_directory(cluster, cluster_processes,
                                                                  generated_dir, capsys, monkeypatch):
    """The workers run elsewhere (their own directory and generated code): a relative and an
    absolute path to the space, from the driver's working directory, count the same."""
    from beastgen.cli import main

    monkeypatch.chdir(REPO)
    for space in (os.path.relpath(GEMM), GEMM):
        code = main(["count", space, "--scheduler-file", cluster_processes["file"], "--generated-dir",
                     generated_dir, "--json"])
        out = capsys.readouterr().out
        assert code == 0, out
        record = json.loads(out.strip().splitlines()[-1])
        assert record["count"] == 459_316 and record["distributed"]["workers"] == 2
        assert "459,316 valid configurations (on 2 Dask workers" in out and "chunk balance" in out
    assert not os.path.exists(os.path.join(cluster_processes["home"], "generated"))
    assert os.listdir(os.path.join(cluster_processes["home"], "worker-generated"))


def test_estimate_on_the_cluster_merges_the_streams_as_one_process_does(cluster, write_space,
                                                                       tmp_path, capsys):
    import beastgen
    from beastgen import distributed as dist
    from beastgen.cli import main

    path = write_space("""
        import beastgen as beast
        n = beast.setting(600)
        @beast.iterator
        def a():
            return range(1, 65)
        @beast.iterator
        def b():
            return range(1, 65)
        @beast.iterator
        def c():
            return range(1, 65)
        @beast.filter
        def too_big():
            return a * b * c > n
        """)
    generated = str(tmp_path / "generated")
    plan = beastgen.load(path).specialize(device="h100", generated_dir=generated)
    samples = 3 * dist.chunks.ESTIMATE_TASK_SAMPLES["knuth"] + 100  # 4 tasks
    remote = dist.estimate(plan, cluster, samples, seed=4, method="knuth")
    local = dist.estimate(plan, None, samples, seed=4, method="knuth")
    assert (remote.count, remote.low, remote.high, remote.samples) == \
        (local.count, local.low, local.high, samples)
    assert remote.low < plan.count() < remote.high
    # what fits one task is one process's estimate exactly
    one = plan.estimate(500, seed=4)
    assert main(["estimate", path, "--device", "h100", "--samples", "500", "--seed", "4", "--json",
                 "--generated-dir", generated, "--scheduler", cluster.scheduler.address]) == 0
    record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (record["estimate"], record["low"], record["high"]) == (one.count, one.low, one.high)


def test_a_space_importing_a_module_beside_it_is_shipped_to_the_workers(cluster, tmp_path):
    """The driver's space lies in a directory the workers never see; it imports a helper module
    from beside it, which travels with it."""
    import beastgen
    from beastgen import distributed as dist

    (tmp_path / "tile_sizes.py").write_text("TILES = (1, 2, 4, 8, 16, 32)\n")
    (tmp_path / "shipped.py").write_text(
        "import beastgen as beast\nfrom tile_sizes import TILES\n"
        "n = beast.setting(64)\n"
        "@beast.iterator\ndef a():\n    return TILES\n"
        "@beast.iterator\ndef b():\n    return range(1, 65)\n"
        "@beast.filter\ndef too_big():\n    return a * b > n\n")
    sys.path.insert(0, str(tmp_path))
    try:
        plan = beastgen.load(str(tmp_path / "shipped.py")).specialize(
            device="h100", generated_dir=str(tmp_path / "generated"))
    finally:
        sys.path.remove(str(tmp_path))
    run = dist.count(plan, cluster, n_chunks=3, progress=False)
    assert run.count == plan.count() == sum(64 // t for t in (1, 2, 4, 8, 16, 32))


def test_a_worker_with_another_beastgen_names_the_difference():
    from beastgen.distributed.shipping import check_same_enumerator
    from beastgen.version import __version__

    source = "regenerate: beastgen generate spaces/s.py\n# filter f (spaces/s.py:3)\nx = 1\n"
    moved = source.replace("spaces/s.py", "/elsewhere/s.py")
    check_same_enumerator(__version__, source, "spaces/s.py", moved, "/elsewhere/s.py")  # paths only
    with pytest.raises(BeastError, match=r"runs beastgen .* the driver beastgen 0\.0\.0-other"):
        check_same_enumerator("0.0.0-other", source, "spaces/s.py", source, "spaces/s.py")
    with pytest.raises(BeastError, match=r"line 2: worker 'x = 2', driver 'x = 1'"):
        check_same_enumerator(__version__, source, "spaces/s.py", source.replace("x = 1", "x = 2"),
                              "spaces/s.py")


def test_a_missing_scheduler_file_is_one_line(tmp_path, capsys):
    from beastgen.cli import main

    assert main(["count", GEMM, "--scheduler-file", str(tmp_path / "none.json")]) == 2
    err = capsys.readouterr().err
    assert "cannot read the Dask scheduler file" in err and "Traceback" not in err
    (tmp_path / "bad.json").write_text("{}")
    assert main(["count", GEMM, "--scheduler-file", str(tmp_path / "bad.json")]) == 2
    assert "not a Dask scheduler file" in capsys.readouterr().err


def test_cli_enumerate_on_the_cluster_needs_a_directory(tmp_path, capsys):
    from beastgen.cli import main

    for output in (tmp_path / "out.csv", tmp_path / "out.npy"):
        assert main(["enumerate", GEMM, "-o", str(output), "--scheduler", "local:1"]) == 2
        assert "partitioned Parquet dataset" in capsys.readouterr().err
    (tmp_path / "file.parquet").write_text("not a directory")
    assert main(["enumerate", GEMM, "-o", str(tmp_path / "file.parquet"), "--scheduler", "local:1"]) == 2
    assert "this is a file" in capsys.readouterr().err


def _rows(path):
    with sqlite3.connect(path) as db:
        return sorted(db.execute("SELECT config_key, status, time, bound, bottleneck FROM results"))


def test_tune_on_the_cluster_matches_the_local_search_and_resumes(cluster, tmp_path, generated_dir):
    """Batches on 2 workers, the best shared: the same runs, results and store as one process."""
    from beastgen.distributed import tune_on_cluster
    from beastgen.harness import tune

    # the deterministic bound order: the learnt order adapts to when results come back, which
    # differs between one process and a cluster running candidates side by side. Its first 29
    # candidates hold 9 that the replay file measured, among 20 it did not; the 10th measured one
    # comes only after 21,700 more unmeasured ones. The search loop answers those on the driver, as
    # locally (unmeasured, never stored): only measured candidates are sent to the workers
    options = dict(backend="replay", replay=REPLAY, device="titanrtx", budget=30, strategy="bound_order",
                   generated_dir=generated_dir, progress=False, log=lambda m: None)  # the session's plan
    local = tune(GEMM_CLBLAST, results=str(tmp_path / "local.db"), **options)
    with distributed.get_task_stream(client=cluster) as tasks:
        remote = tune_on_cluster(GEMM_CLBLAST, cluster.scheduler.address,
                                 results=str(tmp_path / "remote.db"), **options)
    batches = [t for t in tasks.data if str(t["key"]).startswith("beastgen-measure-")
               and not str(t["key"]).startswith("beastgen-measure-recipe")]
    assert 0 < len(batches) <= remote.ran_now  # none holding unmeasured candidates alone
    assert remote.ran_now == local.ran_now == 30 and local.unmeasured > 21_700
    assert remote.best_config == local.best_config and remote.best_time == local.best_time
    assert remote.unmeasured == local.unmeasured and remote.stopped == local.stopped
    assert _rows(tmp_path / "remote.db") == _rows(tmp_path / "local.db")
    # resumed on the cluster: the 30 recorded runs are answered by the store, 10 more run (past
    # unmeasured candidates, which the store does not answer: they are answered again)
    again = tune_on_cluster(GEMM_CLBLAST, cluster.scheduler.address, results=str(tmp_path / "remote.db"),
                            **(options | {"budget": 10}))
    assert again.resumed == 30 and again.ran_now == 10 and len(_rows(tmp_path / "remote.db")) == 40
    assert again.unmeasured > 0


def test_a_replay_without_a_built_in_profile_tunes_on_the_cluster(cluster, tmp_path):
    """A space that reads no device property replays a file from a GPU with no built-in profile
    (AMD's W6600) on the cluster as it does locally: the driver and the workers are given the space."""
    from beastgen.distributed import tune_on_cluster
    from beastgen.harness import tune

    space = os.path.join(REPO, "data", "reference-spaces", "convolution_milo.json")
    replay = os.path.join(REPO, "data", "replay", "convolution_milo_w6600.json.gz")
    options = dict(backend="replay", replay=replay, budget=12, strategy="exhaustive", generated_dir=str(tmp_path / "generated"),
                   progress=False, log=lambda m: None)
    local = tune(space, results=str(tmp_path / "local.db"), **options)
    remote = tune_on_cluster(space, cluster.scheduler.address, results=str(tmp_path / "remote.db"), **options)
    assert remote.ran_now == local.ran_now == 12 and remote.best_time == local.best_time


def test_good_enough_stops_the_search_on_the_cluster_as_locally(cluster, tmp_path):
    """``good_enough``: the cluster stops sending batches once a time that fast has come back, as
    the local loop stops; batches already sent still run, so it may have run more."""
    from beastgen.distributed import tune_on_cluster
    from beastgen.harness import tune
    from beastgen.harness.recorded import load_replay

    space = os.path.join(REPO, "data", "reference-spaces", "convolution_milo.json")
    replay = os.path.join(REPO, "data", "replay", "convolution_milo_w6600.json.gz")
    threshold = 1.25 * load_replay(replay).best()[1]
    options = dict(backend="replay", replay=replay, strategy="exhaustive", good_enough=threshold,
                   generated_dir=str(tmp_path / "generated"), progress=False, log=lambda m: None)
    local = tune(space, results=str(tmp_path / "local.db"), **options)
    remote = tune_on_cluster(space, cluster.scheduler.address, results=str(tmp_path / "remote.db"), **options)
    for result in (local, remote):
        assert result.best_time <= threshold and result.stopped.startswith("good enough")
        assert not result.proven and result.evaluated < result.exhaustive
    assert remote.ran_now >= local.ran_now


@pytest.mark.opencl
def test_branch_and_bound_on_gpu_workers_proves_the_best_as_locally(cluster, tmp_path):
    """Real kernels (PoCL) on the workers, each under the local watchdog: the two GPU workers run
    candidates side by side, and bound pruning stays exact: the same 3 of 9 run as locally."""
    from beastgen.distributed import tune_on_cluster

    result = tune_on_cluster(os.path.join(REPO, "tests", "harness_spaces", "chain.py"),
                             cluster.scheduler.address, device="opencl:0",
                             results=str(tmp_path / "chain.db"), generated_dir=str(tmp_path / "generated"),
                             progress=False, log=lambda m: None)
    assert result.exhaustive == 9 and result.proven and result.stopped == "proven"
    assert result.best_config["work"] == 1 and not result.failures
    assert result.surviving == 3 and result.evaluated == result.ran_now == 3
    assert {json.loads(k)["work"] for k, *_ in _rows(tmp_path / "chain.db")} == {1}


@pytest.mark.opencl
def test_daemonic_gpu_workers_replay_and_say_how_to_run_kernels(tmp_path):
    """Workers started as Dask starts them by default (daemonic processes): a replay, whose runner
    starts no process, tunes; a live backend, whose runner runs the kernels in a child process,
    stops in one error saying how to start the workers, before anything is stored."""
    from beastgen.distributed import tune_on_cluster

    options = dict(generated_dir=str(tmp_path / "generated"), progress=False, log=lambda m: None)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, resources={"GPU": 1},
                                  dashboard_address=":0", silence_logs=50) as local:
        replayed = tune_on_cluster(GEMM_CLBLAST, local.scheduler_address, backend="replay", replay=REPLAY,
                                   device="titanrtx", budget=3, strategy="bound_order",
                                   results=str(tmp_path / "replay.db"), **options)
        assert replayed.ran_now == 3
        with pytest.raises(BeastError, match=r"is daemonic, so it cannot start the worker process that "
                                             r"runs the kernels.*DASK_DISTRIBUTED__WORKER__DAEMON=False"):
            tune_on_cluster(os.path.join(REPO, "tests", "harness_spaces", "chain.py"),
                            local.scheduler_address, device="opencl:0", results=str(tmp_path / "live.db"),
                            **options)
    assert not os.path.exists(tmp_path / "live.db") or not _rows(tmp_path / "live.db")


def test_an_unreachable_scheduler_is_one_line(monkeypatch, capsys):
    from beastgen.cli import main
    from beastgen.distributed import cluster

    monkeypatch.setattr(cluster, "SCHEDULER_TIMEOUT", 2.0)
    code = main(["count", GEMM, "--scheduler", "tcp://127.0.0.1:9", "--json"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("beastgen: error:")]
    assert len(errors) == 1
    assert errors[0].startswith("beastgen: error: cannot reach the Dask scheduler at 'tcp://127.0.0.1:9'")
    assert "within 2 s" in errors[0] and "local:N" in errors[0]


def test_without_dask_the_error_names_the_extra(monkeypatch):
    from beastgen.distributed import Cluster

    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    with pytest.raises(BeastError, match=r"pip install 'beastgen\[dask\]'"):
        with Cluster("local:1"):
            pass


# -- a lost worker, a wide space ---------------------------------------------------------------------
WIDE = """\
import beastgen as beast
a = beast.range(0, {a})
b = beast.range(0, {b})
c = beast.range(0, {c})
d = beast.range(0, {d})
f = beast.filter((a * 7 + b * 3 + c * 5 + d * d) % 11 == 0)
"""


def _wide_count(a, b, c, d) -> int:
    """The count of WIDE, from the residues mod 11 (no enumerator involved)."""
    sums = np.zeros(11, dtype=object)
    sums[0] = 1
    for n, term in [(a, lambda v: 7 * v), (b, lambda v: 3 * v), (c, lambda v: 5 * v),
                    (d, lambda v: v * v)]:
        counts = np.bincount([term(v) % 11 for v in range(n)], minlength=11).astype(object)
        sums = np.array([sum(sums[i] * counts[(r - i) % 11] for i in range(11)) for r in range(11)],
                        dtype=object)
    return a * b * c * d - int(sums[0])


def test_a_worker_killed_mid_count_has_its_tasks_rerun(tmp_path, monkeypatch):
    """The only worker (holding the plan's recipe and finished chunks) is killed mid-count: its
    nanny starts a new one, the recipe and the lost chunks are computed again, the count is right."""
    import threading

    import beastgen
    from beastgen import distributed as dist
    from beastgen.compiler.runtime import compile_space

    sizes = dict(a=64, b=64, c=600, d=600)
    (tmp_path / "wide.py").write_text(WIDE.format(**sizes))
    monkeypatch.setenv("BEASTGEN_GENERATED_DIR", str(tmp_path / "gen"))
    plan = compile_space(beastgen.load(str(tmp_path / "wide.py")), "h100", {})
    local = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                     dashboard_address=":0", silence_logs=50)
    client = distributed.Client(local, set_as_default=False)
    outcome = {}

    def count():
        try:
            outcome["run"] = dist.count(plan, client, n_chunks=16, samples_per_node=1, progress=False)
        except BaseException as e:  # noqa: BLE001 - handed to the test
            outcome["error"] = e

    def finished(dask_scheduler):
        return sum(1 for key, task in dask_scheduler.tasks.items()
                   if "beastgen-count" in str(key) and task.state == "memory")

    try:
        thread = threading.Thread(target=count)
        thread.start()
        deadline = time.monotonic() + PATIENCE_SECONDS
        while client.run_on_scheduler(finished) < 2 and thread.is_alive():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert thread.is_alive() and client.run_on_scheduler(finished) < 16  # mid-count
        (pid,) = client.run(os.getpid).values()
        os.kill(pid, signal.SIGKILL)
        thread.join(PATIENCE_SECONDS)
        assert "error" not in outcome, outcome
        assert outcome["run"].count == _wide_count(**sizes)
    finally:
        client.close()
        local.close()


def test_a_wide_space_is_cut_into_equal_ranges_without_a_census(tmp_path):
    """Over CENSUS_DESCENTS / 32 split nodes (here 450 x 450) a census would cost as much as the
    count (12 s against 0.4 s): equal ranges of nodes instead, EVEN_SPLIT_FACTOR times more chunks."""
    import beastgen
    from beastgen.compiler.runtime import compile_space
    from beastgen.distributed import chunks

    (tmp_path / "wide.py").write_text(WIDE.format(a=450, b=450, c=3, d=2))
    plan = compile_space(beastgen.load(str(tmp_path / "wide.py")), "h100", {},
                         generated_dir=str(tmp_path / "gen"))
    assert plan.split_node_count() == 202_500
    cut, census = chunks.plan_chunks(plan, 8)
    assert census is None and len(cut) == 8 * chunks.EVEN_SPLIT_FACTOR
    _check_partition(cut, 202_500)
    assert {hi - lo for lo, hi in cut} <= {6328, 6329}
    assert chunks.chunk_estimates(None, cut) == []
    assert sum(plan.count(chunk=c) for c in cut) == _wide_count(450, 450, 3, 2)


def test_a_cluster_without_workers_ends_the_run_in_one_line(monkeypatch):
    """Every worker gone and none joining (a real scheduler with no worker): one line naming how
    far the run got, after NO_WORKER_SECONDS, instead of Dask's wait forever."""
    from beastgen.distributed import chunks

    monkeypatch.setattr(chunks, "NO_WORKER_SECONDS", 0.5)
    with distributed.LocalCluster(n_workers=0, dashboard_address=":0", silence_logs=50) as local, \
            distributed.Client(local, set_as_default=False) as client:
        start = time.monotonic()
        with pytest.raises(BeastError, match=r"every Dask worker is gone and none joined within "
                                             r"0.5 s \(3 of 16 chunks done\)"):
            chunks._check_workers_left(client, 3, 16, "chunks")
        assert 0.5 <= time.monotonic() - start < PATIENCE_SECONDS


def test_exhaustive_on_the_cluster_runs_every_candidate(cluster, tmp_path):
    """Issue 37, F19: workers cut candidates by their bound whatever the strategy, so exhaustive
    on a cluster left some unmeasured and still said "every candidate was run". Only a strategy
    that prunes (branch and bound) is cut now: exhaustive runs and records what it runs locally."""
    from beastgen.distributed import tune_on_cluster
    from beastgen.harness import tune

    (tmp_path / "tiny.py").write_text(
        "import beastgen as beast\na = beast.values(1, 2, 3, 4, 5, 6, 7, 8)\nb = beast.values(1, 2, 3, 4)\n"
        "f = beast.filter(a * b > 24)\nlb = beast.bound(a * 1e-3)\n")
    cache = {f"{a},{b}": {"a": a, "b": b, "time": a + 0.1 * b + 0.05, "times": [a + 0.1 * b + 0.05]}
             for a in range(1, 9) for b in range(1, 5) if a * b <= 24}  # times above the bounds
    (tmp_path / "replay.json").write_text(json.dumps({
        "device_name": "tinydev", "kernel_name": "tiny", "problem_size": [1],
        "tune_params_keys": ["a", "b"], "cache": cache}))
    options = dict(backend="replay", replay=str(tmp_path / "replay.json"), strategy="exhaustive",
                   generated_dir=str(tmp_path / "generated"), progress=False, log=lambda m: None)
    local = tune(str(tmp_path / "tiny.py"), results=str(tmp_path / "local.db"), **options)
    remote = tune_on_cluster(str(tmp_path / "tiny.py"), cluster.scheduler.address,
                             results=str(tmp_path / "remote.db"), **options)
    assert local.ran_now == remote.ran_now == len(cache) == 30
    assert remote.evaluated == remote.exhaustive == 30 and remote.unmeasured == 0
    assert _rows(tmp_path / "remote.db") == _rows(tmp_path / "local.db")
    again = tune_on_cluster(str(tmp_path / "tiny.py"), cluster.scheduler.address,
                            results=str(tmp_path / "remote.db"), **options)
    assert again.resumed == 30 and again.ran_now == 0 and again.unmeasured == remote.unmeasured
