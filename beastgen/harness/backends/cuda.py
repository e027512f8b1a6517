"""CUDA backend (pycuda's driver): nvcc compiles the kernel (``harness/nvcc.py``), the driver loads
and launches it, CUDA events time it.

Needs pycuda and an NVIDIA driver; where either is missing, constructing the backend raises a
BeastError saying which. ``check_setup`` (run once, before the first configuration) compiles, loads
and runs a trivial kernel for this GPU: a missing nvcc, an architecture the toolkit lacks or a driver
older than the toolkit is one clear error there, never a failure of every configuration. A GPU newer
than the toolkit gets PTX of the toolkit's newest architecture (the driver compiles it). A sticky
CUDA error (the context is dead until the process ends) is raised as ``DeviceLost``: the benchmark
worker ends after recording it. The device profile is read from the GPU (``--device auto``).
"""
from __future__ import annotations

import os

import numpy as np

from ...devices import load_profile
from ...errors import BeastError
from ..isolate import DeviceLost
from ..nvcc import NvccError, compile_cuda, compile_target, nvcc_path, nvcc_version, supported_arches
from .base import Backend, KernelFailure, RunResult

#: the oldest pycuda that builds against CUDA 13 (pyproject's [cuda] extra asks for it)
PYCUDA_MINIMUM = "2025.1.2"

#: cuGetErrorString's text of the sticky errors: after one, every call in the context fails
STICKY_ERRORS = (
    "illegal memory access", "misaligned address", "unspecified launch failure",
    "launch timed out", "device-side assert", "illegal instruction", "hardware stack error",
    "invalid program counter", "not supported on global/shared address space",
    "uncorrectable ECC error",
)

#: the set-up check's kernel: each of 32 threads writes its index
SETUP_KERNEL = """extern "C" __global__ void beastgen_setup_check(int *out) {
    out[threadIdx.x] = (int)threadIdx.x;
}
"""


def import_pycuda():
    """pycuda.driver, or a BeastError saying whether pycuda is missing or does not import."""
    try:  # optional (beastgen[cuda])
        import pycuda.driver as drv
    except ModuleNotFoundError as e:
        if e.name != "pycuda":
            raise BeastError(_broken_pycuda(e)) from None
        raise BeastError("the cuda backend needs pycuda, which is not installed: pip install "
                         "'beastgen[cuda]' on a machine with an NVIDIA driver, or use --backend "
                         "opencl / --backend replay") from None
    except ImportError as e:
        raise BeastError(_broken_pycuda(e)) from None
    return drv


def _broken_pycuda(error: ImportError) -> str:
    return (f"pycuda is installed but does not import ({error}): it must be built against this "
            f"machine's CUDA (pycuda >= {PYCUDA_MINIMUM} for CUDA 13): pip install --force-reinstall "
            f"--no-cache-dir 'pycuda>={PYCUDA_MINIMUM}'")


def default_cache_dir() -> str:
    """Where compiled kernels are cached: $XDG_CACHE_HOME (or ~/.cache)/beastgen/cuda."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "beastgen", "cuda")


class CUDABackend(Backend):
    name = "cuda"
    language = "cuda"

    def __init__(self, index: int = 0, cache_dir: str | None = None):
        self.drv = drv = import_pycuda()
        self.cache_dir = default_cache_dir() if cache_dir is None else cache_dir
        try:
            drv.init()
            self.device = drv.Device(index)
            self.context = self.device.make_context()
        except Exception as e:  # noqa: BLE001 - pycuda's LogicError/RuntimeError: no driver or GPU
            raise BeastError(f"the cuda backend found no usable GPU {index} (no NVIDIA driver?): {e}") from None
        self.capability = tuple(self.device.compute_capability())
        self.nvcc = None
        self.target = None  # ("cubin", "sm_XY") or ("ptx", "compute_XY"), set by check_setup
        self._module = None

    def device_profile(self):
        return load_profile("auto")

    def check_setup(self) -> None:
        """Compile, load and run a trivial kernel for this GPU; BeastError saying what is wrong."""
        self.nvcc = nvcc_path("the cuda backend")
        target = compile_target(self.capability, supported_arches(self.nvcc))
        toolkit = f"nvcc {nvcc_version(self.nvcc)}"
        try:
            image = compile_cuda(SETUP_KERNEL, self.nvcc, *target, cache_dir=self.cache_dir)
        except NvccError as e:
            raise BeastError(f"{toolkit} cannot compile a trivial kernel for {target[1]}: {e}") from None
        drv = self.drv
        result = np.full(32, -1, np.int32)
        try:
            function = drv.module_from_buffer(image).get_function("beastgen_setup_check")
            out = drv.mem_alloc(result.nbytes)
            function(out, block=(32, 1, 1), grid=(1, 1))
            drv.Context.synchronize()
            drv.memcpy_dtoh(result, out)
            out.free()
        except drv.Error as e:
            raise BeastError(
                f"the NVIDIA driver ({self._driver_text()}) cannot load or run a trivial kernel that "
                f"{toolkit} compiled for {target[1]}: {e}; a driver older than the toolkit cannot load "
                "its kernels: update the driver, or put an older CUDA toolkit's nvcc on PATH") from None
        if not np.array_equal(result, np.arange(32, dtype=np.int32)):
            raise BeastError(f"a trivial kernel compiled for {target[1]} ran but wrote wrong values "
                             f"({result[:4].tolist()}...): this GPU cannot be measured")
        self.target = target

    def _driver_text(self) -> str:
        try:
            version = int(self.drv.get_driver_version())
        except Exception:  # noqa: BLE001 - the version is only part of a message
            return "version unknown"
        return f"supports CUDA {version // 1000}.{version % 1000 // 10}"

    def compile(self, launch):
        if self.target is None:
            self.check_setup()
        try:
            image = compile_cuda(launch.full_source(), self.nvcc, *self.target, cache_dir=self.cache_dir)
        except NvccError as e:
            raise KernelFailure("compile", str(e)) from None
        try:
            module = self.drv.module_from_buffer(image)
        except self.drv.Error as e:
            raise self._failure("compile", f"the driver cannot load the compiled kernel: {e}") from None
        try:
            function = module.get_function(launch.name)
        except self.drv.Error as e:
            raise KernelFailure("compile", f"the compiled module has no kernel '{launch.name}' ({e}): "
                                "declare it extern \"C\" __global__ (the source is compiled as C++, "
                                "which mangles other names)") from None
        self._module = module  # keep the module alive with its function
        return function

    def run(self, compiled, launch, args, iterations, outputs) -> RunResult:
        drv = self.drv
        block = tuple(launch.block) + (1,) * (3 - len(launch.block))
        grid = tuple(launch.grid) + (1,) * (3 - len(launch.grid))
        grid = grid[:2] if grid[2] == 1 else grid
        allocations = []
        try:
            for a in args:
                allocations.append(drv.to_device(a) if isinstance(a, np.ndarray) else a)
            compiled(*allocations, block=block, grid=grid)
            drv.Context.synchronize()
            results = {i: drv.from_device_like(allocations[i], args[i]) for i in outputs}
            start, end = drv.Event(), drv.Event()
            times = []
            for _ in range(iterations):
                start.record()
                compiled(*allocations, block=block, grid=grid)
                end.record()
                end.synchronize()
                times.append(start.time_till(end) * 1e-3)
        except drv.MemoryError as e:
            size = sum(a.nbytes for a in args if isinstance(a, np.ndarray))
            raise self._failure("launch", f"out of GPU memory ({e}); the arguments take "
                                          f"{size / 2**20:.1f} MiB") from None
        except drv.Error as e:
            raise self._failure("launch", str(e)) from None
        finally:
            for a in allocations:
                if hasattr(a, "free"):
                    try:
                        a.free()
                    except drv.Error:  # a lost context frees everything when the process ends
                        pass
        return RunResult(times, results)

    def _failure(self, kind: str, message: str) -> KernelFailure:
        """DeviceLost for a sticky error (known by its text, or the context failing a synchronize
        after it), else KernelFailure."""
        if any(text in message for text in STICKY_ERRORS) or not self._context_usable():
            return DeviceLost(kind, f"{message} (a sticky CUDA error: the context is unusable, the "
                                    "benchmark worker ends and the next configuration gets a fresh one)")
        return KernelFailure(kind, message)

    def _context_usable(self) -> bool:
        try:
            self.drv.Context.synchronize()
        except self.drv.Error:
            return False
        return True

    def close(self) -> None:
        self._module = None
        self.context.pop()
