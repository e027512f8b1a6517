"""Dask against one process: the replay tune of gemm_clblast (17k runs) on 2 local worker processes
against the same search in one process (ratio, seconds per candidate, and the overhead per
candidate: the difference), the round trip of one Dask task, and `count` on 1, 2 (and 4, with the
cores) workers against one process (speed-up; medians of --repeat runs), and what the driver's
split into chunks costs (against a census of every split node: the wide space
benchmarks/wide_space.py has 202,500 of them).

    PYTHONPATH=. python benchmarks/bench_distributed.py [--count-space SPACE] [--set NAME=VALUE ...]
        [--workers 1 2 4] [--repeat 3] [--budget N] [--skip-tune] [--skip-count]

Workers are separate processes (a LocalCluster, as `--scheduler local:N`); on a machine shared with
other work, compare ratios from the same run only.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import beastgen  # noqa: E402
from beastgen import distributed  # noqa: E402
from beastgen.harness import tune  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPLAY = os.path.join(REPO, "data", "replay", "gemm_clblast_rtx_titan.json.gz")
CLBLAST = os.path.join(REPO, "spaces", "gemm_clblast.py")


def task_round_trip(client, repeat: int = 200) -> float:
    """Median seconds of submitting a no-op task and waiting for its result."""
    times = []
    for i in range(repeat):
        start = time.perf_counter()
        client.submit(int, i, pure=False).result()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_tune(workers: int, budget, directory: str) -> None:
    options = dict(backend="replay", replay=REPLAY, device="titanrtx", budget=budget,
                   generated_dir=os.path.join(directory, "generated"), progress=False,
                   log=lambda message: None)
    tune(CLBLAST, results=os.path.join(directory, "warm.db"), **(options | {"budget": 1}))  # compile
    local = tune(CLBLAST, results=os.path.join(directory, "local.db"), **options)
    with distributed.Cluster(f"local:{workers}", gpu=True) as client:
        distributed.worker_count(client)
        round_trip = task_round_trip(client)
        remote = distributed.tune_on_cluster(CLBLAST, client.scheduler.address,
                                             results=os.path.join(directory, "remote.db"), **options)
    runs = max(local.ran_now, 1)
    print(f"tune (replay, gemm_clblast, branch and bound): {local.ran_now:,} runs locally in "
          f"{local.seconds:.2f} s, {remote.ran_now:,} on {workers} Dask workers in {remote.seconds:.2f} s")
    print(f"  cluster / local time: {remote.seconds / local.seconds:.2f}x")
    print(f"  per candidate: local {local.seconds / runs * 1e3:.3f} ms, cluster "
          f"{remote.seconds / max(remote.ran_now, 1) * 1e3:.3f} ms; overhead "
          f"{(remote.seconds / max(remote.ran_now, 1) - local.seconds / runs) * 1e3:+.3f} ms per candidate")
    print(f"  one Dask task round trip (median of 200): {round_trip * 1e3:.2f} ms")
    print(f"  same best: {remote.best_config == local.best_config and remote.best_time == local.best_time}")


def bench_count(space: str, settings: dict, device: str, workers_list, repeat: int, directory: str) -> None:
    plan = beastgen.load(space).specialize(device=device, generated_dir=os.path.join(directory, "generated"),
                                           **settings)
    count = plan.count()
    local = statistics.median(_timed(plan.count) for _ in range(repeat))
    print(f"count ({os.path.basename(space)}, {device}, {settings or 'defaults'}): {count:,} "
          f"configurations; one process {local:.3f} s (median of {repeat})")
    nodes = plan.split_node_count()
    census = _timed(lambda: distributed.chunks.plan_chunks(plan, 8))
    full = _timed(lambda: plan.split_census(samples_per_node=distributed.chunks.SAMPLES_PER_NODE[0]))
    print(f"  {nodes:,} split nodes; the driver's split: {census:.3f} s (a census of "
          f"{distributed.chunks.SAMPLES_PER_NODE[0]} descents per node: {full:.3f} s)")
    for workers in workers_list:
        with distributed.Cluster(f"local:{workers}") as client:
            distributed.worker_count(client)
            distributed.count(plan, client, progress=False)  # the workers compile
            runs = [distributed.count(plan, client, progress=False) for _ in range(repeat)]
        assert all(run.count == count for run in runs)
        seconds = statistics.median(run.seconds for run in runs)
        work = statistics.median(max(run.worker_seconds) for run in runs)
        print(f"  {workers} worker{'s' if workers > 1 else ''}: {seconds:.3f} s wall "
              f"(speed-up {local / seconds:.2f}x; slowest chunk {work:.3f} s, census "
              f"{statistics.median(run.census_seconds for run in runs):.3f} s)")


def _timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count-space", default=os.path.join(REPO, "spaces", "gemm.py"))
    parser.add_argument("--device", default="h100")
    parser.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE")
    parser.add_argument("--workers", nargs="*", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--budget", type=int, default=None, help="runs of the tune (default: all)")
    parser.add_argument("--skip-tune", action="store_true")
    parser.add_argument("--skip-count", action="store_true")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    workers_list = args.workers or [n for n in (1, 2, 4) if n <= max(cores, 2)]
    settings = dict(item.split("=", 1) for item in args.set)
    settings = {k: int(v) if v.lstrip("-").isdigit() else v for k, v in settings.items()}
    print(f"{cores} cores; load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as directory:
        if not args.skip_tune:
            bench_tune(2, args.budget, directory)
        if not args.skip_count:
            bench_count(args.count_space, settings, args.device, workers_list, args.repeat, directory)


if __name__ == "__main__":
    main()
