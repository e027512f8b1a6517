"""What progress costs ``beastgen export --format kernel_tuner`` and ``beastgen enumerate`` on the
flagship (gemm on h100, 459,316 configurations), measured alternately in the same rounds:

- ``json``: the Kernel Tuner file written by one ``json.dump(document, indent=1)`` (as before
  progress) against the writer that reports progress after each block of configurations
  (``interop.export``'s, the same text: checked);
- ``enumerate``: ``plan.enumerate()`` against ``plan.enumerate(progress=...)`` (warm).

    PYTHONPATH=. python benchmarks/bench_export_write.py [--repeats N]

Seconds are the median of the rounds; the ratio is progress / without.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
import beastgen  # noqa: E402
from beastgen.interop import export  # noqa: E402
from beastgen.support.table import format_table  # noqa: E402


def _timed(work) -> tuple[float, object]:
    start = time.perf_counter()
    result = work()
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    plan = beastgen.load(os.path.join(REPO, "spaces", "gemm.py")).specialize(device="h100")
    configs = plan.enumerate()
    tune_params, configurations = export.to_kernel_tuner(plan, configs)
    document = {"tune_params_keys": list(tune_params), "tune_params": tune_params}

    def one_dump():  # what write_kernel_tuner did before it reported progress
        f = io.StringIO()
        cache = {export.kernel_tuner_key(c): c for c in configurations}
        json.dump({**document, "cache": cache}, f, indent=1)
        return f.getvalue() + "\n"

    def by_blocks():
        f = io.StringIO()
        export._write_with_cache(f, document, configurations, lambda done, seconds: None)
        return f.getvalue()

    times = {key: [] for key in ("json", "json+progress", "enumerate", "enumerate+progress")}
    for _ in range(args.repeats):
        seconds, before = _timed(one_dump)
        times["json"].append(seconds)
        seconds, after = _timed(by_blocks)
        times["json+progress"].append(seconds)
        assert after == before, "the block writer's text differs from json.dump's"
        times["enumerate"].append(_timed(plan.enumerate)[0])
        seconds, rows = _timed(lambda: plan.enumerate(progress=lambda done, s: None))
        times["enumerate+progress"].append(seconds)
        assert rows.tolist() == configs.tolist()
    median = {key: statistics.median(values) for key, values in times.items()}
    print(f"{len(configurations):,} configurations, {args.repeats} rounds")
    print(format_table(["work", "without (s)", "with progress (s)", "ratio"], [
        [name, f"{median[name]:.3f}", f"{median[name + '+progress']:.3f}",
         f"{median[name + '+progress'] / median[name]:.2f}"] for name in ("json", "enumerate")]))


if __name__ == "__main__":
    main()
