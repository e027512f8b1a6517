"""A library of lower-bound terms (Telamon-style), for any space file: ``beast.bound_terms.fma_time(...)``.

Every ``*_time`` function builds a space expression, in seconds, that a space wraps in
``beast.bound(...)``. Built from language objects, a term is placed by the planner right after the
loop that binds its last input, so it bounds partially specified configurations and cuts whole
subtrees. Each rests on one hardware fact of the device profile and can never exceed the real
time, because it divides work the kernel must do by a rate the hardware can never beat:

- the clock is ``max_clock_mhz``, an UPPER bound on the clock (never the rated boost clock);
- counts are MINIMA: work every correct execution does, and instruction counts the compiler
  cannot beat (``fused_loads``: a thread's contiguous bytes in loads of up to 16 bytes;
  ``warp_wavefronts``: shared-memory wavefronts of the union of the lanes' bytes);
- a resource the counts leave out (registers, latency, address arithmetic) can only make the real
  kernel slower.

The work of the busiest SM is what an SM-level term divides: at least ``busiest_sm_blocks(blocks)``
blocks run on one SM (pigeonhole), and all of their instructions go through that SM's units.

Count helpers (``fused_loads``, ``warp_wavefronts``, ``ceil_div``, ...) take plain integers as well
as space expressions, so the tests compare them with :func:`simulate_wavefronts`, a lane-by-lane
simulation of the shared-memory banks.
"""
from __future__ import annotations

from . import nodes as L

#: the widest load or store one thread issues in one instruction (LDS.128 / LDG.128 / ST*.128)
MAX_ACCESS_BYTES = 16
#: powers of two up to the most shared-memory banks of any GPU, for the closed forms' gcd
_BANK_POWERS = (2, 4, 8, 16, 32, 64)


# -- arithmetic on integers or space expressions ---------------------------------------------------
def _symbolic(*values) -> bool:
    return any(isinstance(v, L.Expr) for v in values)


def _where(test, body, orelse):
    return L.where(test, body, orelse) if _symbolic(test, body, orelse) else (body if test else orelse)


def _max(*values):
    return L.max(*values) if _symbolic(*values) else max(values)


def _min(*values):
    return L.min(*values) if _symbolic(*values) else min(values)


def _and(a, b):
    return (a & b) if _symbolic(a, b) else (a and b)


def ceil_div(a, b):
    """``ceil(a / b)`` for non-negative integers (or integer expressions), exactly."""
    return (a + b - 1) // b


def _pow2_gcd(value, banks):
    """gcd(value, banks) for a power-of-two ``banks`` (at most 64): the largest power of two
    dividing both."""
    g = 1
    for p in _BANK_POWERS:
        g = _where(_and(value % p == 0, banks % p == 0), p, g)
    return g


# -- device facts ----------------------------------------------------------------------------------
def clock_hz():
    """The highest clock the GPU runs at (``max_clock_mhz``), in Hz: an upper bound on every rate."""
    return L.device.max_clock_mhz * 1e6


def busiest_sm_blocks(blocks):
    """Blocks run by the busiest SM: at least ``ceil(blocks / sm_count)`` (pigeonhole)."""
    return ceil_div(blocks, L.device.sm_count)


def resident_blocks(threads, shared_bytes=0, regs_per_thread=None):
    """The most blocks of ``threads`` threads an SM holds at once: its block slots, threads, shared
    memory and (only when given: a count the compiler reports, e.g. ptxas through ``nvcc-check``)
    registers. A limit left out can only raise it, which keeps the terms that divide by it valid."""
    limits = [L.device.max_blocks_per_sm, L.device.max_threads_per_sm // threads]
    if not (isinstance(shared_bytes, int) and shared_bytes == 0):
        limits.append(_where(shared_bytes > 0, L.device.shared_mem_per_sm // _max(shared_bytes, 1),
                             L.device.max_blocks_per_sm))
    if regs_per_thread is not None:
        limits.append(L.device.regs_per_sm // (regs_per_thread * threads))
    resident = L.min(*limits)
    # what the space says a block holds, for `beastgen analyze` (threads, shared memory, registers)
    resident.occupancy_inputs = {"threads": threads, "shared_bytes": shared_bytes,
                                 "regs_per_thread": regs_per_thread}
    return resident


# -- instruction and wavefront counts --------------------------------------------------------------
def fused_loads(run_bytes, runs=1):
    """Load (or store) instructions one thread needs for ``runs`` separate runs of ``run_bytes``
    contiguous bytes each: the compiler may fuse contiguous scalar accesses, at most
    MAX_ACCESS_BYTES per instruction, so no code does it in fewer than
    ``runs * ceil(run_bytes / 16)``."""
    return runs * ceil_div(run_bytes, MAX_ACCESS_BYTES)


def _banks(banks, bank_bytes):
    """The profile's shared-memory banks and bank width where not given."""
    return (L.device.smem_banks if banks is None else banks,
            L.device.smem_bank_bytes if bank_bytes is None else bank_bytes)


def warp_wavefronts(lanes, stride_bytes, run_bytes, banks=None, bank_bytes=None):
    """Shared-memory wavefronts of one warp-level access: ``lanes`` distinct lane positions
    i = 0..lanes-1 each read the run of ``run_bytes`` contiguous bytes at ``i * stride_bytes``
    (lanes at the same position read the same bytes: a broadcast).

    The facts: a wavefront reads at most one word of each bank; an instruction reads at most
    MAX_ACCESS_BYTES per lane, and (SIMT) the same program values, so the same piece of the run, in
    every lane. Whatever pieces the compiler cuts the run into, the access needs at least

    - the busiest bank's distinct words over the union of the lanes' runs (the pieces together
      need no fewer wavefronts than their union), and
    - ``fused_loads(run)`` pieces, each needing at least what a one-word piece needs (a longer piece
      reads a superset of words).

    Both have closed forms for this pattern, in whole bank words s (stride) and r (piece or run),
    g = gcd(s, banks): lanes meet the same start bank every banks/g positions, so the busiest bank
    holds ceil(lanes*g/banks) words when r <= g (never fewer than ceil(lanes*r/banks)); runs that
    touch or overlap (r >= s) form one contiguous range, ceil(words / banks). A stride or run that
    is not whole bank words falls back to the distinct bytes' minimum. The tests check this equal to
    :func:`simulate_wavefronts` on every pattern of the shipped spaces (and never above it).
    """
    banks, bank_bytes = _banks(banks, bank_bytes)
    union = _strided_union(lanes, stride_bytes, run_bytes, banks, bank_bytes)
    pieces = fused_loads(run_bytes) * _strided_union(lanes, stride_bytes, bank_bytes, banks, bank_bytes)
    return _max(union, pieces)


def _strided_union(lanes, stride_bytes, run_bytes, banks, bank_bytes):
    """Busiest bank's distinct words when lanes i < ``lanes`` read ``run_bytes`` at i * stride."""
    contiguous = ceil_div(ceil_div((lanes - 1) * stride_bytes + run_bytes, bank_bytes), banks)
    s, r = stride_bytes // bank_bytes, run_bytes // bank_bytes
    whole_words = _and(stride_bytes % bank_bytes == 0, run_bytes % bank_bytes == 0)
    gaps = _where(whole_words,
                  _max(ceil_div(lanes * _pow2_gcd(s, banks), banks), ceil_div(lanes * r, banks)),
                  ceil_div(lanes * run_bytes, banks * bank_bytes))  # distinct bytes' minimum
    return _where(run_bytes >= stride_bytes, contiguous, gaps)


def line_wavefronts(lanes, run_bytes):
    """Wavefronts of any warp-level access of ``lanes`` lanes reading (or writing) ``run_bytes``
    distinct contiguous bytes each, whatever its bank pattern: a global load through L1 or a
    shared-memory access not modelled by :func:`warp_wavefronts`. Each of its
    ``fused_loads(run)`` instructions needs at least one wavefront, and a wavefront moves at most
    one line of ``smem_banks x smem_bank_bytes`` bytes (128 B)."""
    line_bytes = L.device.smem_banks * L.device.smem_bank_bytes
    return _max(ceil_div(lanes * run_bytes, line_bytes), fused_loads(run_bytes))


def simulate_wavefronts(lane_runs, banks: int = 32, bank_bytes: int = 4) -> int:
    """Shared-memory wavefronts of a warp-level access, lane by lane, at the best any compiler can
    do: ``lane_runs[lane]`` lists the runs ``(start_byte, length)`` the lane reads, in program
    order (run j of every lane is the same program value, of the same length). Runs contiguous in
    every lane are merged (a compiler may fuse them). Each run is then cut into pieces of at most
    MAX_ACCESS_BYTES (whole words, the same piece in every lane: one instruction); a piece needs
    the busiest bank's distinct words over all lanes; the cut with the fewest wavefronts is found
    by dynamic programming, and the access needs the sum over its runs."""
    groups = [[run] for run in zip(*lane_runs)] if lane_runs else []  # groups[j][0][lane] = run j
    merged = True
    while merged:
        merged = False
        for a in range(len(groups)):
            for b in range(len(groups)):
                if a != b and all(ra[0] + ra[1] == rb[0]
                                  for ra, rb in zip(_group_runs(groups[a]), _group_runs(groups[b]))):
                    groups[a] = groups[a] + groups[b]
                    del groups[b]
                    merged = True
                    break
            if merged:
                break
    total = 0
    for group in groups:
        runs = _group_runs(group)
        length = runs[0][1]
        if any(n != length for _, n in runs):
            raise ValueError("run j must have the same length in every lane")
        best = [0] + [None] * length  # best[o]: fewest wavefronts for the run's first o bytes
        for end in range(1, length + 1):
            for size in range(bank_bytes, MAX_ACCESS_BYTES + 1, bank_bytes):
                if size <= end and best[end - size] is not None:
                    cost = best[end - size] + _busiest_bank(
                        [(start + end - size, size) for start, _ in runs], banks, bank_bytes)
                    best[end] = cost if best[end] is None else min(best[end], cost)
        if best[length] is None:  # a run shorter than a bank word
            best[length] = _busiest_bank(runs, banks, bank_bytes)
        total += best[length]
    return total


def _busiest_bank(runs, banks: int, bank_bytes: int) -> int:
    """The most distinct bank words that the byte ranges ``runs`` request from one bank."""
    words = {address // bank_bytes for start, length in runs for address in range(start, start + length)}
    per_bank: dict[int, int] = {}
    for word in words:
        per_bank[word % banks] = per_bank.get(word % banks, 0) + 1
    return max(per_bank.values(), default=0)


def _group_runs(group):
    """Per lane, the (start, length) a group of runs covers when merged in order."""
    return [(lanes[0][0], sum(length for _, length in lanes)) for lanes in zip(*group)]


def strided_access(lanes: int, stride_bytes: int, run_bytes: int, warp_size: int = 32):
    """``lane_runs`` for :func:`simulate_wavefronts` of the pattern :func:`warp_wavefronts` models:
    lane l reads ``run_bytes`` at ``(l % lanes) * stride_bytes``."""
    return [[((lane % lanes) * stride_bytes, run_bytes)] for lane in range(warp_size)]


# -- time terms (seconds) --------------------------------------------------------------------------
def fma_time(fmas_per_sm, lanes_per_sm=None):
    """FMA pipe: the busiest SM's FMAs (one per lane per clock at most, ``fp32_lanes_per_sm`` or
    ``fp64_lanes_per_sm``) take at least fmas / (lanes x clock)."""
    lanes = L.device.fp32_lanes_per_sm if lanes_per_sm is None else lanes_per_sm
    return fmas_per_sm / (lanes * clock_hz())


def issue_time(warp_instructions_per_sm):
    """Issue slots: every warp instruction of the busiest SM takes one of its
    ``issue_slots_per_sm_per_clock`` slots per clock. Count only instructions no compiler removes
    (FMAs, ``fused_loads``, barriers)."""
    return warp_instructions_per_sm / (L.device.issue_slots_per_sm_per_clock * clock_hz())


def lsu_time(wavefronts_per_sm):
    """Shared-memory / L1 pipe (MIO/LSU): the busiest SM's wavefronts, at most
    ``lsu_wavefronts_per_sm_per_clock`` per clock (count them with ``warp_wavefronts``)."""
    return wavefronts_per_sm / (L.device.lsu_wavefronts_per_sm_per_clock * clock_hz())


def dram_time(compulsory_bytes):
    """Compulsory DRAM traffic: the inputs read and the outputs written at least once; only what
    fits in the L2 (``l2_size``) may have stayed on chip from a previous run, and DRAM never moves
    more than ``dram_bandwidth`` bytes per second."""
    return L.max(0, compulsory_bytes - L.device.l2_size) / L.device.dram_bandwidth


def l2_time(bytes_from_l2):
    """L2 traffic, where valid: bytes that must cross from L2 into the SMs (L1 starts every kernel
    empty, so each SM fetches at least once what it reads), at most ``l2_bandwidth`` (an upper bound)
    bytes per second. Count only bytes no cache above L2 can serve (not data that blocks sharing an
    SM could reuse through its L1)."""
    return bytes_from_l2 / L.device.l2_bandwidth


def launch_time():
    """Kernel launch: no kernel measures less than ``launch_overhead`` (an empty kernel's fastest
    run, a lower bound on every measured kernel time)."""
    return L.device.launch_overhead


def wave_time(blocks, resident, warp_instructions_per_warp):
    """Waves and tail: the busiest SM runs ``busiest_sm_blocks(blocks)`` blocks, at most
    ``resident`` at once, so at least ceil(blocks on it / resident) one after the other; each lasts
    at least the instructions of one of its warps, issued ``warp_issue_per_clock`` per clock at most
    (a warp issues in order from one scheduler). Proof of the rounds: a block that starts ends no
    sooner than that duration later, so no window of that length sees more than ``resident``
    starts."""
    rounds = ceil_div(busiest_sm_blocks(blocks), resident)
    return rounds * warp_instructions_per_warp / (L.device.warp_issue_per_clock * clock_hz())
