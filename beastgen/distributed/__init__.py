"""Past one machine: ``count``, ``enumerate`` and ``tune`` on a Dask cluster (``--scheduler``).

- :mod:`.cluster`: connecting (a scheduler address, or ``local:N`` for an in-process LocalCluster).
- :mod:`.chunks`: the outer loop levels cut into chunks balanced by estimated subtree size; every
  worker runs the same generated enumerator on its chunks; counts and statistics are merged, and an
  enumeration is written as a partitioned Parquet dataset.
- :mod:`.pool`: the batch runner of the harness's search loop on workers holding a GPU (the Dask
  worker resource ``GPU``), the best time shared among them; the driver runs the search and keeps
  the one results store.
- :mod:`.shipping`: what travels to the workers (the space file and what it imports from beside
  it, the kernel sources), and the check that a worker generates the driver's enumerator.

The workers need nothing from the driver's file system: they write the shipped files and compile
the generated enumerator into their own generated directory (``BEASTGEN_GENERATED_DIR`` in their
environment, else ``~/.cache/beastgen/generated``). Only an enumeration's output directory is
written by the workers directly when they see it; otherwise its parts come back to the driver.
"""
from .chunks import (ChunkedRun, PlanRecipe, balanced_chunks, count, enumerate_to_parquet,
                     estimate, merge_stats, stats)
from .cluster import GPU, Cluster, import_distributed, worker_count
from .pool import tune_on_cluster

__all__ = ["ChunkedRun", "Cluster", "GPU", "PlanRecipe", "balanced_chunks", "count",
           "enumerate_to_parquet", "estimate", "import_distributed", "merge_stats", "stats", "tune_on_cluster",
           "worker_count"]
