"""The Gaussian process (``gaussian_process.py``): its likelihood gradient is the true one, it
interpolates a smooth function and is unsure away from its data (its search: test_search_order.py)."""
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from beastgen.harness.strategies.models.gaussian_process import GaussianProcess, likelihood

from property_sizes import examples


@given(st.integers(0, 2**32 - 1))
@settings(max_examples=examples(10), deadline=None)
def test_likelihood_gradient_matches_finite_differences(seed):
    rng = np.random.default_rng(seed)
    x = rng.random((30, 3))
    z = rng.standard_normal(30)
    theta = rng.uniform(-2, 1, 5)
    value, gradient = likelihood(x, z, theta)
    step = 1e-5
    numeric = [(likelihood(x, z, theta + e)[0] - likelihood(x, z, theta - e)[0]) / (2 * step)
               for e in np.eye(5) * step]
    assert math.isfinite(value)
    assert np.allclose(gradient, numeric, rtol=1e-4, atol=1e-4)


def test_fit_interpolates_and_is_unsure_far_from_the_data():
    rng = np.random.default_rng(0)
    x = rng.random((60, 2)) * 0.5  # only the lower-left quarter
    y = np.sin(4 * x[:, 0]) + x[:, 1] ** 2
    gp = GaussianProcess().fit(x, y, steps=40)
    inside = rng.random((200, 2)) * 0.5
    mean, spread = gp.predict(inside)
    assert np.abs(mean - (np.sin(4 * inside[:, 0]) + inside[:, 1] ** 2)).max() < 0.05
    _, far = gp.predict(np.full((1, 2), 1.0))
    assert far[0] > 5 * spread.mean()


@given(st.integers(0, 2**32 - 1))
@settings(max_examples=examples(10), deadline=None)
def test_adding_rows_and_watching_give_what_a_fit_from_scratch_gives(seed):
    """``extend`` (the factorisation grown a row at a time) and ``watch`` (the watched rows'
    posterior kept current through it) predict what a fit on all the rows predicts."""
    rng = np.random.default_rng(seed)
    x, rows = rng.random((40, 3)), rng.random((25, 3))
    y = np.sin(3 * x[:, 0]) + x[:, 1] * x[:, 2] + 0.05 * rng.standard_normal(40)
    grown = GaussianProcess().fit(x[:12], y[:12], steps=5)
    whole = GaussianProcess()
    whole.theta = grown.theta
    whole.fit(x, y)
    grown.watch(rows)
    for start in range(12, 40, 7):
        grown.extend(x[start:start + 7], y[:start + 7])
    for got, want in zip(grown.predict_watched(), whole.predict(rows)):
        assert np.allclose(got, want, rtol=1e-6, atol=1e-8)
    for got, want in zip(grown.predict(rows), whole.predict(rows)):
        assert np.allclose(got, want, rtol=1e-6, atol=1e-8)
