"""Gaussian Thompson sampling: seeded draws, Monte-Carlo propensities."""

import pytest

from repairmem.errors import InvalidInputError
from repairmem.gate.actions import ACTION_INDEX, Action
from repairmem.gate.policies import ThompsonSampling

from .conftest import SAFE, x_of


def test_contract(contract):
    contract("thompson")


def test_concentrates_on_the_best_action():
    policy = ThompsonSampling(seed=1)
    best = ACTION_INDEX[Action.HIGH_PRECISION]
    for _ in range(400):
        d = policy.decide(x_of(SAFE))
        policy.update(d, 2.0 if d.index == best else -1.0)
    dist = policy.action_distribution(x_of(SAFE))
    assert sum(dist) == pytest.approx(1.0) and dist[best] > 0.9
    d = policy.decide(x_of(SAFE))
    assert 1 / 64 <= d.propensity <= 1.0


def test_parameters_are_validated():
    with pytest.raises(InvalidInputError, match="sigma"):
        ThompsonSampling(sigma=0.0)
    with pytest.raises(InvalidInputError, match="mc_samples"):
        ThompsonSampling(mc_samples=0)
