"""Example 4: beastgen's search in a Kernel Tuner script (docs/kernel-tuner.md).

A Kernel Tuner script tunes a convolution kernel for an AMD Radeon PRO W6600. Here Kernel Tuner
runs in its simulation mode, answering each configuration from real W6600 measurements
(data/replay/convolution_milo_w6600.json.gz), so that no GPU is needed; on a GPU, drop
``simulation_mode`` and pass the kernel's source and arguments as usual. The one change to the
script is ``strategy=``: beastgen's default search, warm-started by the caches of two other GPUs
(an A100 and an RTX A4000). Run it from anywhere: `python examples/04_kernel_tuner.py`.
"""
import gzip
import os
import shutil
import tempfile

from kernel_tuner import tune_kernel

import beastgen.kernel_tuner

REPLAY = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "data", "replay")

tune_params = {
    "block_size_x": [16 * i for i in range(1, 17)], "block_size_y": [1, 2, 4, 8, 16],
    "tile_size_x": [1, 2, 3, 4], "tile_size_y": [1, 2, 3, 4], "read_only": [0, 1],
    "use_padding": [0, 1], "use_shmem": [0, 1], "use_cmem": [1], "filter_height": [15],
    "filter_width": [15],
}
restrictions = [
    "use_padding == 0 or block_size_x % 32 != 0",
    "block_size_x * block_size_y <= 1024",
    "use_padding == 0 or use_shmem != 0",
    "use_shmem == 0 or ((block_size_x * tile_size_x + filter_width - 1)"
    " * (block_size_y * tile_size_y + filter_height - 1)) < 12 * 1024",
]
priors = [os.path.join(REPLAY, f"convolution_milo_{gpu}.json.gz") for gpu in ("a100", "a4000")]


def main():
    with tempfile.TemporaryDirectory() as folder:  # Kernel Tuner reads its cache as plain .json
        cache = os.path.join(folder, "convolution_w6600.json")
        with gzip.open(os.path.join(REPLAY, "convolution_milo_w6600.json.gz"), "rb") as src, \
                open(cache, "wb") as dst:
            shutil.copyfileobj(src, dst)
        results, env = tune_kernel(
            "convolution_kernel", "", (4096, 4096), [], tune_params, restrictions=restrictions,
            cache=cache, simulation_mode=True, quiet=True,
            strategy=beastgen.kernel_tuner.Strategy(priors=priors),  # <- the one change
            strategy_options={"max_fevals": 40})
        everything, _ = tune_kernel(
            "convolution_kernel", "", (4096, 4096), [], tune_params, restrictions=restrictions,
            cache=cache, simulation_mode=True, quiet=True, strategy="brute_force")
    best = env["best_config"]
    found = next(i for i, r in enumerate(results, 1) if r is best or r == best)
    optimum = min(r["time"] for r in everything if "__error__" not in r)
    print(f"simulated on {env['device_name']}: {len(everything):,} valid configurations")
    print(f"beastgen's search with {len(priors)} priors: best {best['time']:.3f} ms at evaluation "
          f"{found} of {len(results)}")
    print(f"brute force, every configuration: best {optimum:.3f} ms")


if __name__ == "__main__":
    main()
