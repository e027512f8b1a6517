"""CUDA backend (pycuda): SourceModule compiles the kernel, CUDA events time it.

Needs pycuda and an NVIDIA driver; where either is missing, constructing the backend raises a
BeastError saying which. The device profile is read from the GPU (``--device auto``'s reader).
"""
from __future__ import annotations

import numpy as np

from ...devices import load_profile
from ...errors import BeastError
from .base import Backend, KernelFailure, RunResult


def import_pycuda():
    try:  # optional (beastgen[cuda])
        import pycuda.driver as drv
        from pycuda.compiler import SourceModule
    except ImportError as e:
        raise BeastError(f"the cuda backend needs pycuda, which is not installed ({e}): "
                         "pip install 'beastgen[cuda]' on a machine with an NVIDIA driver, "
                         "or use --backend opencl / --backend replay") from None
    return drv, SourceModule


class CUDABackend(Backend):
    name = "cuda"
    language = "cuda"

    def __init__(self, index: int = 0):
        drv, self.SourceModule = import_pycuda()
        self.drv = drv
        try:
            drv.init()
            self.device = drv.Device(index)
            self.context = self.device.make_context()
        except Exception as e:  # noqa: BLE001 - pycuda's LogicError/RuntimeError: no driver or GPU
            raise BeastError(f"the cuda backend found no usable GPU {index} (no NVIDIA driver?): {e}") from None
        self._module = None

    def device_profile(self):
        return load_profile("auto")

    def compile(self, launch):
        try:
            module = self.SourceModule(launch.full_source(), no_extern_c=False)
            function = module.get_function(launch.name)
        except Exception as e:  # noqa: BLE001 - pycuda.driver.CompileError, LogicError
            raise KernelFailure("compile", str(e).strip()[:2000]) from None
        self._module = module  # keep the module alive with its function
        return function

    def run(self, compiled, launch, args, iterations, outputs) -> RunResult:
        drv = self.drv
        block = tuple(launch.block) + (1,) * (3 - len(launch.block))
        grid = tuple(launch.grid) + (1,) * (3 - len(launch.grid))
        allocations = [drv.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
        try:
            compiled(*allocations, block=block, grid=grid[:2] if grid[2] == 1 else grid)
            drv.Context.synchronize()
            results = {i: drv.from_device_like(allocations[i], args[i]) for i in outputs}
            start, end = drv.Event(), drv.Event()
            times = []
            for _ in range(iterations):
                start.record()
                compiled(*allocations, block=block, grid=grid[:2] if grid[2] == 1 else grid)
                end.record()
                end.synchronize()
                times.append(start.time_till(end) * 1e-3)
        except drv.Error as e:
            raise KernelFailure("launch", str(e)) from None
        finally:
            for a in allocations:
                if hasattr(a, "free"):
                    a.free()
        return RunResult(times, results)

    def close(self) -> None:
        self.context.pop()
