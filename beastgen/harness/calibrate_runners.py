"""The two APIs ``beastgen calibrate`` measures through: OpenCL (pyopencl, event profiling) and CUDA
(pycuda's driver, CUDA events; kernels compiled by nvcc as the CUDA backend compiles them). Each
runner builds the microbenchmarks of ``calibrate_kernels`` and times one launch; its ``profile`` holds
the device's limits and unmeasured fields (``--device opencl:N`` / ``auto``), the base of the
calibrated profile."""
from __future__ import annotations

import re

import numpy as np

from ..devices import load_profile
from ..devices.opencl import get_device, opencl_profile
from ..errors import BeastError, DeviceError
from .backends.cuda import default_cache_dir, import_pycuda
from .calibrate_kernels import CUDA_SOURCE, OPENCL_FP64_SOURCE, OPENCL_SOURCE
from .nvcc import NvccError, compile_cuda, compile_target, nvcc_path, supported_arches


def parse_target(spec: str) -> tuple[str, int]:
    """``opencl:N`` or ``cuda:N`` -> (api, N)."""
    match = re.fullmatch(r"\s*(opencl|cuda)\s*:\s*(\d+)\s*", spec or "", re.IGNORECASE)
    if not match:
        raise DeviceError(f"calibrate takes --device opencl:N or cuda:N (the N-th device of that API), "
                          f"not {spec!r}")
    return match[1].lower(), int(match[2])


class OpenCLRunner:
    """Builds and times the microbenchmarks on one OpenCL device (event profiling)."""

    api = "opencl"

    def __init__(self, index: int):
        try:  # optional (beastgen[opencl])
            import pyopencl as cl
        except ImportError:
            raise BeastError("calibrate --device opencl:N needs pyopencl: pip install "
                             "'beastgen[opencl]'") from None
        self.cl = cl
        self.device = get_device(index)
        self.profile = opencl_profile(self.device, index)
        self.is_cpu = bool(self.device.type & cl.device_type.CPU)
        self.context = cl.Context([self.device])
        self.queue = cl.CommandQueue(self.context,
                                     properties=cl.command_queue_properties.PROFILING_ENABLE)
        self.max_group = int(self.device.max_work_group_size)
        self.local_bytes = int(self.device.local_mem_size)
        self.max_alloc = int(self.device.max_mem_alloc_size)
        self.memory = int(self.device.global_mem_size)
        self.has_fp64 = bool(getattr(self.device, "double_fp_config", 0))
        # a CPU compiler does not vectorize across work-items around a loop: each work-item works on
        # vectors of the native width instead, and reads a contiguous chunk (see calibrate_kernels)
        self.vw32 = max(int(self.device.native_vector_width_float), 1) if self.is_cpu else 1
        self.vw64 = max(int(self.device.native_vector_width_double), 1) if self.is_cpu else 1
        self.kernels: dict = {}
        self.base_source = ("limits and unmeasured fields read from the OpenCL device (clGetDeviceInfo, "
                            "mapped as `--device opencl:N` does: see opencl_profile in "
                            "beastgen/devices/opencl.py)")

    def build(self, defines: dict, fp64: bool = False):
        defines = {**defines, "VW": self.vw64 if fp64 else self.vw32, "CHUNKED": int(self.is_cpu)}
        options = [f"-D{k}={v}" for k, v in defines.items()]
        source = OPENCL_FP64_SOURCE if fp64 else OPENCL_SOURCE
        try:
            return self.cl.Program(self.context, source).build(options=options)
        except self.cl.Error as e:
            raise BeastError(f"the calibration kernels do not build on {self.device.name.strip()}: "
                             f"{str(e).strip()[:2000]}") from None

    def buffer(self, array: np.ndarray):
        flags = self.cl.mem_flags
        return self.cl.Buffer(self.context, flags.READ_WRITE | flags.COPY_HOST_PTR, hostbuf=array)

    def empty(self, nbytes: int):
        return self.cl.Buffer(self.context, self.cl.mem_flags.READ_WRITE, nbytes)

    def read(self, buffer, array: np.ndarray) -> np.ndarray:
        self.cl.enqueue_copy(self.queue, array, buffer)
        return array

    def time(self, program, name: str, groups: int, group: int, args: list) -> float:
        """Seconds one launch of ``groups`` work-groups of ``group`` work-items took."""
        kernel = self.kernels.get((program, name))
        if kernel is None:
            kernel = self.kernels[program, name] = self.cl.Kernel(program, name)
        event = kernel(self.queue, (groups * group,), (group,), *args)
        event.wait()
        return (event.profile.end - event.profile.start) * 1e-9

    def close(self) -> None:
        self.queue.finish()


class CUDARunner:
    """Builds and times the microbenchmarks on one NVIDIA GPU through pycuda (CUDA events)."""

    api = "cuda"

    def __init__(self, index: int):
        if index != 0:
            raise DeviceError("calibrate measures CUDA GPU 0 (its limits are read as --device auto "
                              f"reads them): run it as CUDA_VISIBLE_DEVICES={index} beastgen calibrate "
                              "--device cuda:0")
        self.drv = drv = import_pycuda()
        self.nvcc = nvcc_path("calibrate --device cuda:N")
        try:
            drv.init()
            self.device = drv.Device(0)
            self.context = self.device.make_context()
        except Exception as e:  # noqa: BLE001 - pycuda's LogicError/RuntimeError: no driver or GPU
            raise BeastError(f"calibrate found no usable CUDA GPU 0 (no NVIDIA driver?): {e}") from None
        try:
            self.profile = load_profile("auto")
            self.target = compile_target(tuple(self.device.compute_capability()),
                                         supported_arches(self.nvcc))
        except BeastError:
            self.context.pop()
            raise
        attribute = drv.device_attribute
        self.is_cpu = False
        self.max_group = int(self.device.get_attribute(attribute.MAX_THREADS_PER_BLOCK))
        self.local_bytes = int(self.device.get_attribute(attribute.MAX_SHARED_MEMORY_PER_BLOCK))
        self.memory = int(self.device.total_memory())
        self.max_alloc = self.memory
        self.has_fp64 = True
        self.vw32 = self.vw64 = 1
        self.base_source = (f"limits and unmeasured fields: {self.profile.source} (as --device auto "
                            "reads them: the driver's attributes over the matching built-in profile "
                            "or the architecture base)")
        self.arch = self.target[1]

    def build(self, defines: dict, fp64: bool = False):
        """The module of all kernels (fma_f64 included: ``fp64`` changes nothing in CUDA)."""
        header = "".join(f"#define {k} {v}\n" for k, v in defines.items())
        try:
            image = compile_cuda(header + CUDA_SOURCE, self.nvcc, *self.target,
                                 cache_dir=default_cache_dir())
            return self.drv.module_from_buffer(image)
        except (NvccError, self.drv.Error) as e:
            raise BeastError(f"the calibration kernels do not compile or load for {self.arch}: "
                             f"{str(e).strip()[:2000]}") from None

    def buffer(self, array: np.ndarray):
        return self.drv.to_device(array)

    def empty(self, nbytes: int):
        return self.drv.mem_alloc(nbytes)

    def read(self, buffer, array: np.ndarray) -> np.ndarray:
        self.drv.memcpy_dtoh(array, buffer)
        return array

    def time(self, module, name: str, groups: int, group: int, args: list) -> float:
        function = module.get_function(name)
        start, end = self.drv.Event(), self.drv.Event()
        start.record()
        function(*args, block=(group, 1, 1), grid=(groups, 1))
        end.record()
        end.synchronize()
        return start.time_till(end) * 1e-3

    def close(self) -> None:
        self.context.pop()


def open_runner(target: str):
    api, index = parse_target(target)
    return OpenCLRunner(index) if api == "opencl" else CUDARunner(index)
