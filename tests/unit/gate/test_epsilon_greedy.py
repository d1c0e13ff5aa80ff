"""Epsilon-greedy: exact propensities and distribution."""

import pytest

from repairmem.errors import InvalidInputError
from repairmem.gate.actions import ACTION_INDEX, Action
from repairmem.gate.policies import EpsilonGreedy

from .conftest import EMPTY, SAFE, play, stream, x_of


def test_contract(contract):
    contract("epsilon_greedy")


def test_greedy_is_the_best_mean_and_propensities_are_exact():
    policy = EpsilonGreedy(epsilon=0.0)
    d = policy.decide(x_of(SAFE))
    policy.update(d, 1.0)
    top1 = policy.decide(x_of(SAFE))._replace(index=ACTION_INDEX[Action.TOP1_RESOLUTION])
    policy.update(top1, 3.0)
    assert policy.decide(x_of(SAFE)).action is Action.TOP1_RESOLUTION
    policy = EpsilonGreedy(epsilon=0.3, seed=2)
    play(policy, stream(50))
    dist = policy.action_distribution(x_of(SAFE))
    assert sum(dist) == pytest.approx(1.0) and min(dist) == pytest.approx(0.3 / 7)
    d = policy.decide(x_of(SAFE))
    assert d.propensity == pytest.approx(dist[d.index])
    empty = policy.action_distribution(x_of(EMPTY))
    assert sum(empty) == pytest.approx(1.0) and empty[ACTION_INDEX[Action.TOP1_RESOLUTION]] == 0.0


def test_epsilon_is_validated():
    with pytest.raises(InvalidInputError, match="epsilon"):
        EpsilonGreedy(epsilon=1.1)
