"""The one search loop (``Tuning.search``) with a batch runner that keeps several batches in flight,
as the Dask pool does (tests/test_distributed.py runs the pool itself): the budget counts the runs
in flight, a configuration missing from the replay file is answered by the loop and never sent,
and the store holds what the local search records, resumable."""
import json

from beastgen.harness.batches import BatchRunner
from beastgen.harness.store import read_run
from beastgen.harness.tuning import Limits, Tuning

SPACE = """\
import beastgen as beast
a = beast.values(1, 2, 3, 4, 5, 6, 7, 8)
b = beast.values(1, 2, 3, 4)
f = beast.filter(a * b > 8)  # filtered out: 16 valid
lb = beast.bound(a * 1e-3)
"""


class InFlight(BatchRunner):
    """Batches of up to ``size`` candidates, ``depth`` of them in flight; each measured by the
    search's own runner when it is given back, one collect after it was sent (the oldest first)."""

    def __init__(self, tuning, size=3, depth=2):
        self.tuning, self.size, self.depth = tuning, size, depth
        self.batches: list = []
        self.sent: list = []  # every key sent, in order

    def batch_size(self) -> int:
        return self.size

    def full(self) -> bool:
        return len(self.batches) >= self.depth

    def send(self, batch: list) -> None:
        self.batches.append(batch)
        self.in_flight += len(batch)
        self.sent += [key for _, key in batch]

    def collect(self, block: bool) -> list:
        if not self.batches or (not block and not self.full()):
            return []
        batch = self.batches.pop(0)
        self.in_flight -= len(batch)
        return [(c, key, self.tuning.measure_here(c.config)) for c, key in batch]


def _replay(tmp_path):
    """Every valid (a, b) measured (time a + b / 10 ms, above the bound), except those with b == 2."""
    cache = {f"{a},{b}": {"a": a, "b": b, "time": a + 0.1 * b, "times": [a + 0.1 * b]}
             for a in range(1, 9) for b in range(1, 5) if a * b <= 8 and b != 2}
    path = tmp_path / "replay.json"
    path.write_text(json.dumps({"device_name": "tinydev", "kernel_name": "tiny", "problem_size": [1],
                                "tune_params_keys": ["a", "b"], "cache": cache}))
    return str(path), len(cache)


def _tuning(tmp_path, results, budget):
    tuning = Tuning(str(tmp_path / "tiny.py"), "replay", "exhaustive", 0, Limits(budget=budget),
                    lambda message: None, None, None)
    tuning.setup(None, {}, str(tmp_path / "replay.json"), str(tmp_path / results), None,
                 str(tmp_path / "generated"))
    return tuning


def test_batches_in_flight_search_as_the_local_loop(tmp_path, monkeypatch):
    from beastgen.harness import tune
    from beastgen.harness import tuning as module

    (tmp_path / "tiny.py").write_text(SPACE)
    replay, measured = _replay(tmp_path)
    options = dict(backend="replay", replay=replay, strategy="exhaustive", budget=7,
                   generated_dir=str(tmp_path / "generated"), progress=False, log=lambda m: None)
    local = tune(str(tmp_path / "tiny.py"), results=str(tmp_path / "local.db"), **options)
    runners = []

    def in_flight(measure):  # the batch runner run() makes, several batches in flight
        runners.append(InFlight(tuning))
        return runners[-1]

    monkeypatch.setattr(module, "MeasureHere", in_flight)
    tuning = _tuning(tmp_path, "batches.db", 7)
    result = tuning.run(False)
    assert local.ran_now == result.ran_now == 7 and local.unmeasured == result.unmeasured > 0
    assert result.best_time == local.best_time and result.stopped == local.stopped == "budget of 7 runs spent"
    sent = runners[0].sent
    assert len(sent) == 7 and all(json.loads(key)["b"] != 2 for key in sent)  # none unmeasured
    assert [r["config"] for r in read_run(str(tmp_path / "batches.db"))[1]] == \
        [r["config"] for r in read_run(str(tmp_path / "local.db"))[1]]

    # resumed: the 7 recorded answered by the store, every other measured one run
    again = _tuning(tmp_path, "batches.db", None).run(False)
    assert again.resumed == 7 and again.ran_now == measured - 7 and again.evaluated == measured
    assert again.unmeasured == 4 and again.stopped == "every candidate was run"
    assert not set(runners[1].sent) & set(sent) and len(runners[1].sent) == measured - 7
