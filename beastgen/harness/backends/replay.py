"""Replay backend: answers "run this configuration" from a Kernel Tuner cache file.

The problem size comes from the file. A configuration the file does not hold is reported as
unmeasured (never invented); one whose recorded run failed is reported as a launch failure.
"""
from __future__ import annotations

from ...devices import match_name
from ...errors import BeastError
from ..recorded import Replay, load_replay
from .base import Backend, KernelFailure, RunResult


class ReplayBackend(Backend):
    name = "replay"
    language = None

    def __init__(self, path_or_replay):
        self.replay: Replay = (path_or_replay if isinstance(path_or_replay, Replay)
                               else load_replay(path_or_replay))

    def device_profile(self):
        """The built-in profile of the GPU the file was measured on (None if none matches)."""
        return match_name(self.replay.device_name)

    def check_parameters(self, columns: list[str]) -> None:
        missing = [k for k in self.replay.keys if k not in columns]
        if missing:
            raise BeastError(f"the replay's parameters {missing} are not iterators of the space",
                             self.replay.path)

    def problem_settings(self, names: tuple) -> dict:
        """{setting: value} from the file's problem_size for the settings ``names``, in order."""
        return dict(zip(names, self.replay.problem_size))

    def compile(self, launch):
        return tuple(_plain(launch.config[k]) for k in self.replay.keys)

    def run(self, compiled, launch, args, iterations, outputs) -> RunResult:
        time = self.replay.times.get(compiled)
        if time is not None:
            return RunResult([time])
        if compiled in self.replay.failed:
            raise KernelFailure("launch", f"recorded as failed in the replay file: {self.replay.failed[compiled]}")
        raise KernelFailure("unmeasured", "not in the replay file")


def _plain(value):
    return value.item() if hasattr(value, "item") else value
