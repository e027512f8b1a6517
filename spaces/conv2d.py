"""A 2-D multi-channel convolution (cuDNN's forward conv, NCHW input, KCRS filters) computed as an
implicit GEMM, parameterized in the spirit of ISAAC (Tillet & Cox, SC'17, section 3.3).

The convolution O[n, k, p, q] = sum over (c, r, s) of I[n, c, p*stride + r - pad, q*stride + s - pad]
* F[k, c, r, s] is an implicit matrix product: rows are the NPQ output pixels, columns the K
filters, and the reduction runs over CRS = C*R*S. Nothing is unfolded in memory: tiles of I are
gathered into shared memory through an indirection table (im2col on the fly).

Tuning parameters:
    blk_pix, blk_k   the block's output tile: blk_pix output pixels (of NPQ) x blk_k filters
    thr_pix, thr_k   each thread's register micro-tile, so the block has
                     (blk_pix // thr_pix) * (blk_k // thr_k) threads
    blk_crs          the reduction depth prefetched into shared memory per step (ISAAC's U)
    split_block      the reduction is split across that many thread groups of a block, whose
                     results are summed in shared memory at the end (ISAAC's C_L)
    split_grid       the reduction is split across that many blocks, whose results are summed
                     with global atomics (ISAAC's C_G); it buys parallelism for deep reductions
    vec_in, vec_f    vector width (elements) of the global loads of the input and filter tiles
    stages           shared-memory buffers: 1 = load then compute, 2 = double buffering

Filters encode what must hold for the kernel to compile and run (threads, registers and shared
memory within the device limits, tiles divisible by micro-tiles and by the vector loads) and what
a performance engineer would not bother timing (low occupancy, too few blocks for the SMs, a tile
mostly padding for this problem size, split reductions too short to pay for themselves).

A filter REJECTS a configuration when it is true.
"""
import beastgen as beast

# -- settings (problem inputs): the default is a ResNet-50 conv3_x 3x3 layer, batch 32 ------------
N = beast.setting(32, minimum=1)          # batch size
C = beast.setting(128, minimum=1)         # input channels
H = beast.setting(28, minimum=1)          # input height
W = beast.setting(28, minimum=1)          # input width
K = beast.setting(128, minimum=1)         # output channels (filters)
R = beast.setting(3, minimum=1)           # filter height
S = beast.setting(3, minimum=1)           # filter width
stride = beast.setting(1, minimum=1)
pad = beast.setting(1, minimum=0)
precision = beast.setting('s', choices=['h', 's', 'd'])
max_tile = beast.setting(128, minimum=1)  # largest block tile edge (blk_pix, blk_k)
max_thread_tile = beast.setting(8, minimum=1)  # largest micro-tile edge (thr_pix, thr_k)

@beast.derived
def elem_bytes():
    return {'h': 2, 's': 4, 'd': 8}[precision]

acc_bytes = beast.max(elem_bytes, 4)       # half precision accumulates in float
P = (H + 2 * pad - R) // stride + 1        # output height
Q = (W + 2 * pad - S) // stride + 1        # output width
NPQ = N * P * Q                            # rows of the implicit GEMM
CRS = C * R * S                            # depth of the implicit GEMM

# -- device properties ---------------------------------------------------------------------------
sm_count = beast.device.sm_count
warp_size = beast.device.warp_size
max_threads_per_block = beast.device.max_threads_per_block
max_threads_per_sm = beast.device.max_threads_per_sm
max_blocks_per_sm = beast.device.max_blocks_per_sm
regs_per_sm = beast.device.regs_per_sm
max_regs_per_thread = beast.device.max_regs_per_thread
shared_mem_per_sm = beast.device.shared_mem_per_sm
# dynamic shared memory: the kernel opts in to the largest allocation the device allows
max_shared_mem_per_block = beast.device.max_shared_mem_per_block_optin

# -- iterators -----------------------------------------------------------------------------------
@beast.iterator
def blk_pix():
    """Output-pixel tile: powers of two from 16 to max_tile."""
    t = 16
    while t <= max_tile:
        yield t
        t *= 2

@beast.iterator
def blk_k():
    """Filter tile: powers of two from 4 to max_tile, stopping at the first that covers K
    (a larger one would be mostly padding; K = 1 still gets a tile)."""
    t = 4
    while t <= max_tile:
        yield t
        if t >= K:
            break
        t *= 2

thr_pix = beast.range(1, beast.min(blk_pix, max_thread_tile) + 1)
thr_k = beast.range(1, beast.min(blk_k, max_thread_tile) + 1)
blk_crs = beast.values(4, 8, 16, 32)
split_block = beast.values(1, 2, 4)
split_grid = beast.values(1, 2, 4, 8)
vec_in = beast.values(1, 2, 4)
vec_f = beast.values(1, 2, 4)
stages = beast.values(1, 2)

# -- derived values ------------------------------------------------------------------------------
threads = (blk_pix // thr_pix) * (blk_k // thr_k) * split_block
padded_npq = (NPQ + blk_pix - 1) // blk_pix * blk_pix   # NPQ rounded up to whole tiles
padded_k = (K + blk_k - 1) // blk_k * blk_k
tiles = (padded_npq // blk_pix) * (padded_k // blk_k)
blocks = tiles * split_grid

@beast.derived
def smem():
    """Shared memory per block: the staged input and filter tiles, the indirection table, and
    (when the reduction is split inside the block) the buffer that sums the partial tiles."""
    tile_bytes = stages * split_block * (blk_pix + blk_k) * blk_crs * elem_bytes
    table_bytes = 4 * blk_crs                  # im2col offsets of the CRS slice
    if split_block > 1:
        reduce_bytes = (split_block - 1) * blk_pix * blk_k * acc_bytes
        return max(tile_bytes, reduce_bytes) + table_bytes
    return tile_bytes + table_bytes

# 32-bit registers per thread: accumulators, operand fragments, prefetch buffers, addressing
acc_words = acc_bytes // 4
elem_regs = (elem_bytes + 3) // 4
prefetch = ((blk_pix + blk_k) * blk_crs * split_block + threads - 1) // threads
regs = (thr_pix * thr_k * acc_words + (thr_pix + thr_k) * elem_regs
        + stages // 2 * prefetch * elem_regs + 28)
blocks_per_sm = beast.min(max_blocks_per_sm, max_threads_per_sm // threads,
                          regs_per_sm // (regs * threads), shared_mem_per_sm // smem)

# -- filters (each REJECTS when true) ------------------------------------------------------------
not_divisible = beast.filter((blk_pix % thr_pix != 0) | (blk_k % thr_k != 0))
too_many_threads = beast.filter(threads > max_threads_per_block)
partial_warp = beast.filter(threads % warp_size != 0)
too_few_threads = beast.filter(threads < 2 * warp_size)
vector_too_wide = beast.filter((vec_in * elem_bytes > 16) | (vec_f * elem_bytes > 16))

@beast.filter
def misaligned_vectors():
    """A vector load must not straddle a row of the gathered tile. Input vectors run along q:
    contiguous in memory only without stride, and only when Q is a multiple of the width (the next
    output row starts elsewhere). Filter vectors run along crs (KCRS layout)."""
    if vec_in > 1:
        if stride != 1 or Q % vec_in != 0:
            return True
    return vec_f > 1 and CRS % vec_f != 0

# the inner loop reads thr_pix + thr_k operands from shared memory for thr_pix * thr_k FMAs
shared_memory_bound = beast.filter(thr_pix * thr_k < thr_pix + thr_k)
over_shared_memory = beast.filter(smem > max_shared_mem_per_block)
over_registers = beast.filter(regs > max_regs_per_thread)
low_occupancy = beast.filter(blocks_per_sm * threads * 4 < max_threads_per_sm)
too_few_blocks = beast.filter(blocks < sm_count)
# each slice of a split reduction must still run at least two prefetch steps
short_reduction = beast.filter(CRS < 2 * blk_crs * split_block * split_grid)
# a pixel tile that is mostly padding for this problem
wasted_pixels = beast.filter(padded_npq > 2 * NPQ)

# -- lower-bound model (seconds; each term must NEVER exceed the real time) ------------------
# The space names no kernel source, so counts are what ANY kernel with these tiles must do, at the
# most favourable layout: every multiply-add (FMA instructions: one per FMA, two half-precision FMAs
# per packed instruction), and per reduction step each thread's thr_pix + thr_k operands read from
# shared memory in the fewest 16-byte loads (bound_terms.fused_loads), each needing one wavefront.
bt = beast.bound_terms

@beast.derived
def peak_fma_flops():                             # the kernel uses FMA units, never tensor cores
    return {'h': beast.device.peak_flops_fp16, 's': beast.device.peak_flops_fp32,
            'd': beast.device.peak_flops_fp64}[precision]

fmas_per_instruction = beast.where(precision == 'h', 2, 1)   # HFMA2 packs two half FMAs
blocks_on_busiest_sm = bt.busiest_sm_blocks(blocks)
steps = CRS // (split_grid * split_block)          # reduction steps of each thread (at least)
warps = threads // 32
instructions_per_step = (bt.ceil_div(thr_pix * thr_k, fmas_per_instruction)
                         + bt.fused_loads(thr_pix * elem_bytes) + bt.fused_loads(thr_k * elem_bytes))
wavefronts_per_step = bt.fused_loads(thr_pix * elem_bytes) + bt.fused_loads(thr_k * elem_bytes)
HOW = "counts any kernel with these tiles does (fused minimum); profile rates at max_clock_mhz"

# compute: the padded implicit GEMM (every tile computed in full) at no more than the FMA peak
compute_time = beast.bound(2 * padded_npq * padded_k * CRS / peak_fma_flops, source="flop count, FMA peak")

# compulsory DRAM traffic: input, filters and output each cross DRAM at least once, except what a
# previous run left in L2
dram_time = beast.bound(bt.dram_time((N * C * H * W + K * CRS + N * K * P * Q) * elem_bytes),
                        source="compulsory traffic")

# FMA pipe: the busiest SM runs at least ceil(blocks / sm_count) blocks, each 2*blk_pix*blk_k*CRS/split_grid
# flops, at its share of the peak
fma_time = beast.bound(1.0 * blocks_on_busiest_sm * 2 * blk_pix * blk_k * CRS / split_grid
                       / (peak_fma_flops / sm_count), source="flop count, FMA peak per SM")

# issue slots and shared-memory wavefronts of the busiest SM's warps
issue_time = beast.bound(bt.issue_time(1.0 * blocks_on_busiest_sm * warps * steps * instructions_per_step),
                         source=HOW)
lsu_time = beast.bound(bt.lsu_time(1.0 * blocks_on_busiest_sm * warps * steps * wavefronts_per_step),
                       source=HOW)
launch_time = beast.bound(bt.launch_time(), source="profile launch_overhead")
