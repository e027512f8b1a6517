"""The differential test (issue 37): random spaces with Python's operators at every edge (ints past
2**62 and past 64 bits, ±0.0, ±inf, NaN, subnormals, bools, ``**`` with negative and float
exponents, ``%``/``//`` of sub-expressions that may raise, ``min``/``max``/``abs``, dependent and
negative-step ranges, counts past 2**63 summed over outer loops, settings past 64 bits), written as
space files and as T1 files (``space_strategies.differential_spaces``), each counted by brute force
(plain Python over the same expressions), by the reference enumerator, and by every path a user
has: the Python API and the command line, on the C target, NumPy and Numba, and the file that
``beastgen convert`` writes from a T1 file.

The rule: every path gives Python's count, or every one refuses the space with one line naming
the place; a different count, one path refusing where another counts, a traceback, a negative
count, a hang or a process killed by a signal fails. The paths run in a worker process
(``differential_worker.py``), so a signal is a finding, not the end of the run.

A small fixed budget runs in every test run, and a deeper one (other spaces) in the tests marked
``full`` (``python -m pytest -m full``); ``--fuzz-budget N`` (or ``BEASTGEN_FUZZ_BUDGET=N``) runs N spaces of each form, for a
release. Numba compiles for a second or more a space, so with
the small budget it runs on every fourth space; with a larger one, on every space.
"""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

import hypothesis
import pytest
from hypothesis import HealthCheck, Phase, event, given, note, settings

from space_strategies import differential_spaces
import property_sizes

HERE = os.path.dirname(os.path.abspath(__file__))
#: spaces of each form (space file, T1) in every test run (the quick set: its share,
#: tests/property_sizes.py), and how often Numba runs among them
DEFAULT_BUDGET = 14
NUMBA_EVERY_DEFAULT = 4
#: spaces of each form in the slow-marked deeper variant (another seed, Numba on each)
DEEPER_BUDGET = 30
REQUEST_SECONDS = 300  # a path that takes longer hangs


def budget(config) -> int:
    chosen = config.getoption("--fuzz-budget", default=None) or os.environ.get("BEASTGEN_FUZZ_BUDGET")
    return int(chosen) if chosen else property_sizes.examples(DEFAULT_BUDGET)


class Worker:
    """The worker process (restarted after it dies); :meth:`run` sends one request. Its lines are
    read by a thread into a queue, so that a hang is a timeout, never a blocked test run."""

    def __init__(self, directory):
        self.directory = directory
        self.process = None

    def start(self) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]))
        self.process = subprocess.Popen([sys.executable, "-u", os.path.join(HERE, "differential_worker.py")],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                        cwd=str(self.directory), env=env)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, args=(self.process.stdout, self.lines), daemon=True).start()

    @staticmethod
    def _read(stream, lines: queue.Queue) -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)  # the process ended

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def run(self, request: dict) -> dict:
        """Each path's outcome; a path the worker died in (or hung in) is an ``error``."""
        if self.process is None or self.process.poll() is not None:
            self.start()
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        current, deadline = None, time.monotonic() + REQUEST_SECONDS
        while True:
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0))
            except queue.Empty:
                self.stop()
                return {current or "worker": {"error": f"no answer in {REQUEST_SECONDS} s (a hang)"}}
            if line is None:
                status = self.process.wait()
                self.process = None
                why = (f"killed by signal {signal.Signals(-status).name}" if status < 0
                       else f"exit status {status}")
                return {current or "worker": {"error": f"the process died: {why}"}}
            message = json.loads(line)
            if "begin" in message:
                current = message["begin"]
            else:
                return message["results"]


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    running = Worker(tmp_path_factory.mktemp("differential"))
    yield running
    running.stop()


def outcome(result: dict) -> str:
    if "count" in result:
        return f"count {result['count']}"
    return "refused" if "refused" in result else "error"


def check_paths(results: dict, expected: int, place: str, what: str) -> str:
    """Every path of ``results`` counts ``expected`` or every one refuses with one line naming
    ``place``; which of the two."""
    shown = "\n".join(f"  {path}: {json.dumps(result)[:600]}" for path, result in results.items())
    errors = [path for path, result in results.items() if "error" in result]
    assert not errors, f"{what}: {', '.join(errors)} failed (a crash, traceback or bad count):\n{shown}"
    counted = {path for path, result in results.items() if "count" in result}
    if counted:
        wrong = [path for path in results if results[path].get("count") != expected]
        assert not wrong, f"{what}: Python counts {expected}; {', '.join(wrong)} differ:\n{shown}"
        return "counted"
    unplaced = [path for path, result in results.items() if place not in result["refused"]]
    assert not unplaced, f"{what}: a refusal that does not name {place}:\n{shown}"
    return "refused"


def check_space(space, directory, worker: Worker, numba: bool) -> str:
    """Count ``space`` on every path (Numba's too where ``numba``) and check the rule; what happened."""
    name = "space.json" if space.t1 else "space.py"
    path = directory / name
    path.write_text(space.text())
    note(space.text())
    note(f"settings: {space.overrides}")
    expected = space.brute_count()
    note(f"brute force: {expected}")
    generated = str(directory / "generated")
    targets = ["c", "numpy"] + (["numba"] if numba else [])
    paths = ["reference"] + [f"{kind}-{target}" for target in targets for kind in ("api", "cli")]
    if expected <= 2000 and not any(it.wide for it in space.iterators):
        paths.append("enumerate-c")
    request = {"file": str(path), "settings": space.overrides, "generated": generated, "paths": paths}
    results = worker.run(request)
    reference = results.pop("reference", {"error": "not run"})
    assert "error" not in reference, f"the reference enumerator failed: {reference}"
    if "refused" in reference:  # the file itself is refused: so must every path be
        assert all("refused" in result for result in results.values()), results
        return "refused at load"
    assert reference["count"] == expected, f"the reference counts {reference['count']}, brute force {expected}"
    verdict = check_paths(results, expected, name, "the space")
    if space.t1:
        converted = directory / "converted.py"
        made = worker.run({"file": str(path), "generated": generated, "paths": [f"convert:{converted}"]})
        assert "count" in made.get(f"convert:{converted}", {}), f"beastgen convert failed: {made}"
        again = worker.run({"file": str(converted), "generated": str(directory / "generated-converted"),
                            "paths": ["reference", "api-c", "cli-c"] + (["api-numba"] if numba else [])})
        reference = again.pop("reference", None)
        assert reference == {"count": expected}, (f"the converted file's reference gives {reference} "
                                                  f"({again}):\n{converted.read_text()}")
        assert check_paths(again, expected, "converted.py", "the converted file") == verdict, \
            f"the converted file {verdict} where the T1 file did not:\n{converted.read_text()}"
    return verdict


DIFFERENTIAL = settings(deadline=None, derandomize=True, database=None,
                        phases=[Phase.generate, Phase.shrink],
                        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                               HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture])


def differential(t1: bool, examples: int | None = None, seed: int | None = None):
    """The test of ``t1`` spaces (T1 files, else space files): ``examples`` of them (the budget when
    None), drawn from ``seed`` (derandomized when None: the same spaces every run)."""
    def test(request, worker, tmp_path_factory):
        count = examples or budget(request.config)
        numba_every = 1 if count > DEFAULT_BUDGET else NUMBA_EVERY_DEFAULT
        seen = []

        @settings(DIFFERENTIAL, max_examples=count, derandomize=seed is None)
        @given(space=differential_spaces(t1=t1))
        def one(space):
            seen.append(None)
            directory = tmp_path_factory.mktemp("t1" if t1 else "py")
            for feature in sorted(space.features):
                event(feature)
            event(check_space(space, directory, worker, numba=len(seen) % numba_every == 0))
        if seed is not None:
            one = hypothesis.seed(seed)(one)
        one()
    return test


test_space_files_count_alike_on_every_path = differential(t1=False)
test_t1_files_count_alike_on_every_path = differential(t1=True)
#: deeper, on other spaces (another seed) and Numba on each: the full size of the two tests above
#: (marked ``full``: ``python -m pytest -m full`` runs them, the README's command leaves them out)
test_more_space_files_count_alike_on_every_path = pytest.mark.slow(pytest.mark.full(
    differential(False, DEEPER_BUDGET, seed=37)))
test_more_t1_files_count_alike_on_every_path = pytest.mark.slow(pytest.mark.full(
    differential(True, DEEPER_BUDGET, seed=37)))
