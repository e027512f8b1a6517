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
# C[M x N] = A[M x K] B[K x N] in single precision; a work-group of MDIMC x NDIMC threads computes an
# MWG x NWG tile of C, stepping through K by KWG, with A (B) staged in local memory when SA (SB).
# The problem size is a setting; the Kernel Tuner replay data (shared/replay/) is 4096^3.
M = beast.setting(4096)
N = beast.setting(4096)
K = beast.setting(4096)
ELEM_BYTES = 4
LOAD_BYTES_PER_CLOCK_PER_SM = 256          # L1 (128 B/clk) and texture path combined, at most

sm_count = beast.device.sm_count
clock_hz = beast.device.max_clock_mhz * 1e6  # the highest clock the GPU can run at
peak_flops = beast.device.peak_flops_fp32    # Xgemm uses FMA units, never tensor cores
threads = MDIMC * NDIMC
work_groups = ((M + MWG - 1) // MWG) * ((N + NWG - 1) // NWG)
local_mem = (SA * MWG + SB * NWG) * KWG * ELEM_BYTES
# resident work-groups per SM from the exact limits (threads, local memory, block slots); registers
# are unknown here and could only lower it, which keeps every term below valid
resident = beast.min(beast.device.max_blocks_per_sm, beast.device.max_threads_per_sm // threads,
                     beast.where(local_mem > 0, beast.device.shared_mem_per_sm // beast.max(local_mem, 1),
                                 beast.device.max_blocks_per_sm))

# compute: all 2*M*N*K flops, never faster than the FP32 FMA peak
compute_time = beast.bound(2 * M * N * K / peak_flops)

# compulsory DRAM traffic: A, B read and C written once, except what a previous run left in L2
dram_time = beast.bound(beast.max(0, (M * K + K * N + M * N) * ELEM_BYTES - beast.device.l2_size)
                        / beast.device.dram_bandwidth)

# tiling traffic: each work-group reads its MWG x K panel of A and K x NWG panel of B at least once;
# no SM takes in more than LOAD_BYTES_PER_CLOCK_PER_SM bytes per clock
tiling_time = beast.bound(work_groups * (MWG + NWG) * K * ELEM_BYTES
                          / (sm_count * LOAD_BYTES_PER_CLOCK_PER_SM * clock_hz))

# SM load: the busiest SM runs at least ceil(work_groups / sm_count) whole work-groups' flops at its
# share of the peak
sm_load_time = beast.bound((work_groups + sm_count - 1) // sm_count * 2 * MWG * NWG * K
                           / (peak_flops / sm_count))

# wave quantization: the busiest SM runs those work-groups at most `resident` at a time, and each
# lasts at least its threads' (MWG/MDIMC)*(NWG/NDIMC)*K FMAs, one instruction per clock per warp
wave_time = beast.bound(((work_groups + sm_count - 1) // sm_count + resident - 1) // resident
                        * (MWG // MDIMC) * (NWG // NDIMC) * K / clock_hz)
