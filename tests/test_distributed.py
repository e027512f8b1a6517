"""Past one machine: count, statistics, enumeration and tuning on a Dask cluster (one LocalCluster
of 2 worker processes for the whole module) give exactly what the local run gives."""
import json
import os
import sqlite3
import sys

import numpy as np
import pytest

from beastgen.distributed import balanced_chunks
from beastgen.errors import BeastError

from conftest import REPLAY, REPO

distributed = pytest.importorskip("distributed")

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


# -- one cluster for the module ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster(_generated_code_outside_the_repository):
    """A LocalCluster of 2 worker processes, 1 thread each, each declaring one GPU (started after
    the conftest set BEASTGEN_GENERATED_DIR: the workers inherit the environment), not daemonic
    (kernels run in a watchdog child process), as ``--scheduler local:2`` starts for ``tune``."""
    import logging

    import dask

    with dask.config.set({"distributed.worker.daemon": False}):
        local = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                         resources={"GPU": 1}, dashboard_address=None,
                                         silence_logs=logging.ERROR)
        client = distributed.Client(local, set_as_default=False)
        yield client
        client.close()
        local.close()


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


def test_cli_count_on_the_cluster(cluster, generated_dir, capsys):
    from beastgen.cli import main

    address = cluster.scheduler.address
    code = main(["count", GEMM, "--scheduler", address, "--generated-dir", generated_dir, "--json"])
    assert code == 0
    out = capsys.readouterr().out
    record = json.loads(out.strip().splitlines()[-1])
    assert record["count"] == 459_316 and record["scheduler"] == address
    assert record["distributed"]["workers"] == 2
    assert "459,316 valid configurations (on 2 Dask workers" in out and "chunk balance" in out


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


def test_tune_on_the_cluster_matches_the_local_search_and_resumes(cluster, tmp_path):
    from beastgen.distributed import tune_on_cluster
    from beastgen.harness import tune

    # the deterministic bound order: the learnt order adapts to when results come back, which
    # differs between one process and a cluster running candidates side by side
    options = dict(backend="replay", replay=REPLAY, device="titanrtx", budget=30, strategy="bound_order",
                   generated_dir=str(tmp_path / "generated"), progress=False, log=lambda m: None)
    local = tune(GEMM_CLBLAST, results=str(tmp_path / "local.db"), **options)
    remote = tune_on_cluster(GEMM_CLBLAST, cluster.scheduler.address, results=str(tmp_path / "remote.db"),
                             **options)
    assert remote.ran_now == local.ran_now == 30
    assert remote.best_config == local.best_config and remote.best_time == local.best_time
    assert remote.unmeasured == local.unmeasured and remote.stopped == local.stopped
    assert _rows(tmp_path / "remote.db") == _rows(tmp_path / "local.db")
    # resumed on the cluster: the 30 recorded runs are answered by the store, 10 more run
    again = tune_on_cluster(GEMM_CLBLAST, cluster.scheduler.address, results=str(tmp_path / "remote.db"),
                            **(options | {"budget": 10}))
    assert again.resumed == 30 and again.ran_now == 10 and len(_rows(tmp_path / "remote.db")) == 40


def _opencl_available():
    try:
        from beastgen.harness.backends.opencl import list_devices
        return bool(list_devices())
    except Exception:  # noqa: BLE001 - no pyopencl or no platform
        return False


@pytest.mark.skipif(not _opencl_available(), reason="no OpenCL device (apt-get install pocl-opencl-icd)")
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
