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


class Runner(ABC):
    """What the tuning loop calls to measure configurations (as Kernel Tuner's runners: a live one,
    a simulating one, chosen once): a :class:`Backend` measuring in this process, one in a worker
    process under a watchdog (:class:`~beastgen.harness.isolate.Isolated`), one answering from
    recorded measurements (the replay backend). The defaults are a live device's: it imposes no
    problem size, runs any parameters, and measures every configuration it is given."""

    #: what its recorded measurements are, as messages name them ("the replay file"): where the
    #: problem size comes from and a configuration it cannot answer (KernelFailure('unmeasured'))
    #: is missing from; "" where every configuration is measured
    recorded_in: str = ""

    def problem_settings(self, kernel, space) -> dict:
        """{setting: value}: the problem size the backend imposes on ``space`` (whose ``kernel`` may
        be None); {} where the caller's settings choose it."""
        return {}

    def check_parameters(self, columns: list[str]) -> None:
        """Raise BeastError when the space's iterators (``columns``) are not what it can run."""

    @property
    def recording(self):
        """The recorded measurements it answers from (a :class:`~beastgen.harness.recorded.Replay`:
        its file is part of the run's identity, its header the export's), or None where it measures."""
        return None

    def unmeasured(self, config: dict) -> str | None:
        """Why ``config`` is missing from the recorded measurements it answers from (what
        :meth:`measure` would raise as KernelFailure('unmeasured')), or None where it can measure
        it: the search loop answers such a configuration without sending it to be measured."""
        return None

    def launch(self, kernel, config: dict, settings: dict, profile, language, source: str):
        """The :class:`~beastgen.harness.kernel.Launch` of ``config`` that :meth:`measure` takes."""
        return kernel.launch(config, settings, profile, language, source)

    def set_args(self, args: list) -> None:
        """The kernel's arguments (fresh copies for each configuration's verification run)."""
        self.args = args

    @abstractmethod
    def measure(self, launch, iterations: int, outputs: list[int], timeout: float) -> RunResult:
        """Compile and run ``launch`` (see :meth:`Backend.run`) within ``timeout`` seconds of
        running; raises KernelFailure."""

    def close(self) -> None:
        """Release the device."""


class Backend(Runner):
    """Compiles and runs one configuration's kernel (a :class:`~beastgen.harness.kernel.Launch`)."""

    #: "opencl", "cuda", "replay"
    name: str = "?"
    #: the kernel source language it compiles (None: it needs no source)
    language: str | None = None
    args: tuple | list = ()  # set_args gives them
    #: called by :meth:`run` once its first launch executes, where the driver compiles a kernel at
    #: its first launch (PoCL, for each work-group size and grid): the worker process starts the
    #: run's timeout then (:class:`~beastgen.harness.isolate.Isolated`); None: nobody waits for it
    first_launch_started = None
    #: whether :meth:`run` calls :attr:`first_launch_started` (else the run's timeout starts with it)
    compiles_at_first_launch = False

    @abstractmethod
    def device_profile(self):
        """The device's :class:`~beastgen.devices.profiles.DeviceProfile` (None: the caller's --device)."""

    @abstractmethod
    def compile(self, launch):
        """The compiled kernel of ``launch``; raises KernelFailure('compile', message)."""

    @abstractmethod
    def run(self, compiled, launch, args: list, iterations: int, outputs: list[int]) -> RunResult:
        """Run once with fresh copies of ``args`` (reading back the arguments ``outputs``), then
        ``iterations`` timed runs; raises KernelFailure('launch' | 'unmeasured', message)."""

    def measure(self, launch, iterations: int, outputs: list[int], timeout: float) -> RunResult:
        """:meth:`compile` then :meth:`run` in this process (``timeout`` is not enforced here: a
        worker process under a watchdog enforces it, see :class:`~beastgen.harness.isolate.Isolated`)."""
        return self.run(self.compile(launch), launch, list(self.args), iterations, outputs)
