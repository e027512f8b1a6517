"""The NumPy extra-trees forest of the default search: it fits what it was given and predicts
within the range it saw."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from beastgen.harness.strategies.models.extra_trees import ExtraTrees

from property_sizes import examples


@given(st.integers(0, 2**32 - 1), st.integers(1, 60), st.integers(1, 4), st.integers(1, 3))
@settings(max_examples=examples(40), deadline=None)
def test_forest_fits_its_samples_and_stays_in_their_range(seed, n, width, leaf):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, (n, width)).astype(float)
    y = rng.standard_normal(n)
    forest = ExtraTrees(trees=5, leaf=leaf, rng=np.random.default_rng(seed)).fit(x, y)
    each = forest.predict_all(rng.integers(-1, 6, (30, width)).astype(float))
    assert each.shape == (5, 30)
    assert (each >= y.min() - 1e-9).all() and (each <= y.max() + 1e-9).all()
    # leaves of one sample where the rows differ: every tree reproduces a row's target (averaged
    # over the rows equal to it)
    _, group = np.unique(x, axis=0, return_inverse=True)
    group = group.reshape(-1)
    mean = np.bincount(group, y) / np.bincount(group)
    if leaf == 1:
        assert np.allclose(forest.predict_all(x), mean[group][None, :])


def test_forest_learns_a_simple_function_and_is_reproducible():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 8, (300, 3)).astype(float)
    y = x[:, 0] - 2 * (x[:, 1] > 3)
    fit = [ExtraTrees(8, rng=np.random.default_rng(7)).fit(x, y).predict_all(x[:50]) for _ in range(2)]
    assert np.array_equal(fit[0], fit[1])
    test = rng.integers(0, 8, (200, 3)).astype(float)
    error = ExtraTrees(16, rng=np.random.default_rng(2)).fit(x, y).predict_all(test).mean(axis=0) \
        - (test[:, 0] - 2 * (test[:, 1] > 3))
    assert np.abs(error).mean() < 0.3


def test_forest_without_samples_predicts_zero():
    assert not ExtraTrees(3).fit(np.zeros((0, 2)), np.zeros(0)).predict_all(np.ones((4, 2))).any()
