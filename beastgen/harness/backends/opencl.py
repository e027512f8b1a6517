"""OpenCL backend (pyopencl): any OpenCL device, including PoCL on the CPU.

``--device opencl:N`` is the N-th device over all platforms, in the ICD loader's order: the system's
drivers (/etc/OpenCL/vendors) first, then the PoCL that pip installs with ``beastgen[opencl]``, so
that ``opencl:0`` is the machine's own driver where it has one and PoCL on the CPU where it has none
(a device number past the last lists them). Its profile is read from the device itself
(:func:`beastgen.devices.opencl.opencl_profile`, with every backend's device detection).
"""
from __future__ import annotations

import time

import numpy as np

from ...devices.opencl import get_device, import_pyopencl, opencl_profile
from .base import Backend, KernelFailure, RunResult


class OpenCLBackend(Backend):
    name = "opencl"
    language = "opencl"
    compiles_at_first_launch = True  # PoCL: for each work-group size and grid, seconds to minutes

    def __init__(self, index: int = 0):
        cl = self.cl = import_pyopencl()
        self.index = index
        self.device = get_device(index)
        self.context = cl.Context([self.device])
        self.queue = cl.CommandQueue(self.context, properties=cl.command_queue_properties.PROFILING_ENABLE)
        self._programs: dict[str, object] = {}

    def device_profile(self):
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

