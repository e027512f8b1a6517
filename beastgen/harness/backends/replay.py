"""Replay backend: answers "run this configuration" from a Kernel Tuner cache file.

The problem size comes from the file (the kernel's ``problem_size`` settings, else those of M, N,
K the space has), and the file's parameters must be iterators of the space. A configuration the
file does not hold is reported as unmeasured (never invented); one whose recorded run failed is
reported as a launch failure.
"""
from __future__ import annotations

import re

from ...compiler.language.nodes import DeviceProperty
from ...compiler.model import walk_expr
from ...devices import load_profile
from ...devices.profiles import DeviceProfile, match_name
from ...errors import BeastError
from ..kernel import Launch
from ..recorded import Replay, load_replay
from .base import Backend, KernelFailure, RunResult

#: why a configuration is unmeasured
NOT_IN_FILE = "not in the replay file"


class ReplayBackend(Backend):
    name = "replay"
    language = None
    recorded_in = "the replay file"

    def __init__(self, path_or_replay):
        self.replay: Replay = (path_or_replay if isinstance(path_or_replay, Replay)
                               else load_replay(path_or_replay))

    def device_profile(self, space=None):
        """The built-in profile of the GPU the file was measured on; when none matches and
        ``space`` reads no device property, a profile that only names the device (the default
        profile's properties, which that space never reads)."""
        profile = match_name(self.replay.device_name)
        if profile is not None:
            return profile
        where = space and device_property_reads(space)
        if space is None or where:
            prop, origin = next(iter(where.items())) if where else ("?", None)
            raise BeastError(f"no built-in profile matches the replay's device "
                             f"'{self.replay.device_name}', and the space reads "
                             f"beast.device.{prop}" + (f" ({origin})" if origin else "")
                             + ": pass --device NAME or a profile file (beastgen devices lists "
                             "them; beastgen calibrate measures one)", self.replay.path)
        default = load_profile(None)
        return DeviceProfile(key=_slug(self.replay.device_name), name=self.replay.device_name,
                             properties=default.properties,
                             source="the replay file (the space reads no device property)")

    def check_parameters(self, columns: list[str]) -> None:
        missing = [k for k in self.replay.keys if k not in columns]
        if missing:
            raise BeastError(f"the replay's parameters {missing} are not iterators of the space",
                             self.replay.path)

    def problem_settings(self, kernel, space) -> dict:
        """{setting: value} from the file's problem_size, in order, for the kernel's
        ``problem_size`` settings, else those of M, N, K that the space declares."""
        names = kernel.problem_size if kernel and kernel.problem_size else \
            tuple(n for n in ("M", "N", "K") if n in space.settings)
        return dict(zip(names, self.replay.problem_size))

    @property
    def recording(self) -> Replay:
        return self.replay

    def unmeasured(self, config: dict) -> str | None:
        compiled = self.compile(Launch(config))
        return None if compiled in self.replay.times or compiled in self.replay.failed else NOT_IN_FILE

    def launch(self, kernel, config, settings, profile, language, source) -> Launch:
        """The configuration alone: the file is keyed by its parameters, no kernel is built."""
        return Launch(config)

    def compile(self, launch):
        return tuple(_plain(launch.config[k]) for k in self.replay.keys)

    def run(self, compiled, launch, args, iterations, outputs) -> RunResult:
        time = self.replay.times.get(compiled)
        if time is not None:
            return RunResult([time])
        if compiled in self.replay.failed:
            raise KernelFailure("launch", f"recorded as failed in the replay file: {self.replay.failed[compiled]}")
        raise KernelFailure("unmeasured", NOT_IN_FILE)


def device_property_reads(space) -> dict:
    """{device property: where the space first reads it} (``beast.device.X`` in expressions and
    in space functions)."""
    reads = {}
    for var in space.variables.values():
        for node in walk_expr(var.expr, stop_at_named=False) if var.expr is not None else []:
            if isinstance(node, DeviceProperty):
                reads.setdefault(node.prop, var.origin)
        if var.function is not None:
            for prop, line in var.function.device_refs.items():
                reads.setdefault(prop, f"{var.function.filename}:{line}")
    return reads


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "replay"


def _plain(value):
    return value.item() if hasattr(value, "item") else value
