"""The CUDA backend's compile step (beastgen/harness/nvcc.py) on gemm variants, no GPU needed: nvcc
on a cold cache against a cache hit (no nvcc, no preprocessing: pycuda ran `nvcc --preprocess` on
every compile of a source that held the text "#include", hits included). Prints one table.

    PYTHONPATH=$PWD python benchmarks/bench_cuda_compile.py [--variants 8] [--arch sm_90]
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import beastgen  # noqa: E402
from beastgen.devices import load_profile  # noqa: E402
from beastgen.harness.kernel import find_kernel  # noqa: E402
from beastgen.harness.nvcc import compile_cuda, nvcc_path, nvcc_version  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", type=int, default=8)
    parser.add_argument("--arch", default="sm_90")
    args = parser.parse_args()
    nvcc = nvcc_path("bench_cuda_compile")
    space = beastgen.load(os.path.join(os.path.dirname(__file__), "..", "spaces", "gemm.py"))
    kernel = find_kernel(space)
    with tempfile.TemporaryDirectory() as generated, tempfile.TemporaryDirectory() as cache:
        plan = space.specialize(device="h100", generated_dir=generated, max_blk="32", max_blk_k="8")
        configs, columns = plan.enumerate(), list(plan.columns)
        settings = {k: getattr(v, "item", lambda v=v: v)() for k, v in plan.specialized.settings.items()}
        step = max(len(configs) // args.variants, 1)
        sources = []
        for i in range(0, step * args.variants, step):
            config = {c: getattr(configs[c][i], "item", lambda: configs[c][i])() for c in columns}
            launch = kernel.launch(config, settings, load_profile("h100"), "cuda", kernel.source_text("cuda"))
            sources.append(launch.full_source())
        times = {"nvcc (cold cache)": [], "cache hit": []}
        for label in times:
            for source in sources:
                start = time.perf_counter()
                compile_cuda(source, nvcc, "cubin", args.arch, cache_dir=cache)
                times[label].append(time.perf_counter() - start)
    cold = statistics.median(times["nvcc (cold cache)"])
    print(f"{len(sources)} gemm variants, nvcc {nvcc_version(nvcc)}, -arch={args.arch}")
    print(f"{'compile':<20} {'median s':>10} {'ratio to cold':>14}")
    for label, values in times.items():
        median = statistics.median(values)
        print(f"{label:<20} {median:>10.4f} {median / cold:>14.5f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
