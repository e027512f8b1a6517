"""The interface every backend implements (as Kernel Tuner's backends do)."""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

#: what went wrong with one configuration (recorded in the results store)
FAILURE_KINDS = ("compile", "launch", "wrong_result", "timeout", "invalid_time", "unmeasured")


#: the shortest time taken as a kernel's run time (seconds): below a nanosecond is no real measurement
SHORTEST_TIME = 1e-9


def time_problem(seconds) -> str | None:
    """Why ``seconds`` is not a usable measured time (a finite number of at least a nanosecond),
    or None when it is one."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        return f"{seconds!r} is not a number"
    if not math.isfinite(seconds):
        return f"{seconds!r} is not a finite time"
    if seconds <= 0:
        return f"{seconds!r} s is not a positive time"
    if seconds < SHORTEST_TIME:
        return f"{seconds!r} s is below a nanosecond: not a real kernel time"
    return None


class KernelFailure(Exception):
    """One configuration failed: ``kind`` is one of FAILURE_KINDS; the search goes on."""

    def __init__(self, kind: str, message: str):
        assert kind in FAILURE_KINDS, kind
        self.kind = kind
        self.message = message
        super().__init__(f"{kind}: {message}")


@dataclass
class RunResult:
    """Kernel times in seconds (one per timed run) and the outputs of the first (verification) run."""

    times: list[float]
    outputs: dict = field(default_factory=dict)
    compile_seconds: float = 0.0


class Backend(ABC):
    """Compiles and runs one configuration's kernel (a :class:`~beastgen.harness.kernel.Launch`)."""

    #: "opencl", "cuda", "replay"
    name: str = "?"
    #: the kernel source language it compiles (None: it needs no source)
    language: str | None = None

    @abstractmethod
    def device_profile(self):
        """The device's :class:`~beastgen.devices.DeviceProfile` (None: the caller's --device)."""

    @abstractmethod
    def compile(self, launch):
        """The compiled kernel of ``launch``; raises KernelFailure('compile', message)."""

    @abstractmethod
    def run(self, compiled, launch, args: list, iterations: int, outputs: list[int]) -> RunResult:
        """Run once with fresh copies of ``args`` (reading back the arguments ``outputs``), then
        ``iterations`` timed runs; raises KernelFailure('launch' | 'unmeasured', message)."""

    def close(self) -> None:
        """Release the device."""
