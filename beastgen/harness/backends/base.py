"""The interface every backend implements (as Kernel Tuner's backends do)."""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

#: what went wrong with one configuration (recorded in the results store)
FAILURE_KINDS = ("compile", "launch", "wrong_result", "timeout", "unmeasured")


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
