"""Branch and bound in the guided search's order: on random spaces with random valid (and some
violated) bound terms it proves the same best as exhaustive search (among the configurations whose
bound holds or was shown violated: a wrong bound no measurement reveals cuts its configuration from
any branch and bound), never proposes a configuration twice, and its certificate never claims more
than is true.

What these properties depend on is the machinery (the history's open set, valid bounds and
violations, the mixer's stages, each proposer's filtering and requeueing), not what the models
predict: the property tests run it with a model-free stand-in (random scores) in place of the
regression, the forest and the Gaussian process, over many examples; a few cases run the shipped
recipes with their real models."""
import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from beastgen.harness.strategies.guided import GuidedSearch
from beastgen.harness.strategies.guided.history import History
from beastgen.harness.strategies.guided.mixer import Mixer, Stage
from beastgen.harness.strategies.guided.proposers import (Crossover, Local, ModelMinimum,
                                                          SmallestBoundThenRandom, SourcesFirst)
from beastgen.harness.strategies.models.base import Model, Schedule
from beastgen.harness.strategies.models.transfer import Transfer

from property_sizes import examples


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


def _sources(times, seed, kind):
    """Two prior sources: the truth, its opposite or noise, beside noise; a fifth of them lacking."""
    rng = np.random.default_rng(seed)
    logs = np.log(times)
    prior = {"agree": logs, "disagree": -logs, "random": rng.standard_normal(len(times))}[kind]
    prior = np.stack([prior, rng.standard_normal(len(times))], axis=1)
    prior[rng.random(prior.shape) < 0.2] = np.nan
    return prior


class StandIn(Model):
    """A model-free stand-in: new random scores at every fit, spread 1."""

    def __init__(self, n, rng, schedule):
        super().__init__(schedule)
        self.n, self.rng = n, rng

    def learn(self, history):
        self.mean = self.rng.standard_normal(self.n)

    def score(self, indices):
        return self.mean[indices], np.ones(len(indices))


class StandInSearch:
    """The guided search's machinery (history, mixer, every proposer) over stand-in models, with
    a small candidate cap so queues run dry and are filled again."""

    def __init__(self, codes, bounds, terms, seed, sources=None):
        rng = np.random.default_rng(seed)
        history = self.history = History(codes, bounds, terms)
        n = len(bounds)
        ranking = StandIn(n, rng, Schedule(0.05, 1))
        other = StandIn(n, rng, Schedule(0.1, 4))
        last = [(Crossover(history, ranking, 4, 16, rng), 0.2),
                (ModelMinimum(history, other, 2.0, 8, rng), 0.5),
                (ModelMinimum(history, ranking, 0.0, None, rng), 1.0)]
        stages = [Stage([(Local(history, ranking, 3), 0.5)]), Stage(last)]
        opening = SmallestBoundThenRandom(history, rng)
        if sources is not None:
            opening = SourcesFirst(history, sources)
            transfer = ModelMinimum(history, Transfer(sources, 0.3), 0.0, None, rng)
            stages.insert(1, Stage([(transfer, 0.5)], after=2))
        self.mixer = Mixer(history, opening, 3, [ranking], stages)

    def next(self, best):
        return self.mixer.propose(best)

    def observe(self, i, time):
        self.mixer.observe(i, time)

    def violate(self, term):
        self.history.violate(term)

    def lower_bound(self, best):
        return self.history.lower_bound(best)

    @property
    def open(self):
        return self.history.open


def _search(order, bounds, terms, times):
    """Run ``order`` against ``times`` to its end, checking the certificate at every step:
    (best, measured, proposals in order, the exhaustive best it must prove). That last is the
    fastest configuration whose bound holds or whose term a measurement showed violated: a wrong
    bound that no measurement reveals cuts its configuration from any branch and bound."""
    best, seen, violated = math.inf, [], set()
    while True:
        lower = order.lower_bound(best)
        i = order.next(best)
        if i is None:
            provable = (bounds <= times) | np.isin(terms, list(violated))
            return best, len(seen), seen, times[provable].min()
        # the certificate: no open configuration is faster than the lower bound, unless its term
        # was violated by a measurement that the search has not seen yet
        open_times = times[order.open & ~((terms == 2) & (bounds > times))]
        assert lower <= open_times.min() or best <= open_times.min()
        seen.append(i)
        order.observe(i, times[i])
        if times[i] < bounds[i]:
            order.violate(terms[i])
            violated.add(terms[i])
        best = min(best, times[i])


@given(st.integers(0, 2**32 - 1))
@settings(max_examples=examples(60), deadline=None)
def test_the_machinery_proves_the_exhaustive_best_whatever_the_models_say(seed):
    codes, bounds, terms, times = _space(seed % 5000)
    order = StandInSearch(codes, bounds, terms, seed)
    best, measured, seen, provable = _search(order, bounds, terms, times)
    assert best == provable and measured <= len(times)
    assert len(set(seen)) == len(seen)  # never the same configuration twice


@given(st.integers(0, 2**32 - 1), st.sampled_from(["agree", "disagree", "random"]))
@example(180959, "agree")  # the optimum's bound is wrong, and no measurement shows its term violated
@settings(max_examples=examples(40), deadline=None)
def test_priors_never_change_what_is_proven(seed, kind):
    """Whatever the priors say (the truth, its opposite, noise, holes), the search proves the same
    best as exhaustive search and its certificate stays true: priors only order it."""
    codes, bounds, terms, times = _space(seed % 5000)
    order = StandInSearch(codes, bounds, terms, seed, _sources(times, seed, kind))
    best, measured, seen, provable = _search(order, bounds, terms, times)
    assert best == provable and measured <= len(times) and len(set(seen)) == len(seen)


def test_without_violations_every_bound_below_the_best_is_measured():
    codes, bounds, terms, times = _space(3)
    bounds = np.minimum(bounds, times)
    best, measured, _, provable = _search(StandInSearch(codes, bounds, terms, 0), bounds, terms, times)
    assert best == provable and measured <= len(times)
    assert measured >= int(np.sum(bounds < best))  # all of those must be measured or the proof fails


# -- the shipped recipes, with their real models -----------------------------------------------

@pytest.mark.parametrize("seed", [37, 47, 48])  # spaces of about 100 configurations
def test_the_default_search_proves_the_exhaustive_best(seed):
    codes, bounds, terms, times = _space(seed)
    order = GuidedSearch(codes, bounds, terms, seed=seed)
    best, measured, seen, provable = _search(order, bounds, terms, times)
    assert best == provable and measured <= len(times) and len(set(seen)) == len(seen)


@pytest.mark.parametrize("options", [{"forest_share": 0.0, "local_share": 0.0},
                                     {"forest_share": 1.0, "local_share": 0.0},
                                     {"cross_share": 1.0, "forest_share": 1.0, "local_share": 0.0},
                                     {"gp_share": 1.0, "local_share": 0.0}],
                         ids=["regression", "forest", "crossover", "gaussian-process"])
def test_each_proposer_alone_proves_the_exhaustive_best(options):
    """Every proposal after the initial ones from one proposer (when it has one): the proof does
    not depend on which proposes."""
    codes, bounds, terms, times = _space(35)
    values = (2.0 ** codes).astype(float)
    order = GuidedSearch(codes, bounds, terms, values, seed=1, options=options)
    best, measured, seen, provable = _search(order, bounds, terms, times)
    assert best == provable and measured <= len(times) and len(set(seen)) == len(seen)


@pytest.mark.parametrize("kind", ["agree", "disagree"])
def test_the_search_with_priors_proves_the_exhaustive_best(kind):
    """The recipe with priors, its Gaussian process on the sources' scores taking every proposal
    it can once a dozen are measured."""
    codes, bounds, terms, times = _space(107)
    order = GuidedSearch(codes, bounds, terms, sources=_sources(times, 5, kind), seed=5,
                         options={"gp_share": 1.0, "local_share": 0.0})
    best, measured, seen, provable = _search(order, bounds, terms, times)
    assert best == provable and measured <= len(times) and len(set(seen)) == len(seen)


@pytest.mark.slow
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
    assert result.certificate() == (f"at most {ratio - 1:.1%} above the optimum" if ratio < 2 else
                                    f"at most {ratio:.1f}x the optimum")
    assert f"; the best is {result.certificate()}" in result.report()
    assert result.as_dict()["certificate"] == result.certificate()
