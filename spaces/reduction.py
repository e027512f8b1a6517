"""A parallel reduction: sum(x) or dot(x, y) over N elements (BLAS asum/dot, the partial-sum phase
of a norm, the reduction half of an axpy-reduction), tuned for one GPU.

The kernel is the classic persistent grid-stride reduction:

    grid  = blocks_per_sm * sm_count blocks of `threads` threads, all resident at once (one wave)
    loop  : every thread issues `unroll` independent vector loads of `vec` elements per input
            (a grid-stride "pass" consumes grid * threads * vec * unroll elements), and adds them
            into `accumulators` independent partial sums (breaking the add dependency chain)
    block : the block's partial sums are combined by `final_stage`:
              'shared_tree'  - a log2(threads) tree in shared memory (one slot per thread); with
                               `unroll_last_warp` the last 32 lanes run unrolled without barriers
              'warp_shuffle' - __shfl_down_sync inside each warp, then one shared slot per warp
                               (compute capability 3.0 and later)
    grid  : the per-block results are combined by `combine`:
              'atomic'     - one atomicAdd per block into the result (not bitwise reproducible;
                             doubles need compute capability 6.0)
              'two_pass'   - the partials go to global memory and a second 1-block kernel sums them
              'last_block' - threadfence + a ticket counter: the last block to finish sums them
    `cache_hint` picks ordinary loads or streaming loads (ld.global.cs: evict-first, the data is
    read exactly once).

A reduction is bound by DRAM bandwidth, so the filters below encode what a performance engineer
checks before timing anything: every block of the wave must be resident (threads, registers and
shared memory per SM), enough bytes must be in flight per SM to cover the memory latency
(Little's law), and each thread must have enough work for N (at least `min_passes` grid-stride
passes) or the launch/tail overhead dominates.

A filter REJECTS a configuration when it is true.
"""
import beastgen as beast

# -- settings (problem inputs) -------------------------------------------------------------------
N = beast.setting(1 << 24)                            # elements to reduce
precision = beast.setting('s', choices=['h', 's', 'd'])
op = beast.setting('dot', choices=['sum', 'dot'])     # dot reads two vectors (x and y)
deterministic = beast.setting(False)                  # forbid atomics (bitwise reproducible)
min_passes = beast.setting(4)                         # grid-stride passes each thread must make
mem_latency_ns = beast.setting(800)                   # DRAM latency for Little's law

@beast.derived
def elem_bytes():
    return {'h': 2, 's': 4, 'd': 8}[precision]

acc_bytes = beast.max(elem_bytes, 4)                  # half precision accumulates in float
inputs = beast.where(op == 'dot', 2, 1)               # vectors streamed from DRAM

# -- device properties ---------------------------------------------------------------------------
sm_count = beast.device.sm_count
warp_size = beast.device.warp_size
max_threads_per_block = beast.device.max_threads_per_block
max_threads_per_sm = beast.device.max_threads_per_sm
max_blocks_per_sm = beast.device.max_blocks_per_sm
regs_per_sm = beast.device.regs_per_sm
max_regs_per_thread = beast.device.max_regs_per_thread
shared_mem_per_sm = beast.device.shared_mem_per_sm
max_shared_mem_per_block = beast.device.max_shared_mem_per_block
dram_bandwidth = beast.device.dram_bandwidth
compute_capability = beast.device.compute_capability     # a string, e.g. "9.0"

@beast.derived
def cc():
    """The compute capability as a number (major.minor)."""
    return float(compute_capability)

# Bytes that must be in flight on each SM to keep DRAM busy: bandwidth x latency, per SM.
bytes_in_flight_needed = dram_bandwidth * mem_latency_ns * 1e-9 / sm_count

# -- iterators -----------------------------------------------------------------------------------
@beast.iterator
def threads():
    """Threads per block: the powers of two from one warp up to the block limit."""
    t = warp_size
    while t <= max_threads_per_block:
        yield t
        t *= 2

vec = beast.values(1, 2, 4, 8)           # elements per vector load (float4, double2, half8...)
unroll = beast.values(1, 2, 4, 8)        # independent vector loads per input per pass
accumulators = beast.range(1, unroll + 1)   # independent partial sums: at most one per load
blocks_per_sm = beast.range(1, max_blocks_per_sm + 1)   # grid = blocks_per_sm * sm_count
final_stage = beast.values('shared_tree', 'warp_shuffle')
unroll_last_warp = beast.values(0, 1)
combine = beast.values('atomic', 'two_pass', 'last_block')
cache_hint = beast.values('default', 'streaming')

# -- derived values ------------------------------------------------------------------------------
grid = blocks_per_sm * sm_count
elems_per_pass = grid * threads * vec * unroll
load_regs = (inputs * unroll * vec * elem_bytes + 3) // 4    # 32-bit registers holding loads
regs = 18 + load_regs + accumulators * (acc_bytes // 4) + beast.where(combine == 'last_block', 2, 0)
smem = beast.where(final_stage == 'shared_tree', threads, threads // warp_size) * acc_bytes
bytes_in_flight = blocks_per_sm * threads * unroll * vec * elem_bytes * inputs

# -- filters (each REJECTS when true) ------------------------------------------------------------
vector_too_wide = beast.filter(vec * elem_bytes > 16)           # no load wider than 128 bits
# a persistent grid: the whole wave must be resident on the SMs at once
over_threads_per_sm = beast.filter(blocks_per_sm * threads > max_threads_per_sm)
over_regs = beast.filter(regs > max_regs_per_thread)
over_regs_per_sm = beast.filter(blocks_per_sm * threads * regs > regs_per_sm)
over_smem = beast.filter((smem > max_shared_mem_per_block) | (blocks_per_sm * smem > shared_mem_per_sm))
# Little's law: too few bytes in flight to cover the DRAM latency
latency_bound = beast.filter(bytes_in_flight < bytes_in_flight_needed)
# too little work per thread for this N
too_little_work = beast.filter(N < elems_per_pass * min_passes)
# every accumulator takes the same number of the unrolled loads
uneven_accumulators = beast.filter(unroll % accumulators != 0)
# redundant knobs and forbidden combinations
redundant_last_warp = beast.filter((final_stage == 'warp_shuffle') & (unroll_last_warp == 1))
not_reproducible = beast.filter(deterministic & (combine == 'atomic'))
# hardware support: warp shuffles arrived with Kepler (3.0), double-precision atomicAdd with
# Pascal (6.0); half precision accumulates in float, whose atomicAdd every GPU has
no_warp_shuffle = beast.filter((final_stage == 'warp_shuffle') & (cc < 3.0))
no_double_atomics = beast.filter((combine == 'atomic') & (acc_bytes == 8) & (cc < 6.0))
# the last block sums `grid` partials with its own threads: keep that serial tail short
long_tail = beast.filter((combine == 'last_block') & (grid > 4 * threads))
