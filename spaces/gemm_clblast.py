"""CLBlast's Xgemm kernel ("gemm_milo", OpenCL): a reference tuning space of the auto-tuning
community, transcribed from its T1 JSON (shared/reference-spaces/gemm_clblast.json).

Source: AutoTuningAssociation benchmark_hub (https://github.com/AutoTuningAssociation/benchmark_hub),
MIT licence.

17 tuning parameters (Cartesian size 663,552) and 8 conditions. Expected count: 116,928 valid
configurations (on any device: the space uses no device property).

Every tuning parameter is an iterator (even those with a single value), in the JSON's order and
with the JSON's names, so configurations match Kernel Tuner cache files. Each T1 Condition (valid
when true) becomes a filter that REJECTS when the condition is false: ``return not (<condition>)``
with the condition copied verbatim (the last one, itself a ``not (...)``, rejects when its inner
conjunction is true). Note the true division in the two "load shape" conditions:
``(MDIMC * NDIMC)/MDIMA`` is a float, and ``KWG % <float> == 0`` is Python's float modulo.

Names: MWG/NWG/KWG tile of C and K step per work-group; MDIMC x NDIMC threads compute it; the same
threads are reshaped to MDIMA x (MDIMC*NDIMC/MDIMA) to load A and (MDIMC*NDIMC/NDIMB) x NDIMB to
load B; VWM/VWN vector widths; KWI unroll of the K loop.
"""
import beastgen as beast

# -- tuning parameters (T1 order) ----------------------------------------------------------------
GEMMK = beast.values(0)
MWG = beast.values(16, 32, 64, 128)
NWG = beast.values(16, 32, 64, 128)
KWG = beast.values(16, 32)
MDIMC = beast.values(8, 16, 32)
NDIMC = beast.values(8, 16, 32)
MDIMA = beast.values(8, 16, 32)
NDIMB = beast.values(8, 16, 32)
KWI = beast.values(2)
VWM = beast.values(1, 2, 4, 8)
VWN = beast.values(1, 2, 4, 8)
STRM = beast.values(0, 1)
STRN = beast.values(0, 1)
SA = beast.values(0, 1)
SB = beast.values(0, 1)
KREG = beast.values(1)
PRECISION = beast.values(32)

# -- conditions (each filter REJECTS when the T1 condition is false) -------------------------------
@beast.filter
def kwg_not_multiple_of_kwi():
    """The K tile is unrolled by KWI."""
    return not (KWG % KWI == 0)

@beast.filter
def mwg_not_multiple_of_compute_m():
    """The M tile is split evenly over MDIMC threads, each computing vectors of VWM."""
    return not (MWG % (MDIMC * VWM) == 0)

@beast.filter
def nwg_not_multiple_of_compute_n():
    """The N tile is split evenly over NDIMC threads, each computing vectors of VWN."""
    return not (NWG % (NDIMC * VWN) == 0)

@beast.filter
def mwg_not_multiple_of_load_a():
    """The A tile's M edge is loaded evenly by MDIMA threads with vectors of VWM."""
    return not (MWG % (MDIMA * VWM) == 0)

@beast.filter
def nwg_not_multiple_of_load_b():
    """The B tile's N edge is loaded evenly by NDIMB threads with vectors of VWN."""
    return not (NWG % (NDIMB * VWN) == 0)

@beast.filter
def kwg_not_multiple_of_load_a_rows():
    """The A tile's K edge is loaded evenly by the MDIMC*NDIMC/MDIMA thread rows (true division)."""
    return not (KWG % ((MDIMC * NDIMC)/MDIMA) == 0)

@beast.filter
def kwg_not_multiple_of_load_b_rows():
    """The B tile's K edge is loaded evenly by the MDIMC*NDIMC/NDIMB thread rows (true division)."""
    return not (KWG % ((MDIMC * NDIMC)/NDIMB) == 0)

@beast.filter
def excluded_128x128_with_8x8_threads():
    """The benchmark excludes the 128x128 tile computed by only 8x8 threads.

    T1: ``not (MWG == 128 and NWG == 128 and MDIMC == 8 and NDIMC == 8)``; rejecting when it is
    false means rejecting when the inner conjunction is true."""
    return MWG == 128 and NWG == 128 and MDIMC == 8 and NDIMC == 8

# -- lower-bound model of the Xgemm kernel (seconds; each term must NEVER exceed the real time) ---
# C[M x N] = A[M x K] B[K x N] in single precision. Xgemm (GEMMK=0, KREG=1), read from CLBlast's
# xgemm_part1..3.opencl: a work-group of MDIMC x NDIMC threads computes an MWG x NWG tile of C; for
# each K tile of KWG (K/KWG times): if SA (SB), the work-group copies A's MWG x KWG (B's KWG x NWG)
# tile from global to local memory, reshaped to MDIMA x KDIMA (NDIMB x KDIMB) threads
# (GlobalToLocalA/B), between two barriers; then for each of the KWG steps k, every thread loads its
# MWI = MWG/MDIMC values of A and NWI = NWG/NDIMC of B (LocalToPrivate when SA/SB, else
# GlobalToPrivate), as MWI/VWM vectors of VWM (NWI/VWN of VWN), and does MWI * NWI FMAs.
# STRM=0: a thread's MWI values are contiguous (vector index _mi + id0*(MWI/VWM)); STRM=1: its
# vectors are MDIMC vectors apart (id0 + _mi*MDIMC). B likewise with id1, NDIMC, VWN, STRN.
# Threads are numbered x first, so a warp holds min(32, MDIMC) values of id0 and 32/MDIMC of id1.
# Counts are per warp and K tile, for the busiest SM; every one is a minimum no compiler beats:
# one FFMA per FMA (no NVIDIA GPU up to Hopper has a packed FP32 FMA), loads fused to the widest
# (bound_terms.fused_loads), wavefronts over the union of a warp's lanes (bound_terms.warp_wavefronts).
M = beast.setting(4096, minimum=1)
N = beast.setting(4096, minimum=1)
K = beast.setting(4096, minimum=1)
ELEM_BYTES = 4
bt = beast.bound_terms

threads = MDIMC * NDIMC
warps = threads // 32
work_groups = bt.ceil_div(M, MWG) * bt.ceil_div(N, NWG)
blocks_on_busiest_sm = bt.busiest_sm_blocks(work_groups)
k_tiles = bt.ceil_div(K, KWG)
MWI = MWG // MDIMC
NWI = NWG // NDIMC
local_mem = (SA * MWG + SB * NWG) * KWG * ELEM_BYTES
resident = bt.resident_blocks(threads, local_mem)   # registers unknown here: left out (only raises it)

# a thread's A values per step k: STRM=0 one run of MWI values, STRM=1 MWI/VWM runs of VWM; the lanes
# of a warp read min(32, MDIMC) of them side by side (B: 32/MDIMC, at least one)
run_a = beast.where(STRM == 0, MWI, VWM) * ELEM_BYTES
runs_a = beast.where(STRM == 0, 1, MWI // VWM)
run_b = beast.where(STRN == 0, NWI, VWN) * ELEM_BYTES
runs_b = beast.where(STRN == 0, 1, NWI // VWN)
lanes_a = beast.min(32, MDIMC)
lanes_b = beast.max(1, 32 // MDIMC)
# the copies to local memory: a thread moves KWA rows of MWA = MWG/MDIMA values of A (STRM=0: one
# run per row; STRM=1: MWA/VWM runs of VWM), KWA = KWG / (threads / MDIMA); B likewise
copy_run_a = beast.where(STRM == 0, MWG // MDIMA, VWM) * ELEM_BYTES
copy_runs_a = KWG // (threads // MDIMA) * beast.where(STRM == 0, 1, MWG // MDIMA // VWM)
copy_run_b = beast.where(STRN == 0, NWG // NDIMB, VWN) * ELEM_BYTES
copy_runs_b = KWG // (threads // NDIMB) * beast.where(STRN == 0, 1, NWG // NDIMB // VWN)

@beast.derived
def l1_is_shared_memory():
    """Volta and later: shared memory and L1-hit global loads are one unit with one data path."""
    return float(beast.device.compute_capability) >= 7.0

# warp instructions per K tile: FMAs, the fused minimum of loads (and of the copies' loads and
# stores), and the two barriers around the copies
instructions_per_tile = (KWG * (MWI * NWI + bt.fused_loads(run_a, runs_a) + bt.fused_loads(run_b, runs_b))
                         + SA * 2 * bt.fused_loads(copy_run_a, copy_runs_a)
                         + SB * 2 * bt.fused_loads(copy_run_b, copy_runs_b)
                         + beast.where((SA == 1) | (SB == 1), 2, 0))
# wavefronts per K tile: local-memory loads (bank model); global loads (SA=0 / SB=0, the copies'
# loads) and the copies' stores at one 128-byte line per wavefront, at least one per instruction;
# global loads count only where they share the data path with local memory
wavefronts_a = KWG * runs_a * beast.where(SA == 1, bt.warp_wavefronts(lanes_a, run_a, run_a),
                                          beast.where(l1_is_shared_memory, bt.line_wavefronts(lanes_a, run_a), 0))
wavefronts_b = KWG * runs_b * beast.where(SB == 1, bt.warp_wavefronts(lanes_b, run_b, run_b),
                                          beast.where(l1_is_shared_memory, bt.line_wavefronts(lanes_b, run_b), 0))
copy_wavefronts_a = copy_runs_a * bt.line_wavefronts(32, copy_run_a) * beast.where(l1_is_shared_memory, 2, 1)
copy_wavefronts_b = copy_runs_b * bt.line_wavefronts(32, copy_run_b) * beast.where(l1_is_shared_memory, 2, 1)
wavefronts_per_tile = wavefronts_a + wavefronts_b + SA * copy_wavefronts_a + SB * copy_wavefronts_b

HOW = "counts from CLBlast's Xgemm source (fused minimum); profile rates at max_clock_mhz"
# FMA pipe: the busiest SM's work-groups do MWG*NWG*K FMAs each
fma_time = beast.bound(bt.fma_time(blocks_on_busiest_sm * MWG * NWG * K), source=HOW)
# issue slots: every warp of those work-groups issues its instructions
issue_time = beast.bound(bt.issue_time(blocks_on_busiest_sm * warps * k_tiles * instructions_per_tile),
                         source=HOW)
# shared-memory / L1 wavefronts of the busiest SM
lsu_time = beast.bound(bt.lsu_time(blocks_on_busiest_sm * warps * k_tiles * wavefronts_per_tile),
                       source=HOW)
# waves: at most `resident` work-groups at once (threads, local memory), each at least one warp's
# instructions long
wave_time = beast.bound(bt.wave_time(work_groups, resident, k_tiles * instructions_per_tile),
                        source=HOW + "; occupancy from threads and local memory (registers unknown)")
# compulsory DRAM traffic: A, B read and C written once, except what a previous run left in L2
dram_time = beast.bound(bt.dram_time((M * K + K * N + M * N) * ELEM_BYTES), source="compulsory traffic")
launch_time = beast.bound(bt.launch_time(), source="profile launch_overhead")
