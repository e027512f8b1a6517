"""OpenCL backend (pyopencl): any OpenCL device, including PoCL on the CPU.

``--device opencl:N`` is the N-th device over all platforms, in the ICD loader's order: the system's
drivers (/etc/OpenCL/vendors) first, then the PoCL that pip installs with ``beastgen[opencl]``, so
that ``opencl:0`` is the machine's own driver where it has one and PoCL on the CPU where it has none
(a device number past the last lists them). Its profile is read from the device itself and mapped
onto beastgen's property names, so that spaces specialize to it; see :func:`opencl_profile` for how
each property is chosen and why the performance fields are upper limits (so that lower bounds stay
valid).
"""
from __future__ import annotations

import time

import numpy as np

from ...devices import DeviceProfile
from ...errors import BeastError, DeviceError
from .base import Backend, KernelFailure, RunResult

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


def _import_cl():
    try:  # optional (beastgen[opencl])
        import pyopencl as cl
    except ImportError:
        raise BeastError("the opencl backend needs pyopencl: pip install 'beastgen[opencl]'") from None
    return cl


def list_devices() -> list:
    cl = _import_cl()
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
    is_cpu = bool(device.type & _import_cl().device_type.CPU)
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


class OpenCLBackend(Backend):
    name = "opencl"
    language = "opencl"
    compiles_at_first_launch = True  # PoCL: for each work-group size and grid, seconds to minutes

    def __init__(self, index: int = 0):
        cl = self.cl = _import_cl()
        self.index = index
        self.device = get_device(index)
        self.context = cl.Context([self.device])
        self.queue = cl.CommandQueue(self.context, properties=cl.command_queue_properties.PROFILING_ENABLE)
        self._programs: dict[str, object] = {}

    def device_profile(self) -> DeviceProfile:
        return opencl_profile(self.device, self.index)

    def compile(self, launch):
        cl = self.cl
        key = launch.key()
        if key not in self._programs:
            try:
                program = cl.Program(self.context, launch.full_source()).build()
                kernel = getattr(program, launch.name)
            except cl.Error as e:
                log = str(e).strip()
                raise KernelFailure("compile", _short(log)) from None
            except AttributeError:
                raise KernelFailure("compile", f"the program has no kernel '{launch.name}'") from None
            self._programs = {key: kernel}  # keep one: each configuration is compiled once
        return self._programs[key]

    def run(self, compiled, launch, args, iterations, outputs) -> RunResult:
        cl = self.cl
        dims = max(len(launch.block), len(launch.grid))
        block = tuple(launch.block) + (1,) * (dims - len(launch.block))
        grid = tuple(launch.grid) + (1,) * (dims - len(launch.grid))
        global_size = tuple(b * g for b, g in zip(block, grid))
        threads = int(np.prod(block))
        limit = compiled.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, self.device)
        if threads > limit:
            raise KernelFailure("launch", f"work-group of {threads} work-items exceeds this kernel's "
                                          f"limit of {limit} on {self.device.name.strip()}")
        flags = cl.mem_flags
        buffers = [cl.Buffer(self.context, flags.READ_WRITE | flags.COPY_HOST_PTR, hostbuf=a)
                   if isinstance(a, np.ndarray) else a for a in args]
        try:
            first = compiled(self.queue, global_size, block, *buffers)
            if self.first_launch_started is not None:
                self._await_execution(first)
                self.first_launch_started()
            first.wait()
            results = {}
            for i in outputs:
                results[i] = np.empty_like(args[i])
                cl.enqueue_copy(self.queue, results[i], buffers[i])
            self.queue.finish()
            times = []
            for _ in range(iterations):
                event = compiled(self.queue, global_size, block, *buffers)
                event.wait()
                times.append((event.profile.end - event.profile.start) * 1e-9)
        except cl.Error as e:
            raise KernelFailure("launch", _short(str(e))) from None
        finally:
            for b in buffers:
                if isinstance(b, cl.Buffer):
                    b.release()
        return RunResult(times, results)

    def _await_execution(self, event) -> None:
        """Return once ``event``'s launch executes (or has ended): the driver has compiled the kernel
        for its work-group size and grid (PoCL does so between the launch's submission and its start)."""
        self.queue.flush()
        waiting = (self.cl.command_execution_status.QUEUED, self.cl.command_execution_status.SUBMITTED)
        while event.command_execution_status in waiting:
            time.sleep(0.001)


def _short(text: str, limit: int = 2000) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + " ..."

