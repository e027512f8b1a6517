"""The guided search on a large space (``benchmarks/search/bench_model_cost.py``): its features are
computed for the rows a model reads, its neighbours found from one sorted hash, and above
``large_space`` configurations the regression predicts only what is scored, fits from the ones'
column numbers and seeks its minimum in a sample. Each is checked against the direct computation,
and the large-space path against the proof."""
import numpy as np
import pytest

from beastgen.harness.strategies.guided import GuidedSearch
from beastgen.harness.strategies.guided.features import (derived_inputs, forest_inputs,
                                                         regression_features, stacked,
                                                         with_sources)
from beastgen.harness.strategies.guided.history import History
from beastgen.harness.strategies.models.ridge import _Dense, _OneHot
from test_search_order import _search, _sources, _space


def _codes(seed, n=400):
    """Random codes with repeated rows (two candidates with the same codes) and a constant column."""
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, k, n) for k in (3, 5, 2, 1, 4)], axis=1)
    return codes, rng


@pytest.mark.parametrize("seed", range(4))
def test_neighbours_are_the_candidates_one_parameter_away(seed):
    codes, _ = _codes(seed)
    history = History(codes, np.full(len(codes), np.nan), np.zeros(len(codes), np.int64))
    varying = [j for j in range(codes.shape[1]) if codes[:, j].max() > 0]
    for i in range(0, len(codes), 7):
        expected = []
        for j in varying:  # the same codes but j's (i's duplicates included), in increasing index
            others = [k for k in range(codes.shape[1]) if k != j]
            expected += list(np.flatnonzero((codes[:, others] == codes[i, others]).all(axis=1)))
        assert history.neighbours(i).tolist() == [k for k in expected if k != i]


@pytest.mark.parametrize("seed", range(3))
def test_rows_of_a_subset_are_the_rows_of_the_whole(seed):
    codes, rng = _codes(seed)
    n = len(codes)
    history = History(codes, rng.random(n) * (rng.random(n) > 0.1), rng.integers(0, 2, n))
    values = (2.0 ** history.codes) * (1 + np.arange(history.codes.shape[1]))
    sources = np.where(rng.random((n, 2)) < 0.2, np.nan, rng.random((n, 2)))
    subset = rng.choice(n, 50, replace=False)
    everything = np.arange(n)
    features = with_sources(regression_features(history, values), sources)
    forest = stacked(forest_inputs(history) + derived_inputs(values))
    for rows in (features.hot, features.dense, forest):
        assert np.array_equal(rows[subset], rows[everything][subset])
    assert features.dense[subset].shape[1] == features.dense.width


@pytest.mark.parametrize("seed", range(3))
def test_one_hot_products_equal_the_dense_ones(seed):
    codes, rng = _codes(seed, 60)
    history = History(codes, np.zeros(len(codes)), np.zeros(len(codes), np.int64))
    features = regression_features(history, (2.0 ** history.codes))
    rows = rng.choice(len(codes), 30, replace=False)
    variance = rng.random(features.width) + 0.1
    dense = _Dense(features.hot[rows], features.hot_width, features.dense[rows], variance)
    hot = _OneHot(features.hot[rows], features.hot_width, features.dense[rows], variance)
    v, u = rng.standard_normal(features.width), rng.standard_normal(len(rows))
    assert np.allclose(dense.times(v), hot.times(v))
    assert np.allclose(dense.gram(), hot.gram())
    assert np.allclose(dense.scaled_transposed(u), hot.scaled_transposed(u))


@pytest.mark.parametrize("seed,priors", [(37, False), (47, False), (48, True)])
def test_the_large_space_path_proves_the_exhaustive_best(seed, priors):
    """``large_space=1``: every space is large (the regression's sampled minimum, its one-hot fit)."""
    codes, bounds, terms, times = _space(seed)
    sources = _sources(times, seed, "agree") if priors else None
    order = GuidedSearch(codes, bounds, terms, sources=sources, seed=seed,
                         options={"large_space": 1, "large_candidates": 8, "local_share": 0.0})
    best, measured, seen, provable = _search(order, bounds, terms, times)
    assert best == provable and measured <= len(times) and len(set(seen)) == len(seen)
