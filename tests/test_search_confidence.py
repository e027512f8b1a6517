"""The guided search's confidence (``guided/confidence.py``, ``beastgen tune --confidence C``): a
model's estimate that no configuration left is more than 1% faster than the best, labelled as such,
stopping a search that then proves nothing; and the search's own cost (its BLAS threads, its CPU
time in the summary)."""
import json
import math
import os

import numpy as np
import pytest

from beastgen.errors import BeastError
from beastgen.harness.strategies.guided import GuidedSearch
from beastgen.harness.strategies.threads import BlasThreads

from conftest import REPO

SPACE = os.path.join(REPO, "data", "reference-spaces", "convolution_milo.json")
REPLAY = os.path.join(REPO, "data", "replay", "convolution_milo_w6600.json.gz")


def _space(seed, n=300):
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, 4, n) for _ in range(3)], axis=1)
    times = np.exp(0.3 * codes[:, 0] - 0.2 * codes[:, 1] + 0.1 * codes[:, 2] ** 2
                   + 0.01 * rng.standard_normal(n))
    return codes, times


def test_no_estimate_before_the_model_is_fitted_and_a_sure_one_where_the_bounds_cut_all():
    codes, times = _space(1)
    n = len(times)
    search = GuidedSearch(codes, np.full(n, np.nan), np.zeros(n, np.int64), seed=0)
    assert search.confidence(math.inf) == 0.0
    for _ in range(3):
        i = search.next(math.inf)
        search.observe(i, times[i])
    best = min(times[search.history.measured])
    assert search.confidence(best) == 0.0  # its hyperparameters not fitted yet: it cannot tell
    bounds = np.maximum(times, best)  # every bound valid; none more than 1% below the best
    sure = GuidedSearch(codes, bounds, np.zeros(n, np.int64), seed=0)
    assert sure.confidence(best) == 1.0


def test_the_estimate_grows_as_the_search_closes_in():
    codes, times = _space(2)
    n = len(times)
    search = GuidedSearch(codes, np.full(n, np.nan), np.zeros(n, np.int64), seed=3)
    best, estimates = math.inf, []
    for _ in range(120):
        i = search.next(best)
        search.observe(i, times[i])
        best = min(best, times[i])
        estimates.append(search.confidence(best))
    assert 0.0 <= min(estimates) and max(estimates) <= 1.0
    assert estimates[-1] > estimates[10]


def test_the_estimate_waits_for_measurements_that_do_not_improve_the_best():
    codes, times = _space(2)
    n = len(times)
    waiting = GuidedSearch(codes, np.full(n, np.nan), np.zeros(n, np.int64), seed=3,
                           options={"confidence_after": 0, "confidence_quiet": 10**6})
    for i, seconds in enumerate([5.0, 4.0, 3.999, 3.98]):  # 4.0 is the last more than 1% better
        waiting.observe(i, seconds)
    assert waiting.recipe.confidence.unimproved() == 2
    best = 3.98
    for _ in range(120):
        i = waiting.next(best)
        waiting.observe(i, times[i])
        best = min(best, times[i])
        assert waiting.confidence(best) == 0.0  # never quiet for long enough


def test_computing_the_estimate_changes_no_proposal():
    codes, times = _space(5)
    n = len(times)
    runs = []
    for estimating in (False, True):
        search = GuidedSearch(codes, np.full(n, np.nan), np.zeros(n, np.int64), seed=7)
        best, order = math.inf, []
        for _ in range(150):
            i = search.next(best)
            order.append(i)
            search.observe(i, times[i])
            best = min(best, times[i])
            if estimating:
                search.confidence(best)
        runs.append(order)
    assert runs[0] == runs[1]


def test_configurations_a_replay_file_lacks_keep_the_estimate_below_certain():
    """A run that closes every configuration the backend answers is not sure of the space's
    optimum while configurations it never measured may be faster; where the bounds cut those it
    is."""
    codes, times = _space(4, n=200)
    n = len(times)
    lacking = codes[:, 1] == 3  # the fastest region (time falls with codes[:, 1])
    for bounds in (np.full(n, np.nan), np.where(lacking, 10.0, 0.0)):
        search = GuidedSearch(codes, bounds, np.zeros(n, np.int64), seed=0)
        best = math.inf
        while (i := search.next(best)) is not None:
            search.observe(i, None if lacking[i] else times[i])
            best = min(best, math.inf if lacking[i] else times[i])
        assert not search.history.alive(best).any() and best == times[~lacking].min()
        if np.isnan(bounds).all():
            assert search.confidence(best) < 0.5  # the model: faster ones were never measured
        else:
            assert search.confidence(best) == 1.0  # every one never measured is cut


def test_blas_threads_are_one_unless_the_environment_says_otherwise(monkeypatch):
    from threadpoolctl import threadpool_info
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                 "VECLIB_MAXIMUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    threads = BlasThreads(0)
    with threads():
        assert {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"} == {1}
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    assert BlasThreads(0).count is None and BlasThreads(3).count == 3


def _tune(tmp_path, **options):
    from beastgen.harness import tune
    return tune(SPACE, backend="replay", replay=REPLAY, results=str(tmp_path / "r.db"),
                progress=False, log=lambda m: None, **options)


def test_a_confident_stop_is_a_model_s_estimate_and_proves_nothing(tmp_path):
    # a small spread and no wait, so that it stops soon (the defaults wait longer: docs/search.md)
    result = _tune(tmp_path, budget=300, confidence=0.5,
                   strategy_options={"confidence_spread": 0.05, "confidence_after": 0,
                                     "confidence_quiet": 0})
    assert result.stopped.startswith("confident: ") and not result.proven
    assert result.confidence >= 0.5 and result.evaluated < 300
    report = result.report()
    assert "a model's estimate: " in report and "sure the best is within 1% of the space's optimum" in report
    assert "the search's own work: " in report and "ms per proposal" in report
    record = json.loads(json.dumps(result.as_dict()))
    assert record["confidence"] == result.confidence and record["proposals"] == result.proposals > 0
    assert record["model_cpu_seconds"] > 0 and record["model_ms_per_proposal"] > 0


@pytest.mark.parametrize("options, message", [
    ({"confidence": 1.5}, "--confidence must be between 0 and 1"),
    ({"confidence": 0.9, "strategy": "random_search"}, "'random_search' makes no such estimate"),
])
def test_bad_confidences_are_refused(tmp_path, options, message):
    with pytest.raises(BeastError, match=message):
        _tune(tmp_path, **options)
