"""The bandit over the kinds of model proposals: it deals turns in its base shares until rewards
differ, moves turns towards the kind rewarded most without starving the others, and a search
whose model proposals it shares still proves the exhaustive best."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from beastgen.harness.strategies.learnt_order import Constants
from beastgen.harness.strategies.proposal_bandit import KindBandit

from test_search_order import _search, _space

BASE = [0.3, 0.3, 0.25, 0.15]


def _turns(bandit, n, available=(True, True, True, True)):
    counts = np.zeros(len(BASE))
    for _ in range(n):
        counts[bandit.choose(np.array(available))] += 1
    return counts


def test_without_rewards_turns_follow_the_base_shares():
    counts = _turns(KindBandit(BASE, gain=5.0, discount=0.95, floor=0.25), 100)
    assert np.allclose(counts, 100 * np.array(BASE), atol=1)


def test_the_kind_rewarded_most_gains_turns_and_none_is_starved():
    bandit = KindBandit(BASE, gain=5.0, discount=0.95, floor=0.25)
    for _ in range(40):
        for kind in range(4):
            bandit.reward(kind, 1.0 if kind == 3 else 0.1)
    counts = _turns(bandit, 200)
    assert counts[3] > 200 * 0.5 and (counts >= 200 * 0.25 * np.array(BASE) - 1).all()


def test_a_kind_not_available_gets_no_turn():
    counts = _turns(KindBandit(BASE, gain=5.0, discount=0.95, floor=0.25), 50,
                    available=(True, True, False, True))
    assert counts[2] == 0 and counts.sum() == 50


@given(st.lists(st.tuples(st.integers(0, 3), st.floats(0, 1)), max_size=60),
       st.lists(st.booleans(), min_size=4, max_size=4).filter(any), st.floats(0, 20), st.floats(0, 1))
@settings(max_examples=60, deadline=None)
def test_shares_are_a_distribution_with_the_floor(rewards, available, gain, floor):
    bandit = KindBandit(BASE, gain=gain, discount=0.9, floor=floor)
    for kind, value in rewards:
        bandit.reward(kind, value)
    available = np.array(available)
    shares = bandit.shares(available)
    assert shares.sum() == pytest.approx(1.0)
    assert (shares[~available] == 0).all()
    base = np.where(available, BASE, 0.0)
    assert (shares >= floor * base / base.sum() - 1e-12).all()


@pytest.mark.parametrize("seed", range(4))
def test_search_with_the_bandit_proves_the_exhaustive_best(seed):
    """The bandit decides only which model proposes: the proof and the count stand."""
    codes, bounds, terms, times = _space(seed + 80)
    seen = []
    constants = Constants(kind_bandit=5.0)
    best, measured = _search(codes, bounds, terms, times, seed, constants=constants, seen=seen)
    assert best == times.min() and measured <= len(times)
    assert len(set(seen)) == len(seen)
