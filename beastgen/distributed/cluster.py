"""Connecting to a Dask cluster: ``--scheduler ADDRESS`` (a running scheduler: ``tcp://`` or, with
Dask's TLS settings in its configuration, ``tls://``), ``--scheduler-file FILE`` (the JSON file
``dask scheduler --scheduler-file FILE`` writes; ``--scheduler scheduler-file:FILE`` says the same)
or ``local:N`` (an in-process LocalCluster of N
worker processes with one thread each)."""
from __future__ import annotations

import inspect
import json
import logging
import os
import re
import time

from ..errors import BeastError

#: seconds to wait for a scheduler to answer (and for a first worker to join it)
SCHEDULER_TIMEOUT = 10.0
#: the Dask worker resource a GPU worker declares (``dask worker ADDRESS --resources GPU=1``)
GPU = "GPU"
_LOCAL = re.compile(r"local(?::(\d+))?$")
#: ``--scheduler scheduler-file:FILE`` (what ``--scheduler-file FILE`` passes on): the address is
#: read from FILE when connecting
SCHEDULER_FILE_PREFIX = "scheduler-file:"


def read_scheduler_file(path: str) -> str:
    """The scheduler address in a file written by ``dask scheduler --scheduler-file``."""
    try:
        with open(path, encoding="utf-8") as f:
            address = json.load(f)["address"]
    except OSError as e:
        raise BeastError(f"cannot read the Dask scheduler file: {e.strerror} (start the scheduler "
                         "with `dask scheduler --scheduler-file FILE` first)", path) from None
    except (ValueError, KeyError, TypeError):
        raise BeastError("not a Dask scheduler file (JSON with an \"address\", as `dask scheduler "
                         "--scheduler-file FILE` writes it)", path) from None
    if not isinstance(address, str):
        raise BeastError("the Dask scheduler file's \"address\" is not a string", path)
    return address


def import_distributed():
    """The ``distributed`` package, or a one-line error naming the extra that installs it."""
    try:  # optional (beastgen[dask]): the one place it is imported
        import distributed
    except ImportError:
        raise BeastError("--scheduler needs Dask's distributed scheduler, which is not installed: "
                         "pip install 'beastgen[dask]'") from None
    return distributed


def raise_worker_error(future) -> None:
    """The error of a failed or cancelled task as one BeastError (a worker's BeastError as it was
    raised)."""
    if future.status == "cancelled":
        raise BeastError("the Dask scheduler cancelled a task of this run (its workers or the "
                         "scheduler went away); run the command again")
    error = future.exception()
    if isinstance(error, BeastError):
        raise BeastError(error.message, error.where)
    if type(error).__name__ == "KilledWorker":
        raise BeastError(f"Dask workers died running a task of this run, each time it was "
                         f"rerun ({error}); see the workers' logs (memory?)")
    raise BeastError(f"a Dask worker failed: {type(error).__name__}: {error}")


def shared(client, value, name: str):
    """``value`` held on the cluster for the tasks that take it, as the result of a task: unlike
    scattered data, it is computed again when every worker holding it is lost (a worker killed
    mid-count), so the lost tasks are rerun instead of the run failing."""
    return client.submit(_itself, value, key=f"beastgen-{name}-{os.urandom(4).hex()}", pure=False)


def _itself(value):
    return value


def local_workers(address: str) -> int | None:
    """N for ``local:N`` (``local`` alone: 2), None for a scheduler address."""
    m = _LOCAL.match(address.strip())
    if not m:
        return None
    n = int(m.group(1) or 2)
    if n < 1:
        raise BeastError(f"--scheduler local:N needs N >= 1, got {address!r}")
    return n


class Cluster:
    """``with Cluster(address) as client``: a ``distributed.Client`` on the scheduler at
    ``address``, or on a LocalCluster started for ``local:N`` (closed on exit). With ``gpu``, the
    local workers each declare one GPU resource (for ``tune``)."""

    def __init__(self, address: str, gpu: bool = False, timeout: float | None = None):
        self.address = address
        self.gpu = gpu
        self.timeout = SCHEDULER_TIMEOUT if timeout is None else timeout
        self.local = None
        self.client = None
        self._config = None

    def __enter__(self):
        distributed = import_distributed()
        n = local_workers(self.address)
        if n is not None:
            if self.gpu:  # kernels run in a watchdog child process: workers must not be daemonic
                import dask  # installed with distributed, imported above
                self._config = dask.config.set({"distributed.worker.daemon": False})
            self.local = distributed.LocalCluster(
                n_workers=n, processes=True, threads_per_worker=1, dashboard_address=None,
                resources={GPU: 1} if self.gpu else None, silence_logs=logging.ERROR)
            self.client = distributed.Client(self.local, set_as_default=False)
            return self.client
        address = self.address
        if address.startswith(SCHEDULER_FILE_PREFIX):
            address = read_scheduler_file(address[len(SCHEDULER_FILE_PREFIX):])
        try:
            self.client = distributed.Client(address, timeout=self.timeout, set_as_default=False)
        except Exception as e:  # noqa: BLE001 - OSError, TimeoutError, ValueError (bad address)
            detail = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise BeastError(f"cannot reach the Dask scheduler at {address!r} within "
                             f"{self.timeout:g} s ({detail}); start one with `dask scheduler` and "
                             "workers with `dask worker ADDRESS`, or use --scheduler local:N") from None
        return self.client

    def __exit__(self, *exc):
        if self.client is not None:
            self.client.close()
        if self.local is not None:
            self.local.close()
        if self._config is not None:
            self._config.__exit__(None, None, None)
        self.client = self.local = self._config = None
        return False


def worker_count(client, resource: str | None = None, timeout: float | None = None) -> int:
    """Workers of the cluster (holding ``resource``, when given); waits up to ``timeout`` for a
    first one to join, and reports a cluster without any as an error."""
    deadline = time.monotonic() + (SCHEDULER_TIMEOUT if timeout is None else timeout)
    while True:
        workers = client.scheduler_info(n_workers=-1)["workers"].values() \
            if _takes_n_workers(client) else client.scheduler_info()["workers"].values()
        n = sum(1 for w in workers if resource is None or w.get("resources", {}).get(resource, 0) >= 1)
        if n or time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    if not n:
        what = f"no worker declaring the resource {resource} (start them with `dask worker ADDRESS " \
               f"--resources {resource}=1`)" if resource else "no worker"
        raise BeastError(f"the Dask cluster at {client.scheduler.address} has {what}")
    return n


def _takes_n_workers(client) -> bool:
    try:
        return "n_workers" in inspect.signature(client.scheduler_info).parameters
    except (TypeError, ValueError):
        return False
