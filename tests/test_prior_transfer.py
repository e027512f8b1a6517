"""Priors on one scale (normal scores of ranks) and the rank transfer that trusts each source by
its rank correlation with this run's measurements (``models/transfer.py``), proposed in consensus
order by the guided search's model-minimum proposer."""
import math
from statistics import NormalDist

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from beastgen.harness.priors import source_column
from beastgen.harness.strategies.guided.history import History
from beastgen.harness.strategies.guided.proposers import ModelMinimum
from beastgen.harness.strategies.models.transfer import Transfer, rank_correlation

from property_sizes import examples


def _history(n):
    return History(np.zeros((n, 1), dtype=np.int64), np.full(n, np.nan), np.zeros(n, dtype=np.int64))


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.floats(-1e6, 1e6), min_size=3, max_size=40, unique=True), st.randoms())
def test_rank_correlation_is_pearson_of_the_ranks(values, random):
    a = np.array(values)
    b = np.array(random.sample(values, len(values)))
    ranks = [np.argsort(np.argsort(v)) for v in (a, b)]
    assert math.isclose(rank_correlation(a, b), np.corrcoef(*ranks)[0, 1], abs_tol=1e-9)
    assert math.isclose(rank_correlation(a, a), 1.0) and math.isclose(rank_correlation(a, -a), -1.0)
    assert math.isclose(rank_correlation(a, np.argsort(np.argsort(a)) ** 3.0), 1.0)  # any monotone map


def test_rank_correlation_of_too_few_or_constant_values_is_zero():
    assert rank_correlation(np.array([1.0, 2.0]), np.array([2.0, 1.0])) == 0.0
    assert rank_correlation(np.ones(5), np.arange(5.0)) == 0.0
    # ties share their mean rank: a source whose measured configurations all failed there (one
    # value) says nothing, whatever order they were measured in
    assert math.isclose(rank_correlation(np.array([0, 0, 0, 1.0]), np.array([1, 2, 3, 4.0])),
                        np.corrcoef([1, 1, 1, 3], [0, 1, 2, 3])[0, 1])


def test_source_column_is_the_normal_score_of_the_rank():
    times = {(1,): 2.0, (2,): 1.0, (3,): math.inf, (4,): 8.0, (5,): 1.0}
    column = source_column(times, [(2,), (1,), (4,), (3,), (6,), (5,)])
    quantile = NormalDist().inv_cdf
    # 4 successful times: the fastest (a tie: both the first rank) at 1/8, the slowest at 7/8
    assert np.allclose(column[[0, 1, 2, 3, 5]], [quantile(1 / 8), quantile(5 / 8), quantile(7 / 8),
                                                  quantile(7 / 8), quantile(1 / 8)])
    assert np.isnan(column[4])  # the source lacks it
    # the scale does not depend on how fast the source's GPU is, nor on its spread of times
    scaled = source_column({k: 3 * v ** 2 for k, v in times.items()}, [(2,), (1,), (4,), (3,), (6,), (5,)])
    assert np.array_equal(np.isnan(column), np.isnan(scaled))
    assert np.allclose(column[~np.isnan(column)], scaled[~np.isnan(scaled)])


@settings(max_examples=examples(30), deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_a_source_that_disagrees_loses_its_say(seed):
    """Two sources: one ranks like this GPU, the other backwards (holes in both). After a few
    measurements the agreeing source carries the consensus: its best open configuration is next."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(30, 200))
    truth = rng.standard_normal(n)
    prior = np.stack([truth + 0.1 * rng.standard_normal(n), -truth], axis=1)
    prior[rng.random(prior.shape) < 0.2] = np.nan
    transfer, history = Transfer(prior, temperature=0.3), _history(n)
    for i in rng.choice(n, 12, replace=False):
        history.observe(int(i), math.exp(truth[i]))
    transfer.fit(history)
    assert transfer.trust[0] > 0.99
    i = ModelMinimum(history, transfer, 0.0, None, rng).propose(math.inf)
    agreeing = np.nan_to_num(prior[:, 0])  # lacking: the source's median
    assert history.open[i] and agreeing[i] <= agreeing[history.open].min() + 0.05


def test_transfer_goes_through_every_available_configuration_once():
    prior = np.array([[0.5], [np.nan], [-1.0], [2.0]])
    history = _history(4)
    proposer, seen = ModelMinimum(history, Transfer(prior, temperature=0.3), 0.0, None, None), []
    history.observe(2, 1.0)  # the model is fitted on a measurement: one source, trusted fully
    while (i := proposer.propose(math.inf)) is not None:
        seen.append(i)
        history.observe(i, None)  # no time: nothing to refit on
    assert seen == [1, 0, 3]  # lacking: at the median
