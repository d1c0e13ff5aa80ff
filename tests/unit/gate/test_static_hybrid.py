"""Static hybrid: retrieval is permission - always the top-1 memory."""

from repairmem.gate.actions import Action

from .conftest import EMPTY, HARD_NEGATIVE, SAFE, x_of
from repairmem.gate.policies import StaticHybrid


def test_contract(contract):
    contract("static_hybrid")


def test_always_injects_top1_when_something_was_retrieved():
    policy = StaticHybrid()
    for base in (SAFE, HARD_NEGATIVE):
        d = policy.decide(x_of(base))
        assert d.action is Action.TOP1_RESOLUTION and d.propensity == 1.0
    assert policy.decide(x_of(EMPTY)).action is Action.NO_MEMORY
