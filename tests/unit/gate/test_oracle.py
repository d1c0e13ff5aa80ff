"""Oracle: the realised best action, for diagnosis only."""

import pytest

from repairmem.errors import InvalidInputError
from repairmem.gate.actions import ACTION_INDEX, Action
from repairmem.gate.policies import Oracle

from .conftest import EMPTY, SAFE, x_of


def test_contract(contract):
    contract("oracle")


def test_picks_the_best_realised_reward_and_breaks_ties_safely():
    truth = [0.0, 2.0, 1.0, 2.5, -1.0, 0.5, 0.0]
    assert Oracle().decide(x_of(SAFE), truth=truth).action is Action.HIGH_PRECISION
    assert Oracle().decide(x_of(SAFE), truth=[0.0] * 7).action is Action.ABSTAIN
    assert Oracle().decide(x_of(EMPTY), truth=truth).index == ACTION_INDEX[Action.ABSTAIN]


def test_needs_truth():
    with pytest.raises(InvalidInputError, match="truth"):
        Oracle().decide(x_of(SAFE))
