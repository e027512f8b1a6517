"""The residual model of the priors (``models/residual.py``): a ridge regression of this run's log
times on the sources' scores, whose residual the forest learns; it orders, never proves."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from beastgen.harness.strategies.guided import GuidedSearch
from beastgen.harness.strategies.models.residual import linear_part

from property_sizes import examples


@settings(max_examples=examples(40), deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_linear_part_recovers_a_linear_relation(seed):
    """Log times exactly linear in the sources' scores (holes counted at 0): a small penalty
    recovers every configuration's log time, measured or not."""
    rng = np.random.default_rng(seed)
    n, sources = int(rng.integers(20, 200)), int(rng.integers(1, 4))
    prior = rng.standard_normal((n, sources))
    prior[rng.random(prior.shape) < 0.2] = np.nan
    weights, offset = rng.uniform(-2, 2, sources), rng.uniform(-10, 0)
    truth = offset + np.nan_to_num(prior) @ weights
    measured = rng.choice(n, int(rng.integers(sources + 8, n + 1)), replace=False)
    predicted = linear_part(prior, measured, truth[measured], ridge=1e-9)
    assert np.allclose(predicted, truth, atol=1e-5)


def test_linear_part_of_too_few_measurements_is_their_mean():
    prior = np.array([[0.5], [np.nan], [-1.0]])
    assert np.array_equal(linear_part(prior, np.array([], dtype=np.int64), np.array([]), 1.0),
                          np.zeros(3))
    assert np.array_equal(linear_part(prior, np.array([2]), np.array([-4.0]), 1.0), np.full(3, -4.0))


def test_a_disagreeing_source_gets_a_negative_weight():
    """A source that ranks backwards predicts backwards: the fastest by the linear part is the
    one that source calls slowest."""
    rng = np.random.default_rng(3)
    truth = rng.standard_normal(100)
    prior = -truth[:, None]
    measured = rng.choice(100, 20, replace=False)
    predicted = linear_part(prior, measured, truth[measured], ridge=1.0)
    assert np.argmin(predicted) == np.argmin(truth)


def _space(seed):
    """Random configurations with a roofline-like run time and bound terms below it (some of
    term 2 wrong: above the time), as in test_search_order."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 300))
    codes = np.stack([rng.integers(0, k, n) for k in rng.integers(2, 5, 4)], axis=1)
    tile, threads, vector, unroll = (codes[:, j] + 1 for j in range(4))
    times = 1e-3 * (1.0 / tile + 0.3 * threads / vector + 0.05 * unroll ** 2) + 1e-5 * tile * threads
    terms = rng.integers(0, 3, n)
    bounds = times * rng.uniform(0.2, 1.0, n)
    wrong = (terms == 2) & (rng.random(n) < 0.1)
    bounds[wrong] = times[wrong] * 1.5
    return codes, bounds, terms, times


@pytest.mark.parametrize("kind", ["agree", "disagree", "random"])
def test_the_residual_forest_alone_proves_the_exhaustive_best(kind):
    """Every model proposal from the residual forest (no local ones, no transfer), whatever the
    priors say: the search proves the best of every configuration with a valid bound and never
    proposes a configuration twice (the machinery over any proposer: test_search_order.py)."""
    seed = 69
    codes, bounds, terms, times = _space(seed)
    rng = np.random.default_rng(seed)
    logs = np.log(times)
    prior = {"agree": logs, "disagree": -logs, "random": rng.standard_normal(len(times))}[kind]
    prior = np.stack([prior, rng.standard_normal(len(times))], axis=1)
    prior[rng.random(prior.shape) < 0.2] = np.nan
    options = {"forest_share": 1.0, "transfer_share": 0.0, "local_share": 0.0}
    order = GuidedSearch(codes, bounds, terms, sources=prior, seed=seed, options=options)
    best, seen = math.inf, []
    while (i := order.next(best)) is not None:
        seen.append(i)
        order.observe(i, times[i])
        if times[i] < bounds[i]:
            order.violate(terms[i])
        best = min(best, times[i])
    # a configuration whose bound is wrong (above its time) may be cut before a measurement shows
    # the term violated: the proof covers every configuration whose bound is valid
    assert best <= times[bounds <= times].min() and len(set(seen)) == len(seen)
