"""Branch and bound in the learnt order: on random spaces with random valid (and some violated)
bound terms it proves the same best as exhaustive search, and its certificate never claims more
than is true."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from beastgen.harness.strategies.learnt_order import Constants, LearntOrder


def _space(seed):
    """Random configurations, a run time from a fixed roofline-like formula, bound terms below it
    (term 2 is wrong on some configurations: a bound above the time)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 400))
    codes = np.stack([rng.integers(0, k, n) for k in rng.integers(1, 5, 4)], axis=1)
    tile, threads, vector, unroll = (codes[:, j] + 1 for j in range(4))
    times = 1e-3 * (1.0 / tile + 0.3 * threads / vector + 0.05 * unroll ** 2) + 1e-5 * tile * threads
    terms = rng.integers(0, 3, n)
    bounds = times * rng.uniform(0.2, 1.0, n)
    wrong = (terms == 2) & (rng.random(n) < 0.1)
    bounds[wrong] = times[wrong] * 1.5
    return codes, bounds, terms, times


def _search(codes, bounds, terms, times, seed, prior=None, constants=Constants(), values=None,
            seen=None):
    order = LearntOrder(codes, bounds, terms, seed, prior=prior, constants=constants, values=values)
    best, measured = math.inf, 0
    while True:
        lower = order.lower_bound(best)
        i = order.next(best)
        if i is None:
            return best, measured
        # the certificate: no open configuration is faster than the lower bound, unless its term
        # was violated by a measurement that the search has not seen yet
        open_times = times[order.open & ~((terms == 2) & (bounds > times))]
        assert lower <= open_times.min() or best <= open_times.min()
        measured += 1
        if seen is not None:
            seen.append(i)
        order.observe(i, times[i])
        if times[i] < bounds[i]:
            order.violate(terms[i])
        best = min(best, times[i])


@pytest.mark.parametrize("seed", range(12))
def test_learnt_order_proves_the_exhaustive_best(seed):
    codes, bounds, terms, times = _space(seed)
    best, measured = _search(codes, bounds, terms, times, seed)
    assert best == times.min()
    # what is never measured was cut by a valid bound (every violated term's configurations run)
    assert measured <= len(times)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("share", [0.0, 1.0])
def test_either_model_alone_proves_the_exhaustive_best(seed, share):
    """Every model proposal from the regression alone, or from the forest alone (no local ones):
    the proof does not depend on which model orders the search."""
    codes, bounds, terms, times = _space(seed + 20)
    constants = Constants(forest_share=share, prior_forest_share=share, local_every=0)
    best, measured = _search(codes, bounds, terms, times, seed, constants=constants)
    assert best == times.min() and measured <= len(times)


@pytest.mark.parametrize("seed", range(4))
def test_crossover_and_derived_features_prove_the_exhaustive_best(seed):
    """Every model proposal a crossover child when one is open (the others from the forest on
    derived features): the proof stands whatever proposes."""
    codes, bounds, terms, times = _space(seed + 40)
    values = (2.0 ** codes).astype(float)
    constants = Constants(cross_share=1.0, forest_share=1.0, forest_derived=1, local_every=0)
    order_seen = []
    best, measured = _search(codes, bounds, terms, times, seed, constants=constants, values=values,
                             seen=order_seen)
    assert best == times.min() and measured <= len(times)
    assert len(set(order_seen)) == len(order_seen)  # never the same configuration twice


@pytest.mark.parametrize("seed", range(4))
def test_gaussian_process_alone_proves_the_exhaustive_best(seed):
    """Every model proposal from the Gaussian process (no local ones): the search proves the
    exhaustive best and never proposes a configuration twice."""
    codes, bounds, terms, times = _space(seed + 60)
    constants = Constants(gp_share=1.0, local_every=0)
    seen = []
    best, measured = _search(codes, bounds, terms, times, seed, constants=constants, seen=seen)
    assert best == times.min() and measured <= len(times)
    assert len(set(seen)) == len(seen)


@given(st.integers(0, 2**32 - 1), st.sampled_from(["agree", "disagree", "random"]))
@settings(max_examples=25, deadline=None)
def test_priors_never_change_what_is_proven(seed, kind):
    """Whatever the priors say (the truth, its opposite, noise, holes), the search proves the same
    best as exhaustive search and its certificate stays true: priors only order it."""
    codes, bounds, terms, times = _space(seed % 1000)
    rng = np.random.default_rng(seed)
    logs = np.log(times)
    prior = {"agree": logs, "disagree": -logs, "random": rng.standard_normal(len(times))}[kind]
    prior = np.stack([prior, rng.standard_normal(len(times))], axis=1)
    prior[rng.random(prior.shape) < 0.2] = np.nan
    best, measured = _search(codes, bounds, terms, times, seed, prior=prior)
    assert best == times.min() and measured <= len(times)


def test_learnt_order_without_violations_runs_only_bounds_below_the_best():
    codes, bounds, terms, times = _space(3)
    bounds = np.minimum(bounds, times)
    best, measured = _search(codes, bounds, terms, times, 0)
    assert best == times.min() and measured <= len(times)
    assert measured >= int(np.sum(bounds < best))  # all of those must be measured or the proof fails


def test_replay_run_reports_a_true_certificate(tmp_path):
    """On the TITAN RTX measurements, a budget-limited run states how far from optimal it may be,
    and that claim holds against the file's real optimum (11.466 ms)."""
    import os

    from beastgen.harness import tune

    from conftest import REPLAY, REPO
    result = tune(os.path.join(REPO, "spaces", "gemm_clblast.py"), backend="replay", replay=REPLAY,
                  device="titanrtx", budget=30, results=str(tmp_path / "r.db"),
                  generated_dir=str(tmp_path / "generated"), progress=False, log=lambda m: None)
    assert not result.proven and result.evaluated == 30
    assert 0 < result.lower_bound <= 0.011466 <= result.best_time
    ratio = result.best_time / result.lower_bound
    assert result.certificate() == (f"within {ratio - 1:.1%} of optimal" if ratio < 2 else
                                    f"at most {ratio:.1f}x the optimum")
    assert f"; the best is {result.certificate()}" in result.report()
    assert result.as_dict()["certificate"] == result.certificate()
