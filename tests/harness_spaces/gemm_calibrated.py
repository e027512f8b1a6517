"""A small single-precision GEMM space (the flagship's kernel, spaces/kernels/gemm.cl, and its
iterators and filters) whose lower bound uses only fields that `beastgen calibrate` measures:
launch overhead, and FMAs at the calibrated FP32 peak, over the device and over its busiest unit.

The kernel computes whole tiles (edges are zero-filled, never skipped), so a configuration whose
tiles overhang M, N or K executes the padded FMAs too: the bounds count them."""
import numpy as np

import beastgen as beast

M = beast.setting(24)
N = beast.setting(24)
K = beast.setting(256)
max_blk = beast.setting(32)
max_blk_k = beast.setting(8)

max_threads_per_block = beast.device.max_threads_per_block
warp_size = beast.device.warp_size
units = beast.device.sm_count
peak = beast.device.peak_flops_fp32                 # calibrated: measured FMA rate x margin
launch_overhead = beast.device.launch_overhead      # calibrated: fastest empty kernel x margin

dim_m = beast.range(1, max_blk + 1)
dim_n = beast.range(1, max_blk + 1)
blk_m = beast.range(dim_m, max_blk + 1, dim_m)
blk_n = beast.range(dim_n, max_blk + 1, dim_n)
blk_k = beast.range(1, max_blk_k + 1)
vector = beast.values(0, 1)
type_len = beast.where(vector, 4, 1)
blk_m_a = beast.range(1, blk_m // type_len + 1)
blk_n_a = beast.range(1, blk_k + 1)
blk_m_b = beast.range(1, blk_k // type_len + 1)
blk_n_b = beast.range(1, blk_n + 1)

threads = dim_m * dim_n
thr_m = blk_m // dim_m
thr_n = blk_n // dim_n
over_max_threads = beast.filter(threads > max_threads_per_block)
partial_warp = beast.filter(threads % warp_size != 0)
a_shape = beast.filter(blk_m_a * blk_n_a != threads)
b_shape = beast.filter(blk_m_b * blk_n_b != threads)
a_incongruent = beast.filter((blk_m % (blk_m_a * type_len) != 0) | (blk_k % blk_n_a != 0))
b_incongruent = beast.filter((blk_k % (blk_m_b * type_len) != 0) | (blk_n % blk_n_b != 0))
low_fma_ratio = beast.filter(5 * thr_m * thr_n < 6 * (thr_m + thr_n))

blocks = ((M + blk_m - 1) // blk_m) * ((N + blk_n - 1) // blk_n)
block_fmas = blk_m * blk_n * ((K + blk_k - 1) // blk_k) * blk_k   # whole tiles, padding included

# no kernel takes less than the empty kernel's fastest run
launch = beast.bound(launch_overhead)
# every FMA the blocks execute, at the device's peak FMA rate
compute = beast.bound(2 * blocks * block_fmas / peak)
# the busiest unit runs at least ceil(blocks / units) whole blocks, at its share of the peak
busiest_unit = beast.bound((blocks + units - 1) // units * 2 * block_fmas / (peak / units))


def _arguments(s):
    rng = np.random.default_rng(1)
    m, n, k = s["M"], s["N"], s["K"]
    a, b, c = (rng.uniform(-1, 1, size).astype(np.float32) for size in (m * k, k * n, m * n))
    return [np.int32(m), np.int32(n), np.int32(k), np.float32(1.5), a, np.int32(m), b, np.int32(k),
            np.float32(0.5), c, np.int32(m)]


def _reference(args, s):
    m, n, k = s["M"], s["N"], s["K"]
    a = args[4].astype(np.float64).reshape((m, k), order="F")
    b = args[6].astype(np.float64).reshape((k, n), order="F")
    c = args[9].astype(np.float64).reshape((m, n), order="F")
    return {9: (1.5 * a @ b + 0.5 * c).ravel(order="F")}


kernel = beast.kernel(
    source={"opencl": "../../spaces/kernels/gemm.cl"}, name="gemm",
    defines=lambda c: {"REAL": "float", "REAL_IS_DOUBLE": 0, "COMPLEX": 0,
                       "VL": 4 if c["vector"] else 1, "DIM_M": c["dim_m"], "DIM_N": c["dim_n"],
                       "BLK_M": c["blk_m"], "BLK_N": c["blk_n"], "BLK_K": c["blk_k"],
                       "DIM_M_A": c["blk_m_a"], "DIM_N_A": c["blk_n_a"], "DIM_M_B": c["blk_m_b"],
                       "DIM_N_B": c["blk_n_b"], "TRANS_A": 0, "TRANS_B": 0, "TEX_A": 0, "TEX_B": 0},
    block=(dim_m, dim_n), grid=((M + blk_m - 1) // blk_m, (N + blk_n - 1) // blk_n),
    arguments=_arguments, reference=_reference, tolerance=1e-4, timeout=20.0, iterations=5)
