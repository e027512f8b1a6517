"""The profile of an OpenCL device, read through pyopencl (the device detection of the OpenCL backend,
``harness/backends/opencl.py``, and of ``beastgen calibrate --device opencl:N``).

``opencl:N`` is the N-th device over all platforms, in the ICD loader's order. Each property is
mapped onto beastgen's names so that spaces specialize to the device; the performance fields are
upper limits, so that lower bounds stay valid (:func:`opencl_profile` says how each is chosen).
"""
from __future__ import annotations

from ..errors import BeastError, DeviceError
from .profiles import DeviceProfile

#: the most FMA pipelines any CPU core has (Intel since Haswell, AMD since Zen 2: two), and the
#: most bytes a CPU core loads per clock is below the spaces' LOAD_BYTES_PER_CLOCK_PER_SM (256)
CPU_FMA_PIPES = 2
#: an upper limit on any CPU's DRAM bandwidth (bytes/s): above 2 sockets x 12 channels of DDR5-6400
#: (2 x 614 GB/s) and above HBM2e CPUs' (Xeon Max: ~1 TB/s); OpenCL does not report bandwidth
CPU_DRAM_BANDWIDTH_LIMIT = 2.0e12
#: the rates of the per-instruction bound terms on a device OpenCL does not describe (a CPU, a
#: non-NVIDIA GPU): instructions issued and 128-byte wavefronts per compute unit per clock far above
#: any core's or compute unit's (x86 cores retire at most 8 micro-ops per clock), so that these terms
#: stay below the truth; `beastgen calibrate` measures real ones
UNDESCRIBED_RATE_PER_CLOCK = 64


def import_pyopencl():
    """pyopencl, or a BeastError saying how to install it."""
    try:  # optional (beastgen[opencl])
        import pyopencl as cl
    except ImportError:
        raise BeastError("the opencl backend needs pyopencl: pip install 'beastgen[opencl]'") from None
    return cl


def list_devices() -> list:
    cl = import_pyopencl()
    try:
        platforms = cl.get_platforms()
    except cl.Error as e:
        raise DeviceError(f"no OpenCL platform found ({e}); install an OpenCL driver, e.g. PoCL for "
                          "the CPU: pip install 'beastgen[opencl]' (Linux x86-64)") from None
    return [d for p in platforms for d in p.get_devices()]


def parse_device(spec: str | None) -> int:
    """``opencl:N`` (or None: device 0) -> N."""
    if spec is None:
        return 0
    prefix, _, index = spec.partition(":")
    if prefix.lower() != "opencl" or not index.strip().isdigit():
        raise DeviceError(f"the opencl backend takes --device opencl:N (N-th OpenCL device), not {spec!r}")
    return int(index)


def get_device(index: int):
    devices = list_devices()
    if not 0 <= index < len(devices):
        raise DeviceError(f"no OpenCL device {index}: found {len(devices)} "
                          f"({'; '.join(f'{i}: {d.name.strip()}' for i, d in enumerate(devices)) or 'none'})")
    return devices[index]


def _cpu_max_clock_mhz(reported: float) -> float:
    """The CPU's highest clock: the kernel's cpuinfo_max_freq when it is higher than what OpenCL
    reports (which may be the base clock)."""
    best = float(reported)
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", encoding="ascii") as f:
            best = max(best, int(f.read().strip()) / 1000.0)
    except (OSError, ValueError):
        pass
    return best


def _execution_limits(device, is_cpu: bool) -> tuple:
    """(max clock in MHz, warp size, FP32 and FP64 FMA lanes per compute unit, DRAM bandwidth) of
    an OpenCL device, each at least the truth (see :func:`opencl_profile`)."""
    clock = float(device.max_clock_frequency)
    vec32 = max(int(device.native_vector_width_float), int(device.preferred_vector_width_float), 1)
    vec64 = max(int(device.native_vector_width_double), int(device.preferred_vector_width_double), 1)
    if is_cpu:
        return (_cpu_max_clock_mhz(clock), 2 * vec32, vec32 * CPU_FMA_PIPES, vec64 * CPU_FMA_PIPES,
                CPU_DRAM_BANDWIDTH_LIMIT)
    warp = 1
    for attr in ("warp_size_nv", "wavefront_width_amd"):
        try:
            warp = int(getattr(device, attr))
            break
        except Exception:  # noqa: BLE001 - vendor extension absent
            continue
    # a GPU whose FMA lanes per compute unit OpenCL does not report: 128 FP32 lanes per unit is
    # the most of any GPU (NVIDIA SM since Ampere, AMD CU dual-issue), 2 x 1.6 TB/s HBM the most
    return clock, warp, 128, 128, 8.0e12


def opencl_profile(device, index: int) -> DeviceProfile:
    """beastgen's device properties from an OpenCL device.

    Limits come straight from OpenCL: work-group size and item sizes, local memory, compute units
    (``sm_count``). On a GPU ``warp_size`` is the NVIDIA warp / AMD wavefront when the driver
    reports it. On a CPU (PoCL) a "warp" is ``2 x native float vector width``: the work-items PoCL
    packs into one core's SIMD lanes across both FMA pipes, so that a work-group of such a multiple
    keeps every lane busy (and the GEMM wave term, which assumes a block's threads run in parallel,
    stays a lower bound).

    Performance fields are UPPER limits, so that bounds stay valid:
    ``peak_flops_fp32 = compute units x max clock x native vector width x 2 (an FMA is 2 flops)
    x CPU_FMA_PIPES`` on a CPU. No core retires more than CPU_FMA_PIPES vector FMAs of the native
    width per clock, each compute unit is at most one core (a hyper-thread shares its core's pipes,
    which only makes this larger than the truth), and the clock is the highest the CPU reports.
    ``dram_bandwidth`` is CPU_DRAM_BANDWIDTH_LIMIT (OpenCL does not report it), ``l2_size`` the
    global memory cache (the last level a previous run can leave data in).
    """
    is_cpu = bool(device.type & import_pyopencl().device_type.CPU)
    sizes = list(device.max_work_item_sizes) + [1, 1, 1]
    max_wg = int(device.max_work_group_size)
    local = int(device.local_mem_size)
    units = int(device.max_compute_units)
    max_blocks = 32
    clock, warp, lanes32, lanes64, bandwidth = _execution_limits(device, is_cpu)
    peak32 = units * clock * 1e6 * lanes32 * 2
    peak64 = units * clock * 1e6 * lanes64 * 2
    regs_per_thread = 65536 if is_cpu else 255  # a CPU spills to cache: no hard register limit
    threads_per_unit = max_wg * (1 if is_cpu else 2)
    props = {
        "compute_capability": "0.0",  # not NVIDIA: any model rule keyed on it takes its weakest case
        "sm_count": units,
        "max_threads_per_block": max_wg,
        "max_threads_dim_x": int(sizes[0]),
        "max_threads_dim_y": int(sizes[1]),
        "max_threads_dim_z": int(sizes[2]),
        "warp_size": warp,
        "max_threads_per_sm": threads_per_unit,
        "max_blocks_per_sm": max_blocks,
        "regs_per_sm": threads_per_unit * regs_per_thread,
        "regs_per_block": max_wg * regs_per_thread,
        "max_regs_per_thread": regs_per_thread,
        "shared_mem_per_sm": local * max_blocks,
        "max_shared_mem_per_block": local,
        "max_shared_mem_per_block_optin": local,
        "max_clock_mhz": clock,
        "peak_flops_fp32": peak32,
        "peak_flops_fp64": peak64,
        "peak_flops_fp16": peak32,
        "peak_flops_tensor_fp16": 0.0,
        "peak_flops_tensor_tf32": 0.0,
        "dram_bandwidth": bandwidth,
        "l2_size": int(device.global_mem_cache_size),
        "fp32_lanes_per_sm": lanes32,
        "fp64_lanes_per_sm": lanes64,
        "issue_slots_per_sm_per_clock": UNDESCRIBED_RATE_PER_CLOCK,
        "warp_issue_per_clock": UNDESCRIBED_RATE_PER_CLOCK,
        "smem_banks": 32,
        "smem_bank_bytes": 4,
        "lsu_wavefronts_per_sm_per_clock": UNDESCRIBED_RATE_PER_CLOCK,
        "l2_bandwidth": units * clock * 1e6 * 128 * UNDESCRIBED_RATE_PER_CLOCK,
        "launch_overhead": 0.0,  # a lower bound on any kernel's time; calibrate measures it
    }
    name = f"{device.name.strip()} ({device.platform.name.strip()})"
    return DeviceProfile(f"opencl{index}", name, props, f"OpenCL device {index}")
