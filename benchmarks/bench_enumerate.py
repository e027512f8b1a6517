"""Enumeration rates of the flagship (gemm on h100, 459,316 configurations), into NumPy and into
a Parquet file, through the C target's claiming ``fill`` and through the Numba nest (count, then
fill in census-balanced chunks), measured alternately in the same rounds.

    python benchmarks/bench_enumerate.py [--repeats N] [--jobs 1 2]

Rows (M configurations/s, the median of the rounds, warm: every library and cache built first):

- ``numpy native/numba, jobs J``: rows / ``plan.last_seconds`` of ``plan.enumerate(jobs=J)``;
- ``parquet native, jobs J``: rows / (that enumeration + :func:`beastgen.support.output.write_parquet`),
  what ``beastgen enumerate -o X.parquet`` does; ``parquet numba+pandas``: the Numba enumeration
  and the former writer (``pd.DataFrame(rows).to_parquet``).

The ratio is to the row through the Numba nest (and pandas) with as many jobs.

Every run's rows are checked equal to the Numba nest's, in order.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
import beastgen  # noqa: E402
from beastgen.support.output import write_parquet  # noqa: E402

FLAGSHIP_COUNT = 459_316


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    generated = tempfile.mkdtemp(prefix="bench-enumerate-")
    space = beastgen.load(os.path.join(REPO, "spaces", "gemm.py"))
    native = space.specialize("h100", generated_dir=generated)
    numba = space.specialize("h100", generated_dir=generated)
    numba.executable.use_numba()  # the Numba nest, as where the C target does not print the plan
    assert native.native is not None, "no C compiler: nothing native to measure"
    expected = numba.enumerate()
    assert len(expected) == FLAGSHIP_COUNT
    output = os.path.join(generated, "rows.parquet")

    def numpy_rate(plan, jobs):
        rows = plan.enumerate(jobs=jobs)
        assert np.array_equal(rows, expected)
        return len(rows) / plan.last_seconds

    def parquet_rate(plan, jobs, writer=write_parquet):
        rows = plan.enumerate(jobs=jobs)
        start = time.perf_counter()
        writer(output, rows)
        return len(rows) / (plan.last_seconds + time.perf_counter() - start)

    def pandas_writer(path, rows):
        import pandas as pd
        pd.DataFrame(rows).to_parquet(path, index=False)

    rows = {}  # name: (measure, the row its ratio is to)
    for jobs in args.jobs:
        before = f"numpy numba, jobs {jobs}"
        rows[f"numpy native, jobs {jobs}"] = (lambda jobs=jobs: numpy_rate(native, jobs), before)
        rows[before] = (lambda jobs=jobs: numpy_rate(numba, jobs), before)
        before = f"parquet numba+pandas, jobs {jobs}"
        rows[f"parquet native, jobs {jobs}"] = (lambda jobs=jobs: parquet_rate(native, jobs), before)
        rows[before] = (lambda jobs=jobs: parquet_rate(numba, jobs, pandas_writer), before)
    for measure, _ in rows.values():  # warm up: libraries, Numba, buffers
        measure()
    rates = {name: [] for name in rows}
    for _ in range(args.repeats):
        for name, (measure, _) in rows.items():
            rates[name].append(measure())
    print(f"{'row':32} {'M/s':>7} {'ratio':>6}   ({args.repeats} rounds, {os.cpu_count()} cores)")
    for name, (_, before) in rows.items():
        median = statistics.median(rates[name])
        print(f"{name:32} {median / 1e6:7.2f} {median / statistics.median(rates[before]):6.2f}")


if __name__ == "__main__":
    main()
