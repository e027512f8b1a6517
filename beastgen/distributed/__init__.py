"""Past one machine: ``count``, ``enumerate`` and ``tune`` on a Dask cluster (``--scheduler``).

- :mod:`.cluster`: connecting (a scheduler address, or ``local:N`` for an in-process LocalCluster).
- :mod:`.chunks`: the outer loop levels cut into chunks balanced by estimated subtree size; every
  worker runs the same generated enumerator on its chunks; counts and statistics are merged, and an
  enumeration is written as a partitioned Parquet dataset.
- :mod:`.pool`: each candidate of a search runs on a worker holding a GPU (the Dask worker resource
  ``GPU``), one at a time per GPU worker; the driver keeps the one results store.

The workers load the space file again (by absolute path) and write/read the generated enumerator in
the driver's generated directory: the driver and the workers must share a filesystem (true for a
LocalCluster and for most clusters' home or project directories).
"""
from .chunks import (ChunkedRun, PlanRecipe, balanced_chunks, count, enumerate_to_parquet,
                     merge_stats, stats)
from .cluster import GPU, Cluster, import_distributed, worker_count
from .pool import tune_on_cluster

__all__ = ["ChunkedRun", "Cluster", "GPU", "PlanRecipe", "balanced_chunks", "count",
           "enumerate_to_parquet", "import_distributed", "merge_stats", "stats", "tune_on_cluster",
           "worker_count"]
