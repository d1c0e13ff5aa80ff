"""Risk-sensitive linear Thompson sampling: sampled reward minus a sampled false-positive penalty."""

import pytest

from repairmem.errors import InvalidInputError
from repairmem.gate.actions import ACTION_INDEX, INJECTS, Action
from repairmem.gate.policies import RiskSensitiveThompson

from .conftest import HARD_NEGATIVE, x_of


def test_contract(contract):
    contract("risk_thompson")


def test_false_positive_risk_lowers_injecting_scores():
    x = x_of(HARD_NEGATIVE)
    top1 = ACTION_INDEX[Action.TOP1_RESOLUTION]
    calm, wary = RiskSensitiveThompson(v=0.0, mu=4.0), RiskSensitiveThompson(v=0.0, mu=4.0)
    d = calm.decide(x)._replace(index=top1)
    for _ in range(30):
        calm.update(d, 0.5, false_positive=False)
        wary.update(d, 0.5, false_positive=True)
    assert calm.decide(x).scores[top1] - wary.decide(x).scores[top1] == pytest.approx(4.0 * 30 / 31, rel=0.05)
    assert not INJECTS[wary.decide(x).index]


def test_parameters_are_validated():
    with pytest.raises(InvalidInputError, match="mu"):
        RiskSensitiveThompson(mu=-1)
