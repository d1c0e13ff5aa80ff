"""UCB1: every feasible action once, then mean + c sqrt(2 ln t / n)."""

import math

import pytest

from repairmem.errors import InvalidInputError
from repairmem.gate.policies import UCB1

from .conftest import SAFE, play, stream, x_of


def test_contract(contract):
    contract("ucb1")


def test_tries_every_action_once_then_follows_the_bound():
    policy = UCB1(c=1.5)
    first = []
    for _ in range(7):
        d = policy.decide(x_of(SAFE))
        first.append(d.index)
        policy.update(d, float(d.index))
    assert sorted(first) == list(range(7))
    play(policy, stream(30))
    d = policy.decide(x_of(SAFE))
    for a in range(7):
        expected = policy.sums[a] / policy.counts[a] + 1.5 * math.sqrt(2 * math.log(policy.t) / policy.counts[a])
        assert d.scores[a] == pytest.approx(expected)


def test_c_is_validated():
    with pytest.raises(InvalidInputError, match="ucb1: c"):
        UCB1(c=-1.0)
