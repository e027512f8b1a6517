"""The flagship BEAST GEMM space (MAGMA-style kernel), exactly as in shared/spaces/gemm.md.

A thread block of dim_m x dim_n threads computes a blk_m x blk_n tile of C, stepping through K by
blk_k; the same threads are reshaped to blk_m_a x blk_n_a (blk_m_b x blk_n_b) to read the A (B)
tile into shared memory. A filter REJECTS a configuration when it is true.
"""
import beastgen as beast

# -- settings (problem inputs) -------------------------------------------------------------------
precision = beast.setting('s', choices=['s', 'd', 'c', 'z'])
trans_a = beast.setting(0, choices=[0, 1])
trans_b = beast.setting(0, choices=[0, 1])
max_blk = beast.setting(128, minimum=1) # largest tile edge for blk_m, blk_n
max_blk_k = beast.setting(64, minimum=1) # largest blk_k

@beast.derived
def elem_bytes():
    return {'s': 4, 'd': 8, 'c': 8, 'z': 16}[precision]

elem_words = elem_bytes // 4
dim_vec = 16 // elem_bytes        # vector-load width in elements

# -- device properties ---------------------------------------------------------------------------
max_threads_per_block = beast.device.max_threads_per_block
max_threads_dim_x = beast.device.max_threads_dim_x
max_threads_dim_y = beast.device.max_threads_dim_y
warp_size = beast.device.warp_size
max_shared_mem_per_block = beast.device.max_shared_mem_per_block
max_regs_per_thread = beast.device.max_regs_per_thread
regs_per_sm = beast.device.regs_per_sm
max_threads_per_sm = beast.device.max_threads_per_sm
max_blocks_per_sm = beast.device.max_blocks_per_sm
shared_mem_per_sm = beast.device.shared_mem_per_sm

# -- iterators -----------------------------------------------------------------------------------
dim_m = beast.range(1, max_threads_dim_x + 1)
dim_n = beast.range(1, max_threads_dim_y + 1)
blk_m = beast.range(dim_m, max_blk + 1, dim_m)
blk_n = beast.range(dim_n, max_blk + 1, dim_n)
blk_k = beast.range(1, max_blk_k + 1)
vector = beast.values(0, 1)

type_len = beast.where(vector, dim_vec, 1)

@beast.iterator
def blk_m_a():
    return range(1, (blk_k if trans_a else blk_m) // type_len + 1)

@beast.iterator
def blk_n_a():
    return range(1, (blk_m if trans_a else blk_k) + 1)

@beast.iterator
def blk_m_b():
    return range(1, (blk_n if trans_b else blk_k) // type_len + 1)

@beast.iterator
def blk_n_b():
    return range(1, (blk_k if trans_b else blk_n) + 1)

tex_a = beast.values(0, 1)        # read A through the texture path
tex_b = beast.values(0, 1)

# -- derived values ------------------------------------------------------------------------------
threads = dim_m * dim_n
thr_m = blk_m // dim_m
thr_n = blk_n // dim_n
smem = (blk_m * blk_k + blk_k * blk_n) * elem_bytes
regs = elem_words * (thr_m * thr_n + thr_m + thr_n
                     + (blk_m * blk_k + blk_k * blk_n + threads - 1) // threads) + 16
blocks_per_sm = beast.min(max_blocks_per_sm, max_threads_per_sm // threads,
                          regs_per_sm // (regs * threads), shared_mem_per_sm // smem)

# -- filters (each REJECTS when true) ------------------------------------------------------------
over_max_threads = beast.filter(threads > max_threads_per_block)
partial_warp = beast.filter(threads % warp_size != 0)
a_shape = beast.filter(blk_m_a * blk_n_a != threads)
b_shape = beast.filter(blk_m_b * blk_n_b != threads)

@beast.filter
def a_incongruent():
    if trans_a:
        return blk_k % (blk_m_a * type_len) != 0 or blk_m % blk_n_a != 0
    return blk_m % (blk_m_a * type_len) != 0 or blk_k % blk_n_a != 0

@beast.filter
def b_incongruent():
    if trans_b:
        return blk_n % (blk_m_b * type_len) != 0 or blk_k % blk_n_b != 0
    return blk_k % (blk_m_b * type_len) != 0 or blk_n % blk_n_b != 0

over_max_shmem = beast.filter(smem > max_shared_mem_per_block)
over_max_regs = beast.filter(regs > max_regs_per_thread)
low_occupancy = beast.filter(blocks_per_sm * threads * 4 < max_threads_per_sm)
low_fma_ratio = beast.filter(5 * thr_m * thr_n < 6 * (thr_m + thr_n))

# -- lower-bound model (Telamon-style): seconds; each term must NEVER exceed the real run time ----
# Problem size C[M x N] += A[M x K] B[K x N]. The bound of a configuration is the maximum of the terms;
# a term that depends only on outer loops cuts whole subtrees there.
M = beast.setting(4096, minimum=1)
N = beast.setting(4096, minimum=1)
K = beast.setting(4096, minimum=1)

bt = beast.bound_terms

@beast.derived
def fmas_per_element():                           # a complex multiply-add is 4 real FMAs
    return 4 if precision in ('c', 'z') else 1

@beast.derived
def peak_fma_flops():                             # this kernel uses FMA units, never tensor cores
    return beast.device.peak_flops_fp64 if precision in ('d', 'z') else beast.device.peak_flops_fp32

@beast.derived
def fma_lanes_per_sm():
    return beast.device.fp64_lanes_per_sm if precision in ('d', 'z') else beast.device.fp32_lanes_per_sm

@beast.derived
def l1_is_shared_memory():
    """Volta and later: shared memory and L1-hit global loads are one unit with one data path."""
    return float(beast.device.compute_capability) >= 7.0

blocks = bt.ceil_div(M, blk_m) * bt.ceil_div(N, blk_n)
blocks_on_busiest_sm = bt.busiest_sm_blocks(blocks)
k_tiles = bt.ceil_div(K, blk_k)
warps = threads // 32
# resident blocks per SM from the exact limits only (threads, shared memory, block slots): the register
# estimate above may exceed the compiler's real use, and fewer resident blocks would not be a valid bound
resident_blocks = bt.resident_blocks(threads, smem)

# Counts per thread and K tile, read from spaces/kernels/gemm.cl, each a minimum no compiler beats:
# each step kk reads rA[i] = sA[kk*blk_m + tx + i*dim_m] and rB[j] = sB[(ty + j*dim_n)*blk_k + kk],
# then does thr_m*thr_n multiply-adds (one FMA instruction per real FMA). Over the tile a thread's A
# values are separate elements (dim_m > 1) or one contiguous run (dim_m = 1); its B values are
# thr_n runs of blk_k elements (contiguous across kk: a compiler may fuse them), one run when
# dim_n = 1. The copy moves blk_m*blk_k/threads elements of A and blk_k*blk_n/threads of B per
# thread (global load, shared store, 16 bytes at most each) between two barriers.
a_run = beast.where(dim_m == 1, thr_m * blk_k, 1) * elem_bytes
a_runs = beast.where(dim_m == 1, 1, thr_m * blk_k)
b_run = beast.where(dim_n == 1, thr_n, 1) * blk_k * elem_bytes
b_runs = beast.where(dim_n == 1, 1, thr_n)
a_lanes = beast.where(dim_m == 1, 1, beast.min(32, dim_m))     # distinct tx in a warp (at least)
b_lanes = beast.where(dim_n == 1, 1, bt.ceil_div(32, dim_m))   # distinct ty in a warp (at least)
copy_a = blk_m * blk_k // threads * elem_bytes                 # bytes per thread and tile
copy_b = blk_k * blk_n // threads * elem_bytes
instructions_per_tile = (fmas_per_element * thr_m * thr_n * blk_k
                         + bt.fused_loads(a_run, a_runs) + bt.fused_loads(b_run, b_runs)
                         + 2 * (bt.fused_loads(copy_a) + bt.fused_loads(copy_b)) + 2)
# shared-memory wavefronts per warp and tile: the reads (bank model), the copy's stores, and the
# copy's global loads where they share the data path
wavefronts_per_tile = (a_runs * bt.warp_wavefronts(a_lanes, a_run, a_run)
                       + b_runs * bt.warp_wavefronts(b_lanes, b_run, b_run)
                       + (bt.line_wavefronts(32, copy_a) + bt.line_wavefronts(32, copy_b))
                       * beast.where(l1_is_shared_memory, 2, 1))

HOW = "counts from spaces/kernels/gemm.cl (fused minimum); profile rates at max_clock_mhz"
# compute: every one of the 2*M*N*K (x4 complex) flops is executed, never faster than the FMA peak
compute_time = beast.bound(2 * fmas_per_element * M * N * K / peak_fma_flops, source="flop count, FMA peak")
# FMA pipe: the busiest SM's blocks each do blk_m*blk_n*K multiply-adds
fma_time = beast.bound(bt.fma_time(1.0 * blocks_on_busiest_sm * fmas_per_element * blk_m * blk_n * K,
                                   fma_lanes_per_sm), source=HOW)
# issue slots and shared-memory wavefronts of the busiest SM's warps
issue_time = beast.bound(bt.issue_time(1.0 * blocks_on_busiest_sm * warps * k_tiles * instructions_per_tile),
                         source=HOW)
lsu_time = beast.bound(bt.lsu_time(1.0 * blocks_on_busiest_sm * warps * k_tiles * wavefronts_per_tile),
                       source=HOW)
# waves: at most resident_blocks at once, each at least one warp's instructions long
wave_time = beast.bound(bt.wave_time(blocks, resident_blocks, 1.0 * k_tiles * instructions_per_tile),
                        source=HOW + "; occupancy from threads and shared memory (registers unknown)")
# compulsory DRAM traffic: A and B read and C written at least once; only what exceeds the L2 can
# have stayed on chip from a previous run
dram_time = beast.bound(bt.dram_time((M * K + K * N + M * N) * elem_bytes), source="compulsory traffic")
launch_time = beast.bound(bt.launch_time(), source="profile launch_overhead")

# -- the kernel these configurations tune (beastgen tune spaces/gemm.py --backend opencl) ----------
# spaces/kernels/gemm.cl handles any M, N, K (edges are guarded), in precisions s, d, c and z
# (complex stored interleaved: complex64/complex128 here, float2/double2 in the kernel; op(X) is the
# plain transpose). It is one source for OpenCL and CUDA (portability macros keyed on
# __OPENCL_VERSION__): both backends use it. Its vector loads are VL = type_len elements wide (16
# bytes when vector=1, as dim_vec assumes: 4 s, 2 d, 2 c, 1 z), so the a/b_incongruent filters
# describe its load pattern. NumPy is imported where the arguments are made (a count needs none).


def _gemm_scalars(precision):
    """(alpha, beta) of the test problem: complex in precisions c and z."""
    return (1.5 - 0.5j, 0.5 + 0.25j) if precision in ("c", "z") else (1.5, 0.5)


def _gemm_arguments(s):
    import numpy as np

    dtype = {"s": np.float32, "d": np.float64, "c": np.complex64,
             "z": np.complex128}[s["precision"]]
    complex_ = s["precision"] in ("c", "z")
    real = np.float32 if s["precision"] in ("s", "c") else np.float64
    alpha, beta = _gemm_scalars(s["precision"])
    rng = np.random.default_rng(1)
    m, n, k = s["M"], s["N"], s["K"]
    a_shape = (k, m) if s["trans_a"] else (m, k)      # stored shapes (rows, columns), column-major
    b_shape = (n, k) if s["trans_b"] else (k, n)

    def matrix(shape):
        x = rng.uniform(-1, 1, shape)
        if complex_:
            x = x + 1j * rng.uniform(-1, 1, shape)
        return np.asfortranarray(x).astype(dtype).ravel(order="F")

    a, b, c = matrix(a_shape), matrix(b_shape), matrix((m * n,))
    # complex alpha and beta go as (real, imaginary) pairs of REAL arguments
    scalar = (lambda x: [real(x.real), real(x.imag)]) if complex_ else (lambda x: [real(x)])
    return [np.int32(m), np.int32(n), np.int32(k), *scalar(alpha), a, np.int32(a_shape[0]),
            b, np.int32(b_shape[0]), *scalar(beta), c, np.int32(m)]


def _gemm_reference(args, s):
    import numpy as np

    m, n, k = s["M"], s["N"], s["K"]
    complex_ = s["precision"] in ("c", "z")
    wide = np.complex128 if complex_ else np.float64
    ia, ib, ic = (5, 7, 11) if complex_ else (4, 6, 9)   # where A, B and C are in the arguments
    alpha, beta = _gemm_scalars(s["precision"])
    a = args[ia].astype(wide).reshape((k, m) if s["trans_a"] else (m, k), order="F")
    b = args[ib].astype(wide).reshape((n, k) if s["trans_b"] else (k, n), order="F")
    c = args[ic].astype(wide).reshape((m, n), order="F")
    out = alpha * (a.T if s["trans_a"] else a) @ (b.T if s["trans_b"] else b) + beta * c
    return {ic: out.ravel(order="F")}


kernel = beast.kernel(
    source={"opencl": "kernels/gemm.cl", "cuda": "kernels/gemm.cl"}, name="gemm",
    defines=lambda c: {"REAL": "float" if c["precision"] in ("s", "c") else "double",
                       "REAL_IS_DOUBLE": int(c["precision"] in ("d", "z")),
                       "COMPLEX": int(c["precision"] in ("c", "z")),
                       # VL: type_len, i.e. dim_vec = 16 // elem_bytes elements when vector=1
                       "VL": 16 // {"s": 4, "d": 8, "c": 8, "z": 16}[c["precision"]]
                       if c["vector"] else 1,
                       "DIM_M": c["dim_m"], "DIM_N": c["dim_n"], "BLK_M": c["blk_m"],
                       "BLK_N": c["blk_n"], "BLK_K": c["blk_k"], "DIM_M_A": c["blk_m_a"],
                       "DIM_N_A": c["blk_n_a"], "DIM_M_B": c["blk_m_b"], "DIM_N_B": c["blk_n_b"],
                       "TRANS_A": c["trans_a"], "TRANS_B": c["trans_b"], "TEX_A": c["tex_a"],
                       "TEX_B": c["tex_b"]},
    block=(dim_m, dim_n),
    grid=((M + blk_m - 1) // blk_m, (N + blk_n - 1) // blk_n),
    arguments=_gemm_arguments, reference=_gemm_reference,
    # relative to max|C|: a complex element sums 2K real products (c: twice s's margin)
    tolerance={"s": 1e-4, "d": 1e-10, "c": 2e-4, "z": 1e-10}, timeout=20.0,
    problem_size=("M", "N", "K"))
