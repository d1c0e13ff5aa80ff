"""Static + abstention: inject the top-1 only above a score and margin threshold."""

import pytest

from repairmem.errors import InvalidInputError
from repairmem.gate.actions import Action
from repairmem.gate.policies import StaticAbstention

from .conftest import EMPTY, SAFE, x_of


def test_contract(contract):
    contract("static_abstention")


@pytest.mark.parametrize("top1, margin, action", [(0.95, 0.3, Action.TOP1_RESOLUTION), (0.85, 0.3, Action.ABSTAIN),
                                                  (1.0, 0.01, Action.ABSTAIN), (0.9, 0.05, Action.TOP1_RESOLUTION)])
def test_threshold(top1, margin, action):
    d = StaticAbstention(min_score=0.9, min_margin=0.05).decide(x_of(SAFE, top1_score=top1, score_margin=margin))
    assert d.action is action


def test_nothing_retrieved_abstains():
    assert StaticAbstention().decide(x_of(EMPTY)).action is Action.ABSTAIN


def test_thresholds_are_validated():
    with pytest.raises(InvalidInputError, match="min_score"):
        StaticAbstention(min_score=-0.1)
