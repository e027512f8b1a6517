"""The Gaussian process's inputs with priors (``guided/features.py``): the sources' scores scaled to
[0, 1] beside the parameters, a lacking configuration at its source's mean with an indicator, and a
process fitted on them learns which source carries (its search: test_search_order.py)."""
import math

import numpy as np

from beastgen.harness.strategies.guided.features import source_process_inputs as gp_inputs
from beastgen.harness.strategies.models.gaussian_process import GaussianProcess


def test_sources_are_scaled_beside_the_parameters_with_lacking_ones_marked():
    indices = np.array([[0.0, 1.0], [0.5, 0.0], [1.0, 0.5], [0.0, 0.0]])
    prior = np.array([[-2.0, 1.0], [0.0, np.nan], [2.0, 3.0], [1.0, 5.0]])
    x = gp_inputs(indices, prior)
    assert x.shape == (4, 2 + 2 + 1)  # parameters, two sources, one lacking indicator
    assert np.array_equal(x[:, :2], indices)
    assert np.allclose(x[:, 2], [0.0, 0.5, 1.0, 0.75])
    known = np.array([0.0, 0.5, 1.0])  # the second source's known scores, scaled
    assert np.allclose(x[[0, 2, 3], 3], known) and math.isclose(x[1, 3], known.mean())
    assert np.array_equal(x[:, 4], [0.0, 1.0, 0.0, 0.0])


def test_a_constant_or_empty_source_adds_no_signal():
    indices = np.zeros((3, 1))
    x = gp_inputs(indices, np.array([[2.0, np.nan], [2.0, np.nan], [2.0, np.nan]]))
    assert x.shape == (3, 2) and not x[:, 1].any()  # the constant source; the empty one: dropped


def test_the_process_learns_which_source_carries():
    """Log time follows source 0 and not source 1 (noise): the fitted length scale of source 0 is
    far shorter, so its ranking carries to this GPU and the noise's does not."""
    rng = np.random.default_rng(1)
    n = 120
    indices = rng.integers(0, 4, (n, 2)) / 3.0
    truth = rng.standard_normal(n)
    prior = np.stack([truth, rng.standard_normal(n)], axis=1)
    x = gp_inputs(indices, prior)
    gp = GaussianProcess().fit(x, truth + 0.05 * rng.standard_normal(n), steps=60)
    lengths = np.exp(gp.theta[:-2])
    assert lengths[2] * 3 < lengths[3]
