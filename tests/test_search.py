"""The default search on any space, its priors, replay without a profile the space does not read,
times that are no times, and the verdict: each on tiny spaces and replay files written here, plus
one run on the real convolution measurements (a T1 space without bound terms)."""
import gzip
import json
import math
import os

import pytest

from beastgen.errors import BeastError
from beastgen.harness import tune
from beastgen.harness.backends.base import time_problem
from beastgen.harness.recorded import load_replay

from conftest import DATA, REFERENCE_DIR

BOUNDED = """
import beastgen as beast
M = beast.setting(64)
x = beast.values(1, 2, 3, 4)
y = beast.values(1, 2, 3)
f = beast.filter(x * y > M)
t = beast.bound(x * y * 1e-4 / beast.device.max_clock_mhz)
"""
PLAIN = """
import beastgen as beast
M = beast.setting(64)
x = beast.values(1, 2, 3, 4)
y = beast.values(1, 2, 3)
f = beast.filter(x * y > M)
"""


def _replay(tmp_path, times: dict, name="r.json", device="Some Unknown GPU", problem_size=(64,),
            keys=("x", "y")):
    """A Kernel Tuner cache file: ``times`` maps (x, y) to a time record value (ms) or a record."""
    cache = {}
    for key, value in times.items():
        record = value if isinstance(value, dict) else {"time": value, "times": [value]}
        cache[",".join(map(str, key))] = {**dict(zip(keys, key)), **record}
    path = tmp_path / name
    path.write_text(json.dumps({"device_name": device, "kernel_name": "k", "problem_size":
                                list(problem_size), "tune_params_keys": list(keys), "cache": cache}))
    return str(path)


def _run(tmp_path, space_text, replay, **options):
    space = tmp_path / "space.py"
    space.write_text(space_text)
    options.setdefault("results", str(tmp_path / f"run{len(list(tmp_path.iterdir()))}.db"))
    options.setdefault("backend", "replay")
    return tune(str(space), replay=replay,
                generated_dir=str(tmp_path / "generated"), progress=False, log=lambda m: None,
                **options)


def _all(value=1.0):
    return {(x, y): value * x / y for x in (1, 2, 3, 4) for y in (1, 2, 3)}


def test_default_searches_a_space_without_bounds_and_says_it_proves_nothing(tmp_path):
    replay = _replay(tmp_path, _all())
    partial = _run(tmp_path, PLAIN, replay, budget=5)
    assert partial.strategy == "guided" and partial.evaluated == 5 and not partial.proven
    assert "no bound terms: no certificate" in partial.report()
    assert partial.certificate() == "" and partial.as_dict()["certificate"] == ""
    full = _run(tmp_path, PLAIN, replay)
    assert full.proven and full.evaluated == 12 and full.best_config == {"x": 1, "y": 3}
    assert "optimal: every valid configuration was measured" in full.report()
    assert "PROVEN optimal by the bounds" not in full.report()


def test_replay_without_a_matching_profile(tmp_path):
    replay = _replay(tmp_path, _all())
    result = _run(tmp_path, PLAIN, replay, budget=2)  # reads no device property: any file replays
    assert result.device.startswith("some_unknown_gpu (Some Unknown GPU)")
    with pytest.raises(BeastError, match=r"reads beast\.device\.max_clock_mhz \(.*space\.py:7\).*"
                                         r"pass --device"):
        _run(tmp_path, BOUNDED, replay)
    assert _run(tmp_path, BOUNDED, replay, device="h100").proven  # supplied: the proof runs


@pytest.mark.parametrize("bad", [-5, 0, True, 1e-300, float("nan"), "negative repetition"])
def test_a_time_that_is_no_time_is_a_failure_never_a_best(tmp_path, bad):
    times = _all()
    if bad == "negative repetition":
        times[(1, 3)] = {"time": 0.01, "times": [0.02, -3.0]}
    else:
        times[(1, 3)] = {"time": bad, "times": [bad]} if not isinstance(bad, float) or \
            not math.isnan(bad) else {"time": "NaN"}
    path = _replay(tmp_path, times)
    if isinstance(bad, float) and math.isnan(bad):  # a JSON NaN, not Kernel Tuner's failure text
        text = open(path).read().replace('"NaN"', "NaN")
        open(path, "w").write(text)
    loaded = load_replay(path)
    assert (1, 3) not in loaded.times and (1, 3) in loaded.failed
    for space in (PLAIN, BOUNDED):
        result = _run(tmp_path, space, path, device="h100")
        assert result.best_time > 0 and result.best_config == {"x": 1, "y": 2}
        assert result.failures == {"launch": 1} and not result.bound_violations
        assert "recorded" in result.failure_examples[0]["message"]


def test_time_problem_names_the_cause():
    assert time_problem(1e-3) is None
    assert "not a number" in time_problem(True) and "not a number" in time_problem("1")
    assert "not a finite" in time_problem(math.inf)
    assert "not a positive" in time_problem(-5.0) and "not a positive" in time_problem(0)
    assert "nanosecond" in time_problem(1e-300)


def test_verdict_when_the_replay_lacks_configurations(tmp_path):
    times = _all()
    del times[(1, 3)]  # the optimum of the space is not in the file: no proof, no "optimal"
    result = _run(tmp_path, BOUNDED, _replay(tmp_path, times), device="h100")
    assert not result.proven and result.unmeasured >= 1
    assert result.certificate() != "optimal" and result.as_dict()["certificate"] != "optimal"
    assert "missing from the replay file" in result.report()
    assert "; the best is optimal" not in result.report()


def test_resuming_a_finished_tune_runs_nothing_and_keeps_the_verdict(tmp_path):
    replay = _replay(tmp_path, _all())
    store = str(tmp_path / "same.db")
    first = _run(tmp_path, PLAIN, replay, results=store)
    again = _run(tmp_path, PLAIN, replay, results=store)
    assert again.ran_now == 0 and again.resumed == first.evaluated == 12
    assert again.proven and again.best_time == first.best_time


def test_problem_size_compared_after_conversion(tmp_path):
    replay = _replay(tmp_path, _all(), problem_size=(4096,))
    assert _run(tmp_path, PLAIN, replay, settings={"M": "0x1000"}, budget=1).settings["M"] == 4096
    with pytest.raises(BeastError, match=r"--set M=4095 contradicts the replay file's problem size"):
        _run(tmp_path, PLAIN, replay, settings={"M": "4095"})


def test_a_backend_is_known_to_the_loop_only_through_its_runner(tmp_path, monkeypatch):
    """The replay set-up registered under another name tunes the same: the problem size, the
    parameter check and "unmeasured" come from the runner, not from the backend's name."""
    from beastgen.harness.tuning import BACKENDS

    monkeypatch.setitem(BACKENDS, "recorded", BACKENDS["replay"])
    times = _all()
    del times[(1, 3)]
    replay = _replay(tmp_path, times, problem_size=(4096,))
    results = [_run(tmp_path, BOUNDED, replay, device="h100", backend=name) for name in ("replay", "recorded")]
    for result in results:
        assert result.settings["M"] == 4096 and result.unmeasured >= 1 and not result.proven
    first, second = ([line for line in r.report().replace(f"({r.backend} backend)", "").splitlines()[:-1]
                      if not line.startswith("the search's own work: ")]  # CPU times differ
                     for r in results)
    assert first == second and "not in the replay file" in first[3]
    with pytest.raises(BeastError, match=r"--set M=64 contradicts the replay file's problem size"):
        _run(tmp_path, PLAIN, replay, backend="recorded", settings={"M": "64"})
    wrong = _replay(tmp_path, _all(), name="wrong.json", keys=("x", "z"))
    with pytest.raises(BeastError, match=r"the replay's parameters \['z'\] are not iterators"):
        _run(tmp_path, PLAIN, wrong, backend="recorded")


def test_priors_warm_start_and_mismatches_are_named(tmp_path):
    target = _all()
    target[(4, 1)] = 0.001  # the optimum here; the prior measured it fastest too
    prior = _replay(tmp_path, {**{k: v * 3 for k, v in _all().items()}, (4, 1): 0.002,
                               (9, 9): 0.0001},  # (9, 9) is not in the space: ignored
                    name="prior.json.gz" if False else "prior.json")
    result = _run(tmp_path, PLAIN, _replay(tmp_path, target), priors=[prior], budget=1)
    assert result.best_config == {"x": 4, "y": 1}  # the first proposal is the prior's best
    # a beastgen results store of the same space is a prior too
    store = _run(tmp_path, PLAIN, _replay(tmp_path, target, name="t2.json")).results_path
    assert _run(tmp_path, PLAIN, _replay(tmp_path, target, name="t3.json"), priors=[store],
                budget=1).best_config == {"x": 4, "y": 1}
    foreign = _replay(tmp_path, {(1, 1, 1): 1.0, (1, 2, 1): 2.0}, name="f.json", keys=("x", "y", "z"))
    with pytest.raises(BeastError, match=r"f\.json: the prior's parameters \['z'\] are not parameters"):
        _run(tmp_path, PLAIN, _replay(tmp_path, target), priors=[foreign])
    with pytest.raises(BeastError, match="does not read priors"):
        _run(tmp_path, PLAIN, _replay(tmp_path, target), priors=[prior], strategy="random_search")


def test_default_on_a_kernel_tuner_space_with_priors_from_other_gpus(tmp_path):
    """convolution (T1, no bound terms) on the W6600 file, whose GPU has no built-in profile,
    warm-started by the A100 and A4000 files: a search, not an error."""
    replay = os.path.join(DATA, "replay", "convolution_milo_w6600.json.gz")
    priors = [os.path.join(DATA, "replay", f"convolution_milo_{gpu}.json.gz") for gpu in ("a100", "a4000")]
    result = tune(os.path.join(REFERENCE_DIR, "convolution_milo.json"), backend="replay",
                  replay=replay, priors=priors, budget=20, results=str(tmp_path / "c.db"),
                  generated_dir=str(tmp_path / "generated"), progress=False, log=lambda m: None)
    assert result.evaluated == 20 and result.exhaustive == 4362 and not result.proven
    assert result.best_time <= 1.05 * load_replay(replay).best()[1] * 2  # within 2x at 20 runs
    with gzip.open(replay, "rt") as f:
        assert json.load(f)["device_name"] in result.device


def test_command_line_prior_and_strategy_names(tmp_path, capsys):
    from beastgen.cli import main
    replay = os.path.join(DATA, "replay", "convolution_milo_a4000.json.gz")
    prior = os.path.join(DATA, "replay", "convolution_milo_a100.json.gz")
    code = main(["tune", os.path.join(REFERENCE_DIR, "convolution_milo.json"), "--backend", "replay",
                 "--replay", replay, "--prior", prior, "--budget", "3", "--results",
                 str(tmp_path / "r.db"), "--generated-dir", str(tmp_path / "generated"),
                 "--no-progress", "--json"])
    assert code == 0
    record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert record["strategy"] == "guided" and record["evaluated"] == 3 and record["certificate"] == ""
    assert main(["tune", os.path.join(REFERENCE_DIR, "convolution_milo.json"), "--backend", "replay",
                 "--replay", replay, "--strategy", "random", "--budget", "2", "--results",
                 str(tmp_path / "s.db"), "--generated-dir", str(tmp_path / "generated"),
                 "--no-progress"]) == 0
    assert "strategy random_search" in capsys.readouterr().out


def test_good_enough_stops_at_the_first_time_that_fast_and_proves_nothing(tmp_path):
    """``good_enough``: the search ends right after measuring a time at most that, whatever the
    order; a bounded space that would have been proven is then not said to be (nothing proves the
    rest slower)."""
    replay = _replay(tmp_path, _all(), device="NVIDIA H100 SXM5 80GB")
    full = _run(tmp_path, BOUNDED, replay, device="h100")
    threshold = 0.4e-3  # seconds: of the 12 times only x=1, y=3's (1/3 ms) is below it
    stopped = _run(tmp_path, BOUNDED, replay, device="h100", good_enough=threshold)
    assert full.proven and stopped.best_time <= threshold and not stopped.proven
    assert stopped.stopped.startswith("good enough") and "at most 400 us" in stopped.report()
    order = _measured_times(stopped.results_path)
    assert all(t > threshold for t in order[:-1]) and order[-1] <= threshold
    never = _run(tmp_path, PLAIN, replay, good_enough=1e-9)  # never reached: runs to the end
    assert never.evaluated == 12 and never.proven


def _measured_times(store_path):
    from beastgen.harness.store import read_run
    return [row["time"] for row in read_run(store_path)[1]]


@pytest.mark.parametrize("text, seconds", [("0.6ms", 6e-4), ("550us", 5.5e-4), ("2e-3", 2e-3),
                                           ("1.5 s", 1.5), ("40NS", 4e-8)])
def test_good_enough_on_the_command_line_reads_units(text, seconds):
    from beastgen.commands.common import parse_kernel_time
    assert parse_kernel_time(text, "--good-enough") == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["fast", "0", "-1ms", "inf", "nan", "1 parsec", ""])
def test_good_enough_that_is_no_time_is_a_clear_error(text):
    from beastgen.commands.common import parse_kernel_time
    with pytest.raises(BeastError, match="--good-enough expects a time above zero"):
        parse_kernel_time(text, "--good-enough")
