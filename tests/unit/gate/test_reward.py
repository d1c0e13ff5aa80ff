"""The reward formula and its ordering invariant, checked when a configuration loads."""

import json
from dataclasses import fields

import pytest

from repairmem.errors import InvalidInputError
from repairmem.gate.reward import FEEDBACK_FLAGS, Feedback, RewardConfig, load_reward_config, reward


def test_default_formula():
    fb = Feedback(verified=True, accepted=True, latency_ms=20.0, tokens=50)
    assert reward(fb) == pytest.approx(2.0 + 1.0 - 0.001 * 20 - 0.01 * 50)
    assert reward(Feedback(false_positive=True, tokens=30, latency_ms=16)) == pytest.approx(-4.0 - 0.3 - 0.016)
    assert reward(Feedback(rejected=True)) == -1.0
    assert reward(Feedback(correct_abstain=True)) == 0.5
    assert reward(Feedback()) == 0.0


def test_weights_are_configurable():
    config = RewardConfig(verified=3.0, accepted=0.5, false_positive=10.0, per_token=0.0)
    assert reward(Feedback(verified=True, accepted=True, tokens=100), config) == 3.5


@pytest.mark.parametrize("weights", [dict(false_positive=2.0), dict(false_positive=1.5, verified=2.0),
                                     dict(verified=1.0), dict(accepted=2.5)])
def test_ordering_invariant_is_checked_at_construction(weights):
    with pytest.raises(InvalidInputError, match="ordering invariant"):
        RewardConfig(**weights)


@pytest.mark.parametrize("weights", [dict(rejected=-1.0), dict(latency_per_ms=float("nan")), dict(per_token="0.01"),
                                     dict(verified=True)])
def test_weights_must_be_finite_magnitudes(weights):
    with pytest.raises(InvalidInputError):
        RewardConfig(**weights)


def test_loading_a_config_checks_it(tmp_path):
    good = tmp_path / "reward.json"
    good.write_text(json.dumps({"false_positive": 6.0}))
    assert load_reward_config(good).false_positive == 6.0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"false_positive": 1.0}))
    with pytest.raises(InvalidInputError, match="bad.json.*ordering invariant"):
        load_reward_config(bad)
    unknown = tmp_path / "unknown.json"
    unknown.write_text(json.dumps({"bonus": 1.0}))
    with pytest.raises(InvalidInputError, match="unknown reward weight 'bonus'"):
        load_reward_config(unknown)
    broken = tmp_path / "broken.json"
    broken.write_text("{\n  'verified': 2")
    with pytest.raises(InvalidInputError, match="broken.json:2"):
        load_reward_config(broken)
    with pytest.raises(InvalidInputError, match="cannot read"):
        load_reward_config(tmp_path / "missing.json")


def test_feedback_flags_are_the_boolean_fields_of_feedback():
    """The one list of flags: what the service, the CLI and the MCP server accept as feedback."""
    assert FEEDBACK_FLAGS == tuple(f.name for f in fields(Feedback) if f.type == "bool")


def test_feedback_is_consistent():
    with pytest.raises(InvalidInputError, match="verified"):
        Feedback(verified=True)
    with pytest.raises(InvalidInputError, match="false positive"):
        Feedback(false_positive=True, accepted=True)
    with pytest.raises(InvalidInputError):
        Feedback(tokens=-1)
    with pytest.raises(InvalidInputError):
        Feedback(latency_ms=float("inf"))
    with pytest.raises(InvalidInputError):
        Feedback.from_mapping({"verfied": True})


def test_outcome_reward_scores_injection_and_abstention_on_the_same_outcome():
    from repairmem.gate.reward import outcome_reward
    config = outcome_reward(150_000.0)
    verified_injected = reward(Feedback(verified=True, accepted=True, tokens=300), config)
    assert reward(Feedback(correct_abstain=True), config) == pytest.approx(3.0)
    assert verified_injected == pytest.approx(3.0 - 300 * 3.0 / 150_000.0)
    assert reward(Feedback(tokens=300), config) == pytest.approx(-300 * 3.0 / 150_000.0)   # failed, nobody rejected
    assert reward(Feedback(false_positive=True), config) == -4.0
    assert config.false_positive > config.verified > config.accepted                      # the review's ordering
    # break-even: a payload pays when it adds more than tokens / tokens_per_repair verified steps
    p, tokens = 0.01, 300
    assert (p + tokens / 150_000.0) * 3.0 - tokens * config.per_token == pytest.approx(p * 3.0)
    with pytest.raises(InvalidInputError):
        outcome_reward(0)
